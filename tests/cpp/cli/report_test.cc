// `partita report`'s costs come from the operators' FLOP and byte traits in the op registry
// (tools/partita_cli/report.cc): an operator registered here with its own cost functions is
// counted by them, symbolic dimensions count as 1, and unknown costs are reported as such.
#include <gtest/gtest.h>

#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
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

// Collage's placement graph: every annotated binding in its backend's colour with its label
// line and tooltip, and each chosen partition a cluster of its bindings.
TEST(Report, PlacementGraphColoursAndAnnotatesEachOperator) {
  IRModule mod = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.exp(a)
            c = R.add(a, b)
            R.output(c)
        return c
)");
  std::map<std::string, PlacementNote> notes = {
      {"a", {"dnnl", "on dnnl; host 3.0, dnnl 1.0 us", "a = relax.nn.relu: placed on dnnl"}},
      {"b", {"dnnl", "on dnnl; host 5.0, dnnl 2.0 us", "b = relax.exp: placed on dnnl"}},
      {"c", {"host", "on host; host 1.0 us", "c = relax.add: placed on host"}}};
  std::string dot = placement_to_dot(mod, notes, {{"dnnl", "dnnl partition 1: 3.0 us", {"a", "b"}}});
  // The line of the node whose label starts so, and its id ("n3").
  auto node_line = [&](const std::string& label_start, std::string& id) {
    size_t at = dot.find(" [label=\"" + label_start);
    EXPECT_NE(at, std::string::npos) << label_start;
    size_t begin = dot.rfind('\n', at) + 1;
    id = dot.substr(begin, at - begin);
    id.erase(0, id.find_first_not_of(' '));
    return dot.substr(at, dot.find('\n', at) - at);
  };
  std::string relu_id, exp_id, add_id;
  std::string relu = node_line("nn.relu", relu_id), add = node_line("add", add_id);
  node_line("exp", exp_id);
  EXPECT_NE(relu.find("on dnnl; host 3.0, dnnl 1.0 us"), std::string::npos);
  EXPECT_NE(relu.find("fillcolor=\"" + backend_color("dnnl") + "\""), std::string::npos);
  EXPECT_NE(relu.find("tooltip=\"a = relax.nn.relu: placed on dnnl\""), std::string::npos);
  EXPECT_NE(add.find("fillcolor=\"" + backend_color("host") + "\""), std::string::npos);
  // The partition's cluster lists the nodes of a and b, not c's.
  size_t cluster = dot.find("label=\"dnnl partition 1: 3.0 us\"");
  ASSERT_NE(cluster, std::string::npos);
  std::string members = dot.substr(cluster, dot.find('}', cluster) - cluster);
  EXPECT_NE(members.find(" " + relu_id + ";"), std::string::npos) << members;
  EXPECT_NE(members.find(" " + exp_id + ";"), std::string::npos) << members;
  EXPECT_EQ(members.find(" " + add_id + ";"), std::string::npos) << members;
  EXPECT_NE(dot.find("\"legend_dnnl\""), std::string::npos);
  EXPECT_NE(dot.find("\"legend_host\""), std::string::npos);
}
