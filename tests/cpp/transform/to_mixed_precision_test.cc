// ToMixedPrecision: cases ported from TVM's tests/python/relax/test_transform_to_mixed_precision.py
// (with precise return annotations), for out_dtype float32 and float16.
#include "partita/support/error.h"
#include "partita/transform/to_mixed_precision.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::dataflow_module;

const DataType f16 = DataType::Float(16);

TEST(ToMixedPrecision, Conv2d) {
  const std::string sig = R"(main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")) -> R.Tensor((2, 4, 26, 26), dtype="float32"))";
  const std::string input = dataflow_module(sig, R"(
gv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(x, w, out_dtype="float32"))", "gv");
  check_pass(ToMixedPrecision(), input, dataflow_module(sig, R"(
lv: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(x, dtype="float16")
lv1: R.Tensor((4, 3, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
gv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(lv, lv1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32"))", "gv"));
  check_pass(ToMixedPrecision(f16), input, dataflow_module(sig, R"(
lv: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(x, dtype="float16")
lv1: R.Tensor((4, 3, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
lv2: R.Tensor((2, 4, 26, 26), dtype="float16") = R.nn.conv2d(lv, lv1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float16")
gv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.astype(lv2, dtype="float32"))", "gv"));
}

TEST(ToMixedPrecision, Conv2dRelu) {
  const std::string sig = R"(main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")) -> R.Tensor((2, 4, 26, 26), dtype="float32"))";
  check_pass(ToMixedPrecision(), dataflow_module(sig, R"(
lv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(x, w, out_dtype="float32")
gv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.relu(lv))", "gv"), dataflow_module(sig, R"(
lv: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(x, dtype="float16")
lv1: R.Tensor((4, 3, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
lv2: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(lv, lv1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
lv_1: R.Tensor((2, 4, 26, 26), dtype="float16") = R.astype(lv2, dtype="float16")
lv3: R.Tensor((2, 4, 26, 26), dtype="float16") = R.nn.relu(lv_1)
gv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.astype(lv3, dtype="float32"))", "gv"));
}

TEST(ToMixedPrecision, GemmAddSilu) {
  const std::string sig = R"(main(x: R.Tensor((2, 320), dtype="float32"), w1: R.Tensor((320, 1280), dtype="float32"), w2: R.Tensor((2, 1280), dtype="float32")) -> R.Tensor((2, 1280), dtype="float32"))";
  const std::string input = dataflow_module(sig, R"(
gv0: R.Tensor((2, 1280), dtype="float32") = R.matmul(x, w1, out_dtype="float32")
gv1: R.Tensor((2, 1280), dtype="float32") = R.add(gv0, w2)
gv2: R.Tensor((2, 1280), dtype="float32") = R.nn.silu(gv1))", "gv2");
  check_pass(ToMixedPrecision(), input, dataflow_module(sig, R"(
lv: R.Tensor((2, 320), dtype="float16") = R.astype(x, dtype="float16")
lv1: R.Tensor((320, 1280), dtype="float16") = R.astype(w1, dtype="float16")
lv2: R.Tensor((2, 1280), dtype="float32") = R.matmul(lv, lv1, out_dtype="float32")
gv0: R.Tensor((2, 1280), dtype="float16") = R.astype(lv2, dtype="float16")
lv3: R.Tensor((2, 1280), dtype="float32") = R.astype(gv0, dtype="float32")
gv1: R.Tensor((2, 1280), dtype="float32") = R.add(lv3, w2)
gv2: R.Tensor((2, 1280), dtype="float32") = R.nn.silu(gv1))", "gv2"));
  check_pass(ToMixedPrecision(f16), input, dataflow_module(sig, R"(
lv: R.Tensor((2, 320), dtype="float16") = R.astype(x, dtype="float16")
lv1: R.Tensor((320, 1280), dtype="float16") = R.astype(w1, dtype="float16")
gv0: R.Tensor((2, 1280), dtype="float16") = R.matmul(lv, lv1, out_dtype="float16")
lv2: R.Tensor((2, 1280), dtype="float32") = R.astype(gv0, dtype="float32")
gv1: R.Tensor((2, 1280), dtype="float32") = R.add(lv2, w2)
gv2: R.Tensor((2, 1280), dtype="float32") = R.nn.silu(gv1))", "gv2"));
}

// softmax is "never": x stays float32 for it, so x is cast where conv2d needs it.
TEST(ToMixedPrecision, Conv2dSoftmax) {
  const std::string sig = R"(main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((3, 3, 3, 3), dtype="float32")) -> R.Tensor((2, 3, 28, 28), dtype="float32"))";
  check_pass(ToMixedPrecision(), dataflow_module(sig, R"(
gv: R.Tensor((2, 3, 28, 28), dtype="float32") = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
gv1: R.Tensor((2, 3, 28, 28), dtype="float32") = R.nn.softmax(x, axis=1)
gv2: R.Tensor((2, 3, 28, 28), dtype="float32") = R.add(gv, gv1))", "gv2"), dataflow_module(sig, R"(
lv: R.Tensor((3, 3, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
lv1: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(x, dtype="float16")
lv2: R.Tensor((2, 3, 28, 28), dtype="float32") = R.nn.conv2d(lv1, lv, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
gv: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(lv2, dtype="float16")
gv1: R.Tensor((2, 3, 28, 28), dtype="float32") = R.nn.softmax(x, axis=1)
lv3: R.Tensor((2, 3, 28, 28), dtype="float32") = R.astype(gv, dtype="float32")
gv2: R.Tensor((2, 3, 28, 28), dtype="float32") = R.add(lv3, gv1))", "gv2"));
}

// Outside dataflow blocks nothing changes; int tensors are never cast.
TEST(ToMixedPrecision, LeavesNonDataflowAndIntegersAlone) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32"), i: R.Tensor((2, 4), dtype="int32")) -> R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 4), dtype="int32")):
        a: R.Tensor((2, 4), dtype="float32") = R.matmul(x, w)
        with R.dataflow():
            b: R.Tensor((2, 4), dtype="int32") = R.add(i, i)
            R.output(b)
        return (a, b)
)";
  check_pass(ToMixedPrecision(), text, text);
}

// TVM's test_convert_sig: parameters given in float16 need no cast.
TEST(ToMixedPrecision, Fp16InputNames) {
  check_pass(ToMixedPrecision(f16, {"w", "bias"}), dataflow_module(R"(main(x: R.Tensor((1, 4, 64, 64), dtype="float32"), w: R.Tensor((512, 4, 3, 3), dtype="float32"), bias: R.Tensor((512,), dtype="float32")) -> R.Tensor((1, 512, 62, 62), dtype="float32"))", R"(
lv142: R.Tensor((1, 512, 62, 62), dtype="float32") = R.nn.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], out_dtype="float32")
lv143: R.Tensor((1, 512, 1, 1), dtype="float32") = R.reshape(bias, R.shape([1, 512, 1, 1]))
lv144: R.Tensor((1, 512, 62, 62), dtype="float32") = R.add(lv142, lv143))", "lv144"), dataflow_module(R"(main(x: R.Tensor((1, 4, 64, 64), dtype="float32"), w: R.Tensor((512, 4, 3, 3), dtype="float16"), bias: R.Tensor((512,), dtype="float16")) -> R.Tensor((1, 512, 62, 62), dtype="float32"))", R"(
lv: R.Tensor((1, 4, 64, 64), dtype="float16") = R.astype(x, dtype="float16")
lv142: R.Tensor((1, 512, 62, 62), dtype="float16") = R.nn.conv2d(lv, w, strides=[1, 1], padding=[0, 0, 0, 0], out_dtype="float16")
lv143: R.Tensor((1, 512, 1, 1), dtype="float16") = R.reshape(bias, R.shape([1, 512, 1, 1]))
lv1: R.Tensor((1, 512, 62, 62), dtype="float16") = R.add(lv142, lv143)
lv144: R.Tensor((1, 512, 62, 62), dtype="float32") = R.astype(lv1, dtype="float32"))", "lv144"));
}

// TVM's test_tuple_get (smaller shapes): a float32 operand keeps the add in float32; the tuple
// of split and its items follow.
TEST(ToMixedPrecision, TupleGet) {
  const std::string sig = R"(main(x: R.Tensor((1, 4, 8, 8), dtype="float32"), w: R.Tensor((8, 4, 3, 3), dtype="float32"), bias: R.Tensor((8, 1, 1), dtype="float32")) -> R.Tensor((1, 4, 8, 8), dtype="float32"))";
  check_pass(ToMixedPrecision(f16), dataflow_module(sig, R"(
conv: R.Tensor((1, 8, 8, 8), dtype="float32") = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
bias_out: R.Tensor((1, 8, 8, 8), dtype="float32") = R.add(conv, bias)
split: R.Tuple(R.Tensor((1, 4, 8, 8), dtype="float32"), R.Tensor((1, 4, 8, 8), dtype="float32")) = R.split(bias_out, indices_or_sections=2, axis=1)
lv3: R.Tensor((1, 4, 8, 8), dtype="float32") = split[0]
lv4: R.Tensor((1, 4, 8, 8), dtype="float32") = split[1]
out: R.Tensor((1, 4, 8, 8), dtype="float32") = R.add(lv3, lv4))", "out"), dataflow_module(sig, R"(
lv: R.Tensor((1, 4, 8, 8), dtype="float16") = R.astype(x, dtype="float16")
lv1: R.Tensor((8, 4, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
conv: R.Tensor((1, 8, 8, 8), dtype="float16") = R.nn.conv2d(lv, lv1, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float16")
lv2: R.Tensor((1, 8, 8, 8), dtype="float32") = R.astype(conv, dtype="float32")
bias_out: R.Tensor((1, 8, 8, 8), dtype="float32") = R.add(lv2, bias)
split: R.Tuple(R.Tensor((1, 4, 8, 8), dtype="float32"), R.Tensor((1, 4, 8, 8), dtype="float32")) = R.split(bias_out, indices_or_sections=2, axis=1)
lv3: R.Tensor((1, 4, 8, 8), dtype="float32") = split[0]
lv4: R.Tensor((1, 4, 8, 8), dtype="float32") = split[1]
out: R.Tensor((1, 4, 8, 8), dtype="float32") = R.add(lv3, lv4))", "out"));
}

// TVM's test_tuple: values reaching a conv2d only through tuples are stored in float16.
TEST(ToMixedPrecision, Tuple) {
  const std::string sig = R"(main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32"), w_2: R.Tensor((4, 4, 3, 3), dtype="float32")) -> R.Tensor((2, 4, 24, 24), dtype="float32"))";
  check_pass(ToMixedPrecision(), dataflow_module(sig, R"(
gv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(x, w, out_dtype="float32")
gv2: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(x, w, out_dtype="float32")
gv3: R.Tuple(R.Tensor((2, 4, 26, 26), dtype="float32"), R.Tensor((2, 4, 26, 26), dtype="float32")) = (gv, gv2)
gv4: R.Tuple(R.Tuple(R.Tensor((2, 4, 26, 26), dtype="float32"), R.Tensor((2, 4, 26, 26), dtype="float32")), R.Tensor((2, 4, 26, 26), dtype="float32")) = (gv3, gv2)
gv5: R.Tuple(R.Tensor((2, 4, 26, 26), dtype="float32"), R.Tensor((2, 4, 26, 26), dtype="float32")) = gv4[0]
gv6: R.Tensor((2, 4, 26, 26), dtype="float32") = gv5[0]
gv7: R.Tensor((2, 4, 24, 24), dtype="float32") = R.nn.conv2d(gv6, w_2, out_dtype="float32"))", "gv7"), dataflow_module(sig, R"(
lv: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(x, dtype="float16")
lv1: R.Tensor((4, 3, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
lv2: R.Tensor((4, 4, 3, 3), dtype="float16") = R.astype(w_2, dtype="float16")
lv3: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(lv, lv1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
gv: R.Tensor((2, 4, 26, 26), dtype="float16") = R.astype(lv3, dtype="float16")
lv4: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(lv, lv1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
gv2: R.Tensor((2, 4, 26, 26), dtype="float16") = R.astype(lv4, dtype="float16")
gv3: R.Tuple(R.Tensor((2, 4, 26, 26), dtype="float16"), R.Tensor((2, 4, 26, 26), dtype="float16")) = (gv, gv2)
gv4: R.Tuple(R.Tuple(R.Tensor((2, 4, 26, 26), dtype="float16"), R.Tensor((2, 4, 26, 26), dtype="float16")), R.Tensor((2, 4, 26, 26), dtype="float16")) = (gv3, gv2)
gv5: R.Tuple(R.Tensor((2, 4, 26, 26), dtype="float16"), R.Tensor((2, 4, 26, 26), dtype="float16")) = gv4[0]
gv6: R.Tensor((2, 4, 26, 26), dtype="float16") = gv5[0]
gv7: R.Tensor((2, 4, 24, 24), dtype="float32") = R.nn.conv2d(gv6, lv2, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32"))", "gv7"));
}

// TVM's test_relu_conv2d_relu: a value made in float32 and used only by conv2d is cast once where
// it is made.
TEST(ToMixedPrecision, ReluConv2dRelu) {
  const std::string sig = R"(main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")) -> R.Tensor((2, 4, 26, 26), dtype="float32"))";
  const std::string input = dataflow_module(sig, R"(
x0: R.Tensor((2, 3, 28, 28), dtype="float32") = R.nn.relu(x)
gv: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(x0, w, out_dtype="float32")
gv2: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.relu(gv))", "gv2");
  check_pass(ToMixedPrecision(), input, dataflow_module(sig, R"(
lv: R.Tensor((4, 3, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
x0: R.Tensor((2, 3, 28, 28), dtype="float32") = R.nn.relu(x)
lv1: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(x0, dtype="float16")
lv2: R.Tensor((2, 4, 26, 26), dtype="float32") = R.nn.conv2d(lv1, lv, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
gv: R.Tensor((2, 4, 26, 26), dtype="float16") = R.astype(lv2, dtype="float16")
lv3: R.Tensor((2, 4, 26, 26), dtype="float16") = R.nn.relu(gv)
gv2: R.Tensor((2, 4, 26, 26), dtype="float32") = R.astype(lv3, dtype="float32"))", "gv2"));
  check_pass(ToMixedPrecision(f16), input, dataflow_module(sig, R"(
lv: R.Tensor((4, 3, 3, 3), dtype="float16") = R.astype(w, dtype="float16")
x0: R.Tensor((2, 3, 28, 28), dtype="float32") = R.nn.relu(x)
lv1: R.Tensor((2, 3, 28, 28), dtype="float16") = R.astype(x0, dtype="float16")
gv: R.Tensor((2, 4, 26, 26), dtype="float16") = R.nn.conv2d(lv1, lv, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float16")
lv2: R.Tensor((2, 4, 26, 26), dtype="float16") = R.nn.relu(gv)
gv2: R.Tensor((2, 4, 26, 26), dtype="float32") = R.astype(lv2, dtype="float32"))", "gv2"));
}

TEST(ToMixedPrecision, RejectsOtherAccumulationTypes) {
  EXPECT_THROW(ToMixedPrecision(DataType::Float(64)), Error);
}

}  // namespace
}  // namespace partita::transform
