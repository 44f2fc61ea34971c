// The dataflow pattern matcher (TVM Relax's dataflow_matcher): matches a pattern against an
// expression, following variable bindings of a dataflow block (`relu(conv2d(...))` matches
// `lv1 = relu(lv0)` when `lv0 = conv2d(...)`), memoized per pattern node.
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "partita/dpl/pattern.h"
#include "partita/ir/module.h"

namespace partita::dpl {

/// Variable -> bound value, as collected from the bindings of a dataflow block.
using VarBindings = std::unordered_map<Var, Expr, RefHash, RefEq>;
/// Which expression each matched sub-pattern matched (a variable is reported as its bound value
/// when the bindings were followed).
using MatchMap = std::unordered_map<Pattern, Expr, PatternHash>;

/// The matched sub-patterns of `pattern` against `expr`, or nullopt when it does not match.
/// With `bindings`, a variable operand is replaced by its bound value before matching.
std::optional<MatchMap> extract_matched_expr(const Pattern& pattern, const Expr& expr,
                                             const VarBindings* bindings = nullptr);
/// The value bound to a variable, or nullptr when it is not bound: lets a caller that already
/// indexes its bindings (by position) follow them without building a VarBindings map.
using BindingLookup = std::function<const Expr*(const VarNode*)>;
/// extract_matched_expr following the bindings that `lookup` reports.
std::optional<MatchMap> extract_matched_expr_with_lookup(const Pattern& pattern, const Expr& expr,
                                                         const BindingLookup& lookup);
/// The matches of extract_matched_expr_with_lookup as (sub-pattern, expression) pairs in the order
/// they were made, without building a map: for callers that try a pattern on many expressions and
/// reuse one list. The Pattern pointers point into `pattern`'s tree (valid while it lives).
using MatchList = std::vector<std::pair<const Pattern*, Expr>>;
/// Fills `out` (cleared first; left empty on failure); true when `pattern` matches `expr`.
bool match_with_lookup(const Pattern& pattern, const Expr& expr, const BindingLookup& lookup, MatchList& out);
/// True when `pattern` matches `expr`.
bool match_expr(const Pattern& pattern, const Expr& expr, const VarBindings* bindings = nullptr);

/// The bindings (var -> value) of `block`.
VarBindings collect_bindings(const BindingBlock& block);
/// The bindings of every block of `func` (its body must be a SeqExpr).
VarBindings collect_bindings(const Function& func);

/// Matches every pattern of `ctx` to a distinct variable bound in `block` so that each pattern
/// matches the variable's value and every edge holds (the consumer's value uses the producer's
/// variable, at the given argument index; an `only` edge requires a single use). Returns the
/// first assignment found in binding order, or nullopt.
std::optional<std::unordered_map<Pattern, Var, PatternHash>> match_graph(
    const PatternContext& ctx, const BindingBlock& block);

/// Rewrites every binding value in `func` matched by `pattern` with `rewriter(value, matches)`,
/// repeating until nothing changes (at most 100 rounds). Returning the value unchanged keeps it.
using CallRewriter = std::function<Expr(const Expr& matched, const MatchMap& matches)>;
Function rewrite_call(const Pattern& pattern, const CallRewriter& rewriter, const Function& func);

/// For each dataflow block of `func`, while `ctx` matches (match_graph), asks `rewriter` for new
/// values of the matched variables and replaces those bindings' values. A rewrite that changes
/// nothing ends the search for that block.
using BindingRewriter = std::function<std::unordered_map<Var, Expr, RefHash, RefEq>(
    const std::unordered_map<Pattern, Var, PatternHash>& matches, const VarBindings& bindings)>;
Function rewrite_bindings(const PatternContext& ctx, const BindingRewriter& rewriter,
                          const Function& func);

}  // namespace partita::dpl
