// CanonicalizeBindings (TVM relax.transform.CanonicalizeBindings): two steps, as in TVM.
//  1. Symbolic variables whose value a match_cast reveals are replaced by that value.
//  2. Trivial bindings (`a = b`, tuple items of known tuples, match_casts that change nothing)
//     are removed and uses redirected; vars bound to constants are replaced by the constant;
//     non-dataflow vars used only inside their dataflow block become DataflowVars; a dataflow
//     var that only feeds an output var is replaced by the output var's binding.
#include <unordered_set>
#include <utility>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"
#include "partita/transform/basic.h"
#include "pass_util.h"

namespace partita::transform {

namespace {

using VarSet = std::unordered_set<Var, RefHash, RefEq>;
template <class V>
using VarMap = std::unordered_map<Var, V, RefHash, RefEq>;

// `v` followed through `replace` to the end of its chain.
Var follow(const VarMap<Var>& replace, Var v) {
  for (auto it = replace.find(v); it != replace.end(); it = replace.find(v)) v = it->second;
  return v;
}

// ---- step 1: symbolic variables ----

class SymbolicVarCanonicalizer : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;

  // Values learned in a function, or in one branch, say nothing outside it.
  Expr visit_(const FunctionNode* f) override { return scoped(f); }
  Expr visit_(const IfNode* op) override { return scoped(op); }

  void visit_binding_(const MatchCastNode* b) override {
    const StructInfo& value_sinfo = b->value->struct_info_;
    auto learn = [&](const PrimExpr& target, const PrimExpr& actual) {
      auto* v = target.as<PrimVarNode>();
      if (v && actual && actual.get() != v) known_.emplace(PrimVar(v), actual);  // the first wins
    };
    auto learn_dims = [&](const std::optional<std::vector<PrimExpr>>& t,
                          const std::optional<std::vector<PrimExpr>>& a) {
      if (!t || !a || t->size() != a->size()) return;
      for (size_t i = 0; i < t->size(); ++i) learn((*t)[i], (*a)[i]);
    };
    if (value_sinfo && b->struct_info && value_sinfo->kind() == b->struct_info->kind()) {
      if (auto* t = b->struct_info.as<TensorStructInfoNode>())
        learn_dims(t->shape, value_sinfo.as<TensorStructInfoNode>()->shape);
      else if (auto* s = b->struct_info.as<ShapeStructInfoNode>())
        learn_dims(s->values, value_sinfo.as<ShapeStructInfoNode>()->values);
      else if (auto* p = b->struct_info.as<PrimStructInfoNode>())
        if (p->value) learn(p->value, value_sinfo.as<PrimStructInfoNode>()->value);
    }
    ExprMutator::visit_binding_(b);
  }

  PrimExpr visit_prim_expr(const PrimExpr& e) override {
    if (known_.empty()) return e;
    return bind_struct_info(prim_sinfo(e->dtype, e), known_).as<PrimStructInfoNode>()->value;
  }

 private:
  template <class Node>
  Expr scoped(const Node* n) {
    PrimVarMap cached = known_;
    Expr out = ExprMutator::visit_(n);
    known_ = std::move(cached);
    return out;
  }
  PrimVarMap known_;
};

// ---- step 2: relax bindings ----

struct Plan {
  VarMap<Var> replace_usage;
  VarMap<Var> replace_binding;
  VarSet bindings_to_remove;
  VarMap<Expr> inline_constant;
};

class Planner : public ExprVisitor {
 public:
  static Plan collect(const Expr& expr) {
    Planner p;
    p.visit_expr(expr);
    Plan plan;
    // A Var defined in a dataflow block and used only there can be a DataflowVar.
    for (auto& var : p.defined_inside_dataflow_order_) {
      if (!var.as<DataflowVarNode>() && !p.used_outside_home_.count(var)) {
        Var nv = make<DataflowVarNode>(var->name_hint, var->struct_info_);
        plan.replace_binding[var] = nv;
        plan.replace_usage[var] = nv;
      }
    }
    plan.inline_constant = std::move(p.bound_to_constant_);
    for (auto& [bound_var, target] : p.trivial_order_) {
      Var to = follow(plan.replace_binding, follow(p.trivial_, target));
      plan.bindings_to_remove.insert(bound_var);
      if (bound_var.as<DataflowVarNode>() || !to.as<DataflowVarNode>() ||
          !p.used_outside_home_.count(bound_var)) {
        // Uses of the bound var can use its source directly.
        plan.replace_usage[bound_var] = to;
      } else {
        // `gv = lv` with gv used outside the block: bind gv where lv was bound instead.
        plan.replace_binding[to] = bound_var;
        plan.replace_usage[to] = bound_var;
      }
    }
    return plan;
  }

 private:
  void visit_(const FunctionNode* f) override {
    for (auto& v : free_vars(Expr(f))) used_outside_home_.insert(v);
    outside_blocks(f);
  }
  void visit_(const SeqExprNode* seq) override { outside_blocks(seq); }
  // A nested function or SeqExpr (its parameters, its own blocks) is in no enclosing block.
  template <class Node>
  void outside_blocks(const Node* n) {
    auto cache = std::exchange(current_block_, nullptr);
    ExprVisitor::visit_(n);
    current_block_ = cache;
  }

  void visit_binding_block(const BindingBlock& block) override {
    current_block_ = block.get();
    for (const auto& b : block->bindings) visit_binding(b);
    current_block_ = nullptr;
  }

  void visit_binding(const Binding& binding) override {
    bool same_sinfo = true;
    Expr value = binding_value(*binding);
    if (auto* mc = binding.as<MatchCastNode>())
      same_sinfo = structural_equal(binding->var->struct_info_, mc->value->struct_info_);
    // An item of a tuple whose fields are known is that field.
    if (auto* tgi = value.as<TupleGetItemNode>()) {
      Expr tuple = tgi->tuple;
      while (auto* tv = tuple.as<VarNode>()) {
        auto it = known_bindings_.find(Var(tv));
        if (it == known_bindings_.end()) break;
        tuple = it->second;
      }
      if (auto* t = tuple.as<TupleNode>())
        if (tgi->index >= 0 && size_t(tgi->index) < t->fields.size()) value = t->fields[tgi->index];
    }
    if (auto* parent = value.as<VarNode>(); parent && same_sinfo) {
      if (!trivial_.count(binding->var)) trivial_order_.emplace_back(binding->var, Var(parent));
      trivial_[binding->var] = Var(parent);
    }
    if (value.as<ConstantNode>()) bound_to_constant_[binding->var] = value;
    known_bindings_[binding->var] = value;
    if (current_block_) def_blocks_[binding->var] = current_block_;
    ExprVisitor::visit_binding(binding);
  }

  void visit_var_def(const Var& var) override {
    if (inside_dataflow() && defined_inside_dataflow_.insert(var).second)
      defined_inside_dataflow_order_.push_back(var);
  }

  void visit_(const VarNode* v) override {
    auto it = def_blocks_.find(Var(v));
    if (!inside_dataflow() || (it != def_blocks_.end() && current_block_ != it->second))
      used_outside_home_.insert(Var(v));
  }

  bool inside_dataflow() const { return current_block_ && current_block_->is_dataflow; }

  const BindingBlockNode* current_block_ = nullptr;
  VarMap<const BindingBlockNode*> def_blocks_;
  VarMap<Var> trivial_;
  std::vector<std::pair<Var, Var>> trivial_order_;
  VarMap<Expr> known_bindings_;
  VarMap<Expr> bound_to_constant_;
  VarSet defined_inside_dataflow_;
  std::vector<Var> defined_inside_dataflow_order_;
  VarSet used_outside_home_;
};

class BindingCanonicalizer : public ExprMutator {
 public:
  BindingCanonicalizer(Plan plan, IRModule mod) : ExprMutator(mod), plan_(std::move(plan)) {}

  void visit_binding(const Binding& binding) override {
    if (!plan_.bindings_to_remove.count(binding->var)) ExprMutator::visit_binding(binding);
  }

  Var visit_var_def(const Var& var) override {
    return ExprMutator::visit_var_def(follow(plan_.replace_binding, var));
  }

  Expr visit_(const VarNode* v) override { return visit_use(Var(v)); }
  Expr visit_(const DataflowVarNode* v) override { return visit_use(Var(v)); }

  BindingBlock visit_dataflow_block_(const BindingBlockNode* block) override {
    BindingBlock nb = ExprMutator::visit_dataflow_block_(block);
    // Find dataflow vars that exist only to be bound to one output var.
    std::unordered_set<const Object*> disqualified, output_vars;
    std::unordered_map<const Object*, Expr> candidates;
    auto disqualify_vars_of = [&](const Expr& value, bool free_only) {
      for (auto& v : free_only ? free_vars(value) : all_vars(value))
        if (v.as<DataflowVarNode>()) disqualified.insert(v.get());
    };
    for (size_t i = nb->bindings.size(); i-- > 0;) {
      const Binding& b = nb->bindings[i];
      const Expr& value = binding_value(*b);
      if (b->var.as<DataflowVarNode>()) {
        disqualify_vars_of(value, !value.as<FunctionNode>());
        if (!disqualified.count(b->var.get()) && output_vars.count(b->var.get()))
          candidates[b->var.get()] = value;
      } else if (auto* rhs = value.as<DataflowVarNode>()) {
        if (output_vars.count(rhs)) disqualified.insert(rhs);
        output_vars.insert(rhs);
      } else {
        disqualify_vars_of(value, value.as<FunctionNode>() != nullptr);
      }
    }
    if (candidates.empty()) return nb;
    std::vector<Binding> bindings;
    // A candidate's binding goes; the output var it fed takes its value (candidates are dataflow
    // vars, and none is the value of another dataflow var's binding: that disqualifies it).
    for (auto& b : nb->bindings) {
      if (candidates.count(b->var.get())) continue;
      auto it = candidates.find(binding_value(*b).get());
      bindings.push_back(it == candidates.end() ? b : detail::rebind(b, b->var, it->second));
    }
    return make<BindingBlockNode>(std::move(bindings), true);
  }

 private:
  Expr visit_use(Var v) {
    v = follow(plan_.replace_usage, v);
    auto c = plan_.inline_constant.find(v);
    if (c != plan_.inline_constant.end()) return visit_expr(c->second);
    if (auto* d = v.as<DataflowVarNode>()) return ExprMutator::visit_(d);
    return ExprMutator::visit_(v.get());
  }

  Plan plan_;
};

}  // namespace

Pass CanonicalizeBindings() {
  Pass tir_vars = create_function_pass(
      [](Function f, IRModule mod, const PassContext&) -> Function {
        return SymbolicVarCanonicalizer(mod).visit_expr(f).as_ref<FunctionNode>();
      },
      1, "CanonicalizeTIRVariables");
  Pass relax_bindings = create_function_pass(
      [](Function f, IRModule mod, const PassContext&) -> Function {
        return BindingCanonicalizer(Planner::collect(f), mod).visit_expr(f).as_ref<FunctionNode>();
      },
      1, "CanonicalizeRelaxBindings");
  return Sequential({tir_vars, relax_bindings}, "CanonicalizeBindings");
}

}  // namespace partita::transform
