// The "cblas" runtime module: each node is a product (an n-d by 2-d product folds its batch
// dims into M; n-d by n-d loops over the batch entries). A product by a constant 2-d weight runs on the
// runtime's micro-kernel with the weight packed once (PackedWeight); others call cblas_sgemm (a
// single row: sgemv). The bias add and the activation follow in one pass over each block of the
// product while it is in cache.
//
// Threads: OpenBLAS runs single-threaded inside an OpenMP loop of ours over blocks of columns
// (and batch entries), handed out dynamically. OpenBLAS's own pthreads pool spins for ~2^28
// cycles after every call, taking the core from the OpenMP threads of the oneDNN partitions that
// run next (transformer: 6.0-7.3 ms median with it, 5.0-5.4 ms with OPENBLAS_THREAD_TIMEOUT=4);
// with one OpenMP pool for both backends nothing spins against anything, and a core taken by
// another process delays only the blocks it holds instead of a static half of every product.
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <nlohmann/json.hpp>
#include <set>

#include "../module_format.h"
#include "cblas_runtime.h"
#include "openblas.h"
#include "partita/runtime/kernels/gemm_micro_kernel.h"
#include "partita/support/error.h"

namespace partita::backend::cblas {
namespace {

using json = nlohmann::json;

enum class Activation { None, Relu, Gelu, GeluTanh, Silu, Sigmoid, Tanh };

Activation parse_activation(const std::string& name, const std::string& symbol);
runtime::kernels::GemmIsa gemm_isa();

struct Gemm {
  int a, b, bias, out;
  bool transpose_b;
  Activation activation = Activation::None;
  bool constant_b = false;  // b is one of the function's constants: packed on first use
  std::string label;        // "node 2 (from relax.matmul + relax.add)", for errors
};

// The epilogue, one pass over a block of the product C (rows x n, row stride ldc) while it is
// still in cache: adds the bias row (if any) and applies the activation.
template <class F>
void for_each_output(float* c, const float* bias, int64_t rows, int64_t n, int64_t ldc, F act) {
  for (int64_t r = 0; r < rows; ++r, c += ldc)
    if (bias)
      for (int64_t j = 0; j < n; ++j) c[j] = act(c[j] + bias[j]);
    else
      for (int64_t j = 0; j < n; ++j) c[j] = act(c[j]);
}

void epilogue(Activation act, float* c, const float* bias, int64_t rows, int64_t n, int64_t ldc) {
  switch (act) {
    case Activation::None:
      if (bias) for_each_output(c, bias, rows, n, ldc, [](float v) { return v; });
      return;
    case Activation::Relu: return for_each_output(c, bias, rows, n, ldc, [](float v) { return v > 0.0f ? v : 0.0f; });
    case Activation::Gelu:
      return for_each_output(c, bias, rows, n, ldc,
                             [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); });
    case Activation::GeluTanh:
      return for_each_output(c, bias, rows, n, ldc, [](float v) {
        return 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
      });
    case Activation::Silu: return for_each_output(c, bias, rows, n, ldc, [](float v) { return v / (1.0f + std::exp(-v)); });
    case Activation::Sigmoid:
      return for_each_output(c, bias, rows, n, ldc, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    case Activation::Tanh: return for_each_output(c, bias, rows, n, ldc, [](float v) { return std::tanh(v); });
  }
}

// A constant weight packed once for the micro-kernel: ceil(n / w) panels of k x w floats (w:
// the kernel's panel width, 32 for AVX-512, 16 for AVX2)
// (the last zero-padded), from (k, n) storage or, transposed, (n, k). sgemm repacks its operand
// on every call; packed once, products by a constant weight run 20-45 % faster than sgemm
// (64 x 1024 x 1024: 0.87 vs 1.21 ms; 128 x 256 x 768: 0.27 vs 0.38 ms; 2 threads).
struct PackedWeight {
  int64_t k = 0, n = 0, width = 0;
  std::vector<float> panels;

  PackedWeight(const float* b, int64_t k_, int64_t n_, bool transposed, int64_t width_) : k(k_), n(n_), width(width_) {
    const int64_t count = (n + width - 1) / width;
    panels.assign(size_t(count * k * width), 0.0f);
    for (int64_t j = 0; j < count; ++j)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t q = 0; q < width && j * width + q < n; ++q) {
          int64_t col = j * width + q;
          panels[size_t((j * k + p) * width + q)] = transposed ? b[col * k + p] : b[p * n + col];
        }
  }
};

struct Program {
  std::string symbol;
  std::vector<std::vector<int64_t>> dims;
  std::vector<int> inputs, outputs;
  std::vector<std::pair<int, std::string>> constants;
  std::vector<Gemm> gemms;
  std::vector<Tensor> scratch;  // intermediates, by value id (undefined for others)
  std::map<int, PackedWeight> packed;  // constant 2-d weights, by value id, packed on first use
};

// Errors name the module, the function and, for one product, the node and its Relax operators.
[[noreturn]] void fail(const std::string& symbol, const std::string& what, const std::string& node = "") {
  std::string where = "function '" + symbol + "'" + (node.empty() ? "" : ", " + node);
  throw_error("ValueError", "cblas module, " + where + ": " + what);
}

void warn_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::string w = openblas_core_warning();
    if (!w.empty()) std::fprintf(stderr, "partita: warning: %s\n", w.c_str());
  });
}

// The shape of one product: batch x (m x k) * (k x n), B shared by the batch unless batched_b.
struct Product {
  int64_t m, n, k, batch;
  bool batched_b;
};

// Columns per block: at least two blocks per thread so the dynamic schedule can even out a core
// slowed by another process, in multiples of 16 (the micro-kernel's panel; OpenBLAS's on AVX2).
int64_t block_columns(const Product& pr, int threads) {
  int64_t per_batch = std::max<int64_t>(1, 2 * threads / pr.batch);
  int64_t w = (pr.n + per_batch - 1) / per_batch;
  return std::min(pr.n, std::max<int64_t>(16, (w + 15) / 16 * 16));
}

void ensure_single_threaded_openblas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas().set_num_threads(1); });
}

// C = A * B (+ bias, activation): a grid of (batch entry, column block) sgemm calls on `threads`
// OpenMP threads, each block's epilogue right after its product.
void multiply(const Gemm& g, const Product& pr, const float* a, const float* b, const float* bias, float* c,
              int threads) {
  ensure_single_threaded_openblas();
  const int64_t m = pr.m, n = pr.n, k = pr.k;
  if (m == 1 && pr.batch == 1) {
    // One row (a classifier's (1, K) x (K, N)): a matrix-vector product. sgemm would pack the
    // whole weight first; sgemv streams it once.
    if (g.transpose_b)
      openblas().sgemv(CblasRowMajor, CblasNoTrans, blasint(n), blasint(k), 1.0f, b, blasint(k), a, 1, 0.0f, c, 1);
    else
      openblas().sgemv(CblasRowMajor, CblasTrans, blasint(k), blasint(n), 1.0f, b, blasint(n), a, 1, 0.0f, c, 1);
    epilogue(g.activation, c, bias, 1, n, n);
    return;
  }
  const int64_t width = block_columns(pr, threads), blocks = (n + width - 1) / width;
  const int64_t items = pr.batch * blocks;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && items > 1)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t i = item / blocks, j0 = item % blocks * width, cols = std::min(width, n - j0);
    const float* bi = b + (pr.batched_b ? i * k * n : 0);
    // Column block j0.. of B: columns of B, or rows of B when it is stored transposed (n x k).
    const float* bj = g.transpose_b ? bi + j0 * k : bi + j0;
    float* cij = c + i * m * n + j0;
    openblas().sgemm(CblasRowMajor, CblasNoTrans, g.transpose_b ? CblasTrans : CblasNoTrans, blasint(m), blasint(cols),
                blasint(k), 1.0f, a + i * m * k, blasint(k), bj, blasint(g.transpose_b ? k : n), 0.0f, cij,
                blasint(n));
    epilogue(g.activation, cij, bias ? bias + j0 : nullptr, m, cols, n);
  }
}

// C = A * W (+ bias, activation) with W a packed constant: blocks of 32- or 16-column panels over
// threads (dynamic, as in multiply), each panel swept down A 8 (AVX-512) or 6 (AVX2) rows at
// a time (A read in place: the slice stays in L1 while the panel streams from L2).
void multiply_packed(runtime::kernels::GemmIsa isa, Activation act, const Product& pr, const float* a,
                     const PackedWeight& w, const float* bias, float* c, int threads) {
  namespace kn = runtime::kernels;
  const int64_t m = pr.m, n = pr.n, k = pr.k, width = w.width;
  const int64_t panels = (n + width - 1) / width;
  const int64_t per_block = (block_columns(pr, threads) + width - 1) / width;
  const int64_t blocks = (panels + per_block - 1) / per_block;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && blocks > 1)
  for (int64_t q = 0; q < blocks; ++q) {
    const int64_t j_end = std::min(panels, (q + 1) * per_block);
    for (int64_t j = q * per_block; j < j_end; ++j) {
      const float* panel = w.panels.data() + j * k * width;
      kn::panel_product_isa(isa, a, k, m, panel, k, std::min(width, n - j * width), c + j * width, n);
    }
    const int64_t j0 = q * per_block * width, block_cols = std::min(n, j_end * width) - j0;
    epilogue(act, c + j0, bias ? bias + j0 : nullptr, m, block_cols, n);
  }
}

class CblasModule : public runtime::RuntimeModule {
 public:
  explicit CblasModule(std::string graph) : text_(std::move(graph)) {
    warn_once();
    try {
      json g = json::parse(text_);
      if (g.value("version", 0) != 1) throw_error("ValueError", "cblas module: not a version-1 graph");
      threads_ = g.value("num_threads", 0);
      for (const auto& f : g.at("functions")) programs_.push_back(parse(f));
    } catch (const json::exception& e) {
      throw_error("ValueError", std::string("cblas module: malformed graph: ") + e.what());
    }
  }

  std::string type_key() const override { return "cblas"; }
  std::vector<std::string> function_names() const override { return runtime::symbols_of(programs_); }
  std::vector<std::string> const_names() const override { return runtime::constant_names_of(programs_); }
  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard lock(mu_);
    constants_ = constants;
    for (auto& p : programs_) p.packed.clear();
  }
  void save_to_binary(std::string& out) const override {
    out += runtime::write_module_sections(kModuleFormat, {text_});
  }
  std::string get_source(const std::string& format) const override {
    return format.empty() || format == "json" ? text_ : "";
  }

  runtime::PackedFunc get_function(const std::string& symbol) override {
    for (size_t i = 0; i < programs_.size(); ++i)
      if (programs_[i].symbol == symbol)
        return [this, i](std::span<const Tensor> in, std::span<Tensor> out) {
          std::lock_guard lock(mu_);
          run(programs_[i], in, out);
        };
    return {};
  }

 private:
  Program parse(const json& f) {
    Program p;
    p.symbol = f.at("symbol").get<std::string>();
    for (const auto& v : f.at("values")) p.dims.push_back(v.get<std::vector<int64_t>>());
    auto id = [&](const json& v) {
      int x = v.get<int>();
      if (x < 0 || size_t(x) >= p.dims.size()) fail(p.symbol, "value id " + std::to_string(x) + " is out of range");
      return x;
    };
    for (const auto& v : f.at("inputs")) p.inputs.push_back(id(v));
    for (const auto& v : f.at("outputs")) p.outputs.push_back(id(v));
    if (p.outputs.empty()) fail(p.symbol, "expected at least one output");
    for (const auto& c : f.at("constants")) p.constants.push_back({id(c.at("value")), c.at("name").get<std::string>()});
    p.scratch.resize(p.dims.size());
    // Values computed so far, in node order: the inputs and constants, then each product's.
    std::vector<bool> available(p.dims.size(), false);
    for (int v : p.inputs) available[size_t(v)] = true;
    for (const auto& c : p.constants) available[size_t(c.first)] = true;
    for (const auto& n : f.at("nodes")) {
      std::string label = "node " + std::to_string(p.gemms.size());
      if (n.contains("from") && n["from"].is_array()) {
        std::string ops;
        for (const auto& o : n["from"])
          ops += (ops.empty() ? "" : " + ") + (o.is_string() ? o.get<std::string>() : "?");
        label += " (from " + ops + ")";
      }
      auto node_fail = [&](const std::string& what) { fail(p.symbol, what, label); };
      Gemm g{id(n.at("a")), id(n.at("b")), n.at("bias").get<int>(), id(n.at("out")), n.at("transpose_b").get<bool>(),
             parse_activation(n.value("activation", "none"), p.symbol), false, label};
      if (g.bias >= int(p.dims.size())) node_fail("bias id out of range");
      for (int v : {g.a, g.b, g.bias})
        if (v >= 0 && !available[size_t(v)])
          node_fail("it reads value " + std::to_string(v) + " before it is computed");
      available[size_t(g.out)] = true;
      g.constant_b = std::any_of(p.constants.begin(), p.constants.end(), [&](const auto& c) { return c.first == g.b; });
      const auto &ad = p.dims[g.a], &bd = p.dims[g.b], &od = p.dims[g.out];
      if (ad.size() < 2 || bd.size() < 2 || od.size() != ad.size()) node_fail("gemm operand ranks");
      if (bd.size() > 2 && (bd.size() != ad.size() || !std::equal(ad.begin(), ad.end() - 2, bd.begin())))
        node_fail("gemm batch dimensions differ");
      int64_t k = ad.back(), kb = g.transpose_b ? bd.back() : bd[bd.size() - 2];
      int64_t n_cols = g.transpose_b ? bd[bd.size() - 2] : bd.back();
      if (k != kb || od.back() != n_cols || od[od.size() - 2] != ad[ad.size() - 2])
        node_fail("gemm operand shapes do not agree");
      if (std::find(p.outputs.begin(), p.outputs.end(), g.out) == p.outputs.end())
        p.scratch[g.out] = Tensor::empty(od, DataType::Float(32));
      p.gemms.push_back(g);
    }
    return p;
  }

  void run(Program& p, std::span<const Tensor> in, std::span<Tensor> out) {
    if (in.size() != p.inputs.size() || out.size() != p.outputs.size())
      fail(p.symbol, "expected " + std::to_string(p.inputs.size()) + " inputs and " + std::to_string(p.outputs.size()) +
                         " outputs");
    std::vector<const float*> data(p.dims.size(), nullptr);
    auto check = [&](const Tensor& t, int v, const std::string& what) {
      if (t.dtype() != DataType::Float(32) || t.shape() != p.dims[v])
        fail(p.symbol, what + " has another dtype or shape than compiled for");
    };
    for (size_t i = 0; i < in.size(); ++i) {
      check(in[i], p.inputs[i], "argument " + std::to_string(i));
      data[p.inputs[i]] = in[i].data_as<float>();
    }
    for (const auto& [v, name] : p.constants) {
      auto it = constants_.find(name);
      if (it == constants_.end()) fail(p.symbol, "constant '" + name + "' was not provided");
      check(it->second, v, "constant '" + name + "'");
      data[v] = it->second.data_as<float>();
    }
    for (size_t v = 0; v < p.scratch.size(); ++v)
      if (p.scratch[v].defined()) data[v] = p.scratch[v].data_as<float>();
    // A product that is an output is written into the caller's buffer (the first, if it is
    // returned twice); other outputs are copied at the end.
    std::vector<bool> written(out.size(), false);
    for (size_t k = 0; k < out.size(); ++k) {
      const int v = p.outputs[k];
      check(out[k], v, "output " + std::to_string(k));
      bool produced = std::any_of(p.gemms.begin(), p.gemms.end(), [&](const Gemm& g) { return g.out == v; });
      bool first = std::find(p.outputs.begin(), p.outputs.end(), v) == p.outputs.begin() + std::ptrdiff_t(k);
      if (produced && first) data[v] = out[k].data_as<float>(), written[k] = true;
    }
    const int threads = threads_ > 0 ? threads_ : omp_get_max_threads();
    for (const Gemm& g : p.gemms) {
      const auto &ad = p.dims[g.a], &bd = p.dims[g.b];
      float* c = const_cast<float*>(data[g.out]);
      const float *a = data[g.a], *b = data[g.b];
      if (!a || !b || (g.bias >= 0 && !data[g.bias])) fail(p.symbol, "an operand was not provided", g.label);
      const PackedWeight* packed = nullptr;
      if (bd.size() == 2 && isa_ != runtime::kernels::GemmIsa::kGeneric && g.constant_b) {
        auto it = p.packed.find(g.b);
        if (it == p.packed.end())
          it = p.packed.emplace(g.b, PackedWeight(b, ad.back(), p.dims[g.out].back(), g.transpose_b,
                                                       runtime::kernels::gemm_panel_width(isa_))).first;
        packed = &it->second;
      }
      Product pr;
      pr.k = ad.back(), pr.n = p.dims[g.out].back();
      pr.m = ad[ad.size() - 2];
      pr.batch = std::accumulate(ad.begin(), ad.end() - 2, int64_t(1), std::multiplies<>());
      pr.batched_b = bd.size() > 2;
      if (!pr.batched_b) pr.m *= pr.batch, pr.batch = 1;  // (..., M, K) x (K, N): one gemm of all rows
      const float* bias = g.bias >= 0 ? data[g.bias] : nullptr;
      if (packed)
        multiply_packed(isa_, g.activation, pr, a, *packed, bias, c, threads);
      else
        multiply(g, pr, a, b, bias, c, threads);
    }
    for (size_t k = 0; k < out.size(); ++k)
      if (!written[k]) {
        if (!data[p.outputs[k]]) fail(p.symbol, "output " + std::to_string(k) + " is never computed");
        std::memcpy(out[k].data(), data[p.outputs[k]], out[k].nbytes());
      }
  }

  std::string text_;
  int threads_ = 0;
  // The micro-kernel of products by constant weights: the CPU's best (kGeneric: none, sgemm).
  runtime::kernels::GemmIsa isa_ = gemm_isa();
  std::vector<Program> programs_;
  std::map<std::string, Tensor> constants_;
  std::mutex mu_;
};

// The instruction set of the packed products: the CPU's best, or PARTITA_CBLAS_GEMM (avx512,
// avx2, generic = OpenBLAS's sgemm for every product), which must be one the CPU runs.
runtime::kernels::GemmIsa gemm_isa() {
  namespace kn = runtime::kernels;
  const char* env = std::getenv("PARTITA_CBLAS_GEMM");
  if (!env || !*env) return kn::best_gemm_isa();
  for (kn::GemmIsa isa : {kn::GemmIsa::kAvx512, kn::GemmIsa::kAvx2, kn::GemmIsa::kGeneric})
    if (std::string(env) == kn::gemm_isa_name(isa)) {
      if (!kn::gemm_isa_supported(isa))
        throw_error("ValueError", std::string("cblas module: PARTITA_CBLAS_GEMM=") + env + ": this CPU does not run it");
      return isa;
    }
  throw_error("ValueError", std::string("cblas module: PARTITA_CBLAS_GEMM=") + env +
                                " is not one of avx512, avx2, generic");
}

Activation parse_activation(const std::string& name, const std::string& symbol) {
  static const std::map<std::string, Activation> names = {
      {"none", Activation::None}, {"relu", Activation::Relu},       {"gelu", Activation::Gelu},
      {"gelu_tanh", Activation::GeluTanh}, {"silu", Activation::Silu}, {"sigmoid", Activation::Sigmoid},
      {"tanh", Activation::Tanh}};
  auto it = names.find(name);
  if (it == names.end()) fail(symbol, "unknown activation '" + name + "'");
  return it->second;
}

runtime::ModulePtr load_cblas(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"graph"});
  return std::make_shared<CblasModule>(std::move(sections[0]));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_cblas);

runtime::ModulePtr make_cblas_module(std::string graph_json) { return std::make_shared<CblasModule>(std::move(graph_json)); }

std::string openblas_core_warning(std::string* core_name) {
  const OpenBlasCore core = openblas_core();
  const std::string& name = core.reported;
  if (core_name) *core_name = name;
  std::string lower;
  for (char ch : name) lower += char(std::tolower(static_cast<unsigned char>(ch)));
  // Cores without AVX2 kernels: OpenBLAS's generic fallbacks for an unrecognized CPU.
  static const char* slow[] = {"prescott", "generic", "katmai", "coppermine", "northwood", "core2",
                               "penryn",   "dunnington", "nehalem", "atom", "barcelona", "unknown"};
  bool is_slow = name.empty();
  for (const char* s : slow)
    if (lower == s) is_slow = true;
  __builtin_cpu_init();
  if (!is_slow || !__builtin_cpu_supports("avx2")) return "";
  const std::string preferred = preferred_openblas_core();
  std::string why = core.loaded_before ? " (OpenBLAS was loaded before partita's cblas backend)"
                     : core.requested.empty()
                         ? ""
                         : " (OPENBLAS_CORETYPE=" + core.requested +
                               (core.set_by_partita ? ", set by partita)" : ", set by the user)");
  return "OpenBLAS selected its '" + name + "' kernels" + why + " on a CPU with " +
         (__builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2") +
         ", so the cblas backend will run several times slower than it can: set OPENBLAS_CORETYPE=" + preferred +
         " in the environment, or use an OpenBLAS built with that core";
}

}  // namespace partita::backend::cblas
