// EliminateCommonSubexpr: see the header. Values are looked up by structural hash and confirmed
// by structural equality with free variables compared by identity, so `add(x, y)` matches only
// another `add(x, y)` of the same x and y.
#include "partita/transform/eliminate_common_subexpr.h"

#include <unordered_map>
#include <vector>

#include "partita/ir/analysis.h"
#include "partita/support/error.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"

namespace partita::transform {

namespace {

struct Candidate {
  Expr value;
  StructInfo match_cast;  // null for a plain binding
  std::vector<Var> vars;  // the first is the replacement; later ones were merged into it
};

class CommonSubexprEliminator : public ExprMutator {
 public:
  explicit CommonSubexprEliminator(bool call_only) : call_only_(call_only) {}

  BindingBlock visit_dataflow_block_(const BindingBlockNode* block) override {
    auto saved_remap = var_remap_;
    BindingBlock out = ExprMutator::visit_dataflow_block_(block);
    // Dataflow variables are not visible after their block.
    for (auto& [hash, list] : table_)
      for (Candidate& c : list)
        std::erase_if(c.vars, [](const Var& v) { return v.as<DataflowVarNode>() != nullptr; });
    var_remap_ = std::move(saved_remap);
    return out;
  }

  void visit_binding(const Binding& binding) override {
    Expr value = visit_expr(binding_value(*binding));
    const auto* mc = binding.as<MatchCastNode>();
    StructInfo cast = mc ? mc->struct_info : StructInfo();
    bool eligible = (!call_only_ || value.as<CallNode>()) && !contains_impure_call(value);
    Candidate* found = eligible ? lookup(value, cast) : nullptr;
    if (found && !found->vars.empty()) {
      Var earlier = found->vars.front();
      found->vars.push_back(binding->var);
      var_remap_[binding->var] = earlier;
      builder_.emit_normalized(make<VarBindingNode>(binding->var, earlier));
      return;
    }
    if (eligible) {
      if (found)
        found->vars.push_back(binding->var);
      else
        table_[structural_hash(value)].push_back(Candidate{value, cast, {binding->var}});
    }
    if (mc)
      builder_.emit_normalized(make<MatchCastNode>(binding->var, value, mc->struct_info));
    else
      builder_.emit_normalized(make<VarBindingNode>(binding->var, value));
  }

  Expr visit_(const FunctionNode* op) override {
    // A nested function sees none of the enclosing bindings (and adds none to them).
    if (table_.empty() && var_remap_.empty()) return ExprMutator::visit_(op);
    CommonSubexprEliminator fresh(call_only_);
    return fresh.visit_expr(Expr(op));
  }

  Expr visit_(const IfNode* op) override {
    Expr cond = visit_expr(op->cond);
    Expr t = in_inner_scope(op->true_branch);
    Expr f = in_inner_scope(op->false_branch);
    if (cond.get() == op->cond.get() && t.get() == op->true_branch.get() &&
        f.get() == op->false_branch.get())
      return Expr(op);
    return make<IfNode>(cond, t, f);
  }

 private:
  Candidate* lookup(const Expr& value, const StructInfo& cast) {
    auto it = table_.find(structural_hash(value));
    if (it == table_.end()) return nullptr;
    for (Candidate& c : it->second) {
      if (c.match_cast.defined() != cast.defined()) continue;
      if (cast && !structural_equal(c.match_cast, cast, false)) continue;
      if (structural_equal(c.value, value, false)) return &c;
    }
    return nullptr;
  }

  Expr in_inner_scope(const Expr& e) {
    auto saved_remap = var_remap_;
    auto saved_table = table_;
    Expr out = visit_with_new_scope(e);
    var_remap_ = std::move(saved_remap);
    table_ = std::move(saved_table);
    return out;
  }

  bool call_only_;
  std::unordered_map<size_t, std::vector<Candidate>> table_;
};

}  // namespace

Pass EliminateCommonSubexpr(bool call_only) {
  return create_function_pass(
      [call_only](Function f, IRModule, const PassContext&) {
        CommonSubexprEliminator m(call_only);
        return m.visit_expr(f).as_ref<FunctionNode>();
      },
      1, "EliminateCommonSubexpr");
}

}  // namespace partita::transform
