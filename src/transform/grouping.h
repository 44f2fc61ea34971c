// Internal to FuseOpsByPattern and MergeCompositeFunctions: grouping the bindings of dataflow
// blocks into new functions (TVM's OperatorFusor / FunctionCreator).
//
// A function being partitioned is kept as FunctionSlots: every binding is a numbered slot, each
// block a list of slot numbers in binding order, and each binding knows the slots of the
// variables it uses. Grouping a block replaces its groups' bindings by calls of new functions
// (and get-items of their results); a variable absorbed into a group is not substituted
// everywhere at once: its slot points to the slot standing for it now, and a binding that uses
// it is brought up to date (refresh) when it is next looked at. So a pass that groups one block
// many times (FuseOpsByPattern: once per pattern) rebuilds only the bindings that changed, and
// the function once at the end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "partita/ir/module.h"
#include "partita/ir/name_supply.h"
#include "partita/ir/ptr_map.h"

namespace partita::transform::detail {

/// `func` with fresh symbolic variables for those its parameters define (nested functions: those
/// theirs define and their enclosing function's do not), substituted everywhere in it, as TVM
/// gives every function FuseOpsByPattern and MergeCompositeFunctions extract variables of its own.
Function renew_symbolic_vars(const Function& func);

/// The variables `value` uses, in order (repeats kept), its callee included.
void used_vars(const Expr& value, std::vector<const VarNode*>& out);

/// Groups over the bindings of one block (nodes 0..n-1 in binding order; node i's inputs are
/// nodes < i). Union-find with member lists; reachability queries walk the graph of groups
/// backwards, pruned by binding positions, so local queries stay cheap on huge blocks. A query
/// that would scan more than kSearchBudget edges answers conservatively ("reachable" / "cycle"),
/// which only ever keeps groups apart: time stays linear and the result is never cyclic.
class GroupGraph {
 public:
  static constexpr size_t kSearchBudget = 1 << 14;
  /// Starts over with the graph whose node i has inputs `edges[offsets[i] .. offsets[i + 1])`,
  /// reusing this object's storage: `offsets` and `edges` are swapped in.
  void reset(std::vector<int>& offsets, std::vector<int>& edges);
  int size() const { return int(parent_.size()); }
  int find(int x);
  /// Merges the groups of `a` and `b`; returns the new root.
  int unite(int a, int b);
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
  /// Numbers the groups whose root `keep` accepts 0, 1, ... in order of their first node: the
  /// group of each node (-1: none) into `group_of`, the root of each group into `roots`.
  template <class Keep>
  void number_groups(Keep&& keep, std::vector<int>& group_of, std::vector<int>& roots) {
    group_of.assign(size(), -1);
    roots.clear();
    std::vector<int> number(size(), -1);  // per root
    for (int i = 0; i < size(); ++i) {
      int r = find(i);
      if (!keep(r)) continue;
      if (number[r] < 0) {
        number[r] = int(roots.size());
        roots.push_back(r);
      }
      group_of[i] = number[r];
    }
  }

 private:
  template <class Target>
  bool reaches(int lo, uint32_t seen, Target&& target);

  std::vector<int> offsets_, edges_;
  std::vector<int> parent_, min_pos_, max_pos_;
  std::vector<int> head_, tail_, next_;  // member lists, linked through next_
  std::vector<uint32_t> mark_, visited_;
  uint32_t epoch_ = 0;
  std::vector<int> stack_, roots_;  // search scratch, kept between queries
};

/// The groups of one block: the group of each position (-1: left as it is) and the attributes
/// of the new functions ("Composite" / "Codegen" ...).
struct BlockGroups {
  std::vector<int> group_of;
  int count = 0;
  std::vector<DictAttrs> attrs;  // one per group, or one for all
  const DictAttrs& attrs_of(int g) const { return attrs.size() == 1 ? attrs[0] : attrs[size_t(g)]; }
};

/// A binding of a FunctionSlots. Plain pointers: the input's nodes live as long as the function,
/// and the bindings made here are kept by FunctionSlots.
struct Slot {
  const BindingNode* binding;    // the input's binding, or one made here
  const VarNode* var;            // binding->var
  const ExprNode* value;         // the bound value
  int in_begin = 0, in_end = 0;  // slots of the variables the value uses, in FunctionSlots::ins
  int rep = -1;                  // for a variable absorbed into a group: the slot standing for it
  bool is_var_binding = false;
};

class FunctionSlots {
 public:
  struct Block {
    std::vector<int> order;  // the block's bindings as slot numbers, in binding order
    bool is_dataflow = false;
  };

  explicit FunctionSlots(const Function& func);
  const Function& func() const { return func_; }

  /// Brings slot `s` up to date: operands absorbed into groups since it was last looked at are
  /// replaced by the variables standing for them, and its inputs become their slots.
  void refresh(int s);
  /// `e` (an operand or value of this function) with every absorbed variable replaced by the one
  /// standing for it now.
  Expr current(const Expr& e);
  /// A new slot binding `var` to `value` (not yet placed in a block).
  int add_slot(const Var& var, const Expr& value);
  /// The graph of the bindings `order` (a block's) for GroupGraph, each brought up to date first:
  /// `pos` maps a slot to its position (-1: not in the block), node i's inputs are the positions
  /// of the bindings of the block it uses.
  void block_graph(const std::vector<int>& order, std::vector<int>& pos, std::vector<int>& offsets,
                   std::vector<int>& edges);
  /// The function as the slots stand (the input itself when nothing changed).
  Function rebuild();

  std::vector<Block> blocks;
  std::vector<Slot> slots;
  std::vector<int> ins;
  PtrMap<int> var_slot;
  bool changed = false;

 private:
  int push_slot(const BindingNode& b);  // a new slot for `b`, bound to its variable

  Function func_;
  std::vector<Binding> made_;  // the bindings made here (slots point into them)
  std::vector<const VarNode*> scratch_;
};

/// Makes the new functions of groups and puts their calls in place. One GroupFuser serves one
/// round of grouping over a module (FuseOpsByPattern: one pattern): names, the variables bound
/// to group calls ("lv", "lv1", ... / "gv", ...) and shared functions are counted across it.
class GroupFuser {
 public:
  GroupFuser(IRModule mod, bool lift_constants);
  ~GroupFuser();
  IRModule& mod();
  /// Replaces each group of block `b` of `fn` (positions: the block's order as it is) by a call
  /// of a new private function holding its bindings: parameters named after the arguments,
  /// outputs "gv", "gv1", ..., "Primitive": True added to the group's attributes, the name "fused_"
  /// + the op names made unique; structurally equal functions are shared. With
  /// `lift_constants`, constants become parameters. The other bindings keep their order, each
  /// group's call stands where all its inputs are ready.
  void fuse_block(FunctionSlots& fn, size_t b, const BlockGroups& groups);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The users of each node of the graph `offsets` / `edges` (as GroupGraph takes it), each once and
/// in order: node j's are `users[off[j] .. off[j + 1])`.
void graph_users(const std::vector<int>& offsets, const std::vector<int>& edges,
                 std::vector<int>& off, std::vector<int>& users);

/// `count`-th name NameSupply gives for `hint` when nothing else it names can collide with them
/// ("lv", "lv1", ...): the variables of a pass, without a table entry per name.
std::string numbered(const char* hint, int& count);

}  // namespace partita::transform::detail
