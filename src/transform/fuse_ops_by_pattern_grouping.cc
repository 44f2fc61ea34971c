// Shared machinery of FuseOpsByPattern and MergeCompositeFunctions: the group graph, the name
// supply, variable substitution, and turning groups of bindings into functions (TVM's
// OperatorFusor / FunctionCreator).
#include <algorithm>
#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/ptr_map.h"
#include "partita/ir/structural_equal.h"
#include "partita/support/error.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "fuse_ops_by_pattern_fusor.h"

namespace partita::transform {

// ---------------------------------------------------------------------------------------------
// GroupGraph
// ---------------------------------------------------------------------------------------------

GroupGraph::GroupGraph(std::vector<int> offsets, std::vector<int> edges) { reset(offsets, edges); }

void GroupGraph::reset(std::vector<int>& offsets, std::vector<int>& edges) {
  offsets_.swap(offsets);
  edges_.swap(edges);
  int n = int(offsets_.size()) - 1;
  parent_.resize(n);
  min_pos_.resize(n);
  max_pos_.resize(n);
  head_.resize(n);
  tail_.resize(n);
  next_.assign(n, -1);
  // Marks are search epochs; the epoch keeps counting, so stale marks never match.
  mark_.resize(n, 0);
  visited_.resize(n, 0);
  for (int i = 0; i < n; ++i) {
    parent_[i] = head_[i] = tail_[i] = i;
    min_pos_[i] = max_pos_[i] = i;
  }
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

bool GroupGraph::is_ancestor(int anc_root, int node) {
  anc_root = find(anc_root);
  int start = find(node);
  if (start == anc_root) return false;
  ++epoch_;
  int lo = min_pos_[anc_root];
  std::vector<int>& stack = stack_;
  stack.assign(1, start);
  visited_[start] = epoch_;
  size_t budget = kSearchBudget;
  while (!stack.empty()) {
    int g = stack.back();
    stack.pop_back();
    for (int m = head_[g]; m >= 0; m = next_[m]) {
      for (int e = offsets_[m]; e < offsets_[m + 1]; ++e) {
        int in = edges_[e];
        // Past the budget, answer "maybe": callers then refuse the merge, which is always safe.
        if (--budget == 0) return true;
        int r = find(in);
        if (r == anc_root) return true;
        // A group entirely before the ancestor's first binding cannot descend from it.
        if (r == g || visited_[r] == epoch_ || max_pos_[r] < lo) continue;
        visited_[r] = epoch_;
        stack.push_back(r);
      }
    }
  }
  return false;
}

bool GroupGraph::group_match(const std::vector<int>& matched, std::vector<char>& composite) {
  bool whole = true;  // an earlier match may only be absorbed whole
  for (int j : matched) {
    int r = find(j);
    if (!composite[r]) continue;
    for_each_member(r, [&](int mem) { whole = whole && std::find(matched.begin(), matched.end(), mem) != matched.end(); });
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
  ++epoch_;
  uint32_t in_set = epoch_;
  int lo = size();
  std::vector<int>& roots = roots_;
  roots.clear();
  for (int n : nodes) {
    int r = find(n);
    if (mark_[r] == in_set) continue;
    mark_[r] = in_set;
    roots.push_back(r);
    lo = std::min(lo, min_pos_[r]);
  }
  // A cycle appears iff a group outside the set both depends on the set and feeds it: search
  // backwards from every outside input of the set for a member of the set.
  ++epoch_;
  uint32_t seen = epoch_;
  std::vector<int>& stack = stack_;
  stack.clear();
  for (int r : roots) {
    for (int m = head_[r]; m >= 0; m = next_[m]) {
      for (int e = offsets_[m]; e < offsets_[m + 1]; ++e) {
        int in = edges_[e];
        int ir = find(in);
        if (mark_[ir] == in_set || visited_[ir] == seen || max_pos_[ir] < lo) continue;
        visited_[ir] = seen;
        stack.push_back(ir);
      }
    }
  }
  size_t budget = kSearchBudget;
  while (!stack.empty()) {
    int g = stack.back();
    stack.pop_back();
    for (int m = head_[g]; m >= 0; m = next_[m]) {
      for (int e = offsets_[m]; e < offsets_[m + 1]; ++e) {
        int in = edges_[e];
        if (--budget == 0) return true;  // "maybe a cycle": the caller keeps the groups apart
        int r = find(in);
        if (mark_[r] == in_set) return true;
        if (r == g || visited_[r] == seen || max_pos_[r] < lo) continue;
        visited_[r] = seen;
        stack.push_back(r);
      }
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Names and substitution
// ---------------------------------------------------------------------------------------------

std::string NameSupply::fresh(std::string hint) {
  std::replace(hint.begin(), hint.end(), '.', '_');
  size_t h = std::hash<std::string_view>()(hint);
  int at = find(hint, h);
  if (at < 0) {
    insert(hint, h);
    return hint;
  }
  std::string name;
  for (;;) {
    name = hint;
    name += std::to_string(++entries_[at].second);
    size_t hn = std::hash<std::string_view>()(name);
    if (find(name, hn) < 0) {
      insert(name, hn);
      return name;
    }
  }
}

int NameSupply::find(std::string_view name, size_t hash) const {
  if (table_.empty()) return -1;
  size_t mask = table_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    int e = table_[i];
    if (e < 0) return -1;
    if (hashes_[e] == hash && entries_[e].first == name) return e;
  }
}

int NameSupply::insert(std::string name, size_t hash) {
  if ((entries_.size() + 1) * 2 > table_.size()) {
    size_t cap = table_.empty() ? 16 : 2 * table_.size();
    table_.assign(cap, -1);
    for (size_t e = 0; e < entries_.size(); ++e) {
      size_t i = hashes_[e] & (cap - 1);
      while (table_[i] >= 0) i = (i + 1) & (cap - 1);
      table_[i] = int(e);
    }
  }
  size_t mask = table_.size() - 1;
  size_t i = hash & mask;
  while (table_[i] >= 0) i = (i + 1) & mask;
  table_[i] = int(entries_.size());
  entries_.emplace_back(std::move(name), 0);
  hashes_.push_back(hash);
  return table_[i];
}

namespace detail {

using NodeRemap = PtrMap<Expr>;

template <class T>
Ref<T> with_sinfo(T* node, const ExprNode& old) {
  node->struct_info_ = old.struct_info_;
  return Ref<T>(node);
}

Expr subst(const Expr& e, const NodeRemap& remap);

Binding subst_binding(const Binding& b, const NodeRemap& remap) {
  Var var = b->var;
  if (const Expr* to = remap.find(var.get()))
    if (auto v = to->as_ref<VarNode>()) var = v;
  if (auto* vb = b.as<VarBindingNode>()) {
    Expr value = subst(vb->value, remap);
    if (value == vb->value && var == vb->var) return b;
    return make<VarBindingNode>(var, value);
  }
  auto* mc = b.as<MatchCastNode>();
  Expr value = subst(mc->value, remap);
  if (value == mc->value && var == mc->var) return b;
  return make<MatchCastNode>(var, value, mc->struct_info);
}

// The substituted list, allocated only once an element changes (most lists do not).
std::vector<Expr> subst_list(const std::vector<Expr>& xs, const NodeRemap& remap, bool& changed) {
  std::vector<Expr> out;
  for (size_t k = 0; k < xs.size(); ++k) {
    Expr y = subst(xs[k], remap);
    if (out.empty() && y == xs[k]) continue;
    if (out.empty()) {
      out.reserve(xs.size());
      out.insert(out.end(), xs.begin(), xs.begin() + std::ptrdiff_t(k));
    }
    out.push_back(std::move(y));
  }
  if (!out.empty()) changed = true;
  return out;
}

Expr subst(const Expr& e, const NodeRemap& remap) {
  if (!e || remap.empty()) return e;
  if (const Expr* to = remap.find(e.get())) return *to;
  bool changed = false;
  switch (e->kind()) {
    case NodeKind::Call: {
      auto* call = e.as<CallNode>();
      Expr op = subst(call->op, remap);
      changed = !(op == call->op);
      bool args_changed = false;
      auto args = subst_list(call->args, remap, args_changed);
      if (!changed && !args_changed) return e;
      auto* n = copy_node(Ref<CallNode>(call));
      n->op = op;
      if (args_changed) n->args = std::move(args);
      return Ref<CallNode>(n);
    }
    case NodeKind::Tuple: {
      auto* t = e.as<TupleNode>();
      auto fields = subst_list(t->fields, remap, changed);
      if (!changed) return e;  // else `fields` holds the whole new list
      auto* n = copy_node(Ref<TupleNode>(t));
      n->fields = std::move(fields);
      return Ref<TupleNode>(n);
    }
    case NodeKind::TupleGetItem: {
      auto* t = e.as<TupleGetItemNode>();
      Expr tuple = subst(t->tuple, remap);
      if (tuple == t->tuple) return e;
      auto* n = copy_node(Ref<TupleGetItemNode>(t));
      n->tuple = tuple;
      return Ref<TupleGetItemNode>(n);
    }
    case NodeKind::SeqExpr: {
      auto* s = e.as<SeqExprNode>();
      std::vector<BindingBlock> blocks;
      for (const auto& blk : s->blocks) {
        std::vector<Binding> bs;
        bool bchanged = false;
        for (const auto& b : blk->bindings) {
          bs.push_back(subst_binding(b, remap));
          bchanged = bchanged || !(bs.back() == b);
        }
        blocks.push_back(bchanged ? make<BindingBlockNode>(std::move(bs), blk->is_dataflow) : blk);
        changed = changed || bchanged;
      }
      Expr body = subst(s->body, remap);
      if (!changed && body == s->body) return e;
      auto* n = copy_node(Ref<SeqExprNode>(s));
      n->blocks = std::move(blocks);
      n->body = body;
      return Ref<SeqExprNode>(n);
    }
    case NodeKind::Function: {
      auto* f = e.as<FunctionNode>();
      std::vector<Var> params;
      for (const auto& p : f->params) {
        const Expr* to = remap.find(p.get());
        params.push_back(to && to->as<VarNode>() ? to->as_ref<VarNode>() : p);
        changed = changed || !(params.back() == p);
      }
      Expr body = subst(f->body, remap);
      if (!changed && body == f->body) return e;
      auto* n = copy_node(Ref<FunctionNode>(f));
      n->params = std::move(params);
      n->body = body;
      return Ref<FunctionNode>(n);
    }
    case NodeKind::If: {
      auto* i = e.as<IfNode>();
      Expr c = subst(i->cond, remap), t = subst(i->true_branch, remap), f = subst(i->false_branch, remap);
      if (c == i->cond && t == i->true_branch && f == i->false_branch) return e;
      auto* n = copy_node(Ref<IfNode>(i));
      n->cond = c;
      n->true_branch = t;
      n->false_branch = f;
      return Ref<IfNode>(n);
    }
    default: return e;
  }
}

NodeRemap to_node_remap(const std::unordered_map<Var, Expr, RefHash, RefEq>& remap) {
  NodeRemap out(remap.size());
  for (const auto& [k, v] : remap) out.emplace(k.get(), v);
  return out;
}

Var fresh_like(const Var& v, const std::string& name) {
  if (v.as<DataflowVarNode>()) return make<DataflowVarNode>(name, v->struct_info_);
  return make<VarNode>(name, v->struct_info_);
}

void collect_defs(const Expr& e, NodeRemap& remap) {
  if (auto* s = e.as<SeqExprNode>()) {
    for (const auto& blk : s->blocks)
      for (const auto& b : blk->bindings) remap.emplace(b->var.get(), fresh_like(b->var, b->var->name_hint));
  }
}

}  // namespace detail

using namespace detail;

Expr substitute_vars(const Expr& expr, const std::unordered_map<Var, Expr, RefHash, RefEq>& remap) {
  return subst(expr, to_node_remap(remap));
}

Expr substitute_vars(const Expr& expr, const PtrMap<Expr>& remap) { return subst(expr, remap); }

Function copy_with_new_vars(const Function& func) {
  NodeRemap remap;
  for (const auto& p : func->params) remap.emplace(p.get(), fresh_like(p, p->name_hint));
  collect_defs(func->body, remap);
  Expr out = subst(Expr(func), remap);
  if (out == Expr(func)) {  // nothing to rename (no params, no bindings): still a distinct node
    return Function(copy_node(func));
  }
  return out.as_ref<FunctionNode>();
}

// ---------------------------------------------------------------------------------------------
// make_grouped_functions
// ---------------------------------------------------------------------------------------------


IRModule make_grouped_functions(IRModule mod, const ModuleGroups& groups, bool lift_constants) {
  Fusor fusor(mod, lift_constants);
  for (const auto& [name, blocks] : groups) {
    if (blocks.empty()) continue;
    GlobalVar gv = fusor.mod().get_global_var(name);
    Function func = fusor.mod().lookup(name).as_ref<FunctionNode>();
    if (!func) continue;
    Function nf = fusor.transform(func, blocks);
    if (!(nf == func)) fusor.mod().update(gv, nf);
  }
  return fusor.mod();
}

}  // namespace partita::transform
