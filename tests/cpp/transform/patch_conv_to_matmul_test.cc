// PatchConvToMatmul: the text of the rewrite, the convolutions it leaves alone, and the same
// values from the rewritten module as from the convolution (on the host VM) over shapes that
// do and do not divide into whole patches.
#include "../random_tensor.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"
#include "partita/runtime/vm.h"
#include "partita/transform/patch_conv_to_matmul.h"
#include "pass_test_util.h"

namespace partita::testing {
namespace {

TEST(PatchConvToMatmul, APatchEmbeddingBecomesAProduct) {
  check_pass(transform::PatchConvToMatmul(),
             dataflow_module(
                 R"(main(x: R.Tensor((2, 3, 8, 12), "float32"), w: R.Tensor((5, 3, 4, 4), "float32")) -> R.Tensor((2, 5, 2, 3), "float32"))",
                 R"(y = R.nn.conv2d(x, w, strides=[4, 4]))", "y"),
             dataflow_module(
                 R"(main(x: R.Tensor((2, 3, 8, 12), "float32"), w: R.Tensor((5, 3, 4, 4), "float32")) -> R.Tensor((2, 5, 2, 3), "float32"))",
                 R"(
lv = R.reshape(x, R.shape([2, 3, 2, 4, 3, 4]))
lv1 = R.permute_dims(lv, axes=[0, 2, 4, 1, 3, 5])
lv2 = R.reshape(lv1, R.shape([2, 6, 48]))
lv3 = R.reshape(w, R.shape([5, 48]))
lv4 = R.permute_dims(lv3, axes=[1, 0])
lv5 = R.matmul(lv2, lv4)
lv6 = R.permute_dims(lv5, axes=[0, 2, 1])
y = R.reshape(lv6, R.shape([2, 5, 2, 3]))
)",
                 "y"));
}

TEST(PatchConvToMatmul, OtherConvolutionsAreLeftAlone) {
  for (const char* conv : {
           "R.nn.conv2d(x, w, strides=[4, 4], padding=[1, 1])",              // padded
           "R.nn.conv2d(x, w, strides=[2, 2])",                               // overlapping windows
           "R.nn.conv2d(x, w, strides=[4, 4], dilation=[2, 2])"}) {         // dilated
    std::string text = dataflow_module(
        R"(main(x: R.Tensor((1, 3, 16, 16), "float32"), w: R.Tensor((5, 3, 4, 4), "float32")))",
        std::string("y = ") + conv, "y");
    check_pass(transform::PatchConvToMatmul(), text, text);
  }
  std::string nhwc = dataflow_module(
      R"(main(x: R.Tensor((1, 16, 16, 3), "float32"), w: R.Tensor((5, 4, 4, 3), "float32")))",
      "y = R.nn.conv2d(x, w, strides=[4, 4], data_layout=\"NHWC\", kernel_layout=\"OHWI\")", "y");
  check_pass(transform::PatchConvToMatmul(), nhwc, nhwc);
  // One group of several, and a 1x1 kernel (a plain product cuDNN runs well already).
  std::string grouped = dataflow_module(
      R"(main(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((4, 2, 2, 2), "float32")))",
      "y = R.nn.conv2d(x, w, strides=[2, 2], groups=2)", "y");
  check_pass(transform::PatchConvToMatmul(), grouped, grouped);
  std::string pointwise = dataflow_module(
      R"(main(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((4, 4, 1, 1), "float32")))",
      "y = R.nn.conv2d(x, w)", "y");
  check_pass(transform::PatchConvToMatmul(), pointwise, pointwise);
}

// The rewritten module computes the convolution: kernels square and not, inputs whose last
// rows and columns no patch covers (cut off), a constant kernel (flattened in place).
TEST(PatchConvToMatmul, SameValuesAsTheConvolution) {
  struct Case {
    std::vector<int64_t> x, w;
    bool constant_kernel;
  };
  for (const Case& c : {Case{{2, 3, 16, 16}, {8, 3, 4, 4}, false}, Case{{1, 3, 19, 22}, {6, 3, 4, 5}, true},
                        Case{{3, 2, 9, 7}, {4, 2, 3, 1}, false}, Case{{1, 5, 6, 6}, {7, 5, 2, 3}, true}}) {
    Tensor xt = random_tensor(c.x, 3), wt = random_tensor(c.w, 4);
    Var x = make<VarNode>("x", tensor_sinfo(c.x, DataType::Float(32)));
    Var w = make<VarNode>("w", tensor_sinfo(c.w, DataType::Float(32)));
    BlockBuilder bb;
    std::vector<Var> params{x};
    if (!c.constant_kernel) params.push_back(w);
    bb.begin_function("main", params);
    bb.begin_dataflow();
    Expr kernel = c.constant_kernel ? Expr(make<ConstantNode>(wt)) : Expr(w);
    Var y = bb.emit_output(bb.emit(op::nn::conv2d(x, kernel, {c.w[2], c.w[3]})));
    bb.end_dataflow();
    bb.emit_func_output(y);
    IRModule before = bb.get();
    IRModule after = transform::PatchConvToMatmul()(before);
    ASSERT_TRUE(well_formed(after));
    std::string text = script::print_module(after);
    EXPECT_EQ(text.find("conv2d"), std::string::npos) << text;
    std::vector<Tensor> args{xt};
    if (!c.constant_kernel) args.push_back(wt);
    Tensor want = runtime::VirtualMachine(codegen::build_vm_executable(before)).invoke("main", args)[0];
    Tensor got = runtime::VirtualMachine(codegen::build_vm_executable(after)).invoke("main", args)[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], 1e-4) << "element " << i;
  }
}

}  // namespace
}  // namespace partita::testing
