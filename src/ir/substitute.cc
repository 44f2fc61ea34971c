// Substitution on ExprMutator (see substitute.h).
#include "partita/ir/substitute.h"

namespace partita {

Substitutor::Substitutor(PtrMap<Expr> remap, std::optional<IRModule> mod)
    : ExprMutator(std::move(mod)), remap_(std::move(remap)) {}

Expr Substitutor::visit_expr(const Expr& expr) {
  if (expr)
    if (const Expr* to = remap_.find(expr.get())) return builder_.normalize(*to);
  return ExprMutator::visit_expr(expr);
}

Var Substitutor::visit_var_def(const Var& var) {
  if (const Expr* to = remap_.find(var.get()))
    if (auto v = to->as_ref<VarNode>()) return v;
  return ExprMutator::visit_var_def(var);
}

Expr Substitutor::visit_(const CallNode* op) {
  Expr out = ExprMutator::visit_(op);
  if (out.get() == op || !op->struct_info_) return out;
  // Operands replaced by ones with the same struct info leave the call's as it was: keep it
  // rather than derive it again (most substitutions rename variables).
  auto* call = out.as<CallNode>();
  auto same = [](const Expr& a, const Expr& b) {
    return a.get() == b.get() ||
           (a->struct_info_ && a->struct_info_.get() == b->struct_info_.get());
  };
  if (!same(call->op, op->op) || call->args.size() != op->args.size()) return out;
  for (size_t i = 0; i < op->args.size(); ++i)
    if (!same(call->args[i], op->args[i])) return out;
  out->struct_info_ = op->struct_info_;
  return out;
}

Expr substitute_vars(const Expr& expr, const VarRemap& remap) {
  if (remap.empty()) return expr;
  PtrMap<Expr> by_node(remap.size());
  for (const auto& [var, to] : remap) by_node.emplace(var.get(), to);
  return Substitutor(std::move(by_node))(expr);
}

Function copy_with_new_vars(const Function& func) {
  auto fresh = [](const Var& v) -> Expr {
    if (v.as<DataflowVarNode>()) return make<DataflowVarNode>(v->name_hint, v->struct_info_);
    return make<VarNode>(v->name_hint, v->struct_info_);
  };
  PtrMap<Expr> remap;
  for (const auto& p : func->params) remap.emplace(p.get(), fresh(p));
  if (auto* seq = func->body.as<SeqExprNode>())
    for (const auto& blk : seq->blocks)
      for (const auto& b : blk->bindings) remap.emplace(b->var.get(), fresh(b->var));
  Expr out = Substitutor(std::move(remap))(func);
  // Nothing to rename (no parameters, no bindings): still a distinct node.
  if (out.get() == func.get()) return Function(copy_node(func));
  return out.as_ref<FunctionNode>();
}

}  // namespace partita
