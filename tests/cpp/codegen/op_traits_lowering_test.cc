// The VM lowering reads operator traits from the registry, not operator names: a call of an
// operator whose result is always a view (ViewKind::Always) becomes a View instruction, and R.Prim
// operands of an operator with scalar_operands_as_tensors are passed as tensors.
#include <gtest/gtest.h>

#include "partita/codegen/vm_lowering.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"

using namespace partita;
using namespace partita::runtime;

namespace {

StructInfo t23() { return tensor_sinfo(std::vector<int64_t>{2, 3}, DataType::Float(32)); }

void register_op_once(op::OpDef def) {
  if (!op::find_op_def(def.name)) op::register_op(std::move(def));
}

op::OpDef unary_like(const std::string& name) {
  op::OpDef def;
  def.name = name;
  def.args = {{"x"}};
  def.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  def.fusion_kind = op::FusionKind::Injective;
  return def;
}

/// The bytecode of `main(x) = op_name(x, extra...)`.
VMFunction lower_one_call(const std::string& op_name, std::vector<Expr> extra = {}) {
  Var x = make<VarNode>("x", t23());
  BlockBuilder bb;
  bb.begin_function("main", {x});
  std::vector<Expr> args{x};
  args.insert(args.end(), extra.begin(), extra.end());
  Var y = bb.emit(op::make_call(op_name, std::move(args)));
  bb.emit_func_output(y);
  auto ex = codegen::build_vm_executable(bb.get());
  return ex->functions.at(0);
}

size_t count(const VMFunction& f, Opcode op) {
  size_t n = 0;
  for (const Instruction& in : f.code) n += in.op == op;
  return n;
}

TEST(OpTraitsLowering, ViewTraitMakesAView) {
  op::OpDef view = unary_like("test.codegen.relabel");
  view.view = op::ViewKind::Always;
  register_op_once(view);
  register_op_once(unary_like("test.codegen.copy"));

  VMFunction relabel = lower_one_call("test.codegen.relabel");
  EXPECT_EQ(count(relabel, Opcode::View), 1u);
  EXPECT_EQ(count(relabel, Opcode::CallKernel), 0u);
  VMFunction copy = lower_one_call("test.codegen.copy");
  EXPECT_EQ(count(copy, Opcode::View), 0u);
  EXPECT_EQ(count(copy, Opcode::CallKernel), 1u);
}

TEST(OpTraitsLowering, ScalarOperandsTraitPassesScalarsAsTensors) {
  for (bool as_tensors : {true, false}) {
    op::OpDef def =
        unary_like(as_tensors ? "test.codegen.scale_by_tensor" : "test.codegen.scale_by_attr");
    def.args = {{"x"}, {"factor"}};
    def.scalar_operands_as_tensors = as_tensors;
    def.fusion_kind = op::FusionKind::Broadcast;
    register_op_once(def);
    Expr factor = make<PrimValueNode>(make<FloatImmNode>(2.0, DataType::Float(32)));
    VMFunction f = lower_one_call(def.name, {factor});
    const Instruction* call = nullptr;
    for (const Instruction& in : f.code)
      if (in.op == Opcode::CallKernel) call = &in;
    ASSERT_NE(call, nullptr) << def.name;
    // As a tensor: a second register operand; otherwise a kernel attribute named after the
    // argument.
    EXPECT_EQ(call->args.size(), as_tensors ? 2u : 1u) << def.name;
    const KernelAttrs& attrs = f.attrs.at(size_t(call->attrs));
    EXPECT_EQ(attrs.values.count("factor"), as_tensors ? 0u : 1u) << def.name;
  }
}

}  // namespace
