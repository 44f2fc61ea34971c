// AttachGlobalSymbol: every Relax function gets "global_symbol" = its name (TVM's
// test_transform_attach_global_symbol.py, Relax half).
#include "partita/transform/attach_global_symbol.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::parse;

TEST(AttachGlobalSymbol, PrivateFunctionsGetTheirName) {
  IRModule before = parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        gv: R.Tensor((4,), dtype="float32") = cls.helper(x)
        return gv

    @R.function(private=True)
    def helper(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        gv: R.Tensor((4,), dtype="float32") = R.add(x, x)
        return gv
)");
  EXPECT_FALSE(before.lookup("helper").as_ref<FunctionNode>()->attr_string("global_symbol"));
  IRModule after = AttachGlobalSymbol()(before);
  EXPECT_EQ(after.lookup("helper").as_ref<FunctionNode>()->attr_string("global_symbol"), "helper");
  EXPECT_EQ(after.lookup("main").as_ref<FunctionNode>()->attr_string("global_symbol"), "main");
  EXPECT_TRUE(after.lookup("main").get() == before.lookup("main").get()) << "already named: unchanged";
  EXPECT_TRUE(well_formed(after));
  // Idempotent.
  IRModule again = AttachGlobalSymbol()(after);
  EXPECT_TRUE(again.lookup("helper").get() == after.lookup("helper").get());
}

}  // namespace
}  // namespace partita::transform
