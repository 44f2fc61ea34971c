// The grouping machinery (see grouping.h).
#include "grouping.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "pass_util.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"
#include "partita/ir/substitute.h"
#include "partita/support/error.h"

namespace partita::transform::detail {

// ---- GroupGraph -------------------------------------------------------------------------------

void GroupGraph::reset(std::vector<int>& offsets, std::vector<int>& edges) {
  offsets_.swap(offsets);
  edges_.swap(edges);
  int n = int(offsets_.size()) - 1;
  for (auto* v : {&parent_, &min_pos_, &max_pos_, &head_, &tail_}) {  // node i alone
    v->resize(n);
    std::iota(v->begin(), v->end(), 0);
  }
  next_.assign(n, -1);
  // Marks are search epochs; the epoch keeps counting, so stale marks never match.
  mark_.resize(n, 0);
  visited_.resize(n, 0);
}

int GroupGraph::find(int x) {
  while (parent_[x] != x) {
    parent_[x] = parent_[parent_[x]];
    x = parent_[x];
  }
  return x;
}

int GroupGraph::unite(int a, int b) {
  a = find(a);
  b = find(b);
  if (a == b) return a;
  parent_[b] = a;
  next_[tail_[a]] = head_[b];
  tail_[a] = tail_[b];
  min_pos_[a] = std::min(min_pos_[a], min_pos_[b]);
  max_pos_[a] = std::max(max_pos_[a], max_pos_[b]);
  return a;
}

// Walks back from the groups on stack_ through their members' inputs, skipping groups that end
// before position `lo` (they cannot be reached from later ones): true when a group `target`
// accepts is reached, or when the walk exceeds the budget ("maybe": callers then keep groups
// apart, which is always safe).
template <class Target>
bool GroupGraph::reaches(int lo, uint32_t seen, Target&& target) {
  size_t budget = kSearchBudget;
  while (!stack_.empty()) {
    int g = stack_.back();
    stack_.pop_back();
    for (int m = head_[g]; m >= 0; m = next_[m])
      for (int e = offsets_[m]; e < offsets_[m + 1]; ++e) {
        if (--budget == 0) return true;
        int r = find(edges_[e]);
        if (target(r)) return true;
        if (r == g || visited_[r] == seen || max_pos_[r] < lo) continue;
        visited_[r] = seen;
        stack_.push_back(r);
      }
  }
  return false;
}

bool GroupGraph::is_ancestor(int anc_root, int node) {
  anc_root = find(anc_root);
  int start = find(node);
  if (start == anc_root) return false;
  visited_[start] = ++epoch_;
  stack_.assign(1, start);
  return reaches(min_pos_[anc_root], epoch_, [&](int r) { return r == anc_root; });
}

bool GroupGraph::group_match(const std::vector<int>& matched, std::vector<char>& composite) {
  bool whole = true;  // an earlier match may only be absorbed whole
  for (int j : matched) {
    int r = find(j);
    if (!composite[r]) continue;
    for_each_member(r, [&](int mem) {
      whole = whole && std::find(matched.begin(), matched.end(), mem) != matched.end();
    });
  }
  if (!whole || merge_creates_cycle(matched)) return false;
  int root = matched.front();
  for (int j : matched) {
    composite[find(j)] = 0;
    root = unite(root, j);
  }
  composite[find(root)] = 1;
  return true;
}

bool GroupGraph::merge_creates_cycle(const std::vector<int>& nodes) {
  uint32_t in_set = ++epoch_;
  int lo = size();
  roots_.clear();
  for (int n : nodes) {
    int r = find(n);
    if (mark_[r] == in_set) continue;
    mark_[r] = in_set;
    roots_.push_back(r);
    lo = std::min(lo, min_pos_[r]);
  }
  // A cycle appears iff a group outside the set both depends on the set and feeds it: search
  // backwards from every outside input of the set for a member of the set.
  uint32_t seen = ++epoch_;
  stack_.clear();
  for (int r : roots_)
    for (int m = head_[r]; m >= 0; m = next_[m])
      for (int e = offsets_[m]; e < offsets_[m + 1]; ++e) {
        int ir = find(edges_[e]);
        if (mark_[ir] == in_set || visited_[ir] == seen || max_pos_[ir] < lo) continue;
        visited_[ir] = seen;
        stack_.push_back(ir);
      }
  return reaches(lo, seen, [&](int r) { return mark_[r] == in_set; });
}

// ---- helpers ------------------------------------------------------------------------------

void used_vars(const Expr& value, std::vector<const VarNode*>& out) {
  if (auto* v = value.as<VarNode>()) {
    out.push_back(v);
    return;
  }
  // Calls (the common case) without the generic visitor's overhead, their callee last.
  if (auto* c = value.as<CallNode>()) {
    for (const auto& a : c->args) used_vars(a, out);
    if (c->op.as<VarNode>()) out.push_back(c->op.as<VarNode>());
    return;
  }
  if (is_leaf(value)) return;  // no variable (the variables returned above)
  post_order_visit(value, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>()) out.push_back(v);
  });
}

namespace {

// Replaces symbolic variables by the fresh ones of a table (TVM's SymbolicVarRenewMutator).
class SymbolicVarRenewer : public ExprMutator {
 public:
  explicit SymbolicVarRenewer(PrimVarMap fresh) : fresh_(std::move(fresh)) {}
  PrimExpr visit_prim_expr(const PrimExpr& e) override {
    if (!e) return e;
    if (const auto* v = e.as<PrimVarNode>()) {
      auto it = fresh_.find(PrimVar(v));
      return it == fresh_.end() ? e : it->second;
    }
    if (const auto* b = e.as<PrimBinaryNode>()) {
      PrimExpr a = visit_prim_expr(b->a), c = visit_prim_expr(b->b);
      if (a.get() != b->a.get() || c.get() != b->b.get()) return make<PrimBinaryNode>(b->op, a, c);
    }
    return e;
  }

 private:
  PrimVarMap fresh_;
};

}  // namespace

Function renew_symbolic_vars(const Function& func) {
  // A fresh variable for each one the parameters of `func` or of a function nested in it define.
  PrimVarMap fresh;
  post_order_visit(func, [&](const Expr& e) {
    if (auto* f = e.as<FunctionNode>())
      for (const Var& p : f->params)
        if (p->struct_info_)
          for (const PrimVar& v : definable_symbolic_vars_of(p->struct_info_))
            if (!fresh.count(v)) fresh.emplace(v, make<PrimVarNode>(v->name, v->dtype));
  });
  // Nothing to renew (the common case): the mutator would rebuild every binding for nothing.
  if (fresh.empty()) return func;
  Function out = SymbolicVarRenewer(std::move(fresh)).visit_expr(func).as_ref<FunctionNode>();
  if (out.get() != func.get()) out->struct_info_ = func_struct_info_of(*out);
  return out;
}

std::string numbered(const char* hint, int& count) {
  int k = count++;
  return k > 0 ? hint + std::to_string(k) : std::string(hint);
}

namespace {

// CSR of `pairs` (key, value) bucketed by key in [0, keys): off[k] .. off[k + 1] into out,
// keeping the pairs' order within a key.
template <class V>
void bucket(const std::vector<std::pair<int, V>>& pairs, int keys, std::vector<int>& off,
            std::vector<V>& out) {
  off.assign(keys + 1, 0);
  for (const auto& kv : pairs) ++off[kv.first + 1];
  for (int k = 0; k < keys; ++k) off[k + 1] += off[k];
  out.resize(pairs.size());
  std::vector<int> fill(off.begin(), off.end() - 1);
  for (const auto& kv : pairs) out[fill[kv.first]++] = kv.second;
}

inline bool is_inlinable(const Expr& e) {
  if (auto* t = e.as<TupleNode>())
    return std::all_of(t->fields.begin(), t->fields.end(),
                       [](const Expr& f) { return is_inlinable(f); });
  if (auto* p = e.as<PrimValueNode>()) return prim_vars_of(p->value).empty();
  if (auto* s = e.as<ShapeExprNode>())
    return std::all_of(s->values.begin(), s->values.end(),
                       [](const PrimExpr& v) { return prim_vars_of(v).empty(); });
  return e.as<StringImmNode>() || e.as<DataTypeImmNode>() || e.as<GlobalVarNode>() ||
         e.as<OpNode>() || e.as<ExternFuncNode>();
}

// One group's function being made. Most groups are small composites whose function already
// exists (found by fingerprint), so parameters and the name are only made when it is built.
struct Creator {
  std::vector<const BindingNode*> bindings;  // in block order
  std::vector<Expr> arguments;
  std::vector<int> const_param_no;  // per argument: the N of "param_N", -1 for variables
  std::vector<const VarNode*> outputs;  // groups have few: found by scanning
  int n_param_for_const = 0;
  Function func;  // built only when no earlier group's fingerprint found the function

  /// Empty again, keeping the vectors' storage (one Creator serves group after group).
  void reset() {
    bindings.clear();
    arguments.clear();
    const_param_no.clear();
    outputs.clear();
    n_param_for_const = 0;
    func = Function();
  }
  int output_index(const VarNode* v) const {
    auto it = std::find(outputs.begin(), outputs.end(), v);
    return it == outputs.end() ? -1 : int(it - outputs.begin());
  }
  void append_output(const VarNode* v) { if (output_index(v) < 0) outputs.push_back(v); }
  // `defined_here`: `e` is a variable bound earlier in this group.
  void check_def(const Expr& e, bool defined_here, bool lift_constants) {
    if (std::find(arguments.begin(), arguments.end(), e) != arguments.end()) return;
    auto* var = e.as<VarNode>();
    if (var && defined_here) return;
    if (!lift_constants && e.as<ConstantNode>()) return;
    // The counter advances for every non-variable candidate, inlinable or not (names depend on it).
    int no = var ? -1 : n_param_for_const++;
    if (is_inlinable(e)) return;
    arguments.push_back(e);
    const_param_no.push_back(no);
  }
};

/// Puts the units of a block (groups and ungrouped bindings; position i of the block belongs to
/// unit(i), of those numbered below `offsets.size() - 1`) in an order where each follows the
/// units it depends on (`edges[offsets[u] .. offsets[u + 1])` for unit u), visiting them in order
/// of first appearance as TVM's TopoSortByGroupDep does. Iterative, so long chains do not
/// overflow the stack. A cycle is an internal error (grouping never makes one).
template <class Unit>
void order_units(const std::vector<int>& offsets, const std::vector<int>& edges, int positions,
                 Unit&& unit, std::vector<int>& order) {
  int units = int(offsets.size()) - 1;
  order.clear();
  order.reserve(units);
  std::vector<char> state(units, 0);       // per unit: 0 new, 1 open, 2 done
  std::vector<std::pair<int, int>> stack;  // (unit, next dependency to visit)
  for (int i = 0; i < positions; ++i) {
    int u0 = unit(i);
    if (state[u0]) continue;
    stack.push_back({u0, 0});
    state[u0] = 1;
    while (!stack.empty()) {
      auto& [u, k] = stack.back();
      if (offsets[u] + k < offsets[u + 1]) {
        int d = edges[offsets[u] + k++];
        if (state[d] == 1) throw_error("InternalError", "fusion groups form a cycle");
        if (state[d] == 0) {
          state[d] = 1;
          stack.push_back({d, 0});
        }
        continue;
      }
      state[u] = 2;
      order.push_back(u);
      stack.pop_back();
    }
  }
}

// The slot standing now for the variable of slot `s`.
int resolve(const std::vector<Slot>& slots, int s) {
  while (slots[s].rep >= 0) s = slots[s].rep;  // chains are short: one link per grouping
  return s;
}

// `e` (a `Node`) with `f` applied to each of its expression fields and to each expression of its
// list fields: `e` itself when none changes, else a copy, which keeps the struct info.
template <class Node, class F>
Expr map_operands(const Expr& e, F&& f) {
  const Node* node = static_cast<const Node*>(e.get());
  Node* copy = nullptr;  // made at the first change
  auto changed = [&]() -> Node& {
    if (!copy) copy = copy_node(Ref<Node>(node));
    return *copy;
  };
  auto map_field = [&](auto member) {
    using M = std::remove_cvref_t<decltype(node->*member)>;
    if constexpr (std::is_same_v<M, Expr>) {
      if (Expr y = f(node->*member); !(y == node->*member)) changed().*member = y;
    } else if constexpr (std::is_same_v<M, std::vector<Expr>>) {
      const std::vector<Expr>& xs = node->*member;
      for (size_t k = 0; k < xs.size(); ++k)
        if (Expr y = f(xs[k]); !(y == xs[k])) (changed().*member)[k] = y;
    }
  };
  std::apply([&](auto... fd) { (map_field(fd.member), ...); }, Node::declared_fields());
  return copy ? Expr(Ref<Node>(copy)) : e;
}

}  // namespace

// ---- FunctionSlots ----------------------------------------------------------------------------

FunctionSlots::FunctionSlots(const Function& func) : func_(func) {
  auto* seq = func->body.as<SeqExprNode>();
  if (!seq) return;
  size_t n = 0;
  for (const auto& blk : seq->blocks) n += blk->bindings.size();
  slots.reserve(n + n / 2);
  ins.reserve(2 * n);
  var_slot.reserve(n + n / 2);
  for (const auto& blk : seq->blocks) {
    Block& block = blocks.emplace_back(Block{{}, blk->is_dataflow});
    block.order.reserve(blk->bindings.size());
    for (const auto& b : blk->bindings) block.order.push_back(push_slot(*b));
  }
}

Expr FunctionSlots::current(const Expr& e) {
  // Operands (variables, and calls, tuples and get-items of them) are rebuilt here, keeping
  // their struct info: replacing a variable by the one standing for it changes none.
  auto self = [this](const Expr& x) { return current(x); };
  switch (e->kind()) {
    case NodeKind::Var:
    case NodeKind::DataflowVar: {
      const int* s = var_slot.find(e.get());
      if (!s) return e;
      int r = resolve(slots, *s);
      return r == *s ? e : Expr(Var(slots[r].var));
    }
    case NodeKind::Call: return map_operands<CallNode>(e, self);
    case NodeKind::Tuple: return map_operands<TupleNode>(e, self);
    case NodeKind::TupleGetItem: return map_operands<TupleGetItemNode>(e, self);
    default: {  // nested scopes (functions, branches): the substitution utility; leaves
      std::vector<const VarNode*> vs;
      used_vars(e, vs);
      PtrMap<Expr> remap;
      for (auto* v : vs)
        if (Expr now = current(Expr(Var(v))); !(now.get() == v)) remap.emplace(v, now);
      return remap.empty() ? e : Substitutor(std::move(remap))(e);
    }
  }
}

void FunctionSlots::refresh(int s) {
  Slot& slot = slots[s];
  bool stale = false;
  for (int k = slot.in_begin; k < slot.in_end; ++k) {
    int r = resolve(slots, ins[k]);
    stale = stale || r != ins[k];
    ins[k] = r;
  }
  if (!stale) return;
  Expr value = current(Expr(slot.value));
  if (value.get() == slot.value) return;
  made_.push_back(rebind(Binding(slot.binding), Var(slot.var), value));
  slot.binding = made_.back().get();
  slot.value = value.get();
}

int FunctionSlots::push_slot(const BindingNode& b) {
  Slot& slot = slots.emplace_back();
  slot.binding = &b;
  slot.var = b.var.get();
  const Expr& value = binding_value(b);
  slot.value = value.get();
  slot.is_var_binding = b.kind() == NodeKind::VarBinding;
  scratch_.clear();
  used_vars(value, scratch_);
  // Inputs: the bindings before this one (a variable used before it is bound has none).
  slot.in_begin = int(ins.size());
  for (auto* v : scratch_)
    if (const int* at = var_slot.find(v)) ins.push_back(*at);
  slot.in_end = int(ins.size());
  int s = int(slots.size()) - 1;
  var_slot[slot.var] = s;  // bound again: the last
  return s;
}

int FunctionSlots::add_slot(const Var& var, const Expr& value) {
  made_.push_back(make<VarBindingNode>(var, value));
  return push_slot(*made_.back());
}

void FunctionSlots::block_graph(const std::vector<int>& order, std::vector<int>& pos,
                                std::vector<int>& offsets, std::vector<int>& edges) {
  int n = int(order.size());
  pos.assign(slots.size(), -1);
  for (int i = 0; i < n; ++i) pos[order[i]] = i;
  offsets.assign(1, 0);
  edges.clear();
  for (int i = 0; i < n; ++i) {
    refresh(order[i]);
    const Slot& s = slots[order[i]];
    for (int k = s.in_begin; k < s.in_end; ++k) {
      int j = pos[ins[k]];
      if (j < 0) continue;  // bound in another block
      PARTITA_ICHECK(j < i);
      if (int(edges.size()) == offsets.back() || edges.back() != j) edges.push_back(j);
    }
    offsets.push_back(int(edges.size()));
  }
}

void graph_users(const std::vector<int>& offsets, const std::vector<int>& edges,
                 std::vector<int>& off, std::vector<int>& users) {
  int n = int(offsets.size()) - 1;
  std::vector<int> last(n, -1);  // the last user counted per node
  std::vector<std::pair<int, int>> pairs;  // (node, user)
  pairs.reserve(edges.size());
  for (int i = 0; i < n; ++i)
    for (int e = offsets[i]; e < offsets[i + 1]; ++e)
      if (int j = edges[e]; last[j] != i) pairs.emplace_back(j, last[j] = i);
  bucket(pairs, n, off, users);
}

Function FunctionSlots::rebuild() {
  if (!changed) return func_;
  auto* seq = func_->body.as<SeqExprNode>();
  std::vector<BindingBlock> out;
  bool any = false;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const BindingBlock& old = seq->blocks[b];
    std::vector<Binding> bindings;
    bindings.reserve(blocks[b].order.size());
    bool same = blocks[b].order.size() == old->bindings.size();
    for (int s : blocks[b].order) {
      refresh(s);
      bindings.emplace_back(slots[s].binding);
      same = same && bindings.back().get() == old->bindings[bindings.size() - 1].get();
    }
    out.push_back(
        same ? old : BindingBlock(make<BindingBlockNode>(std::move(bindings), old->is_dataflow)));
    any = any || !same;
  }
  Expr body = current(seq->body);
  if (!any && body == seq->body) return func_;
  auto* ns = copy_node(Ref<SeqExprNode>(seq));
  ns->blocks = std::move(out);
  ns->body = body;
  auto* nf = copy_node(func_);
  nf->body = Ref<SeqExprNode>(ns);
  return Function(nf);
}

// ---- GroupFuser ------------------------------------------------------------------------------

struct GroupFuser::Impl {
  Impl(IRModule mod, bool lift_constants) : mod_(std::move(mod)), lift_constants_(lift_constants) {
    for (const auto& [name, entry] : mod_->functions)
      if (auto* f = entry.second.as<FunctionNode>(); f && f->attrs.count("Primitive"))
        dedup_.emplace(structural_hash(entry.second), entry.first);
  }

  /// Adds binding `b` to group `c`; a group's bindings are added in block order.
  /// `defined_here(e)`: `e` is a variable bound earlier in the same group.
  template <class DefinedHere>
  void append_binding(Creator& c, const BindingNode& b, DefinedHere&& defined_here) {
    auto check = [&](const Expr& e) { c.check_def(e, defined_here(e), lift_constants_); };
    auto* vb = b.kind() == NodeKind::VarBinding ? static_cast<const VarBindingNode*>(&b) : nullptr;
    if (auto* call = vb ? vb->value.as<CallNode>() : nullptr) {
      for (const auto& a : call->args) {
        // A tuple argument with a field bound earlier in the group cannot become a parameter
        // (that field exists only inside the function): its fields are checked one by one.
        auto* tup = a.as<TupleNode>();
        if (tup && std::any_of(tup->fields.begin(), tup->fields.end(), defined_here))
          for (const auto& f : tup->fields) check(f);
        else
          check(a);
      }
    } else if (auto* tgi = vb ? vb->value.as<TupleGetItemNode>() : nullptr) {
      check(tgi->tuple);
    } else {
      std::vector<const VarNode*> vs;
      used_vars(binding_value(b), vs);
      for (auto* v : vs) check(Var(v));
    }
    if (!b.var.as<DataflowVarNode>()) c.append_output(b.var.get());
    c.bindings.push_back(&b);
  }

  GlobalVar add_function(const Function& func, const std::string& hint) {
    size_t h = structural_hash(func);
    for (auto [it, end] = dedup_.equal_range(h); it != end; ++it)
      if (mod_.contains(it->second->name_hint) && structural_equal(mod_.lookup(it->second), func))
        return it->second;
    auto the_func = [&](const std::string&) { return func; };
    return dedup_.emplace(h, add_fresh_function(mod_, names_, hint, the_func))->second;
  }

  // "fused" + "_" + the operator (or function, less its "fused_") name of each call of the group.
  static std::string group_name(const Creator& c) {
    std::string name = "fused";
    for (const BindingNode* b : c.bindings) {
      auto* call = b->kind() == NodeKind::VarBinding ? binding_value(*b).as<CallNode>() : nullptr;
      std::string part;
      if (auto* op = call ? call->op.as<OpNode>() : nullptr) part = op->name;
      if (auto* gv = call ? call->op.as<GlobalVarNode>() : nullptr)
        part = gv->name_hint.substr(gv->name_hint.rfind("fused_", 0) == 0 ? 6 : 0);
      if (!part.empty()) name += "_" + part;
    }
    return name;
  }

  // An id per structurally distinct object (free variables compared by identity).
  int64_t intern(const ObjectRef& x) {
    if (!x) return -1;
    // Tensor struct info with a constant shape and no device (the common case) by an exact key:
    // no generic structural hashing. One with a device goes the generic way, which compares it.
    if (auto* t = x.as<TensorStructInfoNode>(); t && !t->vdevice) {
      // Many calls share a struct info object (a group function's result, a parameter's): a
      // small cache by address skips reading the shape (entries keep their object alive).
      auto& cached = sinfo_cache_[(reinterpret_cast<uintptr_t>(t) >> 4) % sinfo_cache_.size()];
      if (cached.first.get() == t) return cached.second;
      auto dtype = [](DataType d) { return int64_t(d.code()) << 24 | d.bits() << 16 | d.lanes(); };
      key_.assign({dtype(t->dtype), t->ndim, t->shape.has_value()});
      bool exact = true;
      for (size_t k = 0; t->shape && exact && k < t->shape->size(); ++k) {
        auto* imm = (*t->shape)[k].as<IntImmNode>();
        exact = imm != nullptr;
        if (imm) key_.insert(key_.end(), {imm->value, dtype(imm->dtype)});
      }
      if (exact) {
        auto [it, fresh] = tensor_ids_.try_emplace(key_, intern_count_);
        intern_count_ += fresh;
        cached = {x, it->second};
        return it->second;
      }
    }
    // Other objects by structural hash and equality, cached by address: they are kept alive, so
    // an address is never reused.
    if (const int64_t* id = intern_cache_.find(x.get())) return *id;
    auto& bucket = intern_buckets_[structural_hash(x)];
    auto rep = std::find_if(bucket.begin(), bucket.end(), [&](const auto& r) {
      return structural_equal(r.first, x, /*map_free_vars=*/false);
    });
    int64_t id = rep == bucket.end() ? intern_count_++ : rep->second;
    if (rep == bucket.end()) bucket.emplace_back(x, id);
    intern_keep_.push_back(x);
    intern_cache_.emplace(x.get(), id);
    return id;
  }

  // A description of the function `build_function` would build, equal only for structurally
  // equal functions: lets a group reuse an earlier identical function without building it.
  // Fills `fp`; false when the group holds something it does not describe (the function is
  // then built and compared).
  bool fingerprint_of(const Creator& c, const DictAttrs& attrs, std::vector<int64_t>& fp) {
    fp.clear();
    auto put = [&fp](std::initializer_list<int64_t> xs) {
      for (int64_t x : xs) fp.push_back(x);
    };
    auto seen = std::find(fattrs_seen_.begin(), fattrs_seen_.end(), attrs);
    fp.push_back(seen - fattrs_seen_.begin());
    if (seen == fattrs_seen_.end()) fattrs_seen_.push_back(attrs);
    // Composites are small: positions are found by scanning (no table to allocate).
    if (c.bindings.size() > 64 || c.arguments.size() > 64) return false;
    fp.push_back(int64_t(c.arguments.size()));
    for (const auto& a : c.arguments) fp.push_back(intern(a->struct_info_));
    fp.push_back(int64_t(c.bindings.size()));
    locals_.clear();
    auto index_in = [](const auto& xs, const Object* p) -> int64_t {
      for (size_t k = 0; k < xs.size(); ++k)
        if (&*xs[k] == p) return int64_t(k);
      return -1;
    };
    enum : int64_t { kParam = -2, kLocal = -3, kLeaf = -4, kCall = -5, kGetItem = -6 };
    auto arg_token = [&](const Expr& a) -> bool {
      if (int64_t k = index_in(c.arguments, a.get()); k >= 0)
        put({kParam, k});
      else if (int64_t l = index_in(locals_, a.get()); l >= 0)  // bound earlier in the group
        put({kLocal, l});
      else if (a.as<VarNode>() || !is_leaf(a))  // bound outside the group, or not described
        return false;
      else
        put({kLeaf, int64_t(a->kind()), intern(a)});
      return true;
    };
    for (const BindingNode* b : c.bindings) {
      if (b->kind() != NodeKind::VarBinding) return false;
      auto* vb = static_cast<const VarBindingNode*>(b);
      put({c.output_index(b->var.get()), int64_t(b->var->kind()), intern(b->var->struct_info_)});
      if (auto* call = vb->value.as<CallNode>()) {
        if (!call->op.as<OpNode>() && !call->op.as<GlobalVarNode>()) return false;
        put({kCall, intern(call->op), intern(call->attrs), int64_t(call->sinfo_args.size())});
        for (const auto& si : call->sinfo_args) fp.push_back(intern(si));
        fp.push_back(int64_t(call->args.size()));
        for (const auto& a : call->args)
          if (!arg_token(a)) return false;
      } else if (auto* g = vb->value.as<TupleGetItemNode>()) {
        put({kGetItem, g->index});
        if (!arg_token(g->tuple)) return false;
      } else {
        return false;
      }
      locals_.push_back(b->var.get());
    }
    fp.push_back(int64_t(c.outputs.size()));
    for (auto* o : c.outputs) {
      int64_t l = index_in(locals_, o);
      if (l < 0) return false;
      fp.push_back(l);
    }
    return true;
  }

  struct FingerprintHash {
    size_t operator()(const std::vector<int64_t>& v) const {
      size_t h = v.size();
      for (int64_t x : v) h = (h ^ size_t(x)) * 0x100000001b3ULL;
      return h;
    }
  };

  void build_function(Creator& c, const DictAttrs& attrs) {
    // Arguments become parameters, outputs variables "gv", "gv1", ... in binding order.
    NameSupply local;
    PtrMap<Expr> remap(c.arguments.size() + c.outputs.size());
    std::vector<Var> params;
    for (size_t k = 0; k < c.arguments.size(); ++k) {
      const Expr& a = c.arguments[k];
      int no = c.const_param_no[k];
      std::string name = no < 0 ? a.as<VarNode>()->name_hint : "param_" + std::to_string(no);
      params.push_back(make<VarNode>(std::move(name), a->struct_info_));
      remap.emplace(a.get(), params.back());
    }
    std::vector<Expr> outputs(c.outputs.size());
    for (const BindingNode* b : c.bindings) {
      const Var& var = b->var;
      int idx = c.output_index(var.get());
      if (idx < 0) continue;
      outputs[idx] = make<VarNode>(local.fresh("gv"), var->struct_info_);
      remap.emplace(var.get(), outputs[idx]);
    }
    Substitutor subst(std::move(remap), mod_);
    std::vector<Binding> out;
    for (const BindingNode* b : c.bindings)
      out.push_back(rebind(Binding(b), subst.visit_var_def(b->var), subst(binding_value(*b))));
    Expr body = outputs[0];
    if (outputs.size() > 1) {
      std::vector<StructInfo> fs;
      for (const auto& o : outputs) fs.push_back(o->struct_info_);
      body = make<TupleNode>(outputs);
      body->struct_info_ = tuple_sinfo(fs);
    }
    Expr seq = single_block_seq(std::move(out), true, body);
    DictAttrs fattrs = attrs;
    fattrs["Primitive"] = true;  // a bool, as TVM >= 0.26 sets it
    Function f = make<FunctionNode>(std::move(params), seq, body->struct_info_, true, fattrs);
    f->struct_info_ = func_struct_info_of(*f);
    c.func = renew_symbolic_vars(f);
  }

  // The struct info of a call of the group function `gv` (made from `c`). The arguments carry
  // exactly the parameters' struct info (parameters are made from them, shared functions are
  // structurally equal), so for signatures without symbolic variables (the result is then the
  // declared one whatever the arguments) the derivation is done once per function.
  StructInfo call_ret_sinfo(const GlobalVar& gv, const Creator& c, const CallNode& call) {
    if (const StructInfo* hit = ret_sinfo_cache_.find(gv.get())) return *hit;
    StructInfo fsinfo = c.func ? c.func->struct_info_ : mod_.lookup(gv)->struct_info_;
    auto finfo = fsinfo.as_ref<FuncStructInfoNode>();
    StructInfo ret = derive_call_ret_struct_info(finfo, call);
    if (finfo->params && finfo->ret && symbolic_vars_of(fsinfo).empty())
      ret_sinfo_cache_.emplace(gv.get(), ret);
    return ret;
  }

  /// The variable bound to a group's call (or to one of its outputs): "lv", "lv1", ... when
  /// `like` is a DataflowVar, else "gv", "gv1", ... (one name supply per Fusor).
  Var emit_var(const Var& like, const Expr& value) {
    if (like.as<DataflowVarNode>())
      return make<DataflowVarNode>(numbered("lv", n_lv_), value->struct_info_);
    return make<VarNode>(numbered("gv", n_gv_), value->struct_info_);
  }

  /// The function group `c` calls: the one an earlier group with the same fingerprint became,
  /// else built and added (or found structurally equal to one already in the module).
  GlobalVar group_function(Creator& c, const DictAttrs& attrs) {
    // Composites repeat (one per match of a pattern), and so do merged groups of repeated
    // layers: a known fingerprint skips building and comparing the function.
    bool described = fingerprint_of(c, attrs, fingerprint_);
    if (described)
      if (auto it = by_fingerprint_.find(fingerprint_); it != by_fingerprint_.end())
        return it->second;
    build_function(c, attrs);
    GlobalVar gv = add_function(c.func, group_name(c));
    if (described) by_fingerprint_.emplace(fingerprint_, gv);
    return gv;
  }

  // True when `e` is a variable bound earlier in group u than member i.
  bool defined_before(const FunctionSlots& fn, int i, int u, const Expr& e,
                      const std::vector<int>& group_of) const {
    const int* s = e.as<VarNode>() ? fn.var_slot.find(e.get()) : nullptr;
    int j = s ? pos_[*s] : -1;
    return j >= 0 && j < i && group_of[j] == u;
  }

  void fuse_block(FunctionSlots& fn, size_t b, const BlockGroups& bg) {
    std::vector<int>& order0 = fn.blocks[b].order;
    int n = int(order0.size()), G = bg.count;
    PARTITA_ICHECK(int(bg.group_of.size()) == n);
    const std::vector<int>& group_of = bg.group_of;
    // The bindings are described as they were when the groups were made (TVM names parameters
    // after the variables the grouped bindings use, before an earlier block's groups replace
    // them): no refresh here.
    pos_.assign(fn.slots.size(), -1);
    for (int i = 0; i < n; ++i) pos_[order0[i]] = i;
    // The members of each group in block order.
    pairs_.clear();
    for (int i = 0; i < n; ++i)
      if (group_of[i] >= 0) pairs_.emplace_back(group_of[i], i);
    bucket(pairs_, G, mem_off_, members_);
    // Dependencies between units (groups, and the other bindings), and the uses that make a
    // member's variable an output of its group, in the order met.
    auto unit = [&](int i) { return group_of[i] >= 0 ? group_of[i] : G + i; };
    pairs_.clear();  // (unit, producer unit)
    uses_.clear();   // (group, variable used outside it)
    for (int i = 0; i < n; ++i) {
      int u = unit(i), last = -1;
      const Slot& s = fn.slots[order0[i]];
      for (int k = s.in_begin; k < s.in_end; ++k) {
        int j = pos_[fn.ins[k]];
        if (j < 0) continue;  // bound in another block
        int prod = unit(j);
        if (prod == u) continue;
        if (prod != last) pairs_.emplace_back(u, prod);
        last = prod;
        if (group_of[j] >= 0) uses_.emplace_back(group_of[j], fn.slots[fn.ins[k]].var);
      }
    }
    bucket(pairs_, G + n, dep_off_, dep_edges_);
    bucket(uses_, G, use_off_, use_vars_);
    order_units(dep_off_, dep_edges_, n, unit, units_);

    // Emission. One Creator serves every group: its bindings in block order (non-DataflowVar
    // ones are outputs), then the outputs the uses found.
    order_.clear();
    Creator& c = creator_;
    for (int u : units_) {
      if (u >= G) {
        order_.push_back(order0[u - G]);
        continue;
      }
      c.reset();
      for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) {
        int i = members_[m];
        append_binding(c, *fn.slots[order0[i]].binding,
                       [&](const Expr& e) { return defined_before(fn, i, u, e, group_of); });
      }
      for (int k = use_off_[u]; k < use_off_[u + 1]; ++k) c.append_output(use_vars_[k]);
      if (!c.outputs.empty()) emit_group(fn, order0, u, c, bg.attrs_of(u));  // else none is used
    }
    order0.swap(order_);  // the old order's storage serves the next block
    fn.changed = true;
  }

  // The call of group u's function (and get-items of its outputs) as new slots; the members'
  // variables that are outputs now stand for them.
  void emit_group(FunctionSlots& fn, const std::vector<int>& order0, int u, Creator& c,
                  const DictAttrs& attrs) {
    GlobalVar gv = group_function(c, attrs);
    std::vector<Expr> args;
    args.reserve(c.arguments.size());
    for (const auto& a : c.arguments) args.push_back(fn.current(a));
    Call call = make<CallNode>(gv, std::move(args));
    call->struct_info_ = call_ret_sinfo(gv, c, *call);
    Var nv = emit_var(c.bindings.back()->var, call);
    int cs = fn.add_slot(nv, call);
    order_.push_back(cs);
    // The members (c.bindings' positions) whose variable is an output: the call, or a get-item.
    auto* tinfo = call->struct_info_.as<TupleStructInfoNode>();
    for (int m = mem_off_[u]; m < mem_off_[u + 1]; ++m) {
      const Var& var = c.bindings[size_t(m - mem_off_[u])]->var;
      int idx = c.output_index(var.get()), s = cs;
      if (idx < 0) continue;
      if (c.outputs.size() > 1) {
        Expr item = make<TupleGetItemNode>(nv, idx);
        item->struct_info_ = tinfo ? tinfo->fields[idx] : var->struct_info_;
        s = fn.add_slot(emit_var(var, item), item);
        order_.push_back(s);
      }
      fn.slots[order0[members_[m]]].rep = s;
    }
  }

  IRModule mod_;
  bool lift_constants_;
  NameSupply names_;  // function names (all start with "fused")
  int n_lv_ = 0, n_gv_ = 0;
  std::unordered_multimap<size_t, GlobalVar> dedup_;
  // Fingerprint -> the function a group with that fingerprint became (added or found equal).
  std::unordered_map<std::vector<int64_t>, GlobalVar, FingerprintHash> by_fingerprint_;
  PtrMap<int64_t> intern_cache_;
  PtrMap<StructInfo> ret_sinfo_cache_;  // keyed by GlobalVar node (kept alive by mod_)
  std::unordered_map<size_t, std::vector<std::pair<ObjectRef, int64_t>>> intern_buckets_;
  std::unordered_map<std::vector<int64_t>, int64_t, FingerprintHash> tensor_ids_;  // by key_
  std::vector<ObjectRef> intern_keep_;
  std::array<std::pair<ObjectRef, int64_t>, 256> sinfo_cache_;  // by the struct info's address
  int64_t intern_count_ = 0;
  std::vector<DictAttrs> fattrs_seen_;
  Creator creator_;
  std::vector<int64_t> fingerprint_, key_;  // group_function's and intern's scratch
  std::vector<const Object*> locals_;  // fingerprint_of's scratch
  // fuse_block's working arrays, reused from block to block.
  std::vector<int> pos_, mem_off_, members_, dep_off_, dep_edges_, use_off_, units_, order_;
  std::vector<std::pair<int, int>> pairs_;
  std::vector<std::pair<int, const VarNode*>> uses_;
  std::vector<const VarNode*> use_vars_;
};

GroupFuser::GroupFuser(IRModule mod, bool lift_constants)
    : impl_(std::make_unique<Impl>(std::move(mod), lift_constants)) {}
GroupFuser::~GroupFuser() = default;
IRModule& GroupFuser::mod() { return impl_->mod_; }
void GroupFuser::fuse_block(FunctionSlots& fn, size_t b, const BlockGroups& groups) {
  if (groups.count > 0) impl_->fuse_block(fn, b, groups);
}

}  // namespace partita::transform::detail
