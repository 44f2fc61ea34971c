// Expression visitors and mutators (TVM Relax's ExprVisitor / ExprMutator).
//
// `ExprVisitor` walks an expression tree: `visit_expr` dispatches on the node kind to an
// overridable `visit_(const XNode*)`; bindings, blocks, variable definitions, struct info fields
// and symbolic (PrimExpr) values have their own hooks so a subclass overrides only what it needs.
//
// `ExprMutator` rebuilds an expression bottom-up. It returns the *same* node when nothing below it
// changed (so identity can be used to detect "no change"), keeps a remap of redefined variables,
// and emits rebuilt bindings through an internal BlockBuilder so that every new expression is
// normalized (has struct info, is in A-normal form). Nested scopes — function bodies and If
// branches — are visited in a fresh builder scope and come back as SeqExprs.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "partita/ir/block_builder.h"
#include "partita/ir/module.h"

namespace partita {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;

  /// Visits `expr` (dispatches to the matching visit_ overload). Null expressions are ignored.
  virtual void visit_expr(const Expr& expr);

  // One overload per expression kind. The defaults visit the children.
  virtual void visit_(const ConstantNode* op);
  virtual void visit_(const TupleNode* op);
  virtual void visit_(const VarNode* op);
  virtual void visit_(const DataflowVarNode* op);
  virtual void visit_(const ShapeExprNode* op);
  virtual void visit_(const ExternFuncNode* op);
  virtual void visit_(const GlobalVarNode* op);
  virtual void visit_(const FunctionNode* op);
  virtual void visit_(const CallNode* op);
  virtual void visit_(const SeqExprNode* op);
  virtual void visit_(const IfNode* op);
  virtual void visit_(const OpNode* op);
  virtual void visit_(const TupleGetItemNode* op);
  virtual void visit_(const PrimValueNode* op);
  virtual void visit_(const StringImmNode* op);
  virtual void visit_(const DataTypeImmNode* op);

  /// Dispatches to visit_binding_(VarBindingNode*) or visit_binding_(MatchCastNode*).
  virtual void visit_binding(const Binding& binding);
  /// Default: visit the value, then the variable definition.
  virtual void visit_binding_(const VarBindingNode* binding);
  /// Default: visit the value, the struct info field, then the variable definition.
  virtual void visit_binding_(const MatchCastNode* binding);

  /// Dispatches to visit_binding_block_ or visit_dataflow_block_ on `block->is_dataflow`.
  virtual void visit_binding_block(const BindingBlock& block);
  virtual void visit_binding_block_(const BindingBlockNode* block);
  virtual void visit_dataflow_block_(const BindingBlockNode* block);

  /// Called where a variable is defined (function parameter, binding target).
  virtual void visit_var_def(const Var& var);
  virtual void visit_var_def_(const VarNode* var);
  virtual void visit_var_def_(const DataflowVarNode* var);

  /// Called on struct info that appears as a field of an expression or binding (call
  /// sinfo_args, match_cast target). Default: visit every PrimExpr inside it.
  virtual void visit_expr_dep_struct_info_field(const StructInfo& sinfo);
  /// Called on every symbolic value (ShapeExpr dims, PrimValue, dims in struct info fields).
  virtual void visit_prim_expr(const PrimExpr& expr);
};

/// Calls `fvisit` on every expression node of `expr` in post order (children first).
void post_order_visit(const Expr& expr, const std::function<void(const Expr&)>& fvisit);

class ExprMutator {
 public:
  /// `mod`: the context module handed to the internal BlockBuilder (used to type GlobalVar
  /// calls); an empty module when absent.
  explicit ExprMutator(std::optional<IRModule> mod = std::nullopt);
  virtual ~ExprMutator() = default;

  /// Mutates `expr` and returns the normalized result (the same node when nothing changed).
  virtual Expr visit_expr(const Expr& expr);

  virtual Expr visit_(const ConstantNode* op);
  virtual Expr visit_(const TupleNode* op);
  virtual Expr visit_(const VarNode* op);
  virtual Expr visit_(const DataflowVarNode* op);
  virtual Expr visit_(const ShapeExprNode* op);
  virtual Expr visit_(const ExternFuncNode* op);
  virtual Expr visit_(const GlobalVarNode* op);
  virtual Expr visit_(const FunctionNode* op);
  virtual Expr visit_(const CallNode* op);
  virtual Expr visit_(const SeqExprNode* op);
  virtual Expr visit_(const IfNode* op);
  virtual Expr visit_(const OpNode* op);
  virtual Expr visit_(const TupleGetItemNode* op);
  virtual Expr visit_(const PrimValueNode* op);
  virtual Expr visit_(const StringImmNode* op);
  virtual Expr visit_(const DataTypeImmNode* op);

  /// Mutates a binding and emits the result into `builder_` (possibly nothing, or several).
  virtual void visit_binding(const Binding& binding);
  virtual void visit_binding_(const VarBindingNode* binding);
  virtual void visit_binding_(const MatchCastNode* binding);

  /// Mutates a block: opens a block of the same kind in `builder_`, visits each binding and
  /// returns the closed block (the same node when no binding changed).
  virtual BindingBlock visit_binding_block(const BindingBlock& block);
  virtual BindingBlock visit_binding_block_(const BindingBlockNode* block);
  virtual BindingBlock visit_dataflow_block_(const BindingBlockNode* block);

  /// Visits a variable definition; returns the variable to define instead (itself by default,
  /// or a copy whose struct info had symbolic values changed by visit_prim_expr).
  virtual Var visit_var_def(const Var& var);
  virtual Var visit_var_def_(const VarNode* var);
  virtual Var visit_var_def_(const DataflowVarNode* var);

  virtual StructInfo visit_expr_dep_struct_info_field(const StructInfo& sinfo);
  virtual PrimExpr visit_prim_expr(const PrimExpr& expr);

  /// Visits `expr` in a new builder scope (defining `params`) and returns a SeqExpr, as used for
  /// function bodies and If branches.
  Expr visit_with_new_scope(const Expr& expr, std::optional<std::vector<Var>> params = std::nullopt);
  /// Visits `expr` in a nested scope that shares the enclosing variables (SeqExpr body).
  Expr visit_with_inner_scope(const Expr& expr);

  /// The value bound to `var` by a binding emitted so far in this mutator, or null.
  Expr lookup_binding(const Var& var);
  /// `var` with struct info `sinfo` (a fresh Var of the same kind and name when it differs).
  static Var with_struct_info(const Var& var, const StructInfo& sinfo);

  BlockBuilder& builder() { return builder_; }

 protected:
  /// Emits `var = new_value` for the binding `binding`, reusing `binding` when unchanged and
  /// making a new variable when the value's struct info no longer fits the old one.
  void reemit_binding(const VarBindingNode* binding, const Expr& new_value);

  BlockBuilder builder_;
  /// Variables replaced during mutation: uses of the key are rewritten to the value.
  std::unordered_map<Var, Expr, RefHash, RefEq> var_remap_;
};

}  // namespace partita
