// FuseOpsByPattern with the entry functions rebuilt once instead of once per pattern.
//
// The reference (fuse_patterns_one_by_one) partitions the entry functions with the first
// pattern, rebuilds them (every group becomes a call), then does the same with the next pattern
// on the result, and so on. On large graphs each rebuild walks and reallocates every binding,
// and most of the time went there. Here each dataflow block is a list of slots (a binding of the
// input, or a group call / get-item made by an earlier pattern) in the order the reference's
// block would have, and each pattern runs the reference's partitioning and grouping on integer
// positions. A variable absorbed into a group is not substituted where it is used: its slot
// points to the slot standing for it now. Bindings are brought up to date only where it matters:
// those going into a group (the function is made from them), and every binding at the end.
//
// What the matcher sees differs from the reference only in which variable an argument names
// (the absorbed one rather than its replacement); following it leads to the same value. So the
// patterns allowed here are those that look only at values (no Var / DataflowVar / Function
// patterns, no expressions holding variables, no check function, which sees variables).
#include "fuse_ops_by_pattern_deferred.h"

#include <unordered_set>

#include "fuse_ops_by_pattern_fusor.h"
#include "partita/dpl/matcher.h"

namespace partita::transform::detail {
namespace {

// ---- what this path handles ----------------------------------------------------------------

bool pattern_supported(const dpl::Pattern& p, std::unordered_set<const dpl::PatternNode*>& seen) {
  using K = dpl::PatternKind;
  if (!p) return false;  // the matcher reports it; leave that to the reference
  if (!seen.insert(p.get()).second) return true;
  const dpl::PatternNode& n = *p;
  switch (n.kind) {
    case K::Var:
    case K::DataflowVar:
    case K::Function: return false;
    case K::Expr: {
      if (!n.expr) return false;
      bool has_var = false;
      post_order_visit(n.expr, [&](const Expr& x) { has_var = has_var || x.as<VarNode>(); });
      if (has_var) return false;
      break;
    }
    default: break;
  }
  bool needs_inner = n.kind == K::TupleGetItem || n.kind == K::Or || n.kind == K::And || n.kind == K::Not ||
                     n.kind == K::Attr || n.kind == K::DataType || n.kind == K::Shape ||
                     n.kind == K::StructInfo || n.kind == K::SameShapeAs;
  if (n.kind == K::Call && !pattern_supported(n.op, seen)) return false;
  if (needs_inner && !pattern_supported(n.inner, seen)) return false;
  if ((n.kind == K::Or || n.kind == K::And) && !pattern_supported(n.other, seen)) return false;
  if (n.kind == K::Call || n.kind == K::Tuple || n.kind == K::UnorderedTuple)
    for (const auto& a : n.args)
      if (!pattern_supported(a, seen)) return false;
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

  Binding current_binding(int s) {
    const VarBindingNode* vb = slots[s].binding;
    // Its producers are `ins`: unchanged unless one of them was absorbed.
    bool stale = false;
    for (int k = slots[s].in_begin; k < slots[s].in_end && !stale; ++k) stale = slots[ins[k]].rep >= 0;
    if (!stale) return Binding(vb);
    Expr value = current(vb->value);
    if (value == vb->value) return Binding(vb);
    return make<VarBindingNode>(vb->var, value);
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
  std::vector<Binding> made_;  // the bindings add_slot made (the slots point into them)
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
  void begin(const FusionPattern& pat, Fusor& fusor) {
    pat_ = &pat;
    fusor_ = &fusor;
    root_op_ = nullptr;
    if (pat.pattern->kind == dpl::PatternKind::Call && pat.pattern->op->kind == dpl::PatternKind::Expr)
      root_op_ = pat.pattern->op->expr.as<OpNode>();
    // Every group of a pattern has the same attributes.
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

  // Fills group_of_ (per position: the group, -1 for none); returns the number of groups.
  int partition(BlockSlots& blk) {
    int n = int(blk.order.size());
    offsets_.assign(1, 0);
    edges_.clear();
    for (int i = 0; i < n; ++i) {
      const Slot& s = blk.slots[blk.order[i]];
      for (int k = s.in_begin; k < s.in_end; ++k) {
        int j = pos_[blk.resolve(blk.ins[k])];
        PARTITA_ICHECK(j >= 0 && j < i);
        if (int(edges_.size()) == offsets_.back() || edges_.back() != j) edges_.push_back(j);
      }
      offsets_.push_back(int(edges_.size()));
    }
    // The values the matcher reaches through variables, with their slots: every call or get-item
    // a match covers besides its root is one of them (operands are flat), so this stands for a
    // value -> binding table.
    std::vector<std::pair<const Object*, int>>& jumped = jumped_;
    dpl::BindingLookup lookup = [&](const VarNode* v) -> const Expr* {
      const int* s = blk.var_slot.find(v);
      if (!s) return nullptr;
      int r = blk.resolve(*s);
      if (pos_[r] < 0) return nullptr;
      jumped.emplace_back(blk.slots[r].value, r);
      return &blk.slots[r].binding->value;
    };
    GroupGraph& graph = graph_;
    graph.reset(offsets_, edges_);
    std::vector<char>& composite = composite_;  // per root: formed by a match
    composite.assign(n, 0);
    std::vector<int>& matched = matched_;
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
      if (ok) graph.group_match(matched, composite);
    }
    group_of_.assign(n, -1);
    std::vector<int>& root_to_group = tmp_;
    root_to_group.assign(n, -1);
    int groups = 0;
    for (int i = 0; i < n; ++i) {
      int r = graph.find(i);
      if (!composite[r]) continue;
      if (root_to_group[r] < 0) root_to_group[r] = groups++;
      group_of_[i] = root_to_group[r];
    }
    return groups;
  }

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

  void fuse(BlockSlots& blk, int G) {
    int n = int(blk.order.size());
    const std::vector<int>& group_of = group_of_;
    const DictAttrs& attrs = attrs_;
    // The members of each group in block order, and each member's operands bound in the block
    // as the reference's block has them when this pattern starts: the variable the value names,
    // the one standing for it now, and where that one is. (Taken before any group is emitted:
    // emitting replaces more variables.)
    cur_.resize(n);
    pairs_.clear();
    opnd_off_.assign(n + 1, 0);
    opnds_.clear();
    for (int i = 0; i < n; ++i) {
      opnd_off_[i] = int(opnds_.size());
      int g = group_of[i];
      if (g < 0) continue;
      pairs_.emplace_back(g, i);
      const Slot& ms = blk.slots[blk.order[i]];
      for (int k = ms.in_begin; k < ms.in_end; ++k) {
        int r = blk.resolve(blk.ins[k]);
        opnds_.push_back({blk.slots[blk.ins[k]].var, blk.slots[r].var, pos_[r]});
      }
    }
    opnd_off_[n] = int(opnds_.size());
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
        int r = blk.resolve(blk.ins[k]);
        int j = pos_[r];
        int prod = unit(j);
        if (prod == u) continue;
        if (prod != last) pairs_.emplace_back(u, prod);
        last = prod;
        if (group_of[j] >= 0) uses_.emplace_back(group_of[j], blk.slots[r].var);
      }
    }
    bucket(pairs_, G + n, dep_off_, dep_edges_);
    bucket(uses_, G, use_off_, use_vars_);

    // Topological order of units by first appearance (as fuse_block).
    std::vector<int>& units = units_;
    units.clear();
    std::vector<char>& state = composite_;  // 0 new, 1 open, 2 done
    state.assign(G + n, 0);
    auto& stack = stack_;
    for (int i = 0; i < n; ++i) {
      int u0 = unit(i);
      if (state[u0]) continue;
      stack.push_back({u0, 0});
      state[u0] = 1;
      while (!stack.empty()) {
        auto& [u, k] = stack.back();
        if (dep_off_[u] + k < dep_off_[u + 1]) {
          int d = dep_edges_[dep_off_[u] + k++];
          if (state[d] == 1) throw_error("InternalError", "fusion groups form a cycle");
          if (state[d] == 0) {
            state[d] = 1;
            stack.push_back({d, 0});
          }
          continue;
        }
        state[u] = 2;
        units.push_back(u);
        stack.pop_back();
      }
    }

    // Emission. One Creator serves every group: a group's function description is made when
    // it is emitted (fuse_block makes them all first; the result is the same, as only the
    // order of fingerprint ids differs). Members are described from their bindings as they are,
    // their operands translated; a member's binding is rebuilt only for a function to be made
    // from it, or when a replaced variable sits in a tuple operand (which would be a new node
    // each time it is translated).
    std::vector<int>& order = order_;
    order.clear();
    Creator& c = creator_;
    for (int u : units) {
      if (u >= G) {
        order.push_back(blk.order[u - G]);
        continue;
      }
      stale_.clear();
      bool rebuild = false;
      for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) {
        int i = members_[m];
        bool member_stale = false;
        for (int k = opnd_off_[i]; k < opnd_off_[i + 1]; ++k)
          if (opnds_[k].named != opnds_[k].now) {
            stale_.emplace_back(opnds_[k].named, opnds_[k].now);
            member_stale = true;
          }
        cur_[i] = Binding(blk.slots[blk.order[i]].binding);
        rebuild = rebuild || (member_stale && has_tuple_operand(*blk.slots[blk.order[i]].binding));
      }
      if (rebuild) rebuild_members(blk, u);
      auto describe = [&](auto&& operand) {
        c.reset();
        for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) {
          int i = members_[m];
          fusor_->append_binding(
              c, cur_[i], i,
              [&](const Expr& e) {
                for (int k = opnd_off_[i]; k < opnd_off_[i + 1]; ++k)
                  if (opnds_[k].now == e.get()) return opnds_[k].at < i && group_of[opnds_[k].at] == u;
                return false;
              },
              operand);
        }
        for (int k = use_off_[u]; k < use_off_[u + 1]; ++k) c.append_output(use_vars_[k]);
        fusor_->create_function(c, cur_, attrs, operand);
      };
      if (rebuild || stale_.empty()) {
        describe(SameOperand());
      } else {
        describe([&](const Expr& e) -> Expr {
          if (auto* v = e.as<VarNode>())
            for (const auto& [named, now] : stale_)
              if (named == v) return Var(now);
          return e;
        });
      }
      if (!c.has_outputs) continue;
      GlobalVar gv = fusor_->known_function(c);
      if (!gv.defined()) {
        if (!rebuild) rebuild_members(blk, u);
        gv = fusor_->group_function(c, cur_, attrs);
      }
      std::vector<Expr> args;
      args.reserve(c.arguments.size());
      for (const auto& a : c.arguments) args.push_back(blk.current(a));
      Call call = make<CallNode>(gv, std::move(args));
      call->struct_info_ = fusor_->call_ret_sinfo(gv, c, *call);
      Var nv = fusor_->emit_var(cur_[c.bindings.back()]->var, call);
      int cs = blk.add_slot(nv, call);
      order.push_back(cs);
      if (c.outputs.size() == 1) {
        for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m)
          if (cur_[members_[m]]->var.get() == c.outputs[0]) blk.slots[blk.order[members_[m]]].rep = cs;
      } else {
        auto* tinfo = call->struct_info_.as<TupleStructInfoNode>();
        for (int i : c.bindings) {
          const Var& var = cur_[i]->var;
          int idx = c.output_index(var.get());
          if (idx < 0) continue;
          Expr item = make<TupleGetItemNode>(nv, idx);
          item->struct_info_ = tinfo ? tinfo->fields[idx] : var->struct_info_;
          Var iv = fusor_->emit_var(var, item);
          int ts = blk.add_slot(iv, item);
          order.push_back(ts);
          blk.slots[blk.order[i]].rep = ts;
        }
      }
      for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) cur_[members_[m]] = Binding();
    }
    blk.order.swap(order);  // the old order's storage serves the next pattern
    blk.changed = true;
  }

  // A call operand or get-item tuple that is a tuple (translating a replaced variable in it
  // would make a new node each time).
  static bool has_tuple_operand(const VarBindingNode& b) {
    if (auto* call = b.value.as<CallNode>()) {
      for (const auto& a : call->args)
        if (a.as<TupleNode>()) return true;
      return false;
    }
    if (auto* g = b.value.as<TupleGetItemNode>()) return g->tuple.as<TupleNode>() != nullptr;
    return false;
  }

  // cur_ for the members of group u: their bindings as the reference's block has them when this
  // pattern starts (replaced variables substituted).
  void rebuild_members(BlockSlots& blk, int u) {
    for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) {
      int i = members_[m];
      NodeRemap remap;
      for (int k = opnd_off_[i]; k < opnd_off_[i + 1]; ++k)
        if (opnds_[k].named != opnds_[k].now) remap.emplace(opnds_[k].named, Expr(Var(opnds_[k].now)));
      cur_[i] = remap.empty() ? Binding(blk.slots[blk.order[i]].binding) : subst_binding(cur_[i], remap);
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
  std::vector<std::pair<int, int>> stack_;
  Creator creator_;
  struct Operand {
    const VarNode* named;  // the variable the member's value names
    const VarNode* now;    // the one standing for it when the pattern starts
    int at;                // the position of its binding
  };
  std::vector<int> opnd_off_;  // per position: its operands in opnds_ (members only)
  std::vector<Operand> opnds_;
  std::vector<std::pair<const VarNode*, const VarNode*>> stale_;  // a group's replaced operands
};

// The function with its dataflow block made of the slots, and the later blocks and the result
// brought up to date.
Function rebuild(BlockSlots& blk) {
  auto* seq = blk.func->body.as<SeqExprNode>();
  std::vector<Binding> bindings;
  bindings.reserve(blk.order.size());
  for (int s : blk.order) bindings.push_back(blk.current_binding(s));
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
  for (const auto& pat : patterns)
    if (pat.check || pat.attrs_getter || !pattern_supported(pat.pattern, seen)) return std::nullopt;
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
