// FuseOpsByPattern (TVM relax.transform.FuseOpsByPattern): every match of a fusion pattern
// becomes a private "Composite" function called from where the match was; with
// annotate_codegen, each composite is wrapped in a public function carrying "Codegen".
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "partita/dpl/pattern.h"
#include "partita/ir/module.h"
#include "partita/support/error.h"
#include "partita/transform/pass.h"

namespace partita::transform {

/// A table about the bindings of one dataflow block, as a check function sees it: a read-only
/// map (find / count / at / iteration) whose entries may be made when first asked for. A check
/// asks about a few variables of its match, and making the whole table of a 100k-binding block
/// for every pattern cost more than the partitioning itself. Iterating and size() make every
/// entry first. Iterators and references stay valid: entries are never removed, and the
/// map has room for all of them from the start.
template <class K, class V>
class BlockTable {
 public:
  using Map = std::unordered_map<K, V, RefHash, RefEq>;
  using const_iterator = typename Map::const_iterator;
  /// The entry of `key`: fills `value` and returns true, or returns false when there is none.
  using EntryFn = std::function<bool(const K& key, V& value)>;
  /// Passes to `visit` every key that may have an entry.
  using KeysFn = std::function<void(const std::function<void(const K&)>& visit)>;

  /// A table of at most `capacity` entries, made on demand by `entry` for the keys of `keys`.
  BlockTable(size_t capacity, EntryFn entry, KeysFn keys)
      : entry_(std::move(entry)), keys_(std::move(keys)) {
    map_.reserve(capacity);
  }

  const_iterator find(const K& key) const {
    auto it = map_.find(key);
    if (it != map_.end() || !entry_ || !key) return it;
    V value{};
    if (!entry_(key, value)) return map_.end();
    return map_.emplace(key, std::move(value)).first;
  }
  const_iterator begin() const {
    complete();
    return map_.begin();
  }
  const_iterator end() const { return map_.end(); }
  size_t count(const K& key) const { return find(key) == end() ? 0 : 1; }
  const V& at(const K& key) const {
    auto it = find(key);
    if (it == end())
      throw_error("KeyError", "PatternCheckContext: the dataflow block has no entry for this key");
    return it->second;
  }
  size_t size() const {
    complete();
    return map_.size();
  }
  /// Makes every entry now and forgets how entries are made (FuseOpsByPattern calls it before
  /// the block changes when a check kept the table).
  void complete() const {
    if (!keys_) return;
    keys_([this](const K& key) { find(key); });
    entry_ = nullptr;
    keys_ = nullptr;
  }

 private:
  mutable Map map_;
  mutable EntryFn entry_;
  mutable KeysFn keys_;
};

/// What a FusionPattern's check function sees about one match (TVM's PatternCheckContext), as
/// the dataflow block looks when the pattern is tried (after the earlier patterns' groups).
struct PatternCheckContext {
  /// The root expression of the match (the call bound to the match's output variable).
  Expr matched_expr;
  /// For each annotation pattern name, the expression it matched.
  std::map<std::string, Expr> annotated_expr;
  /// Variable -> value of every binding inside the match.
  std::unordered_map<Var, Expr, RefHash, RefEq> matched_bindings;
  using VarUsages = BlockTable<Var, std::vector<Var>>;
  using BoundVars = BlockTable<Expr, Var>;
  /// Variable -> the variables (of the same dataflow block) whose values use it, in binding
  /// order; every variable bound in the block has an entry. Shared by every match of the
  /// pattern in the block (never null).
  std::shared_ptr<const VarUsages> var_usages;
  /// Bound value -> its variable, for the bindings of the dataflow block (shared, never null).
  std::shared_ptr<const BoundVars> value_to_bound_var;
};

/// True when a variable bound inside the match (other than its output) is used outside it or is
/// not a DataflowVar (TVM's backend.utils.has_leaking_intermediate_variables).
bool has_leaking_intermediate_variables(const PatternCheckContext& ctx);

struct FusionPattern {
  /// "<codegen>.<name>" (a backend's name, then the pattern's); the "Composite" attribute.
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

}  // namespace partita::transform
