// The matcher swaps the operands of a call only when its operator is registered commutative
// (OpDef::commutative), whatever the operator's name.
#include <gtest/gtest.h>

#include "partita/dpl/matcher.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"

namespace partita::dpl {
namespace {

void register_test_op(const std::string& name, bool commutative) {
  if (op::find_op_def(name)) return;
  op::OpDef def;
  def.name = name;
  def.args = {{"x1"}, {"x2"}};
  def.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  def.commutative = commutative;
  def.fusion_kind = op::FusionKind::Broadcast;
  op::register_op(def);
}

TEST(CommutativeTrait, SwappedOperandsMatchOnlyForCommutativeOps) {
  register_test_op("test.dpl.symmetric", true);
  register_test_op("test.dpl.ordered", false);
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32)));
  Var y = make<VarNode>("y", tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32)));
  for (const char* name : {"test.dpl.symmetric", "test.dpl.ordered"}) {
    const bool commutative = std::string(name) == "test.dpl.symmetric";
    Expr call = BlockBuilder().normalize(op::make_call(name, {x, y}));
    // In order, always; swapped (y first), only when commutative.
    EXPECT_TRUE(match_expr(is_op(name)({is_var("x"), is_var("y")}), call)) << name;
    EXPECT_EQ(match_expr(is_op(name)({is_var("y"), is_var("x")}), call), commutative) << name;
  }
  // Built-in operators as TVM's matcher: add is tried swapped; maximum and subtract are not.
  Expr add = BlockBuilder().normalize(op::make_call("relax.add", {x, y}));
  EXPECT_TRUE(match_expr(is_op("relax.add")({is_var("y"), is_var("x")}), add));
  Expr mx = BlockBuilder().normalize(op::make_call("relax.maximum", {x, y}));
  EXPECT_FALSE(match_expr(is_op("relax.maximum")({is_var("y"), is_var("x")}), mx));
  Expr sub = BlockBuilder().normalize(op::make_call("relax.subtract", {x, y}));
  EXPECT_FALSE(match_expr(is_op("relax.subtract")({is_var("y"), is_var("x")}), sub));
}

}  // namespace
}  // namespace partita::dpl
