// Differential testing of a backend against the host VM (docs/adding-a-backend.md, section 5).
//
// RandomGraph builds a random `main` binding by binding: each call is normalized by a scratch
// BlockBuilder as it is made (so a generator sees the struct info of what it built, and a
// generator bug is an Error at once), parameters and constants are created on demand, and
// finish() assembles the function with every parameter that was used.
//
// run_random_graphs is a backend test's loop over seeds of its generator.
//
// check_backend_against_host partitions such a module for a backend (partition_for), builds it
// with fallback off (a codegen refusing what a check accepted fails the test), exports the
// artifact to a file, loads it back, runs it twice and compares every output with the
// unpartitioned module run on the host VM.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "partita/codegen/build.h"
#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"
#include "partita/runtime/vm.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"
#include "partita/transform/pattern_registry.h"
#include "random_tensor.h"

namespace partita::testing {

/// A tensor of the graph under construction.
struct GraphValue {
  Expr expr;                   // a parameter, a constant or a bound variable
  std::vector<int64_t> shape;  // its shape (for a symbolic parameter: the one it runs with)
  DataType dtype = DataType::Float(32);
  double bound = 1;       // a rough bound of |value|, so exp and products stay finite
  bool nonneg = false;    // known >= 0 (sqrt's operand)
  bool symbolic = false;  // its struct info has a symbolic dimension
};

class RandomGraph {
 public:
  static constexpr DataType F32 = DataType::Float(32);

  explicit RandomGraph(uint32_t seed) : rng_(seed), data_seed_(seed * 7919u + 1u) {}
  virtual ~RandomGraph() = default;

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v.at(size_t(uniform(0, int64_t(v.size()) - 1)));
  }

  /// A new parameter; its input tensor is random in [-scale, scale] (integers: [-4, 4]).
  GraphValue param(std::vector<int64_t> shape, DataType dtype = F32, double scale = 1.0) {
    return add_param(tensor_sinfo(shape, dtype), shape, dtype, scale, false);
  }

  /// A parameter whose `axis` is a symbolic dimension "n" (running with `shape[axis]`). Must
  /// come before the first emit (the scratch function's scope defines n).
  GraphValue symbolic_param(std::vector<int64_t> shape, size_t axis) {
    if (started_) throw_error("ValueError", "RandomGraph: symbolic parameters must come before the first emit");
    if (!n_) n_ = make<PrimVarNode>("n");
    std::vector<PrimExpr> dims;
    for (size_t k = 0; k < shape.size(); ++k) dims.push_back(k == axis ? PrimExpr(n_) : int_imm(shape[k]));
    return add_param(tensor_sinfo(dims, F32), shape, F32, 1.0, true);
  }

  /// A constant tensor random in [-scale, scale].
  GraphValue constant(std::vector<int64_t> shape, double scale = 1.0, DataType dtype = F32) {
    GraphValue v;
    v.shape = shape;
    v.dtype = dtype;
    v.bound = scale;
    v.expr = make<ConstantNode>(random_data(shape, dtype, scale));
    return v;
  }

  /// Binds `call` (normalized: its struct info is inferred now) and records the result.
  GraphValue emit(const Expr& call, double bound, bool nonneg = false) {
    start();
    Var var = scratch_->emit(call);
    bindings_.push_back(make<VarBindingNode>(var, scratch_->lookup_binding(var)));
    GraphValue v;
    v.expr = var;
    auto* t = struct_info_of(var).as<TensorStructInfoNode>();
    if (!t) throw_error("ValueError", "RandomGraph: emitted a call that is not a tensor");
    v.dtype = t->dtype;
    v.symbolic = !static_shape(var, v.shape);
    v.bound = bound;
    v.nonneg = nonneg;
    values_.push_back(v);
    return v;
  }

  /// Binds a call whose result is a tuple (batch_norm's) and returns its variable; emit a
  /// TupleGetItem of it to use a field.
  Var emit_tuple(const Expr& call) {
    start();
    Var var = scratch_->emit(call);
    if (!struct_info_of(var).as<TupleStructInfoNode>()) throw_error("ValueError", "RandomGraph: emit_tuple of a non-tuple");
    bindings_.push_back(make<VarBindingNode>(var, scratch_->lookup_binding(var)));
    return var;
  }

  /// Every tensor emitted so far, in order.
  const std::vector<GraphValue>& values() const { return values_; }

  struct Case {
    IRModule mod;
    std::vector<Tensor> inputs;
  };

  /// `main(params) -> outputs` (one output, or a tuple of several).
  Case finish(const std::vector<GraphValue>& outputs) {
    BlockBuilder bb;
    bb.begin_function("main", params_);
    bb.begin_dataflow();
    for (const auto& b : bindings_) bb.emit_normalized(b);
    std::vector<Expr> outs;
    for (const auto& o : outputs) outs.push_back(bb.emit_output(o.expr));
    Expr result = outs.size() == 1 ? outs[0] : Expr(bb.emit_output(make<TupleNode>(outs)));
    bb.end_dataflow();
    bb.emit_func_output(result);
    return {bb.get(), inputs_};
  }

 protected:
  std::mt19937 rng_;

 private:
  static bool static_shape(const Expr& e, std::vector<int64_t>& shape) {
    auto* t = struct_info_of(e).as<TensorStructInfoNode>();
    if (!t || !t->shape) return false;
    shape.clear();
    for (const auto& d : *t->shape) {
      auto c = as_const_int(d);
      if (!c) return false;
      shape.push_back(*c);
    }
    return true;
  }

  Tensor random_data(const std::vector<int64_t>& shape, DataType dtype, double scale) {
    Tensor f = random_tensor(shape, data_seed_++, float(scale));
    if (dtype == F32) return f;
    Tensor t = Tensor::empty(shape, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      float x = f.data_as<float>()[i];
      if (dtype == DataType::Float(64)) t.data_as<double>()[i] = double(x);
      else if (dtype == DataType::Int(32)) t.data_as<int32_t>()[i] = int32_t(std::lround(4 * x / scale));
      else if (dtype == DataType::Int(64)) t.data_as<int64_t>()[i] = int64_t(std::lround(4 * x / scale));
      else throw_error("ValueError", "RandomGraph: no random data for dtype " + dtype.str());
    }
    return t;
  }

  GraphValue add_param(StructInfo sinfo, std::vector<int64_t> shape, DataType dtype, double scale, bool symbolic) {
    Var p = make<VarNode>("p" + std::to_string(params_.size()), std::move(sinfo));
    params_.push_back(p);
    inputs_.push_back(random_data(shape, dtype, scale));
    if (symbolic) symbolic_params_.push_back(p);
    GraphValue v;
    v.expr = p;
    v.shape = std::move(shape);
    v.dtype = dtype;
    v.bound = scale;
    v.symbolic = symbolic;
    return v;
  }

  void start() {
    if (started_) return;
    started_ = true;
    scratch_ = std::make_unique<BlockBuilder>();
    scratch_->begin_function("scratch", symbolic_params_);
    scratch_->begin_dataflow();
  }

  uint32_t data_seed_;
  bool started_ = false;
  std::unique_ptr<BlockBuilder> scratch_;
  PrimVar n_;
  std::vector<Var> params_, symbolic_params_;
  std::vector<Tensor> inputs_;
  std::vector<Binding> bindings_;
  std::vector<GraphValue> values_;
};

/// What a run of differential cases offloaded, to show the generator reaches the patterns.
struct DifferentialStats {
  int cases = 0;
  int offloading_cases = 0;                // cases where the backend took at least one call
  std::map<std::string, int> composites;   // pattern name -> matches over all cases
  std::map<std::string, int> host_kernels; // operator -> cases where the host ran it
  int failures = 0;

  std::string summary() const {
    std::string s = std::to_string(offloading_cases) + " of " + std::to_string(cases) + " cases offloaded; patterns:";
    for (const auto& [name, n] : composites) s += " " + name + "=" + std::to_string(n);
    s += "; on the host:";
    for (const auto& [name, n] : host_kernels) s += " " + name + "=" + std::to_string(n);
    return s;
  }
};

/// Empty when `got` matches `want` (shape, dtype, and each element within
/// rtol * max(1, max |want|), NaN where NaN, infinities equal); else what differs.
inline std::string compare_tensors(const Tensor& got, const Tensor& want, double rtol) {
  if (got.shape() != want.shape()) return "shapes differ";
  if (!(got.dtype() == want.dtype())) return "dtype " + got.dtype().str() + " vs " + want.dtype().str();
  auto as_double = [](const Tensor& t, int64_t i) -> double {
    DataType d = t.dtype();
    if (d == DataType::Float(32)) return t.data_as<float>()[i];
    if (d == DataType::Float(64)) return t.data_as<double>()[i];
    if (d == DataType::Int(32)) return t.data_as<int32_t>()[i];
    if (d == DataType::Int(64)) return double(t.data_as<int64_t>()[i]);
    return std::nan("");
  };
  if (!(want.dtype() == DataType::Float(32) || want.dtype() == DataType::Float(64)))
    return got.content_equal(want) ? "" : "values differ";
  double scale = 1;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::isfinite(as_double(want, i))) scale = std::max(scale, std::fabs(as_double(want, i)));
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = as_double(got, i), w = as_double(want, i);
    bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= rtol * scale;
    if (!ok)
      return "element " + std::to_string(i) + ": got " + std::to_string(g) + ", expected " + std::to_string(w) +
             " (tolerance " + std::to_string(rtol * scale) + ")";
  }
  return "";
}

/// Pattern names of the composites in `mod` (nested in merged partitions or not).
inline std::vector<std::string> composite_names(const IRModule& mod) {
  std::vector<std::string> out;
  const std::string text = script::print_module(mod), key = "\"Composite\": \"";
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    size_t begin = at + key.size();
    out.push_back(text.substr(begin, text.find('"', begin) - begin));
  }
  return out;
}

/// Partitions `c.mod` for `backend` (path 2 when `merge`, else path 1), builds it for `targets`
/// with fallback off, exports the artifact, reloads it and runs it twice: each output must match
/// the host's. Failures are reported with `label` and the module's text.
inline void check_backend_against_host(const std::string& backend, const RandomGraph::Case& c, bool merge,
                                       const std::vector<codegen::Target>& targets, const std::string& label,
                                       DifferentialStats& stats, double rtol = 1e-4) {
  ++stats.cases;
  auto fail = [&](const std::string& what, const IRModule& shown) {
    ++stats.failures;
    ADD_FAILURE() << label << " (" << (merge ? "merged" : "unmerged") << "): " << what << "\n"
                  << script::print_module(shown, script::PrintOptions{/*show_metadata=*/false});
  };
  std::vector<Tensor> want;
  try {
    want = runtime::VirtualMachine(codegen::build(c.mod)).invoke("main", c.inputs);
  } catch (const Error& e) {
    return fail(std::string("the host VM failed (a generator bug): ") + e.what(), c.mod);
  }
  IRModule parted;
  try {
    parted = transform::partition_for(backend, c.mod, merge);
  } catch (const Error& e) {
    return fail(std::string("partitioning failed: ") + e.what(), c.mod);
  }
  auto names = composite_names(parted);
  if (!names.empty()) ++stats.offloading_cases;
  for (const auto& n : names) ++stats.composites[n];
  const auto file = std::filesystem::temp_directory_path() /
                    ("partita_" + backend + "_differential_" + std::to_string(getpid()) + ".partita");
  try {
    auto exec = codegen::build(parted, codegen::BuildOptions(targets, /*fallback=*/false));
    for (const auto& k : exec->kernel_names) ++stats.host_kernels[k];
    exec->export_library(file.string());
    auto loaded = runtime::load_module(file.string());
    std::filesystem::remove(file);
    runtime::VirtualMachine vm(loaded);
    for (int run = 0; run < 2; ++run) {  // the second run reuses what the first one built
      std::vector<Tensor> got = vm.invoke("main", c.inputs);
      if (got.size() != want.size()) return fail("output count differs", parted);
      for (size_t k = 0; k < got.size(); ++k) {
        std::string why = compare_tensors(got[k], want[k], rtol);
        if (!why.empty())
          return fail("run " + std::to_string(run) + ", output " + std::to_string(k) + ": " + why, parted);
      }
    }
  } catch (const Error& e) {
    std::filesystem::remove(file);
    return fail(e.what(), parted);
  } catch (const std::exception& e) {  // a library's exception escaped: a bug of its own
    std::filesystem::remove(file);
    return fail(std::string("not a partita::Error: ") + e.what(), parted);
  }
}

/// The differential loop of a backend's test: for seeds 1..`seeds` (stopping after 10
/// failures), `Graph(seed).generate()` makes a case (a generator error is a failure), the
/// generator picks path 2 (merged, 70 %) or 1 and then `targets(gen)`, and the case is checked
/// with check_backend_against_host, inside `around(seed, check, stats)` when given (e.g. to
/// inspect a library's log of the run). Prints and returns what was offloaded.
template <class Graph>
DifferentialStats run_random_graphs(
    const std::string& backend, uint32_t seeds, const std::function<std::vector<codegen::Target>(Graph&)>& targets,
    const std::function<void(uint32_t, const std::function<void()>&, DifferentialStats&)>& around = nullptr) {
  DifferentialStats stats;
  for (uint32_t seed = 1; seed <= seeds && stats.failures < 10; ++seed) {
    Graph gen(seed);
    RandomGraph::Case c;
    try {
      c = gen.generate();
    } catch (const Error& e) {
      ADD_FAILURE() << "seed " << seed << ": the generator built an invalid graph: " << e.what();
      ++stats.failures;
      continue;
    }
    const bool merge = gen.chance(0.7);
    const std::vector<codegen::Target> t = targets(gen);
    const std::function<void()> check = [&] {
      check_backend_against_host(backend, c, merge, t, "seed " + std::to_string(seed), stats);
    };
    if (around) around(seed, check, stats);
    else check();
  }
  std::cout << stats.summary() << "\n";
  return stats;
}

}  // namespace partita::testing
