// The passes decide purity by the operator's trait (OpDef::pure): an operator registered impure
// is kept by DeadCodeElimination although its result is unused, and stays outside dataflow
// blocks in ConvertToDataflow; the same call of a pure operator is removed / absorbed.
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/transform/basic.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;

// Two otherwise identical operators: `test.transform.emit_event` has a side effect.
void register_test_ops() {
  for (bool pure : {true, false}) {
    std::string name = pure ? "test.transform.same_value" : "test.transform.emit_event";
    if (op::find_op_def(name)) continue;
    op::OpDef def;
    def.name = name;
    def.args = {{"x"}};
    def.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
    def.pure = pure;
    def.fusion_kind = pure ? op::FusionKind::ElementWise : op::FusionKind::Opaque;
    op::register_op(def);
  }
}

TEST(OpPurity, DeadCodeEliminationKeepsImpureOperatorCalls) {
  register_test_ops();
  check_pass(DeadCodeElimination(), R"(
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        a: R.Tensor((4,), dtype="float32") = R.test.transform.emit_event(x)
        b: R.Tensor((4,), dtype="float32") = R.test.transform.same_value(x)
        return x
)",
             R"(
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        a: R.Tensor((4,), dtype="float32") = R.test.transform.emit_event(x)
        return x
)");
}

TEST(OpPurity, ConvertToDataflowLeavesImpureOperatorCallsOut) {
  register_test_ops();
  auto blocks_of = [](const char* op_name) {
    auto t4 = tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32));
    Var x = make<VarNode>("x", t4);
    BlockBuilder bb;
    bb.begin_function("main", {x});
    Var a = bb.emit(op::make_call("relax.add", {x, x}), "a");
    Var b = bb.emit(op::make_call("relax.multiply", {a, a}), "b");
    Var e = bb.emit(op::make_call(op_name, {b}), "e");
    Var c = bb.emit(op::make_call("relax.add", {e, b}), "c");
    Var d = bb.emit(op::make_call("relax.add", {c, c}), "d");
    bb.emit_func_output(d);
    IRModule after = ConvertToDataflow()(bb.get());
    EXPECT_TRUE(well_formed(after));
    std::vector<std::pair<bool, size_t>> shape;  // (is_dataflow, bindings) per block
    auto f = after.lookup("main").as_ref<FunctionNode>();
    for (auto& block : f->body.as<SeqExprNode>()->blocks)
      shape.emplace_back(block->is_dataflow, block->bindings.size());
    return shape;
  };
  using Blocks = std::vector<std::pair<bool, size_t>>;
  EXPECT_EQ(blocks_of("test.transform.emit_event"), (Blocks{{true, 2}, {false, 1}, {true, 2}}));
  EXPECT_EQ(blocks_of("test.transform.same_value"), (Blocks{{true, 5}}));
}

}  // namespace
}  // namespace partita::transform
