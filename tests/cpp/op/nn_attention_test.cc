// relax.nn.attention / relax.nn.attention_bias: inference (TVM's rules and errors), the text
// format as TVM prints it, and the host kernel against the operator graph it stands for.
#include <cmath>
#include <random>

#include "partita/codegen/vm_lowering.h"
#include "partita/ir/block_builder.h"
#include "partita/runtime/half.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/attention.h"
#include "test_helpers.h"

namespace partita::op::testing {
namespace {

Expr attention(std::vector<Expr> args, std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
  const char* name = args.size() == 4 ? "relax.nn.attention_bias" : "relax.nn.attention";
  return make_call(name, std::move(args), std::move(attrs));
}

TEST(Attention, InfersTheQueryLayoutWithTheValueHeadDim) {
  Expr c = attention({tvar("q", {2, 7, 4, 16}), tvar("k", {2, 9, 4, 16}), tvar("v", {2, 9, 4, 8})});
  EXPECT_EQ(describe(infer(c)), "(2, 7, 4, 8) float32");
}

TEST(Attention, GroupedQueryHeadsAndSymbolicLengths) {
  PrimExpr n = make<PrimVarNode>("n");
  Expr c = attention({svar("q", {int_imm(1), n, int_imm(8), int_imm(64)}, DataType::Float(16)),
                      svar("k", {int_imm(1), n, int_imm(2), int_imm(64)}, DataType::Float(16)),
                      svar("v", {int_imm(1), n, int_imm(2), int_imm(64)}, DataType::Float(16))});
  EXPECT_EQ(describe(infer(c)), "(1, n, 8, 64) float16");
}

TEST(Attention, BiasBroadcastsOverBatchHeadsAndQueries) {
  Expr q = tvar("q", {2, 7, 4, 16}), k = tvar("k", {2, 9, 4, 16}), v = tvar("v", {2, 9, 4, 16});
  EXPECT_EQ(describe(infer(attention({q, k, v, tvar("b", {1, 1, 1, 9})}))), "(2, 7, 4, 16) float32");
  EXPECT_EQ(describe(infer(attention({q, k, v, tvar("b", {2, 4, 7, 9})}))), "(2, 7, 4, 16) float32");
  EXPECT_NE(error_of([&] { infer(attention({q, k, v, tvar("b", {3, 1, 1, 9})})); }).find("batch size"),
            std::string::npos);
  EXPECT_NE(error_of([&] { infer(attention({q, k, v, tvar("b", {1, 1, 7, 8})})); }).find("sequence length"),
            std::string::npos);
  EXPECT_NE(error_of([&] { infer(attention({q, k, v, tvar("b", {7, 9})})); }).find("bias should have 4"),
            std::string::npos);
}

TEST(Attention, MismatchesNameTheOperandAndDimension) {
  Expr q = tvar("q", {2, 7, 4, 16});
  EXPECT_NE(error_of([&] { infer(attention({tvar("q", {7, 4, 16}), q, q})); }).find("query should have 4"),
            std::string::npos);
  std::string heads = error_of([&] { infer(attention({q, tvar("k", {2, 9, 3, 16}), tvar("v", {2, 9, 3, 16})})); });
  EXPECT_NE(heads.find("multiple of the key number of heads"), std::string::npos) << heads;
  std::string dim = error_of([&] { infer(attention({q, tvar("k", {2, 9, 4, 8}), tvar("v", {2, 9, 4, 8})})); });
  EXPECT_NE(dim.find("dimension of heads"), std::string::npos) << dim;
  std::string len = error_of([&] { infer(attention({q, tvar("k", {2, 9, 4, 16}), tvar("v", {2, 5, 4, 16})})); });
  EXPECT_NE(len.find("sequence length"), std::string::npos) << len;
  std::string dtype = error_of(
      [&] { infer(attention({q, tvar("k", {2, 9, 4, 16}, DataType::Float(16)), tvar("v", {2, 9, 4, 16})})); });
  EXPECT_NE(dtype.find("key has dtype float16"), std::string::npos) << dtype;
  std::string mask = error_of([&] { infer(attention({q, q, q}, {{"causal_mask", std::string("Upper")}})); });
  EXPECT_NE(mask.find("causal_mask must be"), std::string::npos) << mask;
}

TEST(Attention, PrintsAndParsesAsTvm) {
  const std::string text = R"(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 7, 4, 16), dtype="float32"), k: R.Tensor((2, 9, 4, 16), dtype="float32"), v: R.Tensor((2, 9, 4, 16), dtype="float32"), b: R.Tensor((2, 4, 7, 9), dtype="float32")) -> R.Tensor((2, 7, 4, 16), dtype="float32"):
        gv: R.Tensor((2, 7, 4, 16), dtype="float32") = R.nn.attention(q, k, v, scale=None, causal_mask=None, window_size=None)
        gv1: R.Tensor((2, 7, 4, 16), dtype="float32") = R.nn.attention_bias(q, k, v, b, scale=T.float32(0.10000000000000001), causal_mask="BottomRight", window_size=None)
        return gv1)";
  IRModule mod = script::parse_module(text);
  EXPECT_EQ(script::print_module(mod), text);
  // TVM's R.nn.attention(q, k, v, bias) is attention_bias.
  std::string sugar = text;
  sugar.replace(sugar.find("R.nn.attention_bias"), 19, "R.nn.attention");
  EXPECT_EQ(script::print_module(script::parse_module(sugar)), text);
}

// ---- the host kernel ----------------------------------------------------------------------

Tensor random(std::vector<int64_t> shape, uint32_t seed, DataType dt = DataType::Float(32)) {
  Tensor t = Tensor::empty(std::move(shape), dt);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::Float(16)) t.data_as<runtime::Half>()[i] = runtime::Half::from(u(rng));
    else t.data_as<float>()[i] = u(rng);
  }
  return t;
}

float at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::Float(16) ? t.data_as<runtime::Half>()[i].to_float() : t.data_as<float>()[i];
}

IRModule single_call(const std::vector<Tensor>& inputs, std::vector<std::pair<std::string, AttrValue>> attrs) {
  std::vector<Var> params;
  const char* names[] = {"q", "k", "v", "b"};
  for (size_t i = 0; i < inputs.size(); ++i) params.push_back(tvar(names[i], inputs[i].shape(), inputs[i].dtype()));
  BlockBuilder bb;
  bb.begin_function("main", params);
  bb.begin_dataflow();
  Var out = bb.emit_output(attention(std::vector<Expr>(params.begin(), params.end()), std::move(attrs)));
  bb.end_dataflow();
  bb.emit_func_output(out);
  return bb.get();
}

Tensor run(const IRModule& mod, const std::vector<Tensor>& inputs) {
  runtime::VirtualMachine vm(codegen::build_vm_executable(mod));
  return vm.invoke("main", inputs)[0];
}

void expect_close(const Tensor& got, const Tensor& want, float tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(at(got, i), at(want, i), tol) << "element " << i;
}

struct KernelCase {
  std::vector<int64_t> q, k, v, bias;
  std::vector<std::pair<std::string, AttrValue>> attrs;
};

// The host kernel against the same computation as matmul / softmax host kernels
// (DecomposeAttention): two independent implementations of TVM's definition.
TEST(AttentionKernel, MatchesTheDecomposedGraph) {
  const std::vector<KernelCase> cases = {
      {{2, 5, 3, 8}, {2, 5, 3, 8}, {2, 5, 3, 8}, {}, {}},
      {{1, 4, 2, 16}, {1, 6, 2, 16}, {1, 6, 2, 4}, {}, {{"scale", 0.3}}},
      {{2, 6, 2, 8}, {2, 6, 2, 8}, {2, 6, 2, 8}, {}, {{"causal_mask", std::string("TopLeft")}}},
      {{1, 3, 2, 8}, {1, 7, 2, 8}, {1, 7, 2, 8}, {}, {{"causal_mask", std::string("BottomRight")}}},
      {{1, 7, 2, 8}, {1, 3, 2, 8}, {1, 3, 2, 8}, {}, {{"causal_mask", std::string("BottomRight")}}},
      {{2, 4, 3, 8}, {2, 5, 3, 8}, {2, 5, 3, 8}, {2, 1, 1, 5}, {}},
      {{2, 4, 3, 8}, {2, 5, 3, 8}, {2, 5, 3, 8}, {1, 3, 4, 5}, {{"causal_mask", std::string("TopLeft")}}},
  };
  uint32_t seed = 1;
  for (const KernelCase& c : cases) {
    std::vector<Tensor> inputs = {random(c.q, seed++), random(c.k, seed++), random(c.v, seed++)};
    if (!c.bias.empty()) inputs.push_back(random(c.bias, seed++));
    IRModule mod = single_call(inputs, c.attrs);
    IRModule decomposed = transform::DecomposeAttention()(mod);
    ASSERT_EQ(script::print_module(decomposed).find("attention"), std::string::npos);
    expect_close(run(mod, inputs), run(decomposed, inputs), 1e-5f);
  }
}

TEST(AttentionKernel, UniformScoresAverageTheValuesAndGroupsShareKeyHeads) {
  // Zero queries give equal scores: each output row is the mean of the visible value rows. With
  // 4 query heads over 2 key/value heads, heads 0-1 read value head 0 and heads 2-3 head 1.
  Tensor q = Tensor::empty({1, 3, 4, 2}, DataType::Float(32));
  for (int64_t i = 0; i < q.numel(); ++i) q.data_as<float>()[i] = 0;
  Tensor k = random({1, 3, 2, 2}, 7);
  Tensor v = Tensor::empty({1, 3, 2, 1}, DataType::Float(32));
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t h = 0; h < 2; ++h) v.data_as<float>()[j * 2 + h] = float((j + 1) * (h == 0 ? 1 : 10));
  Tensor out = run(single_call({q, k, v}, {{"causal_mask", std::string("TopLeft")}}), {q, k, v});
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{1, 3, 4, 1}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t n = 0; n < 4; ++n) {
      const float mean = float(i + 2) / 2.f * (n < 2 ? 1.f : 10.f);  // mean of 1..i+1, scaled
      EXPECT_NEAR(out.data_as<float>()[i * 4 + n], mean, 1e-5f) << "query " << i << " head " << n;
    }
}

TEST(AttentionKernel, Float16ComputesInFloat) {
  std::vector<Tensor> h = {random({1, 8, 2, 16}, 3, DataType::Float(16)), random({1, 8, 2, 16}, 4, DataType::Float(16)),
                           random({1, 8, 2, 16}, 5, DataType::Float(16))};
  std::vector<Tensor> f;
  for (const Tensor& t : h) {
    Tensor x = Tensor::empty(t.shape(), DataType::Float(32));
    for (int64_t i = 0; i < t.numel(); ++i) x.data_as<float>()[i] = at(t, i);
    f.push_back(x);
  }
  Tensor got = run(single_call(h, {}), h);
  Tensor want = run(single_call(f, {}), f);
  expect_close(got, want, 2e-3f);  // the result's rounding to float16 only
}

TEST(AttentionKernel, SlidingWindowIsRefusedByName) {
  std::vector<Tensor> in = {random({1, 2, 1, 4}, 1), random({1, 2, 1, 4}, 2), random({1, 2, 1, 4}, 3)};
  std::string why = error_of([&] { run(single_call(in, {{"window_size", int64_t(2)}}), in); });
  EXPECT_NE(why.find("window_size"), std::string::npos) << why;
}

}  // namespace
}  // namespace partita::op::testing
