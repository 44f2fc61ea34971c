// ConvertToDataflow: before/after pairs.
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/transform/basic.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::plain_module;
using partita::testing::dataflow_module;

const std::string kThreeBindings = plain_module(R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))", R"(
a: R.Tensor((4,), dtype="float32") = R.add(x, x)
b: R.Tensor((4,), dtype="float32") = R.multiply(a, a)
c: R.Tensor((4,), dtype="float32") = R.add(b, x))", "c");

TEST(ConvertToDataflow, PureBindingsBecomeADataflowBlock) {
  check_pass(ConvertToDataflow(), kThreeBindings, dataflow_module(R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))", R"(
a: R.Tensor((4,), dtype="float32") = R.add(x, x)
b: R.Tensor((4,), dtype="float32") = R.multiply(a, a)
c: R.Tensor((4,), dtype="float32") = R.add(b, x))", "c"));
}

TEST(ConvertToDataflow, RunsShorterThanMinSizeStay) {
  check_pass(ConvertToDataflow(4), kThreeBindings, kThreeBindings);
}

TEST(ConvertToDataflow, ExistingDataflowBlockAbsorbsNeighbours) {
  check_pass(ConvertToDataflow(), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((4,), dtype="float32") = R.add(x, x)
            gv: R.Tensor((4,), dtype="float32") = R.multiply(lv, lv)
            R.output(gv)
        c: R.Tensor((4,), dtype="float32") = R.add(gv, x)
        return c
)",
             dataflow_module(R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))", R"(
lv: R.Tensor((4,), dtype="float32") = R.add(x, x)
gv: R.Tensor((4,), dtype="float32") = R.multiply(lv, lv)
c: R.Tensor((4,), dtype="float32") = R.add(gv, x))", "c"));
}

TEST(ConvertToDataflow, IfIsNotPutInADataflowBlock) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(c: R.Prim("bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        a: R.Tensor((4,), dtype="float32") = R.add(x, x)
        if c:
            y: R.Tensor((4,), dtype="float32") = R.add(a, a)
            r: R.Tensor((4,), dtype="float32") = y
        else:
            r: R.Tensor((4,), dtype="float32") = a
        b: R.Tensor((4,), dtype="float32") = R.multiply(r, r)
        return b
)";
  // The single pure bindings around the If are shorter than min_size 2: nothing changes
  // except that the trivial branch bindings are canonicalized.
  IRModule after = ConvertToDataflow()(partita::testing::parse(text));
  auto f = after.lookup("main").as_ref<FunctionNode>();
  for (auto& block : f->body.as<SeqExprNode>()->blocks) EXPECT_FALSE(block->is_dataflow);
  EXPECT_TRUE(well_formed(after));
}

}  // namespace
}  // namespace partita::transform


namespace partita::transform {
namespace {

TEST(ConvertToDataflow, ImpureCallSplitsRuns) {
  auto t4 = tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32));
  Var x = make<VarNode>("x", t4);
  BlockBuilder bb;
  bb.begin_function("main", {x});
  Var a = bb.emit(op::make_call("relax.add", {x, x}), "a");
  Var b = bb.emit(op::make_call("relax.multiply", {a, a}), "b");
  Var e = bb.emit(make<CallNode>(make<ExternFuncNode>("effect"), std::vector<Expr>{b}, Attrs(),
                                 std::vector<StructInfo>{t4}), "e");
  Var c = bb.emit(op::make_call("relax.add", {e, b}), "c");
  bb.emit_func_output(c);
  IRModule after = ConvertToDataflow()(bb.get());
  auto f = after.lookup("main").as_ref<FunctionNode>();
  auto& blocks = f->body.as<SeqExprNode>()->blocks;
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_TRUE(blocks[0]->is_dataflow);
  EXPECT_EQ(blocks[0]->bindings.size(), 2u);
  // a is only used inside the new block: it became a DataflowVar; b is used after it.
  EXPECT_TRUE(blocks[0]->bindings[0]->var.as<DataflowVarNode>());
  EXPECT_FALSE(blocks[0]->bindings[1]->var.as<DataflowVarNode>());
  EXPECT_FALSE(blocks[1]->is_dataflow);
  EXPECT_EQ(blocks[1]->bindings.size(), 2u);
  EXPECT_TRUE(well_formed(after));
}

}  // namespace
}  // namespace partita::transform
