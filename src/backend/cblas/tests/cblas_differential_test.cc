// The cblas backend takes only what it runs: random graphs of products (1-d to 4-d operands,
// broadcast batch dimensions, constant and parameter weights, weights transposed by
// permute_dims or permuted otherwise), each optionally followed by an add of any shape (biases
// along the last axis and everything else, the product itself included) and an activation, with
// the products' results reused by later products and returned alongside, plus what must stay on
// the host (other dtypes, out_dtype, symbolic shapes), are partitioned with partition_for, built
// with fallback off, exported, reloaded and run, and must match the host VM.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend_differential.h"
#include "partita/runtime/kernels/gemm_micro_kernel.h"

namespace partita::backend::cblas {
namespace {

using testing::GraphValue;
using testing::RandomGraph;
constexpr DataType F32 = DataType::Float(32);
using Ints = std::vector<int64_t>;

class CblasGraph : public RandomGraph {
 public:
  explicit CblasGraph(uint32_t seed) : RandomGraph(seed) {}

  Case generate() {
    if (chance(0.05)) return symbolic_case();
    std::vector<GraphValue> extra;
    int steps = int(uniform(1, 5));
    for (int s = 0; s < steps; ++s) {
      double r = real(0, 1);
      if (r < 0.8) product();
      else if (r < 0.9) glue();
      else extra.push_back(other_dtype());
    }
    if (values().empty()) product();
    std::vector<GraphValue> outs = {last_f32()};
    if (chance(0.3)) outs.push_back(pick(values()));
    for (auto& v : extra) outs.push_back(v);
    return finish(outs);
  }

 private:
  int64_t dim() { return pick(Ints{1, 1, 2, 3, 5, 7, 8, 13, 16, 17, 33}); }

  GraphValue fresh(const Ints& s, double p_const, double scale = 1.0) {
    return chance(p_const) ? constant(s, scale) : param(s, F32, scale);
  }

  GraphValue last_f32() {
    for (auto it = values().rbegin(); it != values().rend(); ++it)
      if (it->dtype == F32 && !it->symbolic) return *it;
    return emit(op::nn::relu(param({2, 3}).expr), 1, true);
  }

  // A float32 value of rank 1..4 already in the graph (chains of products), or a new one.
  GraphValue lhs() {
    if (chance(0.6)) {
      std::vector<GraphValue> ok;
      for (const auto& v : values())
        if (v.dtype == F32 && !v.symbolic && !v.shape.empty() && v.shape.size() <= 4 && v.bound < 100)
          ok.push_back(v);
      if (!ok.empty()) return chance(0.6) ? ok.back() : pick(ok);
    }
    int rank = int(pick(Ints{1, 2, 2, 2, 2, 3, 3, 3, 4}));
    Ints s;
    for (int k = 0; k < rank; ++k) s.push_back(k + 2 >= rank ? dim() : pick(Ints{1, 2, 3}));
    if (chance(0.03)) s[0] = 0;  // an empty tensor
    return fresh(s, 0.15);
  }

  GraphValue activation(const GraphValue& x) {
    switch (uniform(0, 7)) {
      case 0: return emit(op::nn::relu(x.expr), x.bound, true);
      case 1: return emit(op::nn::gelu(x.expr), x.bound);
      case 2: return emit(op::nn::gelu_tanh(x.expr), x.bound);
      case 3: return emit(op::nn::silu(x.expr), x.bound);
      case 4: return emit(op::sigmoid(x.expr), 1, true);
      case 5: return emit(op::tanh(x.expr), 1);
      case 6: return emit(op::clip(x.expr, 0.0, 6.0), 6, true);  // not an epilogue of cblas
      default: return emit(op::abs(x.expr), x.bound, true);       // neither
    }
  }

  // matmul(a, b) with b of rank 1..4 (batch dims broadcast against a's), a constant or a
  // parameter, maybe stored transposed; then an add and an activation.
  void product() {
    GraphValue a = lhs();
    const Ints& as = a.shape;
    const int64_t K = as.back(), N = dim();
    int rb = int(pick(Ints{1, 2, 2, 2, 2, 3, 3, 4}));
    Ints bs;
    if (rb == 1) {
      bs = {K};
    } else {
      size_t a_batch = as.size() >= 2 ? as.size() - 2 : 0;
      for (int k = 0; k < rb - 2; ++k) {
        int64_t from_a = size_t(k) + a_batch >= size_t(rb - 2) ? as[a_batch - size_t(rb - 2 - k)] : 1;
        bs.push_back(from_a == 1 ? pick(Ints{1, 1, 2, 3}) : (chance(0.1) ? 1 : from_a));
      }
      bs.push_back(K);
      bs.push_back(N);
    }
    const double wscale = 1.0 / std::sqrt(double(std::max<int64_t>(K, 1)));
    GraphValue b;
    if (rb >= 2 && chance(0.4)) {
      // Stored with the last two axes swapped (or, for 3-d, another permutation).
      Ints axes(static_cast<size_t>(rb), 0);
      for (int k = 0; k < rb; ++k) axes[size_t(k)] = k;
      std::swap(axes[size_t(rb - 1)], axes[size_t(rb - 2)]);
      if (rb == 3 && chance(0.25)) axes = {2, 0, 1};
      Ints src(static_cast<size_t>(rb), 0);
      for (int k = 0; k < rb; ++k) src[size_t(axes[size_t(k)])] = bs[size_t(k)];
      GraphValue s = fresh(src, 0.6, wscale);
      bool implicit = rb == 2 && chance(0.5);  // permute_dims without axes reverses them
      b = emit(op::permute_dims(s.expr, implicit ? std::nullopt : std::optional<Ints>(axes)), wscale);
    } else {
      b = fresh(bs, 0.6, wscale);
    }
    DataType out_dtype = chance(0.1) ? F32 : DataType();  // an explicit out_dtype changes nothing
    GraphValue m = emit(op::matmul(a.expr, b.expr, out_dtype), a.bound * std::sqrt(double(std::max<int64_t>(K, 1))));
    if (chance(0.6) && !m.shape.empty()) {
      const Ints& ms = m.shape;
      std::vector<Ints> shapes = {{ms.back()}, {ms.back()}, {1, ms.back()}, {1, 1, ms.back()}, ms, {}};
      if (ms.size() >= 2) shapes.push_back({ms[ms.size() - 2], 1});
      GraphValue bias = chance(0.1) ? m : fresh(pick(shapes), 0.7);
      m = emit(chance(0.7) ? op::add(m.expr, bias.expr) : op::add(bias.expr, m.expr), m.bound + bias.bound);
    }
    if (chance(0.7)) activation(m);
  }

  // Element-wise ops between products (the host's).
  void glue() {
    GraphValue x = lhs();
    if (chance(0.5)) emit(op::nn::relu(x.expr), x.bound, true);
    else emit(op::multiply(x.expr, constant({}, 0.5).expr), x.bound);
  }

  // A float64 product: the host's.
  GraphValue other_dtype() {
    DataType f64 = DataType::Float(64);
    GraphValue x = param({3, 4}, f64), w = param({4, 5}, f64);
    return emit(op::matmul(x.expr, w.expr), 2);
  }

  // A symbolic number of rows: shapes unknown at compile time stay on the host.
  Case symbolic_case() {
    Ints s = {uniform(1, 4), pick(Ints{3, 8})};
    GraphValue x = symbolic_param(s, 0);
    GraphValue m = emit(op::matmul(x.expr, constant({s[1], 5}, 0.3).expr), 2);
    if (chance(0.5)) m = emit(op::add(m.expr, constant({5}).expr), 3);
    if (chance(0.5)) m = emit(op::nn::relu(m.expr), 3, true);
    return finish({m});
  }
};

TEST(CblasDifferential, RandomGraphsMatchTheHostAfterExportAndReload) {
  testing::DifferentialStats stats = testing::run_random_graphs<CblasGraph>("cblas", 320, [](CblasGraph& gen) {
    int64_t threads = gen.pick(std::vector<int64_t>{1, 2, 3});
    return std::vector<codegen::Target>{codegen::Target("cblas", {{"num_threads", threads}})};
  });
  EXPECT_GE(stats.offloading_cases, stats.cases / 2) << stats.summary();
  for (const char* name : {"cblas.matmul", "cblas.matmul_bias", "cblas.matmul_relu", "cblas.matmul_gelu",
                           "cblas.matmul_bias_gelu_tanh", "cblas.matmul_bias_silu", "cblas.matmul_sigmoid",
                           "cblas.matmul_bias_tanh"})
    EXPECT_GT(stats.composites[name], 0) << name << " never matched: " << stats.summary();
}

// The same graphs with the products by constant weights on each other path this CPU runs
// (PARTITA_CBLAS_GEMM; the test above runs the best one).
TEST(CblasDifferential, TheSameGraphsOnTheOtherMicroKernels) {
  namespace kn = runtime::kernels;
  for (kn::GemmIsa isa : {kn::GemmIsa::kAvx512, kn::GemmIsa::kAvx2, kn::GemmIsa::kGeneric}) {
    if (isa == kn::best_gemm_isa()) continue;
    if (!kn::gemm_isa_supported(isa)) {
      std::cout << "skipped " << kn::gemm_isa_name(isa) << ": this CPU does not run it (cpuid)\n";
      continue;
    }
    ::setenv("PARTITA_CBLAS_GEMM", kn::gemm_isa_name(isa), 1);
    testing::DifferentialStats stats = testing::run_random_graphs<CblasGraph>("cblas", 160, [](CblasGraph& gen) {
      int64_t threads = gen.pick(std::vector<int64_t>{1, 2, 3});
      return std::vector<codegen::Target>{codegen::Target("cblas", {{"num_threads", threads}})};
    });
    ::unsetenv("PARTITA_CBLAS_GEMM");
    EXPECT_EQ(stats.failures, 0) << kn::gemm_isa_name(isa);
  }
}

}  // namespace
}  // namespace partita::backend::cblas
