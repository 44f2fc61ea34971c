// Internal helpers of the transform passes: the one loop that rewrites the bindings of a function
// and rebuilds only what changed, the one count of variable uses, and the one removal of
// unreachable functions.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "partita/ir/functor.h"
#include "partita/ir/module.h"
#include "partita/ir/name_supply.h"

namespace partita::transform::detail {

/// `func` with each block of its body replaced by `rewrite(block)` (a null one drops it); the
/// body and the function are new only when a block changed.
Function rewrite_blocks(const Function& func,
                        const std::function<BindingBlock(const BindingBlock&)>& rewrite);

/// `func` with each binding of its body replaced by `rewrite(binding)`: the same binding keeps
/// it, a null one drops it (and a block left empty with it). Blocks, the body and the function
/// are new only where something changed.
Function rewrite_bindings(const Function& func,
                          const std::function<Binding(const Binding&)>& rewrite);

/// `func` with each call of a GlobalVar that `callee(gv)` maps to a GlobalVar (null: none)
/// calling that one instead.
Function redirect_calls(const Function& func,
                        const std::function<GlobalVar(const GlobalVarNode*)>& callee);

/// `mod` with each Relax function `func` replaced by `rewrite(func)` where that is another one
/// (`mod` itself is left as it was, for `rewrite` to read).
IRModule map_functions(IRModule mod, const std::function<Function(const Function&)>& rewrite);

/// A binding of `var` to `value` of the kind of `like` (a match_cast keeps its struct info).
Binding rebind(const Binding& like, const Var& var, const Expr& value);

/// The SeqExpr of one block of `bindings` ending in `body`, with the struct info `sinfo` (the
/// body's when null).
Expr single_block_seq(std::vector<Binding> bindings, bool is_dataflow, const Expr& body,
                      StructInfo sinfo = {});

/// Adds `make_func(name)` to `mod` under the first name `names` gives for `hint` that `mod` does
/// not hold.
GlobalVar add_fresh_function(IRModule& mod, NameSupply& names, const std::string& hint,
                             const std::function<Function(const std::string&)>& make_func);

/// `func` with its attributes changed by `edit` (`func` itself when they stay its own).
Function with_attrs(const Function& func, const std::function<void(DictAttrs&)>& edit);

/// True when `func` carries "Codegen" naming `filter` (any codegen when `filter` is empty).
bool has_codegen(const FunctionNode& func, const std::string& filter);

/// The global "Composite" function `callee` names in `mod`, else null.
const FunctionNode* composite_callee(const IRModule& mod, const Expr& callee);

/// Counts the uses of every variable in what it visits (a pass deciding whether a value has one
/// reader, so that the reader may absorb it).
class UseCounter : public ExprVisitor {
 public:
  std::unordered_map<const Object*, int> counts;
  void visit_(const VarNode* v) override { ++counts[v]; }
  void visit_(const DataflowVarNode* v) override { ++counts[v]; }
  /// The uses of `var` counted.
  int uses(const Expr& var) const {
    auto it = counts.find(var.get());
    return it == counts.end() ? 0 : it->second;
  }
};

/// `mod` without the functions no root reaches through calls and references (TVM's
/// RemoveUnusedFunctions): the roots are `entries` and every function with "global_symbol".
IRModule remove_unreachable_functions(IRModule mod, const std::vector<std::string>& entries = {});

/// DeadCodeElimination's work: unreachable functions, then in every function the unused pure
/// bindings (remove_all_unused), then the functions that became unreachable.
IRModule dead_code_elimination(IRModule mod, const std::vector<std::string>& entries = {});

}  // namespace partita::transform::detail
