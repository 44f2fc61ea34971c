// FoldConstant and FoldBatchnormToConv2D: before/after pairs in the text format (constants in
// the metadata section), and numeric checks that folding keeps what the model computes.
#include <cmath>
#include <random>

#include "partita/codegen/vm_lowering.h"
#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"
#include "partita/op/registry.h"
#include "partita/runtime/half.h"
#include "partita/runtime/kernel.h"
#include "partita/runtime/vm.h"
#include "partita/transform/basic.h"
#include "partita/transform/fold_constant.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::plain_module;
using partita::testing::dataflow_module;
using partita::testing::modules_equal;
using partita::testing::parse;

const char* kHeader = R"(# from partita.script import ir as I
# from partita.script import relax as R
)";

std::string base64(const void* data, size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t w = uint32_t(p[i]) << 16;
    if (i + 1 < n) w |= uint32_t(p[i + 1]) << 8;
    if (i + 2 < n) w |= p[i + 2];
    out += k[(w >> 18) & 63];
    out += k[(w >> 12) & 63];
    out += i + 1 < n ? k[(w >> 6) & 63] : '=';
    out += i + 2 < n ? k[w & 63] : '=';
  }
  return out;
}

/// One line of the metadata section: a float32 (or int32) constant of `shape` holding `values`.
template <class T = float>
std::string constant_line(int index, const std::string& shape, const std::vector<T>& values) {
  const char* dtype = std::is_same_v<T, float> ? "float32" : "int32";
  return "# [" + std::to_string(index) + "] " + dtype + " " + shape + " " +
         base64(values.data(), values.size() * sizeof(T)) + "\n";
}

std::string metadata(const std::vector<std::string>& lines) {
  std::string out = "\n# Metadata (partita): relax.expr.Constant\n";
  for (const auto& l : lines) out += l;
  return out;
}

std::vector<float> iota(int n, float start = 0, float step = 1) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(start + float(i) * step);
  return v;
}

template <class F>
std::vector<float> map(const std::vector<float>& a, const std::vector<float>& b, F f) {
  std::vector<float> out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back(f(a[i], b[i]));
  return out;
}

TEST(FoldConstant, SingleOperator) {
  const std::string sig = R"(main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"))";
  auto c0 = iota(6);
  check_pass(FoldConstant(), std::string(kHeader) + dataflow_module(sig, R"(
lv: R.Tensor((2, 3), dtype="float32") = R.add(metadata["relax.expr.Constant"][0], metadata["relax.expr.Constant"][0])
gv: R.Tensor((2, 3), dtype="float32") = R.multiply(x, lv))", "gv") + metadata({constant_line(0, "(2, 3)", c0)}),
             std::string(kHeader) + dataflow_module(sig, R"(
gv: R.Tensor((2, 3), dtype="float32") = R.multiply(x, metadata["relax.expr.Constant"][0]))", "gv") + metadata({constant_line(0, "(2, 3)", map(c0, c0, [](float a, float b) { return a + b; }))}));
}

// The host has no float16 sqrt; such a call is evaluated in float32 and rounded (the scale of
// PyTorch's attention export: sqrt(1 / sqrt(head_dim)) in float16).
TEST(FoldConstant, SixteenBitFloatsWithoutAHostKernelFoldInFloat32) {
  for (const char* dt : {"float16", "bfloat16"}) {
    SCOPED_TRACE(dt);
    const std::string sig = std::string("main(x: R.Tensor((2,), dtype=\"") + dt + "\")) -> R.Tensor((2,), dtype=\"" + dt + "\")";
    std::string body = R"(
c: R.Tensor((2,), dtype="DT") = R.astype(R.const([4.0, 2.0], "float32"), dtype="DT")
lv: R.Tensor((2,), dtype="DT") = R.sqrt(c)
gv: R.Tensor((2,), dtype="DT") = R.multiply(x, lv))";
    for (size_t at; (at = body.find("DT")) != std::string::npos;) body.replace(at, 2, dt);
    IRModule after = FoldConstant()(parse(std::string(kHeader) + dataflow_module(sig, body, "gv")));
    const std::string text = script::print_module(after);
    ASSERT_EQ(text.find("R.sqrt"), std::string::npos) << text;
    // The folded constant, widened back to float32 to compare: sqrt(2) rounds to 1.4140625 in both.
    const auto* fn = after.lookup(after.get_global_var("main")).as<FunctionNode>();
    const auto* seq = fn->body.as<SeqExprNode>();
    const auto* mul = seq->blocks.at(0)->bindings.back().as<VarBindingNode>()->value.as<CallNode>();
    const auto* c = mul->args.at(1).as<ConstantNode>();
    ASSERT_TRUE(c) << text;
    const bool half = std::string(dt) == "float16";
    ASSERT_EQ(c->data.dtype(), half ? DataType::Float(16) : DataType::BFloat16());
    auto widened = [&](int i) {
      uint16_t bits = c->data.data_as<uint16_t>()[i];
      return half ? runtime::half_bits_to_float(bits) : runtime::bfloat16_bits_to_float(bits);
    };
    EXPECT_EQ(widened(0), 2.0f);
    EXPECT_EQ(widened(1), 1.4140625f);
  }
}

TEST(FoldConstant, ChainOfOperatorsFoldsToTheReturnedConstant) {
  // TVM's test_fold_multiple_relax_ops: the whole body is constant, the block disappears.
  auto c0 = iota(4, 1), c1 = iota(4, 2, 0.5f);
  std::vector<float> want;
  for (size_t i = 0; i < 4; ++i) want.push_back(c0[i] * (c0[i] + c1[i]) - c1[i]);
  check_pass(FoldConstant(), std::string(kHeader) + dataflow_module(R"(main() -> R.Tensor((2, 2), dtype="float32"))", R"(
lv0: R.Tensor((2, 2), dtype="float32") = R.add(metadata["relax.expr.Constant"][0], metadata["relax.expr.Constant"][1])
lv1: R.Tensor((2, 2), dtype="float32") = R.multiply(metadata["relax.expr.Constant"][0], lv0)
gv: R.Tensor((2, 2), dtype="float32") = R.subtract(lv1, metadata["relax.expr.Constant"][1]))", "gv") + metadata({constant_line(0, "(2, 2)", c0), constant_line(1, "(2, 2)", c1)}),
             std::string(kHeader) + R"(
@I.ir_module
class Module:
    @R.function
    def main() -> R.Tensor((2, 2), dtype="float32"):
        return metadata["relax.expr.Constant"][0]
)" + metadata({constant_line(0, "(2, 2)", want)}));
}

TEST(FoldConstant, OutsideDataflowBlocksNothingFolds) {
  // TVM's test_do_not_fold_ops_outside_dataflow.
  std::string text = std::string(kHeader) + plain_module(R"(main() -> R.Tensor((2, 3), dtype="float32"))", R"(
gv: R.Tensor((2, 3), dtype="float32") = R.add(metadata["relax.expr.Constant"][0], metadata["relax.expr.Constant"][0]))", "gv") + metadata({constant_line(0, "(2, 3)", iota(6))});
  check_pass(FoldConstant(), text, text);
}

TEST(FoldConstant, OnlyTheConstantPartOfAMixedBlock) {
  // TVM's test_fold_mixed_case: a call on the input stays, one on constants folds, and a call of
  // symbolic result shape stays although its arguments are constants.
  auto c0 = iota(4), one = std::vector<float>(4, 1.0f);
  check_pass(FoldConstant(), std::string(kHeader) + R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32"), y: R.Tensor(("n", 2), dtype="float32")) -> R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor(("n", 2), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            lv0: R.Tensor((2, 2), dtype="float32") = R.ones(R.shape([2, 2]), dtype="float32")
            lv1: R.Tensor((2, 2), dtype="float32") = R.add(metadata["relax.expr.Constant"][0], lv0)
            lv2: R.Tensor((n, 2), dtype="float32") = R.zeros(R.shape([n, 2]), dtype="float32")
            lv3: R.Tensor((2, 2), dtype="float32") = R.subtract(lv1, x)
            gv: R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor((n, 2), dtype="float32")) = (lv3, lv2)
            R.output(gv)
        return gv
)" + metadata({constant_line(0, "(2, 2)", c0)}),
             std::string(kHeader) + R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32"), y: R.Tensor(("n", 2), dtype="float32")) -> R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor(("n", 2), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            lv2: R.Tensor((n, 2), dtype="float32") = R.zeros(R.shape([n, 2]), dtype="float32")
            lv3: R.Tensor((2, 2), dtype="float32") = R.subtract(metadata["relax.expr.Constant"][0], x)
            gv: R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor((n, 2), dtype="float32")) = (lv3, lv2)
            R.output(gv)
        return gv
)" + metadata({constant_line(0, "(2, 2)", map(c0, one, [](float a, float b) { return a + b; }))}));
}

TEST(FoldConstant, ViewsShapesAndIntegers) {
  const std::string sig = R"(main(x: R.Tensor((3, 2), dtype="int32")) -> R.Tensor((3, 2), dtype="int32"))";
  // A reshape whose shape is bound to a variable (TVM inlines such shapes), a transpose, and
  // int32 arithmetic.
  std::vector<int32_t> ints{1, 2, 3, 4, 5, 6};
  std::vector<int32_t> transposed{2, 8, 4, 10, 6, 12};  // doubled as (2, 3), transposed to (3, 2)
  check_pass(FoldConstant(), std::string(kHeader) + dataflow_module(sig, R"(
s: R.Shape([2, 3]) = R.shape([2, 3])
lv0: R.Tensor((6,), dtype="int32") = R.add(metadata["relax.expr.Constant"][0], metadata["relax.expr.Constant"][0])
lv1: R.Tensor((2, 3), dtype="int32") = R.reshape(lv0, s)
lv2: R.Tensor((3, 2), dtype="int32") = R.permute_dims(lv1, axes=[1, 0])
gv: R.Tensor((3, 2), dtype="int32") = R.multiply(x, lv2))", "gv") + metadata({constant_line<int32_t>(0, "(6,)", ints)}),
             std::string(kHeader) + dataflow_module(sig, R"(
gv: R.Tensor((3, 2), dtype="int32") = R.multiply(x, metadata["relax.expr.Constant"][0]))", "gv") + metadata({constant_line<int32_t>(0, "(3, 2)", transposed)}));
}

TEST(FoldConstant, TupleResultsStay) {
  // split returns a tuple (TVM folds single tensors only). (A float16 call the host has no kernel
  // for folds in float32: SixteenBitFloatsWithoutAHostKernelFoldInFloat32.)
  std::string text = std::string(kHeader) + R"(
@I.ir_module
class Module:
    @R.function
    def main() -> R.Tuple(R.Tensor((1, 3), dtype="float32"), R.Tensor((1, 3), dtype="float32")):
        with R.dataflow():
            gv: R.Tuple(R.Tensor((1, 3), dtype="float32"), R.Tensor((1, 3), dtype="float32")) = R.split(metadata["relax.expr.Constant"][0], indices_or_sections=2, axis=0)
            R.output(gv)
        return gv

# Metadata (partita): relax.expr.Constant
# [0] float32 (2, 3) AAAAAAAAgD8AAABAAABAQAAAgEAAAKBA
)";
  check_pass(FoldConstant(), text, text);
}

TEST(FoldConstant, ImpureOperatorsStay) {
  // An operator with a side effect (and a kernel) runs at run time, whatever its arguments.
  static bool registered = [] {
    op::OpDef def;
    def.name = "test.fold_constant.impure_copy";
    def.args = {{"x"}};
    def.pure = false;
    def.fusion_kind = op::FusionKind::Opaque;
    def.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
    op::register_op(def);
    runtime::register_kernel(def.name, [](std::span<const Tensor> in, const runtime::KernelAttrs&,
                                          std::span<Tensor> out) { out[0] = in[0]; });
    return true;
  }();
  ASSERT_TRUE(registered);
  BlockBuilder bb;
  bb.begin_function("main", {});
  bb.begin_dataflow();
  Tensor c = Tensor::empty({2}, DataType::Float(32));
  c.data_as<float>()[0] = 1;
  c.data_as<float>()[1] = 2;
  Var v = bb.emit_output(op::make_call("test.fold_constant.impure_copy", {make<ConstantNode>(c)}));
  bb.end_dataflow();
  bb.emit_func_output(v);
  IRModule before = bb.get();
  EXPECT_TRUE(modules_equal(FoldConstant()(before), before));
}

// ---- FoldBatchnormToConv2D ----

// Values chosen so that every step is exact in float32: epsilon 0, variances 4 and 16, so the
// folded constants compare byte for byte with the ones computed here.
const std::vector<float> kGamma{3, -1}, kBeta{0.5f, 2}, kMean{1, -2}, kVar{4, 16};
std::vector<float> bn_scale() { return {kGamma[0] / 2, kGamma[1] / 4}; }           // 1.5, -0.25
std::vector<float> bn_shift() { return {kBeta[0] - kMean[0] * 1.5f, kBeta[1] - kMean[1] * -0.25f}; }

std::string bn_metadata_lines(int first) {
  return constant_line(first, "(2,)", kGamma) + constant_line(first + 1, "(2,)", kBeta) +
         constant_line(first + 2, "(2,)", kMean) + constant_line(first + 3, "(2,)", kVar);
}

const char* kBatchNorm =
    "R.nn.batch_norm(%s, metadata[\"relax.expr.Constant\"][%d], metadata[\"relax.expr.Constant\"][%d], "
    "metadata[\"relax.expr.Constant\"][%d], metadata[\"relax.expr.Constant\"][%d], axis=1, epsilon=0.0, "
    "center=True, scale=True, momentum=0.10000000000000001, training=False)";

std::string batch_norm_of(const std::string& data, int first) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), kBatchNorm, data.c_str(), first, first + 1, first + 2, first + 3);
  return buf;
}

const char* kBnTuple =
    "R.Tuple(R.Tensor((1, 2, 4, 4), dtype=\"float32\"), R.Tensor((2,), dtype=\"float32\"), "
    "R.Tensor((2,), dtype=\"float32\"))";

TEST(FoldBatchnormToConv2D, IntoThePrecedingConvolutionWithItsBias) {
  const std::string sig = R"(main(x: R.Tensor((1, 2, 4, 4), dtype="float32")) -> R.Tensor((1, 2, 4, 4), dtype="float32"))";
  // W (2, 1, 3, 3) depthwise (groups 2), bias (1, 2, 1, 1).
  auto w = iota(18, -4, 0.5f);
  std::vector<float> bias{0.25f, -1};
  auto s = bn_scale(), t = bn_shift();
  std::vector<float> w2;
  for (int o = 0; o < 2; ++o)
    for (int k = 0; k < 9; ++k) w2.push_back(w[size_t(o * 9 + k)] * s[size_t(o)]);
  std::vector<float> b2{bias[0] * s[0] + t[0], bias[1] * s[1] + t[1]};
  std::string before = std::string(kHeader) + dataflow_module(sig, R"(
lv: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.conv2d(x, metadata["relax.expr.Constant"][0], strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=2, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
lv1: R.Tensor((1, 2, 4, 4), dtype="float32") = R.add(lv, metadata["relax.expr.Constant"][1])
lv2: )" + std::string(kBnTuple) + " = " + batch_norm_of("lv1", 2) + R"(
lv3: R.Tensor((1, 2, 4, 4), dtype="float32") = lv2[0]
gv: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.relu(lv3))", "gv") + metadata({constant_line(0, "(2, 1, 3, 3)", w), constant_line(1, "(1, 2, 1, 1)", bias), bn_metadata_lines(2)});
  std::string expected = std::string(kHeader) + dataflow_module(sig, R"(
lv: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.conv2d(x, metadata["relax.expr.Constant"][0], strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=2, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
lv1: R.Tensor((1, 2, 4, 4), dtype="float32") = R.add(lv, metadata["relax.expr.Constant"][1])
gv: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.relu(lv1))", "gv") + metadata({constant_line(0, "(2, 1, 3, 3)", w2), constant_line(1, "(1, 2, 1, 1)", b2)});
  check_pass(FoldForInference(), before, expected);
  // Without FoldConstant the new weight and bias are arithmetic on constants, and no
  // batch_norm is left.
  IRModule unfolded = FoldBatchnormToConv2D()(parse(before));
  EXPECT_TRUE(well_formed(unfolded));
  std::string text = script::print_module(unfolded);
  EXPECT_EQ(text.find("batch_norm"), std::string::npos) << text;
  EXPECT_NE(text.find("R.sqrt("), std::string::npos) << text;
}

TEST(FoldBatchnormToConv2D, IntoTheFollowingUnpaddedConvolution) {
  const std::string sig = R"(main(x: R.Tensor((1, 2, 4, 4), dtype="float32")) -> R.Tensor((1, 3, 4, 4), dtype="float32"))";
  // bn(x) -> conv2d(W (3, 2, 1, 1)): W' = W * s[i], bias = sum_i W * t[i].
  auto w = iota(6, -1, 0.5f);
  auto s = bn_scale(), t = bn_shift();
  std::vector<float> w2, b2;
  for (int o = 0; o < 3; ++o) {
    float acc = 0;
    for (int i = 0; i < 2; ++i) {
      w2.push_back(w[size_t(o * 2 + i)] * s[size_t(i)]);
      acc += w[size_t(o * 2 + i)] * t[size_t(i)];
    }
    b2.push_back(acc);
  }
  std::string before = std::string(kHeader) + dataflow_module(sig, R"(
lv: )" + std::string(kBnTuple) + " = " + batch_norm_of("x", 1) + R"(
lv1: R.Tensor((1, 2, 4, 4), dtype="float32") = lv[0]
gv: R.Tensor((1, 3, 4, 4), dtype="float32") = R.nn.conv2d(lv1, metadata["relax.expr.Constant"][0], strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void"))", "gv") + metadata({constant_line(0, "(3, 2, 1, 1)", w), bn_metadata_lines(1)});
  std::string expected = std::string(kHeader) + dataflow_module(sig, R"(
lv: R.Tensor((1, 3, 4, 4), dtype="float32") = R.nn.conv2d(x, metadata["relax.expr.Constant"][0], strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
gv: R.Tensor((1, 3, 4, 4), dtype="float32") = R.add(lv, metadata["relax.expr.Constant"][1]))", "gv") + metadata({constant_line(0, "(3, 2, 1, 1)", w2), constant_line(1, "(1, 3, 1, 1)", b2)});
  check_pass(FoldForInference(), before, expected);
}

TEST(FoldBatchnormToConv2D, LeavesWhatItCannotFold) {
  // A padded following convolution (its padding would see zeros where the batch_norm gives its
  // shift), a preceding one whose result is also used elsewhere, a training-mode batch_norm.
  auto w = iota(4, 1);
  std::string text = std::string(kHeader) + R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), dtype="float32")) -> R.Tuple(R.Tensor((1, 2, 4, 4), dtype="float32"), R.Tensor((1, 2, 4, 4), dtype="float32"), R.Tensor((1, 2, 4, 4), dtype="float32")):
        with R.dataflow():
            lv: )" + std::string(kBnTuple) + " = " + batch_norm_of("x", 1) + R"(
            lv1: R.Tensor((1, 2, 4, 4), dtype="float32") = lv[0]
            lv2: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.conv2d(lv1, metadata["relax.expr.Constant"][0], strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
            lv3: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.conv2d(x, metadata["relax.expr.Constant"][0], strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
            lv4: )" + std::string(kBnTuple) + " = " + batch_norm_of("lv3", 1) + R"(
            lv5: R.Tensor((1, 2, 4, 4), dtype="float32") = lv4[0]
            lv6: R.Tensor((1, 2, 4, 4), dtype="float32") = R.add(lv5, lv3)
            lv7: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.conv2d(x, metadata["relax.expr.Constant"][0], strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
            lv8: )" + std::string(kBnTuple) + " = " +
                     [] {
                       std::string s = batch_norm_of("lv7", 1);
                       return s.replace(s.find("training=False"), 14, "training=True");
                     }() + R"(
            lv9: R.Tensor((1, 2, 4, 4), dtype="float32") = lv8[0]
            gv: R.Tuple(R.Tensor((1, 2, 4, 4), dtype="float32"), R.Tensor((1, 2, 4, 4), dtype="float32"), R.Tensor((1, 2, 4, 4), dtype="float32")) = (lv2, lv6, lv9)
            R.output(gv)
        return gv
)" + metadata({constant_line(0, "(2, 2, 1, 1)", w), bn_metadata_lines(1)});
  check_pass(FoldBatchnormToConv2D(), text, text);
}

// Folding must not change what the model computes: random weights and statistics, a
// conv -> bn -> relu -> conv(1x1) -> bn chain with the default epsilon, run before and after.
TEST(FoldBatchnormToConv2D, KeepsTheResultOnRandomValues) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1), pos(0.5f, 2);
  auto tensor = [&](std::vector<int64_t> shape, bool positive = false) {
    Tensor t = Tensor::empty(shape, DataType::Float(32));
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = positive ? pos(rng) : u(rng);
    return Expr(make<ConstantNode>(t));
  };
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{1, 4, 6, 6}, DataType::Float(32)));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  auto bn = [&](Expr data, int64_t c) {
    Expr t = bb.emit(op::nn::batch_norm(data, tensor({c}, true), tensor({c}), tensor({c}), tensor({c}, true), 1,
                                        1e-5, true, true, 0.1, false));
    return bb.emit(make<TupleGetItemNode>(t, 0));
  };
  Expr y = bb.emit(op::nn::conv2d(x, tensor({8, 4, 3, 3}), {2, 2}, {1, 1, 1, 1}));
  y = bn(y, 8);
  Expr r = bb.emit(op::nn::relu(y));
  Expr b2 = bn(r, 8);
  Expr z = bb.emit(op::nn::conv2d(b2, tensor({5, 8, 1, 1})));
  Var out = bb.emit_output(z);
  bb.end_dataflow();
  bb.emit_func_output(out);
  IRModule before = bb.get();
  IRModule after = FoldForInference()(before);
  ASSERT_TRUE(well_formed(after));
  std::string text = script::print_module(after);
  EXPECT_EQ(text.find("batch_norm"), std::string::npos) << text;

  Tensor input = Tensor::empty({1, 4, 6, 6}, DataType::Float(32));
  for (int64_t i = 0; i < input.numel(); ++i) input.data_as<float>()[i] = u(rng);
  auto run = [&](const IRModule& m) {
    runtime::VirtualMachine vm(codegen::build_vm_executable(m));
    return vm.invoke("main", {input})[0];
  };
  Tensor want = run(before), got = run(after);
  ASSERT_EQ(got.shape(), want.shape());
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, double(std::abs(want.data_as<float>()[i])));
  for (int64_t i = 0; i < want.numel(); ++i)
    EXPECT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], 1e-5 * scale) << "element " << i;
}

}  // namespace
}  // namespace partita::transform
