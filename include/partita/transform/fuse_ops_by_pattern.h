// FuseOpsByPattern (TVM relax.transform.FuseOpsByPattern): every match of a fusion pattern
// becomes a private "Composite" function called from where the match was; with
// annotate_codegen, each composite is wrapped in a public function carrying "Codegen".
//
// Also exposes the machinery shared with MergeCompositeFunctions: grouping bindings of
// dataflow blocks into new functions (TVM's MakeGroupedFunctions) and the group graph used to
// keep groups free of cycles.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "partita/dpl/pattern.h"
#include "partita/ir/module.h"
#include "partita/ir/ptr_map.h"
#include "partita/transform/pass.h"

namespace partita::transform {

/// What a FusionPattern's check function sees about one match (TVM's PatternCheckContext).
struct PatternCheckContext {
  /// The root expression of the match (the call bound to the match's output variable).
  Expr matched_expr;
  /// For each annotation pattern name, the expression it matched.
  std::map<std::string, Expr> annotated_expr;
  /// Variable -> value of every binding inside the match.
  std::unordered_map<Var, Expr, RefHash, RefEq> matched_bindings;
  using VarUsages = std::unordered_map<Var, std::vector<Var>, RefHash, RefEq>;
  using BoundVars = std::unordered_map<Expr, Var, RefHash, RefEq>;
  /// Variable -> the variables (of the same dataflow block) whose values use it.
  /// Built once per block and shared by every match in it (never null).
  std::shared_ptr<const VarUsages> var_usages;
  /// Bound value -> its variable, for the bindings of the dataflow block (shared, never null).
  std::shared_ptr<const BoundVars> value_to_bound_var;
};

/// True when a variable bound inside the match (other than its output) is used outside it or is
/// not a DataflowVar (TVM's backend.utils.has_leaking_intermediate_variables).
bool has_leaking_intermediate_variables(const PatternCheckContext& ctx);

struct FusionPattern {
  /// "<codegen>.<name>", e.g. "cutlass.conv2d_bias_relu"; becomes the "Composite" attribute.
  std::string name;
  dpl::Pattern pattern;
  /// Named sub-patterns whose matches are reported to `check` / `attrs_getter`.
  std::map<std::string, dpl::Pattern> annotation_patterns;
  /// Rejects a match when it returns false (null: accept every match).
  std::function<bool(const PatternCheckContext&)> check;
  /// Extra attributes for the composite function, from the annotated expressions.
  std::function<std::map<std::string, AttrValue>(const std::map<std::string, Expr>&)> attrs_getter;
};

/// The module-level transformation behind FuseOpsByPattern. Patterns are tried in order (earlier
/// = higher priority) over every binding of every dataflow block of the entry functions (all
/// Relax functions that are neither Primitive, Composite nor Codegen when `entry_functions` is
/// empty). Constants stay inside the composites with `bind_constants`, else become parameters.
IRModule fuse_ops_by_pattern(const std::vector<FusionPattern>& patterns, IRModule mod,
                             bool bind_constants = true, bool annotate_codegen = false,
                             const std::vector<std::string>& entry_functions = {});

Pass FuseOpsByPattern(std::vector<FusionPattern> patterns, bool bind_constants = true,
                      bool annotate_codegen = false, std::vector<std::string> entry_functions = {});

/// The codegen name of a composite name: the part before the first '.'. Throws
/// Error("ValueError") when there is none.
std::string codegen_name_of(const std::string& composite_name);

// ---------------------------------------------------------------------------------------------
// Shared machinery
// ---------------------------------------------------------------------------------------------

/// Groups over the bindings of one block (nodes 0..n-1 in binding order; node i's inputs are
/// nodes < i). Union-find with member lists; reachability queries walk the graph of groups
/// backwards, pruned by binding positions, so local queries stay cheap on huge blocks. A query
/// that would scan more than kSearchBudget edges answers conservatively ("reachable" / "cycle"),
/// which only ever keeps groups apart: time stays linear and the result is never cyclic.
class GroupGraph {
 public:
  static constexpr size_t kSearchBudget = 1 << 14;
  /// Node i's inputs are `edges[offsets[i] .. offsets[i + 1])` (offsets has n + 1 entries).
  GroupGraph(std::vector<int> offsets, std::vector<int> edges);
  GroupGraph() = default;
  /// Starts over with a new graph, reusing this object's storage: `offsets` and `edges` are
  /// swapped in (they come back holding the previous graph's).
  void reset(std::vector<int>& offsets, std::vector<int>& edges);
  int size() const { return int(parent_.size()); }
  int find(int x);
  /// Merges the groups of `a` and `b` (O(1) plus the find); returns the new root.
  int unite(int a, int b);
  /// Calls f(node) for each member of the group whose root is `root`.
  template <class F>
  void for_each_member(int root, F&& f) const {
    for (int m = head_[root]; m >= 0; m = next_[m]) f(m);
  }
  /// True when group `anc_root` is a proper ancestor of the group of `node`.
  bool is_ancestor(int anc_root, int node);
  /// True when merging the groups of `nodes` into one would create a cycle between groups.
  bool merge_creates_cycle(const std::vector<int>& nodes);
  /// FuseOpsByPattern's rule for a match covering `matched` (its root first): it becomes one
  /// group unless it would absorb only part of an earlier match (a root flagged in `composite`)
  /// or create a cycle. Returns whether it did; the new group's root is flagged.
  bool group_match(const std::vector<int>& matched, std::vector<char>& composite);

 private:
  std::vector<int> offsets_, edges_;
  std::vector<int> parent_, min_pos_, max_pos_;
  std::vector<int> head_, tail_, next_;  // member lists, linked through next_
  std::vector<uint32_t> mark_, visited_;
  uint32_t epoch_ = 0;
  std::vector<int> stack_, roots_;  // search scratch, kept between queries (no allocation each)
};

/// For one dataflow block: the group of each binding (-1: left as it is) and each group's
/// attributes ("Composite" / "Codegen" ...).
struct BlockGroups {
  std::vector<int> group_of;
  std::vector<DictAttrs> attrs;
};
/// Function name -> (block node -> its groups).
using ModuleGroups = std::map<std::string, std::unordered_map<const BindingBlockNode*, BlockGroups>>;

/// Replaces every group by a call of a new private function holding its bindings (TVM's
/// MakeGroupedFunctions): parameters named after the arguments, outputs "gv", "gv1", ...,
/// "Primitive": 1 added to the group's attributes, names "fused_" + op names made unique;
/// structurally equal functions are shared. With `lift_constants`, constants become parameters.
IRModule make_grouped_functions(IRModule mod, const ModuleGroups& groups, bool lift_constants);

/// TVM's NameSupply rule: `hint`, then `hint1`, `hint2`, ... ('.' becomes '_').
class NameSupply {
 public:
  std::string fresh(std::string hint);

 private:
  // Every name handed out (and every hint) with its suffix counter, in an open-addressing table
  // over `entries_` (a pass names one variable per group: no heap node per name).
  int find(std::string_view name, size_t hash) const;
  int insert(std::string name, size_t hash);
  std::vector<std::pair<std::string, int>> entries_;
  std::vector<size_t> hashes_;  // per entry
  std::vector<int> table_;      // entry numbers, -1 when free; the size is a power of two
};

/// `expr` with variables replaced per `remap` (rebuilding only what changes).
Expr substitute_vars(const Expr& expr, const std::unordered_map<Var, Expr, RefHash, RefEq>& remap);
/// The same over a table keyed by variable node: build it once to substitute into many values.
Expr substitute_vars(const Expr& expr, const PtrMap<Expr>& remap);
/// A copy of `func` with fresh parameters and binding variables (same names and struct info).
Function copy_with_new_vars(const Function& func);

}  // namespace partita::transform
