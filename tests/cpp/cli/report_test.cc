// `partita report`'s costs come from the operators' FLOP and byte traits in the op registry
// (tools/partita_cli/report.cc): an operator registered here with its own cost functions is
// counted by them, symbolic dimensions count as 1, and unknown costs are reported as such.
#include <gtest/gtest.h>

#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "report.h"

using namespace partita;
using namespace partita::cli;

namespace {

// FLOPs 3 * (first dimension) and bytes 100 * (first dimension), whatever the operator does.
void register_costed_op() {
  if (op::find_op_def("test.cli.costed")) return;
  op::OpDef def;
  def.name = "test.cli.costed";
  def.args = {{"x"}};
  def.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  def.fusion_kind = op::FusionKind::Opaque;
  def.flops = [](const CallNode& call) -> std::optional<PrimExpr> {
    return int_imm(3) * (*call.args[0]->struct_info_.as<TensorStructInfoNode>()->shape)[0];
  };
  def.bytes = [](const CallNode& call) -> std::optional<PrimExpr> {
    return int_imm(100) * (*call.args[0]->struct_info_.as<TensorStructInfoNode>()->shape)[0];
  };
  op::register_op(def);
}

/// main(x) = costed(x) then relu, x of shape `shape`.
IRModule module_with(std::vector<PrimExpr> shape) {
  Var x = make<VarNode>("x", tensor_sinfo(std::move(shape), DataType::Float(32)));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  Var a = bb.emit(op::make_call("test.cli.costed", {x}));
  Var b = bb.emit(op::make_call("relax.nn.relu", {a}));
  bb.emit_func_output(b);
  return bb.get();
}

TEST(Report, CostsComeFromTheOperatorTraits) {
  register_costed_op();
  ModuleReport r = analyze_module(module_with({int_imm(7), int_imm(2)}));
  const BackendStats& host = r.backends.at("host");
  EXPECT_EQ(host.flops, 3 * 7 + 14);          // the traits; relu: one per element
  EXPECT_EQ(host.bytes, 100 * 7 + 4 * 28);    // relu reads and writes 14 float32
  EXPECT_FALSE(r.symbolic_dims);
  EXPECT_EQ(r.unknown_costs, 0);
  std::string text = format_report(r, {});
  EXPECT_NE(text.find("total: 0.000 MFLOPs, 0.001 MB moved"), std::string::npos) << text;

  IRModule five = module_with({int_imm(5), int_imm(2)});
  const auto* seq = five.lookup("main").as<FunctionNode>()->body.as<SeqExprNode>();
  const auto* costed = seq->blocks[0]->bindings[0].as<VarBindingNode>()->value.as<CallNode>();
  CallCost c = estimate_cost(*costed);
  EXPECT_EQ(c.flops, 15);
  EXPECT_EQ(c.bytes, 500);
  EXPECT_FALSE(c.symbolic || c.unknown);
}

TEST(Report, SymbolicDimensionsCountAsOneAndUnknownCostsAreFlagged) {
  register_costed_op();
  PrimExpr n = make<PrimVarNode>("n");
  ModuleReport r = analyze_module(module_with({n, int_imm(2)}));
  EXPECT_EQ(r.backends.at("host").flops, 3 + 2);
  EXPECT_TRUE(r.symbolic_dims);
  EXPECT_NE(format_report(r, {}).find("symbolic dimensions counted as 1"), std::string::npos);

  // Only the rank known: relu's cost cannot be written down.
  Var x = make<VarNode>("x", tensor_sinfo_ndim(DataType::Float(32), 2));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  Var b = bb.emit(op::make_call("relax.nn.relu", {x}));
  bb.emit_func_output(b);
  ModuleReport u = analyze_module(bb.get());
  EXPECT_EQ(u.unknown_costs, 1);
  EXPECT_EQ(u.total_flops, 0);
  EXPECT_NE(format_report(u, {}).find("1 operator call of unknown cost counted as 0"),
            std::string::npos);
}

}  // namespace
