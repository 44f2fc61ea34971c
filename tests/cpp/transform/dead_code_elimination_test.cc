// DeadCodeElimination: before/after pairs.
#include "partita/transform/basic.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
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
             R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = R.add(x, x)
            R.output(gv)
        return gv
)");
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
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=1)) -> R.Tensor(dtype="float32", ndim=1):
        n = T.int64()
        y: R.Tensor((n,), dtype="float32") = R.match_cast(x, R.Tensor((n,), dtype="float32"))
        return x
)";
  check_pass(DeadCodeElimination(), text, text);
}

}  // namespace
}  // namespace partita::transform
