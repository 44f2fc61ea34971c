// Substitution, the one way to replace variables (or other nodes) in an expression. Built on
// ExprMutator: unchanged subtrees are kept as they are, rebuilt nodes are normalized.
#pragma once

#include <optional>
#include <unordered_map>

#include "partita/ir/functor.h"
#include "partita/ir/ptr_map.h"

namespace partita {

using VarRemap = std::unordered_map<Var, Expr, RefHash, RefEq>;

/// Replaces every use of a key of `remap` (a node compared by address: a variable, a constant,
/// a tuple...) by its value; a parameter or binding that defines a key mapped to a variable
/// defines that variable instead (how a copy gets fresh variables). The caller keeps the keys
/// alive. One object substitutes into any number of expressions with the same table.
class Substitutor : public ExprMutator {
 public:
  /// `mod`: the context module for struct info of GlobalVar calls (as ExprMutator's).
  explicit Substitutor(PtrMap<Expr> remap, std::optional<IRModule> mod = std::nullopt);
  Expr operator()(const Expr& expr) { return visit_expr(expr); }

  Expr visit_expr(const Expr& expr) override;
  Var visit_var_def(const Var& var) override;
  Expr visit_(const CallNode* op) override;
  using ExprMutator::visit_;

 private:
  PtrMap<Expr> remap_;
};

/// `expr` with variables replaced per `remap` (see Substitutor).
Expr substitute_vars(const Expr& expr, const VarRemap& remap);

/// A copy of `func` with fresh parameters and binding variables (same names and struct info).
Function copy_with_new_vars(const Function& func);

}  // namespace partita
