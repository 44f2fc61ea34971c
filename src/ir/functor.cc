// ExprVisitor / ExprMutator (see functor.h).
#include "partita/ir/functor.h"

#include "partita/ir/analysis.h"
#include "partita/support/error.h"
#include "struct_info_prims.h"

namespace partita {

namespace {

// `dims` with each value rewritten by `f`; sets *changed when one differs.
template <class F>
std::vector<PrimExpr> map_dims(const std::vector<PrimExpr>& dims, F&& f, bool* changed) {
  std::vector<PrimExpr> out;
  out.reserve(dims.size());
  for (auto& d : dims) {
    out.push_back(f(d));
    *changed |= out.back().get() != d.get();
  }
  return out;
}

template <class F>
StructInfo map_sinfo_prims(const StructInfo& info, F&& f) {
  if (!info) return info;
  bool changed = false;
  if (auto* p = info.as<PrimStructInfoNode>()) {
    if (!p->value) return info;
    PrimExpr v = f(p->value);
    return v.get() == p->value.get() ? info : StructInfo(make<PrimStructInfoNode>(p->dtype, v));
  }
  if (auto* s = info.as<ShapeStructInfoNode>()) {
    if (!s->values) return info;
    auto dims = map_dims(*s->values, f, &changed);
    return changed ? StructInfo(make<ShapeStructInfoNode>(std::move(dims))) : info;
  }
  if (auto* t = info.as<TensorStructInfoNode>()) {
    if (!t->shape) return info;
    auto dims = map_dims(*t->shape, f, &changed);
    return changed ? StructInfo(make<TensorStructInfoNode>(std::move(dims), t->dtype, t->vdevice)) : info;
  }
  if (auto* tu = info.as<TupleStructInfoNode>()) {
    std::vector<StructInfo> fields;
    for (auto& fi : tu->fields) {
      fields.push_back(map_sinfo_prims(fi, f));
      changed |= fields.back().get() != fi.get();
    }
    return changed ? StructInfo(make<TupleStructInfoNode>(std::move(fields))) : info;
  }
  if (auto* fn = info.as<FuncStructInfoNode>()) {
    std::optional<std::vector<StructInfo>> params;
    if (fn->params) {
      params.emplace();
      for (auto& p : *fn->params) {
        params->push_back(map_sinfo_prims(p, f));
        changed |= params->back().get() != p.get();
      }
    }
    StructInfo ret = map_sinfo_prims(fn->ret, f);
    changed |= ret.get() != fn->ret.get();
    return changed ? StructInfo(make<FuncStructInfoNode>(std::move(params), ret, fn->purity)) : info;
  }
  return info;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ExprVisitor
// ---------------------------------------------------------------------------------------------

void ExprVisitor::visit_expr(const Expr& expr) {
  if (!expr) return;
  switch (expr->kind()) {
#define PARTITA_X(name)  \
  case NodeKind::name:   \
    return visit_(static_cast<const name##Node*>(expr.get()));
    PARTITA_FOR_EACH_EXPR(PARTITA_X)
#undef PARTITA_X
    default:
      throw_error("InternalError", std::string("visit_expr: not an expression: ") +
                                       node_kind_name(expr->kind()));
  }
}

void ExprVisitor::visit_(const ConstantNode*) {}
void ExprVisitor::visit_(const VarNode*) {}
void ExprVisitor::visit_(const DataflowVarNode*) {}
void ExprVisitor::visit_(const ExternFuncNode*) {}
void ExprVisitor::visit_(const GlobalVarNode*) {}
void ExprVisitor::visit_(const OpNode*) {}
void ExprVisitor::visit_(const StringImmNode*) {}
void ExprVisitor::visit_(const DataTypeImmNode*) {}

void ExprVisitor::visit_(const TupleNode* op) {
  for (auto& f : op->fields) visit_expr(f);
}
void ExprVisitor::visit_(const ShapeExprNode* op) {
  for (auto& v : op->values) visit_prim_expr(v);
}
void ExprVisitor::visit_(const PrimValueNode* op) { visit_prim_expr(op->value); }

void ExprVisitor::visit_(const FunctionNode* op) {
  for (auto& p : op->params) visit_var_def(p);
  visit_expr(op->body);
}

void ExprVisitor::visit_(const CallNode* op) {
  visit_expr(op->op);
  for (auto& s : op->sinfo_args) visit_expr_dep_struct_info_field(s);
  for (auto& a : op->args) visit_expr(a);
}

void ExprVisitor::visit_(const SeqExprNode* op) {
  for (auto& b : op->blocks) visit_binding_block(b);
  visit_expr(op->body);
}

void ExprVisitor::visit_(const IfNode* op) {
  visit_expr(op->cond);
  visit_expr(op->true_branch);
  visit_expr(op->false_branch);
}

void ExprVisitor::visit_(const TupleGetItemNode* op) { visit_expr(op->tuple); }

void ExprVisitor::visit_binding(const Binding& binding) {
  if (auto* vb = binding.as<VarBindingNode>()) return visit_binding_(vb);
  if (auto* mc = binding.as<MatchCastNode>()) return visit_binding_(mc);
  throw_error("InternalError", "visit_binding: unknown binding kind");
}

void ExprVisitor::visit_binding_(const VarBindingNode* binding) {
  visit_expr(binding->value);
  visit_var_def(binding->var);
}

void ExprVisitor::visit_binding_(const MatchCastNode* binding) {
  visit_expr(binding->value);
  visit_expr_dep_struct_info_field(binding->struct_info);
  visit_var_def(binding->var);
}

void ExprVisitor::visit_binding_block(const BindingBlock& block) {
  if (block->is_dataflow) visit_dataflow_block_(block.get());
  else visit_binding_block_(block.get());
}

void ExprVisitor::visit_binding_block_(const BindingBlockNode* block) {
  for (auto& b : block->bindings) visit_binding(b);
}
void ExprVisitor::visit_dataflow_block_(const BindingBlockNode* block) {
  for (auto& b : block->bindings) visit_binding(b);
}

void ExprVisitor::visit_var_def(const Var& var) {
  if (auto* d = var.as<DataflowVarNode>()) visit_var_def_(d);
  else visit_var_def_(var.get());
}
void ExprVisitor::visit_var_def_(const VarNode*) {}
void ExprVisitor::visit_var_def_(const DataflowVarNode*) {}

void ExprVisitor::visit_expr_dep_struct_info_field(const StructInfo& sinfo) {
  detail::for_each_prim_expr(sinfo, [&](const PrimExpr& e) { visit_prim_expr(e); });
}
void ExprVisitor::visit_prim_expr(const PrimExpr&) {}

void post_order_visit(const Expr& expr, const std::function<void(const Expr&)>& fvisit) {
  class PostOrder : public ExprVisitor {
   public:
    explicit PostOrder(const std::function<void(const Expr&)>& f) : f_(f) {}
    void visit_expr(const Expr& e) override {
      if (!e) return;
      ExprVisitor::visit_expr(e);
      f_(e);
    }
    const std::function<void(const Expr&)>& f_;
  };
  PostOrder(fvisit).visit_expr(expr);
}

// ---------------------------------------------------------------------------------------------
// ExprMutator
// ---------------------------------------------------------------------------------------------

ExprMutator::ExprMutator(std::optional<IRModule> mod) : builder_(std::move(mod)) {}

Expr ExprMutator::visit_expr(const Expr& expr) {
  if (!expr) return expr;
  Expr out;
  switch (expr->kind()) {
#define PARTITA_X(name)                                              \
  case NodeKind::name:                                               \
    out = visit_(static_cast<const name##Node*>(expr.get()));        \
    break;
    PARTITA_FOR_EACH_EXPR(PARTITA_X)
#undef PARTITA_X
    default:
      throw_error("InternalError", std::string("visit_expr: not an expression: ") +
                                       node_kind_name(expr->kind()));
  }
  return builder_.normalize(out);
}

Expr ExprMutator::visit_(const ConstantNode* op) { return Expr(op); }
Expr ExprMutator::visit_(const ExternFuncNode* op) { return Expr(op); }
Expr ExprMutator::visit_(const GlobalVarNode* op) { return Expr(op); }
Expr ExprMutator::visit_(const OpNode* op) { return Expr(op); }
Expr ExprMutator::visit_(const StringImmNode* op) { return Expr(op); }
Expr ExprMutator::visit_(const DataTypeImmNode* op) { return Expr(op); }

Expr ExprMutator::visit_(const VarNode* op) {
  auto it = var_remap_.find(Var(op));
  return it == var_remap_.end() ? Expr(op) : it->second;
}
Expr ExprMutator::visit_(const DataflowVarNode* op) {
  auto it = var_remap_.find(Var(op));
  return it == var_remap_.end() ? Expr(op) : it->second;
}

Expr ExprMutator::visit_(const TupleNode* op) {
  bool unchanged = true;
  std::vector<Expr> fields;
  for (auto& f : op->fields) {
    fields.push_back(visit_expr(f));
    unchanged &= fields.back().get() == f.get();
  }
  return unchanged ? Expr(op) : Expr(make<TupleNode>(std::move(fields)));
}

Expr ExprMutator::visit_(const ShapeExprNode* op) {
  bool changed = false;
  auto values = map_dims(op->values, [&](const PrimExpr& e) { return visit_prim_expr(e); }, &changed);
  return changed ? Expr(make<ShapeExprNode>(std::move(values))) : Expr(op);
}

Expr ExprMutator::visit_(const PrimValueNode* op) {
  PrimExpr v = visit_prim_expr(op->value);
  return v.get() == op->value.get() ? Expr(op) : Expr(make<PrimValueNode>(v));
}

Expr ExprMutator::visit_(const FunctionNode* op) {
  std::vector<Var> params;
  bool unchanged = true;
  for (auto& p : op->params) {
    Var np = visit_var_def(p);
    if (np.get() != p.get()) {
      var_remap_[p] = np;
      unchanged = false;
    }
    params.push_back(np);
  }
  Expr body = visit_with_new_scope(op->body, params);
  StructInfo ret = op->ret_struct_info ? visit_expr_dep_struct_info_field(op->ret_struct_info)
                                       : op->ret_struct_info;
  if (unchanged && body.get() == op->body.get() && ret.get() == op->ret_struct_info.get())
    return Expr(op);
  return make<FunctionNode>(std::move(params), body, ret, op->is_pure, op->attrs);
}

Expr ExprMutator::visit_(const CallNode* op) {
  Expr new_op = visit_expr(op->op);
  bool unchanged = new_op.get() == op->op.get();
  std::vector<StructInfo> sinfo_args;
  for (auto& s : op->sinfo_args) {
    sinfo_args.push_back(visit_expr_dep_struct_info_field(s));
    unchanged &= sinfo_args.back().get() == s.get();
  }
  std::vector<Expr> args;
  for (auto& a : op->args) {
    args.push_back(visit_expr(a));
    unchanged &= args.back().get() == a.get();
  }
  if (unchanged) return Expr(op);
  return make<CallNode>(new_op, std::move(args), op->attrs, std::move(sinfo_args));
}

Expr ExprMutator::visit_(const SeqExprNode* op) {
  bool unchanged = true;
  std::vector<BindingBlock> blocks;
  for (auto& b : op->blocks) {
    BindingBlock nb = visit_binding_block(b);
    if (!nb->bindings.empty()) blocks.push_back(nb);
    unchanged &= nb.get() == b.get();
  }
  builder_.begin_binding_block();
  Expr body = visit_expr(op->body);
  BindingBlock prologue = builder_.end_block();
  if (!prologue->bindings.empty()) {
    blocks.push_back(prologue);
    unchanged = false;
  }
  if (unchanged && body.get() == op->body.get()) return Expr(op);
  return make<SeqExprNode>(std::move(blocks), body);
}

Expr ExprMutator::visit_(const IfNode* op) {
  Expr cond = visit_expr(op->cond);
  Expr t = visit_with_new_scope(op->true_branch);
  Expr f = visit_with_new_scope(op->false_branch);
  if (cond.get() == op->cond.get() && t.get() == op->true_branch.get() &&
      f.get() == op->false_branch.get())
    return Expr(op);
  return make<IfNode>(cond, t, f);
}

Expr ExprMutator::visit_(const TupleGetItemNode* op) {
  Expr t = visit_expr(op->tuple);
  return t.get() == op->tuple.get() ? Expr(op) : Expr(make<TupleGetItemNode>(t, op->index));
}

void ExprMutator::visit_binding(const Binding& binding) {
  if (auto* vb = binding.as<VarBindingNode>()) return visit_binding_(vb);
  if (auto* mc = binding.as<MatchCastNode>()) return visit_binding_(mc);
  throw_error("InternalError", "visit_binding: unknown binding kind");
}

void ExprMutator::visit_binding_(const VarBindingNode* binding) {
  Expr new_value = visit_expr(binding->value);
  reemit_binding(binding, new_value);
}

void ExprMutator::reemit_binding(const VarBindingNode* binding, const Expr& new_value) {
  Var new_var = visit_var_def(binding->var);
  if (new_var.get() == binding->var.get() && new_value.get() == binding->value.get()) {
    builder_.emit_normalized(Binding(binding));
    return;
  }
  Var v = with_struct_info(new_var, struct_info_of(new_value));
  if (v.get() != binding->var.get()) var_remap_[binding->var] = v;
  builder_.emit_normalized(make<VarBindingNode>(v, new_value));
}

void ExprMutator::visit_binding_(const MatchCastNode* binding) {
  Var new_var = visit_var_def(binding->var);
  Expr new_value = visit_expr(binding->value);
  StructInfo sinfo = visit_expr_dep_struct_info_field(binding->struct_info);
  if (new_var.get() == binding->var.get() && new_value.get() == binding->value.get() &&
      sinfo.get() == binding->struct_info.get()) {
    builder_.emit_normalized(Binding(binding));
    return;
  }
  new_value = builder_.normalize_argument(new_value);
  new_var = with_struct_info(new_var, sinfo);
  if (new_var.get() != binding->var.get()) var_remap_[binding->var] = new_var;
  builder_.emit_normalized(make<MatchCastNode>(new_var, new_value, sinfo));
}

BindingBlock ExprMutator::visit_binding_block(const BindingBlock& block) {
  return block->is_dataflow ? visit_dataflow_block_(block.get()) : visit_binding_block_(block.get());
}

namespace {
bool same_bindings(const BindingBlock& a, const BindingBlockNode* b) {
  if (a->bindings.size() != b->bindings.size()) return false;
  for (size_t i = 0; i < a->bindings.size(); ++i)
    if (a->bindings[i].get() != b->bindings[i].get()) return false;
  return true;
}
}  // namespace

BindingBlock ExprMutator::visit_binding_block_(const BindingBlockNode* block) {
  builder_.begin_binding_block();
  for (auto& b : block->bindings) visit_binding(b);
  BindingBlock out = builder_.end_block();
  return same_bindings(out, block) ? BindingBlock(block) : out;
}

BindingBlock ExprMutator::visit_dataflow_block_(const BindingBlockNode* block) {
  builder_.begin_dataflow_block();
  for (auto& b : block->bindings) visit_binding(b);
  BindingBlock out = builder_.end_block();
  return same_bindings(out, block) ? BindingBlock(block) : out;
}

Var ExprMutator::visit_var_def(const Var& var) {
  if (auto* d = var.as<DataflowVarNode>()) return visit_var_def_(d);
  return visit_var_def_(var.get());
}

Var ExprMutator::visit_var_def_(const VarNode* var) {
  StructInfo s = var->struct_info_ ? visit_expr_dep_struct_info_field(var->struct_info_) : StructInfo();
  if (s.get() == var->struct_info_.get()) return Var(var);
  return make<VarNode>(var->name_hint, s);
}

Var ExprMutator::visit_var_def_(const DataflowVarNode* var) {
  StructInfo s = var->struct_info_ ? visit_expr_dep_struct_info_field(var->struct_info_) : StructInfo();
  if (s.get() == var->struct_info_.get()) return Var(var);
  return make<DataflowVarNode>(var->name_hint, s);
}

StructInfo ExprMutator::visit_expr_dep_struct_info_field(const StructInfo& sinfo) {
  return map_sinfo_prims(sinfo, [&](const PrimExpr& e) { return visit_prim_expr(e); });
}

PrimExpr ExprMutator::visit_prim_expr(const PrimExpr& expr) { return expr; }

Expr ExprMutator::visit_with_new_scope(const Expr& expr, std::optional<std::vector<Var>> params) {
  builder_.begin_scope(std::move(params));
  Expr ret;
  if (expr.as<SeqExprNode>()) {
    ret = visit_expr(expr);
  } else {
    // Not yet in normal form: collect what normalizing it emits into a SeqExpr.
    builder_.begin_binding_block();
    Expr body = visit_expr(expr);
    BindingBlock prologue = builder_.end_block();
    std::vector<BindingBlock> blocks;
    if (!prologue->bindings.empty()) blocks.push_back(prologue);
    ret = builder_.normalize(make<SeqExprNode>(std::move(blocks), body));
  }
  builder_.end_scope();
  return ret;
}

Expr ExprMutator::visit_with_inner_scope(const Expr& expr) {
  builder_.begin_scope(std::nullopt);
  Expr ret = visit_expr(expr);
  builder_.end_scope();
  return ret;
}

Expr ExprMutator::lookup_binding(const Var& var) { return builder_.lookup_binding(var); }

Var ExprMutator::with_struct_info(const Var& var, const StructInfo& sinfo) {
  const StructInfo& cur = var->struct_info_;
  if (cur.get() == sinfo.get()) return var;
  if (cur && is_base_of(cur, sinfo) && is_base_of(sinfo, cur)) return var;
  if (var.as<DataflowVarNode>()) return make<DataflowVarNode>(var->name_hint, sinfo);
  return make<VarNode>(var->name_hint, sinfo);
}

}  // namespace partita
