// rewrite_call / rewrite_bindings: pattern-driven rewriting of binding values.
#include <unordered_set>

#include "partita/dpl/matcher.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"

namespace partita::dpl {
namespace {

// Replaces matched binding values; everything else is rebuilt only where needed.
class CallRewriterMutator : public ExprMutator {
 public:
  CallRewriterMutator(const Pattern& pattern, const CallRewriter& rewriter, VarBindings bindings)
      : pattern_(pattern), rewriter_(rewriter), bindings_(std::move(bindings)) {}
  bool changed = false;

  void visit_binding_(const VarBindingNode* binding) override {
    Expr value = visit_expr(binding->value);
    if (auto matches = extract_matched_expr(pattern_, value, &bindings_)) {
      Expr rewritten = rewriter_(value, *matches);
      if (rewritten && !(rewritten == value) && !structural_equal(rewritten, value)) {
        changed = true;
        value = builder_.normalize(rewritten);
      }
    }
    reemit_binding(binding, value);
  }

 private:
  Pattern pattern_;
  const CallRewriter& rewriter_;
  VarBindings bindings_;
};

class BindingReplacer : public ExprMutator {
 public:
  explicit BindingReplacer(std::unordered_map<Var, Expr, RefHash, RefEq> repl) : repl_(std::move(repl)) {}
  void visit_binding_(const VarBindingNode* binding) override {
    auto it = repl_.find(binding->var);
    if (it == repl_.end()) return ExprMutator::visit_binding_(binding);
    reemit_binding(binding, builder_.normalize(visit_expr(it->second)));
  }

 private:
  std::unordered_map<Var, Expr, RefHash, RefEq> repl_;
};

}  // namespace

Function rewrite_call(const Pattern& pattern, const CallRewriter& rewriter, const Function& func) {
  Function cur = func;
  for (int round = 0; round < 100; ++round) {
    CallRewriterMutator m(pattern, rewriter, collect_bindings(cur));
    Function next = m.visit_expr(cur).as_ref<FunctionNode>();
    if (!m.changed) return next;
    cur = next;
  }
  return cur;
}

Function rewrite_bindings(const PatternContext& ctx, const BindingRewriter& rewriter,
                          const Function& func) {
  Function cur = func;
  std::unordered_set<size_t> done_blocks;
  for (int round = 0; round < 100; ++round) {
    auto* seq = cur->body.as<SeqExprNode>();
    if (!seq) return cur;
    bool rewrote = false;
    for (size_t bi = 0; bi < seq->blocks.size() && !rewrote; ++bi) {
      const BindingBlock& block = seq->blocks[bi];
      if (!block->is_dataflow || done_blocks.count(bi)) continue;
      auto matches = match_graph(ctx, block);
      if (!matches) {
        done_blocks.insert(bi);
        continue;
      }
      VarBindings bindings = collect_bindings(cur);
      auto repl = rewriter(*matches, bindings);
      std::unordered_map<Var, Expr, RefHash, RefEq> effective;
      for (const auto& [v, e] : repl) {
        auto it = bindings.find(v);
        if (e && (it == bindings.end() || !(it->second == e)) &&
            (it == bindings.end() || !structural_equal(it->second, e)))
          effective.emplace(v, e);
      }
      if (effective.empty()) {
        done_blocks.insert(bi);
        continue;
      }
      BindingReplacer r(std::move(effective));
      cur = r.visit_expr(cur).as_ref<FunctionNode>();
      rewrote = true;
    }
    if (!rewrote) return cur;
  }
  return cur;
}

}  // namespace partita::dpl
