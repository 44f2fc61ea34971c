// Normalize: an unnormalized function (nested calls, no SeqExpr body, no struct info) becomes
// the normal form the parser produces.
#include "partita/op/registry.h"
#include "partita/transform/basic.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::modules_equal;
using partita::testing::parse;

TEST(Normalize, NestedCallsAndBody) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32)));
  Expr body = op::make_call("relax.multiply", {op::make_call("relax.add", {x, x}), x});
  DictAttrs attrs;
  attrs["global_symbol"] = std::string("main");
  auto f = make<FunctionNode>(std::vector<Var>{x}, body, StructInfo(), true, attrs);
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("main"), f);
  EXPECT_FALSE(well_formed_errors(mod).empty());

  IRModule after = Normalize()(mod);
  EXPECT_TRUE(well_formed(after));
  EXPECT_TRUE(modules_equal(after, parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        gv: R.Tensor((4,), dtype="float32") = R.add(x, x)
        gv1: R.Tensor((4,), dtype="float32") = R.multiply(gv, x)
        return gv1
)")));
  // Normalizing again changes nothing.
  IRModule again = Normalize()(after);
  EXPECT_TRUE(again.lookup("main") == after.lookup("main"));
}

}  // namespace
}  // namespace partita::transform
