// DeadCodeElimination (TVM relax.transform.DeadCodeElimination): drops functions unreachable
// from the entry functions, then unused pure bindings in every function (to a fixed point), then
// functions that became unreachable.
#include <algorithm>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/transform/basic.h"
#include "pass_util.h"

namespace partita::transform {

namespace {

using detail::UseCounter;

bool removable(const Binding& b) {
  if (contains_impure_call(binding_value(*b))) return false;
  // A match_cast that defines symbolic variables is kept: later struct info may use them.
  if (auto* mc = b.as<MatchCastNode>()) return definable_symbolic_vars_of(mc->struct_info).empty();
  return true;
}

// Counts uses and keeps every binding, nested ones included.
class BindingUseCounter : public UseCounter {
 public:
  std::vector<Binding> bindings;
  void visit_binding(const Binding& b) override {
    bindings.push_back(b);
    UseCounter::visit_binding(b);
  }
};

class UnusedBindingRemover : public ExprMutator {
 public:
  UnusedBindingRemover(const UseCounter& used, IRModule mod) : ExprMutator(mod), used_(used) {}

  bool removed = false;

  void visit_binding(const Binding& binding) override {
    if (used_.uses(binding->var) || !removable(binding)) ExprMutator::visit_binding(binding);
    else removed = true;
  }

 private:
  const UseCounter& used_;
};

}  // namespace

Function remove_all_unused(Function f, const IRModule& mod) {
  while (true) {
    BindingUseCounter c;
    c.visit_expr(f);
    // The mutator rebuilds the whole function: it runs only when some binding is dead. A round
    // that removed nothing (a dead binding the mutator does not reach) ends the loop.
    auto dead = [&](const Binding& b) { return !c.uses(b->var) && removable(b); };
    if (std::none_of(c.bindings.begin(), c.bindings.end(), dead)) return f;
    UnusedBindingRemover r(c, mod);
    Function nf = r.visit_expr(f).as_ref<FunctionNode>();
    if (!r.removed) return f;
    f = nf;
  }
}

IRModule detail::dead_code_elimination(IRModule mod, const std::vector<std::string>& entries) {
  mod = remove_unreachable_functions(std::move(mod), entries);
  mod = map_functions(mod, [&](const Function& f) { return remove_all_unused(f, mod); });
  return remove_unreachable_functions(std::move(mod), entries);
}

Pass DeadCodeElimination(std::vector<std::string> entry_functions) {
  return module_pass(detail::dead_code_elimination, 1, "DeadCodeElimination",
                     std::move(entry_functions));
}

}  // namespace partita::transform
