// The example NPU takes only what it runs: random graphs of the operators of its pattern table
// (element-wise ops with broadcasting, relu, gelu, softmax on any axis, matmuls, convolutions
// plain and grouped with an optional relu, pooling, inference and training batch norms), plus
// what must stay on the host (float16, a symbolic batch, operators outside the table), are
// partitioned, built with fallback off, exported, reloaded and run against the host VM.
#include <gtest/gtest.h>

#include "backend_differential.h"

namespace partita::backend::example_npu {
namespace {

using testing::GraphValue;
using testing::RandomGraph;
using Ints = std::vector<int64_t>;
constexpr DataType F32 = DataType::Float(32);

class NpuGraph : public RandomGraph {
 public:
  explicit NpuGraph(uint32_t seed) : RandomGraph(seed) {}

  Case generate() {
    if (chance(0.05)) return symbolic_case();
    int steps = int(uniform(1, 5));
    for (int s = 0; s < steps; ++s) {
      double r = real(0, 1);
      if (r < 0.25)
        binary();
      else if (r < 0.40)
        unary();
      else if (r < 0.50)
        softmax();
      else if (r < 0.62)
        matmul();
      else if (r < 0.77)
        conv();
      else if (r < 0.87)
        pool();
      else if (r < 0.95)
        batch_norm();
      else
        float64_chain();
    }
    std::vector<GraphValue> outs;
    outs.reserve(2);  // (an initializer list here trips GCC 12's -Warray-bounds)
    outs.push_back(last_f32());
    if (chance(0.25)) outs.push_back(pick(values()));
    return finish(outs);
  }

 private:
  int64_t dim() { return pick(Ints{1, 2, 3, 4, 5, 7, 8}); }

  GraphValue last_f32() {
    for (auto it = values().rbegin(); it != values().rend(); ++it)
      if (it->dtype == F32 && !it->symbolic) return *it;
    return emit(op::nn::relu(param({3, 4}).expr), 1, true);
  }

  GraphValue operand(size_t lo, size_t hi) {
    if (chance(0.7)) {
      std::vector<GraphValue> ok;
      for (const auto& v : values())
        if (v.dtype == F32 && !v.symbolic && v.shape.size() >= lo && v.shape.size() <= hi)
          ok.push_back(v);
      if (!ok.empty()) return chance(0.6) ? ok.back() : pick(ok);
    }
    Ints s;
    for (size_t k = 0, n = size_t(uniform(int64_t(lo), int64_t(hi))); k < n; ++k)
      s.push_back(dim());
    return chance(0.3) ? constant(s) : param(s);
  }

  GraphValue operand4d() {
    GraphValue v = operand(4, 4);
    if (v.shape.size() == 4 && v.shape[2] >= 2 && v.shape[3] >= 2) return v;
    return param({1, pick(Ints{1, 2, 3, 4}), uniform(3, 9), uniform(3, 9)});
  }

  void binary() {
    GraphValue a = operand(1, 4);
    Ints bs = a.shape;
    if (chance(0.4)) {  // broadcast: a suffix, some dimensions 1
      bs.erase(bs.begin(), bs.begin() + uniform(0, int64_t(bs.size()) - 1));
      for (auto& d : bs)
        if (chance(0.4)) d = 1;
    }
    GraphValue b = chance(0.3) ? constant(bs) : param(bs);
    if (chance(0.5)) std::swap(a, b);
    switch (uniform(0, 3)) {
      case 0:
        emit(op::add(a.expr, b.expr), a.bound + b.bound);
        break;
      case 1:
        emit(op::subtract(a.expr, b.expr), a.bound + b.bound);
        break;
      case 2:
        emit(op::multiply(a.expr, b.expr), a.bound * b.bound);
        break;
      default: {  // a divisor away from zero
        emit(op::divide(a.expr, away_from_zero(b).expr), a.bound);
      }
    }
  }

  // |v| + 1: a divisor, a variance.
  GraphValue away_from_zero(const GraphValue& v) {
    GraphValue a = emit(op::abs(v.expr), v.bound, true);
    return emit(op::add(a.expr, make<ConstantNode>(Tensor::from_bytes({}, F32, &one_, 4))),
                v.bound + 1, true);
  }

  void unary() {
    GraphValue x = operand(1, 4);
    if (chance(0.5))
      emit(op::nn::relu(x.expr), x.bound, true);
    else if (chance(0.6))
      emit(op::nn::gelu(x.expr), x.bound);
    else
      emit(op::sigmoid(x.expr), 1, true);  // not in the table: stays on the host
  }

  void softmax() {
    GraphValue x = operand(1, 4);
    emit(op::nn::softmax(x.expr, uniform(-int64_t(x.shape.size()), int64_t(x.shape.size()) - 1)), 1,
         true);
  }

  void matmul() {
    GraphValue x = operand(1, 3);
    const int64_t k = x.shape.back();
    Ints ws = x.shape.size() == 1 || chance(0.6) ? Ints{k, dim()} : Ints{k};
    GraphValue w = chance(0.5) ? constant(ws, 0.5) : param(ws, F32, 0.5);
    GraphValue m = emit(op::matmul(x.expr, w.expr), x.bound * double(k));
    if (chance(0.5)) emit(op::nn::relu(m.expr), m.bound, true);
  }

  void conv() {
    GraphValue x = operand4d();
    const int64_t C = x.shape[1];
    const int64_t groups = C > 1 && chance(0.3) ? C : 1;
    const int64_t O = groups == 1 ? dim() : C * pick(Ints{1, 2});
    const int64_t kh = std::min<int64_t>(pick(Ints{1, 2, 3}), x.shape[2]),
                  kw = std::min<int64_t>(pick(Ints{1, 3}), x.shape[3]);
    GraphValue w = chance(0.5) ? constant({O, C / groups, kh, kw}, 0.5)
                               : param({O, C / groups, kh, kw}, F32, 0.5);
    Ints pad = chance(0.3) ? Ints{1, 1} : Ints{0, 0};
    GraphValue c = emit(op::nn::conv2d(x.expr, w.expr, {1, 1}, pad, {1, 1}, groups),
                        x.bound * double(C * kh * kw));
    if (chance(0.6)) emit(op::nn::relu(c.expr), c.bound, true);
  }

  void pool() {
    GraphValue x = operand4d();
    Ints size = {std::min<int64_t>(2, x.shape[2]), std::min<int64_t>(2, x.shape[3])};
    if (chance(0.5))
      emit(op::nn::max_pool2d(x.expr, size, size), x.bound);
    else
      emit(op::nn::avg_pool2d(x.expr, size, {1, 1}), x.bound);
  }

  void batch_norm() {
    GraphValue x = operand4d();
    const int64_t C = x.shape[1];
    Expr positive = away_from_zero(param({C})).expr;
    Var bn = emit_tuple(op::nn::batch_norm(x.expr, param({C}).expr, param({C}).expr,
                                           constant({C}).expr, positive, 1, 1e-5, true, true, 0.1,
                                           /*training=*/chance(0.5)));
    emit(make<TupleGetItemNode>(bn, 0), 4 * x.bound + 4);
  }

  void float64_chain() {  // a float64 chain: the checks leave it on the host
    GraphValue x = operand(1, 3);
    GraphValue h = emit(op::astype(x.expr, DataType::Float(64)), x.bound);
    emit(op::add(h.expr, h.expr), 2 * x.bound);
  }

  Case symbolic_case() {
    GraphValue x = symbolic_param({3, 4}, 0);
    GraphValue r = emit(op::nn::relu(x.expr), 1, true);
    GraphValue s = emit(op::add(r.expr, param({4}).expr), 2);
    return finish({s});
  }

  float one_ = 1.0f;
};

TEST(ExampleNpuDifferential, RandomGraphsMatchTheHostAfterExportAndReload) {
  auto targets = [](NpuGraph&) {
    return std::vector<codegen::Target>{codegen::Target("example_npu")};
  };
  testing::DifferentialStats stats =
      testing::run_random_graphs<NpuGraph>("example_npu", 300, targets);
  EXPECT_GE(stats.offloading_cases, stats.cases * 3 / 4) << stats.summary();
  for (const char* name :
       {"example_npu.add", "example_npu.subtract", "example_npu.multiply", "example_npu.divide",
        "example_npu.relu", "example_npu.gelu", "example_npu.softmax", "example_npu.matmul",
        "example_npu.matmul_relu_fused", "example_npu.conv2d", "example_npu.conv2d_relu_fused",
        "example_npu.depthwise_conv2d", "example_npu.max_pool2d", "example_npu.avg_pool2d",
        "example_npu.batch_norm"})
    EXPECT_GT(stats.composites[name], 0) << name << " never matched: " << stats.summary();
  // What stays on the host: sigmoid, the float64 chains, the symbolic cases.
  EXPECT_GT(stats.host_kernels["relax.sigmoid"], 0) << stats.summary();
  EXPECT_GT(stats.host_kernels["relax.astype"], 0) << stats.summary();
}

}  // namespace
}  // namespace partita::backend::example_npu
