// The cost of a candidate: its bindings extracted into a module of their own, built with its
// backend, run and timed on this machine, and kept in a persistent cache.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "collage_internal.h"
#include "partita/codegen/build.h"
#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/functor.h"
#include "partita/ir/substitute.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/serialize.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"

namespace partita::codegen::collage {
namespace {

using Clock = std::chrono::steady_clock;

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

std::string default_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : std::string(home && *home ? home : "/tmp") + "/.cache";
  return base + "/partita/collage_costs.json";
}

// The candidate's bindings as the function "main" of a module: parameters for what they use
// from outside, outputs for what is used outside them. `roots` receives the new variable of
// each match's root (in the order of c.matches).
IRModule extract(const BlockGraph& g, const Candidate& c, std::vector<const VarNode*>& roots,
                 std::vector<Var>& params_out) {
  std::vector<char> in(size_t(g.size()), 0);
  for (int n : c.nodes) in[size_t(n)] = 1;
  VarRemap remap;
  std::vector<Var> params;
  for (int n : c.nodes)
    for (const Var& v : free_vars(g.values[size_t(n)])) {
      auto it = g.pos.find(v.get());
      if ((it != g.pos.end() && in[size_t(it->second)]) || remap.count(v)) continue;
      Var p = make<VarNode>("p" + std::to_string(params.size()), v->struct_info_);
      params.push_back(p);
      remap[v] = p;
    }
  BlockBuilder bb;
  bb.begin_function("main", params);
  bb.begin_dataflow();
  std::vector<Var> outputs;
  std::unordered_map<int, const VarNode*> made;
  for (int n : c.nodes) {
    bool out = g.used_outside[size_t(n)] != 0;
    for (int u : g.users[size_t(n)]) out = out || !in[size_t(u)];
    if (n == c.nodes.back()) out = true;
    Expr value = substitute_vars(g.values[size_t(n)], remap);
    Var v = out ? bb.emit_output(value) : bb.emit(value);
    remap[g.vars[size_t(n)]] = v;
    made[n] = v.get();
    if (out) outputs.push_back(v);
  }
  bb.end_dataflow();
  if (outputs.size() == 1) bb.emit_func_output(outputs[0]);
  else bb.emit_func_output(make<TupleNode>(std::vector<Expr>(outputs.begin(), outputs.end())));
  for (const auto& [pattern, root] : c.matches) roots.push_back(made.at(root));
  params_out = std::move(params);
  return bb.get();
}

// Concrete inputs for the parameters: symbolic dimensions take `symbolic_dim`; floats are
// small random values, integers 0 (a valid index for any gather), booleans false.
std::vector<Tensor> make_inputs(const std::vector<Var>& params, int64_t symbolic_dim) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::vector<Tensor> out;
  for (const Var& p : params) {
    auto* t = p->struct_info_.as<TensorStructInfoNode>();
    if (!t || !t->shape)
      throw_error("ValueError", "CollagePartition: parameter '" + p->name_hint + "' is not a tensor of known rank");
    std::vector<int64_t> shape;
    for (const PrimExpr& d : *t->shape) {
      auto* imm = d.as<IntImmNode>();
      shape.push_back(imm ? imm->value : symbolic_dim);
    }
    Tensor x = Tensor::empty(shape, t->dtype);
    std::memset(x.data(), 0, x.nbytes());
    if (t->dtype == DataType::Float(32))
      for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = real(rng);
    else if (t->dtype == DataType::Float(64))
      for (int64_t i = 0; i < x.numel(); ++i) x.data_as<double>()[i] = real(rng);
    out.push_back(std::move(x));
  }
  return out;
}

// The shapes and dtypes of the constants `expr` uses, in visiting order.
class ConstantShapes : public ExprVisitor {
 public:
  std::ostringstream out;
  void visit_(const ConstantNode* op) override {
    out << " " << op->data.dtype().str();
    for (int64_t d : op->data.shape()) out << "x" << d;
  }
  using ExprVisitor::visit_;
};

// The key of a module: its text (constants are printed as references, so their shapes are
// added), the backend, the targets and the CPU.
std::string cost_key(const IRModule& mod, const std::string& backend, const std::string& context) {
  std::ostringstream key;
  ConstantShapes shapes;
  for (const auto& [gv, f] : mod.functions()) shapes.visit_expr(f);
  script::PrintOptions text;
  text.show_metadata = false;  // constants are referred to, their bytes left out
  key << script::print_module(mod, text) << "\n#constants:" << shapes.out.str() << "\n#backend: " << backend << "\n" << context;
  return key.str();
}

// Copies of the boundary probe, and the probes tried in order: a binding `a{i}` a backend may
// take (its input the previous host result), then a host operator `h{i}` of similar size (the
// restricted partitioning offloads the a's only, so the h's stay on the host whoever matches
// them). A matmul first (what every CPU backend with patterns takes), then elementwise.
constexpr int kProbeCopies = 8;

// The matches of `c` (its roots in an extracted module) as what partitioning may take.
std::shared_ptr<AllowedMatches> allowed_roots(const Candidate& c, const std::vector<const VarNode*>& roots) {
  auto allowed = std::make_shared<AllowedMatches>();
  for (size_t k = 0; k < c.matches.size(); ++k) (*allowed)[c.matches[k].first].insert(roots[k]);
  return allowed;
}
const char* const kProbeOps[] = {"R.matmul(%s, w)", "R.nn.relu(%s)", "R.add(%s, %s)"};

std::string probe_text(const std::string& op) {
  std::ostringstream t;
  t << "@I.ir_module\nclass Module:\n    @R.function\n"
    << "    def main(x: R.Tensor((64, 64), dtype=\"float32\"), w: R.Tensor((64, 64), dtype=\"float32\"))"
    << " -> R.Tensor((64, 64), dtype=\"float32\"):\n        with R.dataflow():\n";
  std::string prev = "x";
  for (int i = 0; i < kProbeCopies; ++i) {
    std::string call = op;
    for (size_t at; (at = call.find("%s")) != std::string::npos;) call.replace(at, 2, prev);
    t << "            a" << i << " = " << call << "\n";
    t << "            h" << i << " = R.tanh(a" << i << ")\n";
    prev = "h" + std::to_string(i);
  }
  t << "            R.output(" << prev << ")\n        return " << prev << "\n";
  return t.str();
}

}  // namespace

struct CostModel::Impl {
  CollageOptions options;
  std::string path;
  std::string context;  // targets and CPU, part of every key
  nlohmann::json costs = nlohmann::json::object();
  double overhead_us = 0;
  bool overhead_known = false;

  // Median microseconds of running `exec`'s main on `inputs`.
  // `fastest`: the fastest run instead (the boundary probe compares calls of different lengths,
  // and on a loaded machine only the fastest runs of each are free of preemption).
  double time(const std::shared_ptr<runtime::Executable>& exec, const std::vector<Tensor>& inputs,
              bool fastest = false, int repeats = 0) {
    Device device = options.device;
    runtime::VirtualMachine vm(exec, device);
    std::vector<Tensor> placed;
    for (const Tensor& t : inputs) placed.push_back(t.to(device));
    for (int i = 0; i < 2; ++i) vm.invoke("main", placed);
    runtime::synchronize(device);
    std::vector<double> us;
    auto start = Clock::now();
    for (int i = 0; i < std::max(1, repeats > 0 ? repeats : options.repeats); ++i) {
      auto t0 = Clock::now();
      vm.invoke("main", placed);
      runtime::synchronize(device);  // a device's work may still be queued when invoke returns
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      if (Clock::now() - start > std::chrono::milliseconds(300)) break;
    }
    if (fastest) return *std::min_element(us.begin(), us.end());
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    return us[us.size() / 2];
  }

  // What a call costs with nothing in it (the VM's entry and exit), subtracted from every
  // measurement so that a candidate costs only its own work.
  double overhead() {
    if (overhead_known) return overhead_us;
    overhead_known = true;
    Var x = make<VarNode>("x", make<TensorStructInfoNode>(std::vector<PrimExpr>{make<IntImmNode>(16)}, DataType::Float(32)));
    BlockBuilder bb;
    bb.begin_function("main", {x});
    bb.emit_func_output(x);
    try {
      overhead_us = time(build(bb.get(), BuildOptions(options.targets)), make_inputs({x}, 1));
    } catch (const Error&) {
      overhead_us = 0;
    }
    return overhead_us;
  }
};

CostModel::CostModel(const CollageOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->path = options.cost_cache.empty() ? default_cache_path() : options.cost_cache;
  std::ostringstream ctx;
  ctx << "#cpu: " << cpu_name() << "\n#device: " << options.device.str() << "\n#targets:";
  for (const Target& t : options.targets) ctx << " [" << t.str() << "]";
  impl_->context = ctx.str();
  if (impl_->path == "none") return;
  std::ifstream in(impl_->path);
  if (!in) return;
  try {
    impl_->costs = nlohmann::json::parse(in);
    if (!impl_->costs.is_object()) impl_->costs = nlohmann::json::object();
  } catch (const std::exception&) {
    std::fprintf(stderr, "warning: CollagePartition: ignoring the unreadable cost cache %s\n", impl_->path.c_str());
    impl_->costs = nlohmann::json::object();
  }
}

CostModel::~CostModel() = default;

double CostModel::call_overhead_us() { return impl_->overhead(); }

void CostModel::save() const {
  if (impl_->path == "none") return;
  std::filesystem::path p(impl_->path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::string tmp = impl_->path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    if (!out) {
      std::fprintf(stderr, "warning: CollagePartition: cannot write the cost cache %s\n", impl_->path.c_str());
      return;
    }
    out << impl_->costs.dump(1);
  }
  std::filesystem::rename(tmp, p, ec);  // whole files only: a reader never sees half of one
}

double CostModel::boundary_us(const std::string& backend) {
  auto known = boundaries_.find(backend);
  if (known != boundaries_.end()) return known->second;
  double& out = boundaries_[backend];
  out = 0;
  for (const char* op : kProbeOps) {
    IRModule chain = script::parse_module(probe_text(op));
    std::vector<BlockGraph> blocks = block_graphs(chain);
    const BlockGraph& g = blocks.at(0);
    // The backend's single-binding matches of the a's (their roots), if it takes them all.
    auto allowed = std::make_shared<AllowedMatches>();
    Candidate alone;
    std::set<int> taken;
    std::vector<std::vector<Candidate>> found = pattern_candidates(chain, blocks, backend);
    for (Candidate& m : found.at(0)) {
      int root = m.matches[0].second;
      if (m.nodes.size() != 1 || g.vars[size_t(root)]->name_hint[0] != 'a' || taken.count(root)) continue;
      (*allowed)[m.matches[0].first].insert(g.vars[size_t(root)].get());
      if (root == 0) alone = m;
      taken.insert(root);
    }
    if (int(taken.size()) != kProbeCopies || alone.nodes.empty()) continue;
    std::string key = "boundary, fastest runs " + std::to_string(runtime::fnv1a64(cost_key(chain, backend, impl_->context)));
    auto hit = impl_->costs.find(key);
    if (hit != impl_->costs.end() && hit->is_number()) return out = hit->get<double>();
    Candidate host;
    host.backend = "host";
    host.nodes = {1};  // h0
    try {
      // The chain, one offloaded a, one host h and an empty call, each timed by its fastest run.
      std::vector<const VarNode*> roots;
      std::vector<Var> params, host_params, empty_params;
      IRModule one = extract(g, alone, roots, params);
      one = partition_restricted(one, {backend}, allowed_roots(alone, roots));
      roots.clear();
      IRModule h = extract(g, host, roots, host_params);
      IRModule placed = partition_restricted(chain, {backend}, allowed);
      BuildOptions bo(impl_->options.targets, /*fallback=*/false);
      std::vector<Var> chain_params;
      for (const Var& p : chain.lookup("main").as<FunctionNode>()->params) chain_params.push_back(p);
      Var x = make<VarNode>("x", make<TensorStructInfoNode>(std::vector<PrimExpr>{make<IntImmNode>(16)}, DataType::Float(32)));
      BlockBuilder bb;
      bb.begin_function("main", {x});
      bb.emit_func_output(x);
      constexpr int kRuns = 40;
      double empty = impl_->time(build(bb.get(), bo), make_inputs({x}, 1), true, kRuns);
      double whole = impl_->time(build(placed, bo), make_inputs(chain_params, 1), true, kRuns) - empty;
      double part = impl_->time(build(one, bo), make_inputs(params, 1), true, kRuns) - empty;
      double rest = impl_->time(build(h, bo), make_inputs(host_params, 1), true, kRuns) - empty;
      out = std::max(0.0, (whole - kProbeCopies * (part + rest)) / kProbeCopies);
    } catch (const Error& e) {
      if (impl_->options.verbose)
        std::fprintf(stderr, "collage: the boundary probe of %s failed: %s\n", backend.c_str(), e.what());
      continue;
    }
    impl_->costs[key] = out;
    if (impl_->options.verbose)
      std::fprintf(stderr, "collage: entering a %s partition costs %.1f us (probe %s)\n", backend.c_str(), out, op);
    return out;
  }
  return out;
}

std::vector<double> CostModel::time_placements(const std::vector<IRModule>& mods, int runs, int rounds,
                                               bool& all_cached, const std::string& tag) {
  std::vector<std::string> keys;
  std::vector<double> out;
  all_cached = true;
  for (const IRModule& m : mods) {
    keys.push_back(tag + " " + std::to_string(runtime::fnv1a64(cost_key(m, "placement", impl_->context))));
    auto hit = impl_->costs.find(keys.back());
    all_cached = all_cached && hit != impl_->costs.end();
    out.push_back(hit == impl_->costs.end() || !hit->is_number() ? kInfinite : hit->get<double>());
  }
  if (all_cached) return out;
  // Placements that are the same module (the search found a fixed configuration) share one key:
  // they are timed once and get the same time, so the choice between them cannot flip with noise
  // (nor between a run and its cached repeat, which reads the one value the key holds).
  std::vector<size_t> first_of(mods.size());
  for (size_t k = 0; k < mods.size(); ++k)
    first_of[k] = size_t(std::find(keys.begin(), keys.end(), keys[k]) - keys.begin());
  // Measured together, so that the comparison is of the same minutes: built, warmed up, then
  // every placement once per round.
  Device device = impl_->options.device;
  std::vector<std::unique_ptr<runtime::VirtualMachine>> vms(mods.size());
  std::vector<std::vector<Tensor>> inputs(mods.size());
  std::vector<std::vector<double>> us(mods.size());
  for (size_t k = 0; k < mods.size(); ++k) {
    out[k] = kInfinite;
    if (first_of[k] != k) continue;
    try {
      auto exec = build(mods[k], BuildOptions(impl_->options.targets));
      vms[k] = std::make_unique<runtime::VirtualMachine>(exec, device);
      std::vector<Var> params;
      for (const Var& p : mods[k].lookup("main").as<FunctionNode>()->params) params.push_back(p);
      for (const Tensor& t : make_inputs(params, impl_->options.symbolic_dim)) inputs[k].push_back(t.to(device));
      vms[k]->invoke("main", inputs[k]);
      runtime::synchronize(device);
    } catch (const Error& e) {
      vms[k].reset();
      if (impl_->options.verbose) std::fprintf(stderr, "collage: placement %zu failed: %s\n", k, e.what());
    }
  }
  for (int r = 0; r < std::max(1, rounds); ++r)
    for (size_t k = 0; k < mods.size(); ++k) {
      if (!vms[k]) continue;
      for (int i = 0; i < std::max(1, runs); ++i) {
        auto t0 = Clock::now();
        vms[k]->invoke("main", inputs[k]);
        runtime::synchronize(device);
        us[k].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    }
  for (size_t k = 0; k < mods.size(); ++k) {
    if (first_of[k] != k) continue;
    if (us[k].empty()) {
      impl_->costs[keys[k]] = nullptr;
      continue;
    }
    std::nth_element(us[k].begin(), us[k].begin() + us[k].size() / 2, us[k].end());
    out[k] = us[k][us[k].size() / 2];
    impl_->costs[keys[k]] = out[k];
  }
  for (size_t k = 0; k < mods.size(); ++k) out[k] = out[first_of[k]];
  return out;
}

void CostModel::cost(const BlockGraph& g, Candidate& c, bool estimate_only) {
  bool host = c.backend == "host";
  if (host && c.nodes.size() == 1 && !g.is_op_call[size_t(c.nodes[0])]) {
    c.cost_us = 0;  // tuples, get-items and aliases are free on the host
    c.measured = true;
    return;
  }
  std::vector<const VarNode*> roots;
  std::vector<Var> params;
  IRModule mod;
  try {
    mod = extract(g, c, roots, params);
    if (!host) {
      auto allowed = std::make_shared<AllowedMatches>();
      for (size_t k = 0; k < c.matches.size(); ++k) (*allowed)[c.matches[k].first].insert(roots[k]);
      mod = partition_restricted(mod, {c.backend}, allowed);
      // Every operator must have gone to the backend, else this is not the candidate.
      for (const BlockGraph& left : block_graphs(mod))
        for (char op : left.is_op_call)
          if (op) throw_error("ValueError", "a match was not partitioned");
    }
  } catch (const Error&) {
    c.cost_us = host ? 1.0 : kInfinite;
    c.measured = !host;  // a backend candidate that cannot be made is known to be impossible
    return;
  }
  std::string key = std::to_string(runtime::fnv1a64(cost_key(mod, c.backend, impl_->context)));
  auto hit = impl_->costs.find(key);
  if (hit != impl_->costs.end()) {
    c.cost_us = hit->is_null() ? kInfinite : hit->get<double>();
    c.measured = true;
    ++cached_;
    return;
  }
  if (estimate_only) return;
  auto t0 = Clock::now();
  try {
    auto exec = build(mod, BuildOptions(impl_->options.targets, /*fallback=*/false));
    double us = std::max(0.0, impl_->time(exec, make_inputs(params, impl_->options.symbolic_dim)) - impl_->overhead());
    c.cost_us = us;
    c.measured = true;
    impl_->costs[key] = us;
  } catch (const Error& e) {
    // The backend refused it or it failed to run on made-up inputs: never chosen (the host
    // gets a nominal cost, so that a placement exists).
    c.cost_us = host ? 1.0 : kInfinite;
    c.measured = !host;
    if (!host) impl_->costs[key] = nullptr;
    if (impl_->options.verbose)
      std::fprintf(stderr, "collage: %s candidate of %zu bindings failed: %s\n", c.backend.c_str(), c.nodes.size(),
                   e.what());
  }
  ++measured_;
  measure_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  if (impl_->options.verbose)
    std::fprintf(stderr, "collage: %-8s %3zu bindings %-40s %10.1f us\n", c.backend.c_str(), c.nodes.size(),
                 c.matches.empty() ? g.vars[size_t(c.nodes[0])]->name_hint.c_str() : c.matches[0].first.c_str(),
                 c.cost_us);
}

}  // namespace partita::codegen::collage
