// DeadCodeElimination: before/after pairs.
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/transform/basic.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::plain_module;
using partita::testing::dataflow_module;
using partita::testing::parse;

TEST(DeadCodeElimination, UnusedBindingsAndFunctions) {
  check_pass(DeadCodeElimination(), R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def unused(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x

    @R.function(private=True)
    def used(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        a: R.Tensor((4,), dtype="float32") = R.add(x, x)
        b: R.Tensor((4,), dtype="float32") = R.multiply(a, a)
        c: R.Tensor((4,), dtype="float32") = cls.used(x)
        return c
)",
             R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def used(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        c: R.Tensor((4,), dtype="float32") = cls.used(x)
        return c
)");
}

TEST(DeadCodeElimination, InsideDataflowBlocks) {
  check_pass(DeadCodeElimination(), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((4,), dtype="float32") = R.add(x, x)
            lv1: R.Tensor((4,), dtype="float32") = R.multiply(lv, x)
            gv: R.Tensor((4,), dtype="float32") = R.add(x, x)
            unused_out: R.Tensor((4,), dtype="float32") = R.add(lv1, x)
            R.output(gv, unused_out)
        return gv
)",
             dataflow_module(R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))", R"(
gv: R.Tensor((4,), dtype="float32") = R.add(x, x))", "gv"));
}

TEST(DeadCodeElimination, EntryFunctionsKeepPrivateFunctions) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def helper(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x
)";
  IRModule kept = DeadCodeElimination({"helper"})(parse(text));
  EXPECT_TRUE(kept.contains("helper"));
  IRModule removed = DeadCodeElimination()(parse(text));
  EXPECT_FALSE(removed.contains("helper"));
  EXPECT_TRUE(removed.contains("main"));
}

TEST(DeadCodeElimination, RefiningMatchCastIsKept) {
  const std::string text = plain_module(R"(main(x: R.Tensor(dtype="float32", ndim=1)) -> R.Tensor(dtype="float32", ndim=1))", R"(
n = T.int64()
y: R.Tensor((n,), dtype="float32") = R.match_cast(x, R.Tensor((n,), dtype="float32")))", "x");
  check_pass(DeadCodeElimination(), text, text);
}

}  // namespace
}  // namespace partita::transform


namespace partita::transform {
namespace {

TEST(DeadCodeElimination, ImpureCallsAreKept) {
  auto t4 = tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32));
  Var x = make<VarNode>("x", t4);
  BlockBuilder bb;
  bb.begin_function("main", {x});
  // A packed call is opaque, so it may have side effects: kept although unused.
  Var effect = bb.emit(make<CallNode>(make<ExternFuncNode>("log_tensor"), std::vector<Expr>{x},
                                      Attrs(), std::vector<StructInfo>{t4}));
  Var pure = bb.emit(op::make_call("relax.add", {x, x}));
  bb.emit_func_output(x);
  IRModule after = DeadCodeElimination()(bb.get());
  auto f = after.lookup("main").as_ref<FunctionNode>();
  auto* s = f->body.as<SeqExprNode>();
  ASSERT_EQ(s->blocks.size(), 1u);
  ASSERT_EQ(s->blocks[0]->bindings.size(), 1u);
  EXPECT_TRUE(s->blocks[0]->bindings[0]->var == effect);
  (void)pure;
  EXPECT_TRUE(well_formed(after));
}

}  // namespace
}  // namespace partita::transform
