// FuseOpsByPattern with the entry functions rebuilt once instead of once per pattern.
//
// The reference (fuse_patterns_one_by_one) partitions the entry functions with the first
// pattern, rebuilds them (every group becomes a call), then does the same with the next pattern
// on the result, and so on. On large graphs each rebuild walks and reallocates every binding,
// and most of the time went there. Here each dataflow block is a list of slots (a binding of the
// input, or a group call / get-item made by an earlier pattern) in the order the reference's
// block would have, and each pattern runs the reference's partitioning and grouping on integer
// positions. A variable absorbed into a group is not substituted everywhere at once: its slot
// points to the slot standing for it now, and a binding that uses it is brought up to date
// (rebuilt with the new variable, as the reference's substitution would) when the next pattern
// starts on the block. So every pattern, its matcher and its check functions see exactly the
// bindings, variables and values of the reference's block; only bindings that changed are
// rebuilt, never the whole function.
//
// A check function's block-wide tables (var_usages, value_to_bound_var) are filled on demand
// from the positions (BlockTable): a check asks about a few variables of its match, and making
// both tables of the whole block for every pattern cost as much as the partitioning.
#include "fuse_ops_by_pattern_deferred.h"

#include <unordered_set>

#include "fuse_ops_by_pattern_fusor.h"
#include "partita/dpl/matcher.h"

namespace partita::transform::detail {
namespace {

// ---- what this path handles ----------------------------------------------------------------

// Undefined sub-patterns are left to the reference to report.
bool pattern_defined(const dpl::Pattern& p, std::unordered_set<const dpl::PatternNode*>& seen) {
  using K = dpl::PatternKind;
  if (!p) return false;
  if (!seen.insert(p.get()).second) return true;
  const dpl::PatternNode& n = *p;
  bool needs_inner = n.kind == K::TupleGetItem || n.kind == K::Or || n.kind == K::And || n.kind == K::Not ||
                     n.kind == K::Attr || n.kind == K::DataType || n.kind == K::Shape ||
                     n.kind == K::StructInfo || n.kind == K::SameShapeAs || n.kind == K::Function;
  if (n.kind == K::Call && !pattern_defined(n.op, seen)) return false;
  if (needs_inner && !pattern_defined(n.inner, seen)) return false;
  if ((n.kind == K::Or || n.kind == K::And) && !pattern_defined(n.other, seen)) return false;
  for (const auto& a : n.args)
    if (!pattern_defined(a, seen)) return false;
  return true;
}

// A leaf, a variable, or a tuple of such: never a call or get-item the matcher could report
// other than as a bound value.
bool is_flat_operand(const Expr& e) {
  if (auto* t = e.as<TupleNode>()) {
    for (const auto& f : t->fields)
      if (!is_flat_operand(f)) return false;
    return true;
  }
  return e.as<VarNode>() || e.as<ConstantNode>() || e.as<ShapeExprNode>() || e.as<PrimValueNode>() ||
         e.as<StringImmNode>() || e.as<DataTypeImmNode>() || e.as<OpNode>() || e.as<GlobalVarNode>() ||
         e.as<ExternFuncNode>();
}

bool value_supported(const Expr& v) {
  if (auto* c = v.as<CallNode>()) {
    if (!(c->op.as<OpNode>() || c->op.as<GlobalVarNode>() || c->op.as<ExternFuncNode>())) return false;
    for (const auto& a : c->args)
      if (!is_flat_operand(a)) return false;
    return true;
  }
  if (auto* g = v.as<TupleGetItemNode>()) return is_flat_operand(g->tuple);
  return is_flat_operand(v);
}

bool is_group_pattern(const dpl::PatternNode& p) {
  return p.kind == dpl::PatternKind::Call || p.kind == dpl::PatternKind::TupleGetItem;
}

// ---- the slots of one entry function's dataflow block ----------------------------------------

// Plain pointers: the input's nodes live as long as the module, and the nodes made here are
// kept by BlockSlots::made_ (reference counting every binding of the input cost more than the
// rest of setting up).
struct Slot {
  const VarBindingNode* binding;  // the input's binding, or the group call / get-item made here
  const VarNode* var;             // binding->var
  const ExprNode* value;          // binding->value: what the matcher sees
  const OpNode* op = nullptr;     // the callee when the value calls an operator
  int in_begin = 0, in_end = 0;   // producer slots of the value's variables, in `ins`
  int rep = -1;                   // for an absorbed group output: the slot standing for it now
  bool is_call = false;
};

class BlockSlots {
 public:
  std::string name;
  Function func;
  size_t block_index = 0;
  std::vector<Slot> slots;
  std::vector<int> ins;
  std::vector<int> order;  // the block's bindings, as slot numbers
  PtrMap<int> var_slot;
  bool changed = false;

  // False when the block holds something this path does not handle.
  bool init(const Function& f, const SeqExprNode& seq, size_t bi) {
    func = f;
    block_index = bi;
    const auto& bindings = seq.blocks[bi]->bindings;
    size_t n = bindings.size();
    slots.reserve(n + n / 2);
    ins.reserve(2 * n);
    order.reserve(n);
    var_slot.reserve(n + n / 2);
    // A call or get-item held only by its binding is bound once; others are checked by address.
    PtrMap<char> shared_values;
    std::vector<const VarNode*> vs, outside;  // outside: variables not bound (before) in the block
    for (const auto& b : bindings) {
      auto* vb = b.as<VarBindingNode>();
      if (!vb || !value_supported(vb->value)) return false;
      int s = int(slots.size());
      if (!var_slot.emplace(b->var.get(), s).second) return false;
      bool by_value = vb->value.as<CallNode>() || vb->value.as<TupleGetItemNode>();
      if (by_value && vb->value->use_count() > 1 && !shared_values.emplace(vb->value.get(), 1).second) return false;
      Slot slot;
      slot.binding = vb;
      slot.var = vb->var.get();
      slot.value = vb->value.get();
      if (auto* call = vb->value.as<CallNode>()) {
        slot.is_call = true;
        slot.op = call->op.as<OpNode>();
      }
      vs.clear();
      used_vars(vb->value, vs);
      slot.in_begin = int(ins.size());
      for (auto* v : vs) {
        const int* at = var_slot.find(v);
        if (at && *at != s) ins.push_back(*at);
        else if (!at && (outside.empty() || outside.back() != v)) outside.push_back(v);
        else if (at) return false;  // uses its own variable
      }
      slot.in_end = int(ins.size());
      slots.push_back(std::move(slot));
      order.push_back(s);
    }
    // No use before the binding (the bindings' producers are then exactly `ins`), and no
    // variable of the block bound again elsewhere in the function.
    for (auto* v : outside)
      if (var_slot.find(v)) return false;
    for (const auto& p : f->params)
      if (var_slot.find(p.get())) return false;
    for (size_t b = 0; b < seq.blocks.size(); ++b)
      if (b != bi)
        for (const auto& x : seq.blocks[b]->bindings)
          if (var_slot.find(x->var.get())) return false;
    return true;
  }

  int resolve(int s) {
    int r = s;
    while (slots[r].rep >= 0) r = slots[r].rep;
    while (slots[s].rep >= 0 && slots[s].rep != r) {  // shorten the chain for the next time
      int next = slots[s].rep;
      slots[s].rep = r;
      s = next;
    }
    return r;
  }

  // `e` with every absorbed variable replaced by the one standing for it now: what the
  // reference's substitutions would have made of it (same rebuilding rules as subst).
  Expr current(const Expr& e) {
    if (auto* v = e.as<VarNode>()) {
      const int* s = var_slot.find(v);
      if (!s) return e;
      int r = resolve(*s);
      return r == *s ? e : Expr(Var(slots[r].var));
    }
    if (auto* c = e.as<CallNode>()) {
      std::vector<Expr> args;
      if (!current_list(c->args, args)) return e;
      auto* n = copy_node(Ref<CallNode>(c));
      n->args = std::move(args);
      return Ref<CallNode>(n);
    }
    if (auto* t = e.as<TupleNode>()) {
      std::vector<Expr> fields;
      if (!current_list(t->fields, fields)) return e;
      auto* n = copy_node(Ref<TupleNode>(t));
      n->fields = std::move(fields);
      return Ref<TupleNode>(n);
    }
    if (auto* g = e.as<TupleGetItemNode>()) {
      Expr tuple = current(g->tuple);
      if (tuple == g->tuple) return e;
      auto* n = copy_node(Ref<TupleGetItemNode>(g));
      n->tuple = tuple;
      return Ref<TupleGetItemNode>(n);
    }
    return e;
  }

  // Brings slot `s` up to date: operands absorbed into groups since it was made (or last
  // brought up to date) are replaced by the variables standing for them, as the reference's
  // substitution does when it rebuilds the block, and its producers become the current ones.
  void refresh(int s) {
    Slot& slot = slots[s];
    bool stale = false;
    for (int k = slot.in_begin; k < slot.in_end; ++k) {
      int r = resolve(ins[k]);
      if (r == ins[k]) continue;
      ins[k] = r;
      stale = true;
    }
    if (!stale) return;
    Expr value = current(slot.binding->value);
    if (value == slot.binding->value) return;
    auto binding = make<VarBindingNode>(slot.binding->var, value);
    slot.binding = binding.get();
    slot.value = value.get();
    made_.push_back(std::move(binding));
  }

  int add_slot(const Var& var, const Expr& value) {
    int s = int(slots.size());
    auto binding = make<VarBindingNode>(var, value);
    Slot slot;
    slot.binding = binding.get();
    slot.var = var.get();
    slot.value = value.get();
    made_.push_back(std::move(binding));
    slot.is_call = value.as<CallNode>() != nullptr;
    std::vector<const VarNode*>& vs = scratch_vars_;
    vs.clear();
    used_vars(value, vs);
    slot.in_begin = int(ins.size());
    for (auto* v : vs)
      if (const int* at = var_slot.find(v)) ins.push_back(*at);
    slot.in_end = int(ins.size());
    var_slot.emplace(var.get(), s);
    slots.push_back(std::move(slot));
    return s;
  }

 private:
  std::vector<Binding> made_;  // the bindings made here (the slots point into them)
  std::vector<const VarNode*> scratch_vars_;

  bool current_list(const std::vector<Expr>& xs, std::vector<Expr>& out) {
    for (size_t k = 0; k < xs.size(); ++k) {
      Expr y = current(xs[k]);
      if (out.empty() && y == xs[k]) continue;
      if (out.empty()) {
        out.reserve(xs.size());
        out.insert(out.end(), xs.begin(), xs.begin() + std::ptrdiff_t(k));
      }
      out.push_back(std::move(y));
    }
    return !out.empty();
  }
};

// ---- one pattern over one block (the reference's partition_block and fuse_block) -------------

// One pattern over the blocks (the reference's partition_block, then fuse_block). One object
// serves every pattern, so its working arrays (several per binding) are allocated once.
class PatternPass {
 public:
  ~PatternPass() { release_tables(); }  // a check may have kept a table (and thrown)

  void begin(const FusionPattern& pat, Fusor& fusor) {
    pat_ = &pat;
    fusor_ = &fusor;
    root_op_ = nullptr;
    if (pat.pattern->kind == dpl::PatternKind::Call && pat.pattern->op->kind == dpl::PatternKind::Expr)
      root_op_ = pat.pattern->op->expr.as<OpNode>();
    // The groups' attributes, unless an attrs_getter adds to them.
    attrs_ = DictAttrs{{"Composite", pat.name}};
  }

  void run(BlockSlots& blk) {
    if (!has_candidate(blk)) return;
    int m = int(blk.order.size());
    pos_.assign(blk.slots.size(), -1);
    for (int i = 0; i < m; ++i) pos_[blk.order[i]] = i;
    int groups = partition(blk);
    if (groups > 0) fuse(blk, groups);
  }

 private:
  bool candidate(const Slot& s) const {
    if (!s.is_call) return false;
    if (!root_op_) return true;
    return s.op && (s.op == root_op_ || s.op->name == root_op_->name);
  }
  bool has_candidate(const BlockSlots& blk) const {
    for (int s : blk.order)
      if (candidate(blk.slots[s])) return true;
    return false;
  }

  // Fills group_of_ (per position: the group, -1 for none) and, with an attrs_getter,
  // group_attrs_; returns the number of groups.
  int partition(BlockSlots& blk) {
    int n = int(blk.order.size());
    offsets_.assign(1, 0);
    edges_.clear();
    for (int i = 0; i < n; ++i) {
      blk.refresh(blk.order[i]);
      const Slot& s = blk.slots[blk.order[i]];
      for (int k = s.in_begin; k < s.in_end; ++k) {
        int j = pos_[blk.ins[k]];
        PARTITA_ICHECK(j >= 0 && j < i);
        if (int(edges_.size()) == offsets_.back() || edges_.back() != j) edges_.push_back(j);
      }
      offsets_.push_back(int(edges_.size()));
    }
    if (pat_->check) index_users(n);
    // The values the matcher reaches through variables, with their slots: every call or get-item
    // a match covers besides its root is one of them (operands are flat), so this stands for a
    // value -> binding table.
    std::vector<std::pair<const Object*, int>>& jumped = jumped_;
    dpl::BindingLookup lookup = [&](const VarNode* v) -> const Expr* {
      const int* s = blk.var_slot.find(v);
      if (!s || pos_[*s] < 0) return nullptr;
      jumped.emplace_back(blk.slots[*s].value, *s);
      return &blk.slots[*s].binding->value;
    };
    GroupGraph& graph = graph_;
    graph.reset(offsets_, edges_);
    std::vector<char>& composite = composite_;  // per root: formed by a match
    composite.assign(n, 0);
    std::vector<int>& matched = matched_;
    extra_attrs_.clear();
    for (int i = 0; i < n; ++i) {
      const Slot& s = blk.slots[blk.order[i]];
      if (!candidate(s)) continue;
      jumped.clear();
      if (!dpl::match_with_lookup(pat_->pattern, s.binding->value, lookup, match_)) continue;
      matched.assign(1, i);
      bool ok = true;
      for (const auto& [p, e] : match_) {
        if (!is_group_pattern(**p) || e.get() == s.value) continue;
        int j = -1;
        for (const auto& [value, slot] : jumped)
          if (value == e.get()) j = pos_[slot];
        if (j < 0 || j > i) {
          ok = false;  // not bound in this block before the root: cannot be grouped
          break;
        }
        matched.push_back(j);
      }
      if (!ok) continue;
      // Called where the reference calls them, in the same order, on the same block.
      if (pat_->check && !pat_->check(check_context(blk, i))) continue;
      if (!graph.group_match(matched, composite)) continue;
      if (pat_->attrs_getter) extra_attrs_.emplace_back(i, pat_->attrs_getter(annotated_exprs()));
    }
    release_tables();
    group_of_.assign(n, -1);
    std::vector<int>& root_to_group = tmp_;
    root_to_group.assign(n, -1);
    // A group takes the attributes of the last match whose root ended up in it (as the
    // reference's table keyed by root).
    if (!extra_attrs_.empty()) {
      extra_of_root_.assign(n, -1);
      for (size_t k = 0; k < extra_attrs_.size(); ++k)
        extra_of_root_[graph.find(extra_attrs_[k].first)] = int(k);
    }
    group_attrs_.clear();
    int groups = 0;
    for (int i = 0; i < n; ++i) {
      int r = graph.find(i);
      if (!composite[r]) continue;
      if (root_to_group[r] < 0) {
        root_to_group[r] = groups++;
        if (pat_->attrs_getter) {
          group_attrs_.push_back(attrs_);
          if (!extra_attrs_.empty() && extra_of_root_[r] >= 0)
            for (const auto& [k, v] : extra_attrs_[extra_of_root_[r]].second)
              group_attrs_.back()[k] = v;
        }
      }
      group_of_[i] = root_to_group[r];
    }
    return groups;
  }

  // ---- what a check function sees ----

  std::map<std::string, Expr> annotated_exprs() const {
    std::map<std::string, Expr> out;
    for (const auto& [name, p] : pat_->annotation_patterns)
      for (const auto& [q, e] : match_)
        if (q->get() == p.get()) out[name] = e;
    return out;
  }

  // The reference's context for the match rooted at position i (match_ and jumped_ hold it).
  PatternCheckContext check_context(BlockSlots& blk, int i) {
    int root = blk.order[i];
    PatternCheckContext ctx;
    ctx.matched_expr = blk.slots[root].binding->value;
    ctx.annotated_expr = annotated_exprs();
    for (const auto& [p, e] : match_) {
      if (!is_group_pattern(**p)) continue;
      int s = e.get() == blk.slots[root].value ? root : -1;
      for (size_t k = 0; s < 0 && k < jumped_.size(); ++k)
        if (jumped_[k].first == e.get()) s = jumped_[k].second;
      if (s >= 0) ctx.matched_bindings[Var(blk.slots[s].var)] = e;
    }
    root_slot_ = root;
    if (!usages_) make_tables(blk);
    ctx.var_usages = usages_;
    ctx.value_to_bound_var = bound_;
    return ctx;
  }

  // users_: for each position, the positions whose values use its variable, in order (CSR
  // users_off_), from the producers in offsets_ / edges_.
  void index_users(int n) {
    users_off_.assign(n + 1, 0);
    tmp_.assign(n, -1);  // the last user counted per producer
    for (int i = 0; i < n; ++i)
      for (int e = offsets_[i]; e < offsets_[i + 1]; ++e)
        if (int j = edges_[e]; tmp_[j] != i) {
          tmp_[j] = i;
          ++users_off_[j + 1];
        }
    for (int j = 0; j < n; ++j) users_off_[j + 1] += users_off_[j];
    users_.resize(users_off_[n]);
    std::vector<int>& fill = matched_;  // free until matching starts
    fill.assign(users_off_.begin(), users_off_.end() - 1);
    for (int i = 0; i < n; ++i)
      for (int e = offsets_[i]; e < offsets_[i + 1]; ++e)
        if (int j = edges_[e]; fill[j] == users_off_[j] || users_[fill[j] - 1] != i)
          users_[fill[j]++] = i;
  }

  std::vector<Var> users_of(const BlockSlots& blk, int j) const {
    std::vector<Var> out;
    out.reserve(users_off_[j + 1] - users_off_[j]);
    for (int k = users_off_[j]; k < users_off_[j + 1]; ++k)
      out.emplace_back(blk.slots[blk.order[users_[k]]].var);
    return out;
  }

  // The slot (alive in the block) whose value is `e`, else -1; for a value bound more than once
  // (a variable or constant can be), the last one, as the reference's table keeps. The current
  // match's slots first (what checks look up: calls and get-items, which are bound once), then a
  // table of every value, made on the first miss.
  int slot_of_value(const BlockSlots& blk, const Object* e) {
    auto bound_once = [](const Object* x) {
      return x->kind() == NodeKind::Call || x->kind() == NodeKind::TupleGetItem;
    };
    if (bound_once(e)) {
      if (root_slot_ >= 0 && blk.slots[root_slot_].value == e) return root_slot_;
      for (const auto& [value, slot] : jumped_)
        if (value == e) return slot;
    }
    if (!value_slots_made_) {
      value_slots_made_ = true;
      value_slot_ = PtrMap<int>(blk.order.size());
      for (int s : blk.order) {
        auto [at, fresh] = value_slot_.emplace(blk.slots[s].value, s);
        if (!fresh) *at = s;
      }
    }
    const int* s = value_slot_.find(e);
    return s ? *s : -1;
  }

  // The pattern's tables for this block, filled as checks ask (positions and slots do not change
  // until the partitioning ends; release_tables then cuts them loose).
  void make_tables(BlockSlots& blk) {
    const BlockSlots* b = &blk;
    using Usages = PatternCheckContext::VarUsages;
    using Bound = PatternCheckContext::BoundVars;
    usages_ = std::make_shared<Usages>(
        [this, b](const Var& v, std::vector<Var>& users) {
          const int* s = b->var_slot.find(v.get());
          if (!s || pos_[*s] < 0) return false;
          users = users_of(*b, pos_[*s]);
          return true;
        },
        [this, b](const std::function<void(const Var&, std::vector<Var>&&)>& add) {
          for (int j = 0; j < int(b->order.size()); ++j)
            add(Var(b->slots[b->order[j]].var), users_of(*b, j));
        });
    bound_ = std::make_shared<Bound>(
        [this, b](const Expr& e, Var& var) {
          int s = slot_of_value(*b, e.get());
          if (s < 0) return false;
          var = Var(b->slots[s].var);
          return true;
        },
        [b](const std::function<void(const Expr&, Var&&)>& add) {
          // Last binding first: a value bound twice keeps its last variable (entries made
          // already are kept, and were made so).
          for (auto s = b->order.rbegin(); s != b->order.rend(); ++s)
            add(b->slots[*s].binding->value, Var(b->slots[*s].var));
        });
  }

  // After a block's partitioning: a table a check kept is completed (it must not change with the
  // block), and the others dropped.
  void release_tables() {
    if (usages_ && usages_.use_count() > 1) usages_->complete();
    if (bound_ && bound_.use_count() > 1) bound_->complete();
    usages_.reset();
    bound_.reset();
    root_slot_ = -1;
    if (value_slots_made_) value_slot_ = PtrMap<int>();
    value_slots_made_ = false;
  }

  // ---- grouping ----

  // CSR of `pairs` (key, value) bucketed by key in [0, keys): off[k] .. off[k + 1] into out,
  // keeping the pairs' order within a key.
  template <class V>
  void bucket(const std::vector<std::pair<int, V>>& pairs, int keys, std::vector<int>& off, std::vector<V>& out) {
    off.assign(keys + 1, 0);
    for (const auto& kv : pairs) ++off[kv.first + 1];
    for (int k = 0; k < keys; ++k) off[k + 1] += off[k];
    out.resize(pairs.size());
    tmp_.assign(off.begin(), off.end() - 1);
    for (const auto& kv : pairs) out[tmp_[kv.first]++] = kv.second;
  }

  // True when `e` is a variable bound earlier in group u than member i (the slots of i's
  // operands are the current ones: partition brought every binding up to date).
  bool defined_before(const BlockSlots& blk, int i, int u, const Expr& e) const {
    auto* v = e.as<VarNode>();
    if (!v) return false;
    const Slot& ms = blk.slots[blk.order[i]];
    for (int k = ms.in_begin; k < ms.in_end; ++k) {
      int p = blk.ins[k];
      if (blk.slots[p].var != v) continue;
      int j = pos_[p];
      return j < i && group_of_[j] == u;
    }
    return false;
  }

  void fuse(BlockSlots& blk, int G) {
    int n = int(blk.order.size());
    const std::vector<int>& group_of = group_of_;
    // The members of each group in block order.
    cur_.resize(n);
    pairs_.clear();
    for (int i = 0; i < n; ++i)
      if (group_of[i] >= 0) pairs_.emplace_back(group_of[i], i);
    bucket(pairs_, G, mem_off_, members_);
    // Dependencies between units, and the uses that make a member's variable a group output
    // (recorded per group in the order fuse_block meets them).
    auto unit = [&](int i) { return group_of[i] >= 0 ? group_of[i] : G + i; };
    pairs_.clear();  // (unit, producer unit)
    uses_.clear();   // (group, variable used outside it)
    for (int i = 0; i < n; ++i) {
      int u = unit(i);
      const Slot& s = blk.slots[blk.order[i]];
      int last = -1;
      for (int k = s.in_begin; k < s.in_end; ++k) {
        int j = pos_[blk.ins[k]];
        int prod = unit(j);
        if (prod == u) continue;
        if (prod != last) pairs_.emplace_back(u, prod);
        last = prod;
        if (group_of[j] >= 0) uses_.emplace_back(group_of[j], blk.slots[blk.ins[k]].var);
      }
    }
    bucket(pairs_, G + n, dep_off_, dep_edges_);
    bucket(uses_, G, use_off_, use_vars_);
    order_units(dep_off_, dep_edges_, n, unit, units_, topo_scratch_);

    // Emission. One Creator serves every group: a group's function description is made when
    // it is emitted (fuse_block makes them all first; the result is the same, as only the
    // order of fingerprint ids differs). Members are the bindings as the pattern found them.
    std::vector<int>& order = order_;
    order.clear();
    Creator& c = creator_;
    for (int u : units_) {
      if (u >= G) {
        order.push_back(blk.order[u - G]);
        continue;
      }
      const DictAttrs& attrs = group_attrs_.empty() ? attrs_ : group_attrs_[u];
      c.reset();
      for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) {
        int i = members_[m];
        cur_[i] = Binding(blk.slots[blk.order[i]].binding);
        fusor_->append_binding(c, cur_[i], i,
                               [&](const Expr& e) { return defined_before(blk, i, u, e); });
      }
      for (int k = use_off_[u]; k < use_off_[u + 1]; ++k) c.append_output(use_vars_[k]);
      fusor_->create_function(c, cur_, attrs);
      if (c.has_outputs) emit_group(blk, u, c, attrs);
      for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) cur_[members_[m]] = Binding();
    }
    blk.order.swap(order);  // the old order's storage serves the next pattern
    blk.changed = true;
  }

  // The call of group u's function (and get-items of its outputs) as new slots; the members'
  // variables that are outputs now stand for them.
  void emit_group(BlockSlots& blk, int u, Creator& c, const DictAttrs& attrs) {
    GlobalVar gv = fusor_->group_function(c, cur_, attrs);
    std::vector<Expr> args;
    args.reserve(c.arguments.size());
    for (const auto& a : c.arguments) args.push_back(blk.current(a));
    Call call = make<CallNode>(gv, std::move(args));
    call->struct_info_ = fusor_->call_ret_sinfo(gv, c, *call);
    Var nv = fusor_->emit_var(cur_[c.bindings.back()]->var, call);
    int cs = blk.add_slot(nv, call);
    order_.push_back(cs);
    if (c.outputs.size() == 1) {
      for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m)
        if (cur_[members_[m]]->var.get() == c.outputs[0])
          blk.slots[blk.order[members_[m]]].rep = cs;
      return;
    }
    auto* tinfo = call->struct_info_.as<TupleStructInfoNode>();
    for (int i : c.bindings) {
      const Var& var = cur_[i]->var;
      int idx = c.output_index(var.get());
      if (idx < 0) continue;
      Expr item = make<TupleGetItemNode>(nv, idx);
      item->struct_info_ = tinfo ? tinfo->fields[idx] : var->struct_info_;
      Var iv = fusor_->emit_var(var, item);
      int ts = blk.add_slot(iv, item);
      order_.push_back(ts);
      blk.slots[blk.order[i]].rep = ts;
    }
  }

  const FusionPattern* pat_ = nullptr;
  Fusor* fusor_ = nullptr;
  const OpNode* root_op_ = nullptr;
  DictAttrs attrs_;
  // Working arrays, reused from pattern to pattern.
  std::vector<int> pos_, offsets_, edges_, group_of_, matched_, tmp_;
  std::vector<char> composite_;
  std::vector<std::pair<const Object*, int>> jumped_;
  GroupGraph graph_;
  dpl::MatchList match_;
  std::vector<Binding> cur_;
  std::vector<std::pair<int, int>> pairs_;
  std::vector<std::pair<int, const VarNode*>> uses_;
  std::vector<int> mem_off_, members_, dep_off_, dep_edges_, use_off_, units_, order_;
  std::vector<const VarNode*> use_vars_;
  UnitOrderScratch topo_scratch_;
  Creator creator_;
  // attrs_getter results: (root position, attributes) per accepted match; per group.
  std::vector<std::pair<int, std::map<std::string, AttrValue>>> extra_attrs_;
  std::vector<int> extra_of_root_;
  std::vector<DictAttrs> group_attrs_;
  // Check functions' tables for the block being partitioned.
  std::vector<int> users_off_, users_;
  std::shared_ptr<PatternCheckContext::VarUsages> usages_;
  std::shared_ptr<PatternCheckContext::BoundVars> bound_;
  int root_slot_ = -1;
  bool value_slots_made_ = false;
  PtrMap<int> value_slot_;
};

// The function with its dataflow block made of the slots, and the later blocks and the result
// brought up to date.
Function rebuild(BlockSlots& blk) {
  auto* seq = blk.func->body.as<SeqExprNode>();
  std::vector<Binding> bindings;
  bindings.reserve(blk.order.size());
  for (int s : blk.order) {
    blk.refresh(s);
    bindings.push_back(Binding(blk.slots[s].binding));
  }
  std::vector<BindingBlock> blocks(seq->blocks.begin(), seq->blocks.end());
  blocks[blk.block_index] = make<BindingBlockNode>(std::move(bindings), true);
  NodeRemap remap;
  for (int s = 0; s < int(blk.slots.size()); ++s)
    if (blk.slots[s].rep >= 0) remap.emplace(blk.slots[s].var, Expr(Var(blk.slots[blk.resolve(s)].var)));
  // Blocks before the dataflow block cannot use its variables (the reference leaves them as
  // they are); later ones and the result are substituted as the reference does pattern by
  // pattern.
  for (size_t b = blk.block_index + 1; b < blocks.size(); ++b) {
    std::vector<Binding> bs;
    bool bchanged = false;
    for (const auto& x : blocks[b]->bindings) {
      bs.push_back(subst_binding(x, remap));
      bchanged = bchanged || !(bs.back() == x);
    }
    if (bchanged) blocks[b] = make<BindingBlockNode>(std::move(bs), blocks[b]->is_dataflow);
  }
  auto* ns = copy_node(Ref<SeqExprNode>(seq));
  ns->blocks = std::move(blocks);
  ns->body = subst(seq->body, remap);
  auto* nf = copy_node(blk.func);
  nf->body = Ref<SeqExprNode>(ns);
  return Function(nf);
}

}  // namespace

std::optional<IRModule> fuse_patterns_deferred(const std::vector<FusionPattern>& patterns,
                                               const IRModule& mod, bool lift_constants,
                                               const std::vector<std::string>& entry_functions) {
  std::unordered_set<const dpl::PatternNode*> seen;
  bool callbacks = false;
  for (const auto& pat : patterns) {
    if (!pattern_defined(pat.pattern, seen)) return std::nullopt;
    callbacks = callbacks || pat.check || pat.attrs_getter;
  }
  // Blocks are partitioned in name order; the reference calls check functions and attribute
  // getters in the order the entry functions are listed (and twice for a name listed twice).
  if (callbacks)
    for (size_t k = 1; k < entry_functions.size(); ++k)
      if (!(entry_functions[k - 1] < entry_functions[k])) return std::nullopt;
  // The entry functions, in name order (the order the reference rebuilds them in). Functions
  // the patterns add are Primitive, so the implicit list is the same for every pattern.
  std::vector<std::string> entries = entry_functions;
  if (entries.empty()) {
    for (const auto& [name, entry] : mod->functions) {
      auto* f = entry.second.as<FunctionNode>();
      if (!f || f->attrs.count("Primitive") || f->attrs.count("Composite") || f->attrs.count("Codegen")) continue;
      entries.push_back(name);
    }
  }
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  std::vector<BlockSlots> blocks;
  blocks.reserve(entries.size());
  for (const auto& name : entries) {
    Function f = mod.lookup(name).as_ref<FunctionNode>();
    auto* seq = f ? f->body.as<SeqExprNode>() : nullptr;
    if (!seq) continue;
    // An entry that is itself Primitive would take part in de-duplication with its body as
    // each pattern leaves it.
    if (f->attrs.count("Primitive")) return std::nullopt;
    std::vector<size_t> dataflow;
    for (size_t b = 0; b < seq->blocks.size(); ++b)
      if (seq->blocks[b]->is_dataflow) dataflow.push_back(b);
    if (dataflow.empty()) continue;
    if (dataflow.size() > 1) return std::nullopt;
    blocks.emplace_back();
    blocks.back().name = name;
    if (!blocks.back().init(f, *seq, dataflow[0])) return std::nullopt;
  }
  IRModule out = mod;
  PatternPass pass;
  for (const auto& pat : patterns) {
    Fusor fusor(out, lift_constants);
    pass.begin(pat, fusor);
    for (auto& blk : blocks) pass.run(blk);
    out = fusor.mod();
  }
  for (auto& blk : blocks)
    if (blk.changed) out.update(out.get_global_var(blk.name), rebuild(blk));
  return out;
}

}  // namespace partita::transform::detail
