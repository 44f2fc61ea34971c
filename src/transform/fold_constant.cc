// FoldConstant (TVM relax.transform.FoldConstant): calls of pure operators on constants, inside
// dataflow blocks, are evaluated once at compile time. Where TVM legalizes the call to TIR and
// builds it with LLVM, the call here runs on the host kernels through the VM: a one-binding
// function is lowered and invoked, so every operator the VM runs (views, shape arguments,
// attributes) folds the same way it would run.
#include "partita/transform/fold_constant.h"

#include <functional>

#include "partita/codegen/vm_lowering.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/functor.h"
#include "partita/op/ops.h"
#include "partita/op/registry.h"
#include "partita/runtime/kernel.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"
#include "partita/transform/basic.h"

namespace partita::transform {

namespace {

/// A call argument known entirely at compile time: a tensor constant, or a shape, prim value,
/// string, dtype or tuple of them without symbolic values.
bool is_constant_argument(const Expr& e) {
  if (e.as<ConstantNode>() || e.as<StringImmNode>() || e.as<DataTypeImmNode>()) return true;
  if (const auto* s = e.as<ShapeExprNode>()) {
    for (const auto& v : s->values)
      if (!as_const_int(v)) return false;
    return true;
  }
  if (const auto* p = e.as<PrimValueNode>()) return p->value.as<IntImmNode>() || p->value.as<FloatImmNode>();
  if (const auto* t = e.as<TupleNode>()) {
    for (const auto& f : t->fields)
      if (!is_constant_argument(f)) return false;
    return true;
  }
  return false;
}

/// Whether the host can evaluate a call of `def`: a pure operator with a kernel, or one the VM
/// runs as a view of its argument.
bool host_can_evaluate(const op::OpDef& def) {
  if (!def.pure) return false;
  return def.view == op::ViewKind::Always || runtime::find_kernel(def.name) != nullptr;
}

/// Runs `mod`'s main (no parameters, one tensor result) on the host VM; nullopt when a kernel
/// refuses its operands (dtype, attribute).
std::optional<Tensor> run_main(const IRModule& mod) {
  try {
    runtime::VirtualMachine vm(codegen::build_vm_executable(mod));
    std::vector<Tensor> outs = vm.invoke("main", {});
    if (outs.size() != 1) return std::nullopt;
    return outs[0];
  } catch (const Error&) {
    return std::nullopt;
  }
}

/// Runs `call` (normalized, constant arguments, static tensor result) on the host VM.
std::optional<Tensor> evaluate(const Call& call) {
  Var out = make<VarNode>("out", call->struct_info_);
  Expr body = make<SeqExprNode>(
      std::vector<BindingBlock>{make<BindingBlockNode>(std::vector<Binding>{make<VarBindingNode>(out, call)}, false)},
      out);
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("main"),
          make<FunctionNode>(std::vector<Var>{}, body, call->struct_info_, true,
                             DictAttrs{{"global_symbol", std::string("main")}}));
  return run_main(mod);
}

bool is_16bit_float(DataType t) { return t == DataType::Float(16) || t == DataType::BFloat16(); }

/// A 16-bit float call the host has no kernel for (sqrt, erf, ... of float16 constants: the
/// scale of PyTorch's attention export), evaluated in float32 and rounded to its dtype, as a
/// GPU kernel computes it.
std::optional<Tensor> evaluate_widened(const Call& call) {
  const auto* t = call->struct_info_.as<TensorStructInfoNode>();
  if (!t || !is_16bit_float(t->dtype)) return std::nullopt;
  try {
    BlockBuilder bb;
    bb.begin_function("main", {}, DictAttrs{{"global_symbol", std::string("main")}});
    std::vector<Expr> args;
    for (const Expr& a : call->args) {
      const auto* c = a.as<ConstantNode>();
      args.push_back(c && is_16bit_float(c->data.dtype()) ? Expr(bb.emit(op::astype(a, DataType::Float(32)))) : a);
    }
    Var wide = bb.emit(make<CallNode>(call->op, args, call->attrs, call->sinfo_args));
    bb.emit_func_output(bb.emit(op::astype(wide, t->dtype)));
    return run_main(bb.get());
  } catch (const Error&) {
    return std::nullopt;  // the operator does not take float32 operands here either
  }
}

/// TVM's rule (ShouldBeFolded): a result of more than 1024 elements is folded only when the call
/// reads a tensor; a large creation (zeros, ones, full, arange of a known shape) would put a big
/// constant into the module, and the artifact, to save a fill at run time.
bool worth_folding(const Call& call) {
  constexpr int64_t kMaxCreatedElements = 1024;
  auto shape = static_shape(call->struct_info_);
  if (!shape) return false;
  int64_t n = 1;
  for (int64_t d : *shape) n *= d;
  if (n <= kMaxCreatedElements) return true;
  std::function<bool(const Expr&)> has_tensor = [&](const Expr& e) {
    if (e.as<ConstantNode>()) return true;
    if (const auto* t = e.as<TupleNode>())
      for (const auto& f : t->fields)
        if (has_tensor(f)) return true;
    return false;
  };
  for (const auto& a : call->args)
    if (has_tensor(a)) return true;
  return false;
}

}  // namespace

std::optional<Tensor> evaluate_constant_call(const Call& call) {
  const auto* callee = call->op.as<OpNode>();
  if (!callee) return std::nullopt;
  const op::OpDef* def = op::find_op_def(callee->name);
  if (!def || !host_can_evaluate(*def)) return std::nullopt;
  for (const auto& a : call->args)
    if (!is_constant_argument(a)) return std::nullopt;
  const StructInfo& sinfo = call->struct_info_;
  if (!sinfo || !sinfo.as<TensorStructInfoNode>() || !static_shape(sinfo)) return std::nullopt;
  if (auto value = evaluate(call)) return value;
  return evaluate_widened(call);
}

namespace {

class ConstantFolder : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;

  Expr visit_(const VarNode* op) override { return constant_or(ExprMutator::visit_(op)); }
  Expr visit_(const DataflowVarNode* op) override { return constant_or(ExprMutator::visit_(op)); }

  Expr visit_(const CallNode* op) override {
    Expr visited = ExprMutator::visit_(op);
    const auto* call = visited.as<CallNode>();
    if (!call) return visited;
    const auto* callee = call->op.as<OpNode>();
    if (!callee || !builder_.current_block_is_dataflow()) return visited;
    // A shape bound to a variable is used in place (R.reshape(x, lv) -> R.reshape(x, R.shape(..))).
    std::vector<Expr> args = call->args;
    bool inlined = false;
    for (auto& a : args) {
      if (!a.as<VarNode>()) continue;
      Expr bound = lookup_binding(a.as_ref<VarNode>());
      if (bound && bound.as<ShapeExprNode>()) {
        a = bound;
        inlined = true;
      }
    }
    Call folded_call = inlined ? make<CallNode>(call->op, args, call->attrs, call->sinfo_args)
                               : visited.as_ref<CallNode>();
    // A call rebuilt with new arguments has no struct info until normalized.
    if (!folded_call->struct_info_) folded_call = builder_.normalize(folded_call).as_ref<CallNode>();
    if (!worth_folding(folded_call)) return folded_call;
    if (auto value = evaluate_constant_call(folded_call)) return builder_.normalize(make<ConstantNode>(*value));
    return folded_call;
  }

 private:
  // A variable bound to a constant is the constant.
  Expr constant_or(Expr e) {
    if (e.as<VarNode>()) {
      Expr bound = lookup_binding(e.as_ref<VarNode>());
      if (bound && bound.as<ConstantNode>()) return bound;
    }
    return e;
  }
};

}  // namespace

Pass FoldConstant() {
  return create_function_pass(
      [](Function f, IRModule mod, const PassContext&) -> Function {
        ConstantFolder folder(mod);
        Function folded = folder.visit_expr(f).as_ref<FunctionNode>();
        if (folded.get() == f.get()) return f;
        return remove_all_unused(folded, mod);
      },
      0, "FoldConstant");
}

Pass FoldForInference() {
  return Sequential({FoldConstant(), FoldBatchnormToConv2D(), FoldConstant()}, "FoldForInference");
}

}  // namespace partita::transform
