// Analyses over the IR: struct-info helpers (subsumption, erasure, call return derivation,
// least common ancestor), variable collections, purity, and the well-formedness check.
// Mirrors TVM Relax's relax/analysis.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "partita/ir/module.h"

namespace partita {

// ---------------------------------------------------------------------------------------------
// Struct info helpers
// ---------------------------------------------------------------------------------------------

/// The struct info of a normalized expression; throws Error("ValueError") naming the expression
/// kind when it has none (the expression was not normalized).
const StructInfo& struct_info_of(const Expr& expr);

/// How far `derived` fits `base` (TVM's BaseCheckResult). Ordered: a larger value fits better.
///  - FailL0: can never fit (different kinds: a tensor is not a tuple).
///  - FailL1: statically known to differ (dtype, ndim, constant dimension, arity).
///  - FailL2: may fit but it cannot be proven (symbolic dimensions not provably equal).
///  - Pass: `derived` is always a `base`.
enum class BaseCheckResult { FailL0 = 0, FailL1 = 1, FailL2 = 2, Pass = 3 };
BaseCheckResult struct_info_base_check(const StructInfo& base, const StructInfo& derived);
/// True when every value described by `derived` is also described by `base`.
bool is_base_of(const StructInfo& base, const StructInfo& derived);

/// The most specific struct info describing both `a` and `b` (TVM's StructInfoLCA).
StructInfo struct_info_lca(const StructInfo& a, const StructInfo& b);

using PrimVarMap = std::unordered_map<PrimVar, PrimExpr, RefHash, RefEq>;

/// `info` with every symbolic value that is not defined rewritten: a variable in `var_map` is
/// replaced by its value, any other variable makes the value unknown (a shape keeps only its
/// ndim, a prim value is dropped). `f_shape_var_map` is consulted when given; when absent, no
/// variable counts as defined. (TVM's EraseToWellDefined.)
StructInfo erase_to_well_defined(
    const StructInfo& info,
    const std::function<std::optional<PrimExpr>(const PrimVar&)>& f_shape_var_map = nullptr);
StructInfo erase_to_well_defined(const StructInfo& info, const PrimVarMap& var_map);

/// Substitutes symbolic variables in `info` (no erasure of the others).
StructInfo bind_struct_info(const StructInfo& info, const PrimVarMap& var_map);

/// The struct info of calling a function of signature `finfo` with `call`'s arguments: binds the
/// symbolic variables of the parameters (dims that are a bare variable) to the arguments' values
/// and substitutes them into the return struct info, erasing what stays undefined. For an
/// opaque signature returns the single sinfo_arg when present, else `finfo->ret`. Throws
/// Error("TypeError") when the argument count differs or an argument can never fit its parameter.
StructInfo derive_call_ret_struct_info(const FuncStructInfo& finfo, const CallNode& call);

/// Leaves may appear directly as call arguments, tuple fields and SeqExpr bodies (TVM's normal
/// form): variables, constants, primitive, string and dtype immediates, shapes, globals, extern
/// functions and operators.
bool is_leaf(const Expr& e);
/// A leaf, or a tuple of leaves and such tuples.
bool is_leaf_or_tuple(const Expr& e);

/// A Relax function that is neither "Primitive", "Composite" nor "Codegen": one of the
/// program's own, which the passes partition and fuse and the VM runs (not a group made by them).
bool is_plain_function(const FunctionNode& func);

/// `e` when it is a call of the operator `op_name`, else null (also for a null `e`).
const CallNode* call_of(const Expr& e, std::string_view op_name);

/// The FuncStructInfo of a function: its params' struct info, its ret_struct_info (or its
/// body's when unset) and purity.
StructInfo func_struct_info_of(const FunctionNode& func);

/// Symbolic variables that occur in `info`, in first-occurrence order.
std::vector<PrimVar> symbolic_vars_of(const StructInfo& info);
/// Symbolic variables that `info` *defines* when matched (bare-variable dimensions/values).
std::vector<PrimVar> definable_symbolic_vars_of(const StructInfo& info);
/// (a, b) with `expr` = a * v + b for every value of `v`, a != 0, when `expr` has no other
/// variable (checked at v = 0, 1, 2, 3, 7 and 1000: floordiv, min and max count where they
/// are linear there), else nullopt. Solves a flattened dimension (n * 8) for its variable.
std::optional<std::pair<int64_t, int64_t>> linear_in(const PrimExpr& expr, const PrimVarNode* v);
/// Symbolic variables that occur in `expr`, in first-occurrence order.
std::vector<PrimVar> prim_vars_of(const PrimExpr& expr);

// ---------------------------------------------------------------------------------------------
// Variable and call collections (each list is in first-occurrence order, without duplicates)
// ---------------------------------------------------------------------------------------------

/// Variables used in `expr` but not bound in it (function parameters, binding targets).
std::vector<Var> free_vars(const Expr& expr);
/// Variables bound in `expr` (parameters and binding targets).
std::vector<Var> bound_vars(const Expr& expr);
/// All variables used or bound in `expr`.
std::vector<Var> all_vars(const Expr& expr);
/// GlobalVars referenced in `expr`.
std::vector<GlobalVar> all_global_vars(const Expr& expr);

// ---------------------------------------------------------------------------------------------
// Purity
// ---------------------------------------------------------------------------------------------

/// True for an operator registered as impure (OpDef::pure, read through ir/op_interface.h), and
/// for a name no operator has (nothing is known about it, so nothing may be assumed).
bool is_impure_op(const std::string& op_name);
/// True when `expr` contains a call that may have side effects: an impure op, or a call of a
/// function whose FuncStructInfo is impure. Calls inside nested functions are not counted (a
/// function definition does nothing by itself).
bool contains_impure_call(const Expr& expr);

// ---------------------------------------------------------------------------------------------
// Well-formedness
// ---------------------------------------------------------------------------------------------

/// Every reason `mod` is not well formed (empty when it is), each a one-line message naming the
/// function and the offending variable/expression. Checks:
///  - a variable used where it is not defined; a variable defined twice;
///  - a DataflowVar used outside its dataflow block, as a function parameter, or defined
///    outside a dataflow block;
///  - an expression or variable without struct info (when `check_struct_info`);
///  - a call whose argument count or argument struct info cannot fit its callee's
///    FuncStructInfo (for Var and GlobalVar callees as well as functions);
///  - a symbolic variable used before the function signature or a match_cast defines it;
///  - a GlobalVar not in the module; a public function whose "global_symbol" differs from its
///    name;
///  - a Function body that is not a SeqExpr, an If branch that is not a SeqExpr, a SeqExpr body
///    or call argument that is not a leaf (in normal form).
std::vector<std::string> well_formed_errors(const IRModule& mod, bool check_struct_info = true);
/// The same for one function (GlobalVars cannot be checked against a module).
std::vector<std::string> well_formed_errors(const Function& func, bool check_struct_info = true);

/// True when `mod` is well formed. Never throws: each reason is logged to stderr prefixed with
/// "well_formed: ".
bool well_formed(const IRModule& mod, bool check_struct_info = true);
bool well_formed(const Function& func, bool check_struct_info = true);

}  // namespace partita
