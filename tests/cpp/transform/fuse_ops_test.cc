// FuseOps: TVM's FuseOps on Relax operators, through FuseOpsByKind's grouping with no codegen.
#include "partita/transform/fuse_ops.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::plain_module;
using partita::testing::dataflow_module;
using partita::testing::modules_equal;
using partita::testing::parse;

const std::string kBefore = dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"))", R"(
lv0: R.Tensor((4, 8), dtype="float32") = R.matmul(x, w)
lv1: R.Tensor((4, 8), dtype="float32") = R.add(lv0, b)
lv2: R.Tensor((4, 8), dtype="float32") = R.nn.relu(lv1)
lv3: R.Tensor((4, 8), dtype="float32") = R.exp(lv2)
gv: R.Tensor((4, 8), dtype="float32") = R.nn.softmax(lv3, axis=-1))", "gv");

// The matmul takes its element-wise epilogue; softmax, a second anchor, is a group of its own,
// and a group of one call stays a call (TVM's FuseOps).
TEST(FuseOps, GroupsIntoPrimitiveFunctions) {
  check_pass(FuseOps(), kBefore, R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_matmul_relax_add_relax_nn_relu_relax_exp(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        R.func_attr({"Primitive": True})
        with R.dataflow():
            lv0: R.Tensor((4, 8), dtype="float32") = R.matmul(x, w)
            lv1: R.Tensor((4, 8), dtype="float32") = R.add(lv0, b)
            lv2: R.Tensor((4, 8), dtype="float32") = R.nn.relu(lv1)
            gv: R.Tensor((4, 8), dtype="float32") = R.exp(lv2)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((4, 8), dtype="float32") = cls.fused_relax_matmul_relax_add_relax_nn_relu_relax_exp(x, w, b)
            gv: R.Tensor((4, 8), dtype="float32") = R.nn.softmax(lv, axis=-1)
            R.output(gv)
        return gv
)");
}

TEST(FuseOps, OptLevelZeroFusesNothing) {
  IRModule before = parse(kBefore);
  EXPECT_TRUE(modules_equal(FuseOps(0)(before), before));
  PassContext ctx;
  ctx.opt_level = 0;
  PassContext::Scope scope(ctx);
  EXPECT_TRUE(modules_equal(FuseOps()(before), before));
  EXPECT_FALSE(structural_equal(FuseOps(2)(before), before));
}

// Opaque calls (dropout) are never grouped; the lone exp and add around it stay calls.
TEST(FuseOps, OpaqueAndLoneCallsStay) {
  const std::string text = dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"))", R"(
a: R.Tensor((4, 8), dtype="float32") = R.exp(x)
b: R.Tensor((4, 8), dtype="float32") = R.nn.dropout(a, rate=0.5)
c: R.Tensor((4, 8), dtype="float32") = R.add(b, b))", "c");
  check_pass(FuseOps(), text, text);
}

// Outside dataflow blocks nothing is grouped, as in TVM.
TEST(FuseOps, OnlyDataflowBlocks) {
  const std::string text = plain_module(R"(main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"))", R"(
a: R.Tensor((4, 8), dtype="float32") = R.exp(x)
b: R.Tensor((4, 8), dtype="float32") = R.add(a, x))", "b");
  check_pass(FuseOps(), text, text);
}

}  // namespace
}  // namespace partita::transform
