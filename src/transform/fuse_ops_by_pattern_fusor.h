// Internal to FuseOpsByPattern / MergeCompositeFunctions: turning groups of bindings into
// functions (TVM's OperatorFusor / FunctionCreator). Shared by make_grouped_functions
// (fuse_ops_by_pattern_grouping.cc) and the deferred FuseOpsByPattern
// (fuse_ops_by_pattern_deferred.cc), so both make exactly the same functions, names and calls.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/ptr_map.h"
#include "partita/ir/structural_equal.h"
#include "partita/support/error.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform::detail {

using NodeRemap = PtrMap<Expr>;

/// `e` with variables replaced per `remap`, rebuilding only what changes (same for a binding,
/// whose variable is replaced too when `remap` maps it to a variable).
Expr subst(const Expr& e, const NodeRemap& remap);
Binding subst_binding(const Binding& b, const NodeRemap& remap);

inline void used_vars(const Expr& value, std::vector<const VarNode*>& out) {
  if (auto* v = value.as<VarNode>()) {
    out.push_back(v);
    return;
  }
  // Calls, tuples and get-items (the common case) without the generic visitor's overhead.
  if (auto* c = value.as<CallNode>()) {
    for (const auto& a : c->args) used_vars(a, out);
    if (c->op.as<VarNode>()) out.push_back(c->op.as<VarNode>());
    return;
  }
  if (auto* t = value.as<TupleNode>()) {
    for (const auto& f : t->fields) used_vars(f, out);
    return;
  }
  if (auto* g = value.as<TupleGetItemNode>()) {
    used_vars(g->tuple, out);
    return;
  }
  if (value.as<ConstantNode>() || value.as<ShapeExprNode>() || value.as<PrimValueNode>() ||
      value.as<OpNode>() || value.as<GlobalVarNode>() || value.as<StringImmNode>() ||
      value.as<DataTypeImmNode>() || value.as<ExternFuncNode>())
    return;
  post_order_visit(value, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>()) out.push_back(v);
  });
}

inline bool is_inlinable(const Expr& e) {
  if (auto* t = e.as<TupleNode>())
    return std::all_of(t->fields.begin(), t->fields.end(), [](const Expr& f) { return is_inlinable(f); });
  if (auto* p = e.as<PrimValueNode>()) return prim_vars_of(p->value).empty();
  if (auto* s = e.as<ShapeExprNode>())
    return std::all_of(s->values.begin(), s->values.end(), [](const PrimExpr& v) { return prim_vars_of(v).empty(); });
  return e.as<StringImmNode>() || e.as<DataTypeImmNode>() || e.as<GlobalVarNode>() ||
         e.as<OpNode>() || e.as<ExternFuncNode>();
}

// One group's function being made. Most groups are small composites whose function already
// exists (found by fingerprint), so parameters and the name are only made when it is built, and
// the lookup tables are plain scans until a group grows large.
struct Creator {
  static constexpr size_t kScan = 16;
  std::vector<int> bindings;
  std::vector<Expr> arguments;
  std::vector<int> const_param_no;  // per argument: the N of "param_N", -1 for variables
  PtrMap<char> argument_set;  // filled once there are more than kScan arguments
  std::vector<const VarNode*> outputs;
  PtrMap<int> output_at;  // filled once there are more than kScan outputs
  int n_param_for_const = 0;
  Function func;
  bool has_outputs = false;
  std::vector<int64_t> fingerprint;  // empty: none (the function is built and compared)

  /// Empty again, keeping the vectors' storage (one Creator can serve group after group).
  void reset() {
    bindings.clear();
    arguments.clear();
    const_param_no.clear();
    if (!argument_set.empty()) argument_set = PtrMap<char>();
    outputs.clear();
    if (!output_at.empty()) output_at = PtrMap<int>();
    n_param_for_const = 0;
    func = Function();
    has_outputs = false;
    fingerprint.clear();
  }

  int output_index(const VarNode* v) const {
    if (outputs.size() <= kScan) {
      for (size_t k = 0; k < outputs.size(); ++k)
        if (outputs[k] == v) return int(k);
      return -1;
    }
    const int* i = output_at.find(v);
    return i ? *i : -1;
  }
  int append_output(const VarNode* v) {
    int i = output_index(v);
    if (i >= 0) return i;
    outputs.push_back(v);
    if (outputs.size() == kScan + 1) {
      output_at.reserve(2 * outputs.size());
      for (size_t k = 0; k < outputs.size(); ++k) output_at.emplace(outputs[k], int(k));
    } else if (outputs.size() > kScan + 1) {
      output_at.emplace(v, int(outputs.size() - 1));
    }
    return int(outputs.size() - 1);
  }
  bool is_argument(const Object* e) const {
    if (arguments.size() <= kScan) {
      for (const auto& a : arguments)
        if (a.get() == e) return true;
      return false;
    }
    return argument_set.contains(e);
  }
  // `defined_here`: `e` is a variable bound earlier in this group.
  void check_def(const Expr& e, bool defined_here, bool lift_constants) {
    if (is_argument(e.get())) return;
    auto* var = e.as<VarNode>();
    if (var && defined_here) return;
    if (!lift_constants && e.as<ConstantNode>()) return;
    // The counter advances for every non-variable candidate, inlinable or not (names depend on it).
    int no = var ? -1 : n_param_for_const++;
    if (is_inlinable(e)) return;
    arguments.push_back(e);
    const_param_no.push_back(no);
    if (arguments.size() == kScan + 1) {
      argument_set.reserve(2 * arguments.size());
      for (const auto& a : arguments) argument_set.emplace(a.get(), 1);
    } else if (arguments.size() > kScan + 1) {
      argument_set.emplace(e.get(), 1);
    }
  }
  std::vector<Var> make_params() const {
    std::vector<Var> params;
    params.reserve(arguments.size());
    for (size_t k = 0; k < arguments.size(); ++k) {
      const Expr& a = arguments[k];
      std::string pname = const_param_no[k] < 0 ? a.as<VarNode>()->name_hint : "param_" + std::to_string(const_param_no[k]);
      params.push_back(make<VarNode>(std::move(pname), a->struct_info_));
    }
    return params;
  }
};

// c.name += "_" + call_name_part(call), without temporaries (this runs once per binding).
/// The `count`-th name NameSupply gives for `hint` when nothing else it names can collide with
/// them ("lv", "lv1", "lv2", ...): the variables of a pass, without a table entry per name.
inline std::string numbered(const char* hint, int& count) {
  std::string name(hint);
  if (count > 0) name += std::to_string(count);
  ++count;
  return name;
}

/// Operands as they are (bindings already up to date).
struct SameOperand {
  const Expr& operator()(const Expr& e) const { return e; }
};

inline void append_name_part(std::string& name, const CallNode& call) {
  if (auto* op = call.op.as<OpNode>()) {
    if (op->name.empty()) return;
    name += '_';
    name += op->name;
  } else if (auto* gv = call.op.as<GlobalVarNode>()) {
    const std::string& n = gv->name_hint;
    size_t skip = n.rfind("fused_", 0) == 0 ? 6 : 0;
    if (n.size() == skip) return;
    name += '_';
    name.append(n, skip, std::string::npos);
  }
}

// Interned representatives by hash, for the exact keys of struct infos and call attributes:
// std::unordered_map divides by a prime on every lookup, and fingerprints look up several per
// group. Representatives with equal hashes are chained in insertion order.
template <class Rep>
class RepTable {
 public:
  // The id of the first representative with hash `h` that `same(rep)` accepts, else -1.
  template <class Same>
  int find(size_t h, Same&& same) const {
    for (int e = head(h); e >= 0; e = items_[e].next)
      if (same(items_[e].rep)) return items_[e].id;
    return -1;
  }
  void add(size_t h, Rep rep, int id) {
    int e = head(h);
    int fresh = int(items_.size());
    items_.push_back({h, rep, id, -1});
    if (e >= 0) {
      while (items_[e].next >= 0) e = items_[e].next;
      items_[e].next = fresh;
      return;
    }
    if ((heads_ + 1) * 2 > table_.size()) {
      std::vector<int> old(std::max<size_t>(16, 2 * table_.size()), -1);
      old.swap(table_);
      for (int x : old)
        if (x >= 0) table_[probe(items_[x].hash)] = x;
    }
    table_[probe(h)] = fresh;
    ++heads_;
  }

 private:
  struct Item {
    size_t hash;
    Rep rep;
    int id, next;
  };
  static size_t mix(size_t h) {
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
  }
  // The first free slot for `h` (call only to place a new head).
  size_t probe(size_t h) const {
    size_t mask = table_.size() - 1;
    size_t i = mix(h) & mask;
    while (table_[i] >= 0) i = (i + 1) & mask;
    return i;
  }
  int head(size_t h) const {
    if (table_.empty()) return -1;
    size_t mask = table_.size() - 1;
    for (size_t i = mix(h) & mask;; i = (i + 1) & mask) {
      int e = table_[i];
      if (e < 0 || items_[e].hash == h) return e;
    }
  }
  std::vector<Item> items_;
  std::vector<int> table_;  // chain heads, -1 when free; the size is a power of two
  size_t heads_ = 0;
};

/// Scratch of order_units, kept between calls so that it allocates once.
struct UnitOrderScratch {
  std::vector<char> state;  // per unit: 0 new, 1 open, 2 done
  std::vector<std::pair<int, int>> stack;  // (unit, next dependency to visit)
};

/// Puts the units of a block (groups and ungrouped bindings; position i of the block belongs to
/// unit(i), of those numbered below `offsets.size() - 1`) in an order where each follows the
/// units it depends on (`edges[offsets[u] .. offsets[u + 1])` for unit u), visiting them in order
/// of first appearance as TVM's TopoSortByGroupDep does. Iterative, so long chains do not
/// overflow the stack. A cycle is an internal error (grouping never makes one).
template <class Unit>
void order_units(const std::vector<int>& offsets, const std::vector<int>& edges, int positions,
                 Unit&& unit, std::vector<int>& order, UnitOrderScratch& scratch) {
  int units = int(offsets.size()) - 1;
  order.clear();
  order.reserve(units);
  std::vector<char>& state = scratch.state;
  state.assign(units, 0);
  auto& stack = scratch.stack;
  stack.clear();
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

class Fusor {
 public:
  Fusor(IRModule mod, bool lift_constants) : mod_(std::move(mod)), lift_constants_(lift_constants) {}

  Function transform(const Function& func, const std::unordered_map<const BindingBlockNode*, BlockGroups>& groups) {
    auto* seq = func->body.as<SeqExprNode>();
    if (!seq) return func;
    NodeRemap remap;
    std::vector<BindingBlock> blocks;
    bool changed = false;
    for (const auto& blk : seq->blocks) {
      auto it = groups.find(blk.get());
      BindingBlock nb;
      if (blk->is_dataflow && it != groups.end() && !it->second.attrs.empty()) {
        nb = fuse_block(blk, it->second, remap);
      } else {
        std::vector<Binding> bs;
        bool bchanged = false;
        for (const auto& b : blk->bindings) {
          bs.push_back(subst_binding(b, remap));
          bchanged = bchanged || !(bs.back() == b);
        }
        nb = bchanged ? make<BindingBlockNode>(std::move(bs), blk->is_dataflow) : blk;
      }
      changed = changed || !(nb == blk);
      blocks.push_back(nb);
    }
    if (!changed) return func;
    auto* ns = copy_node(Ref<SeqExprNode>(seq));
    ns->blocks = std::move(blocks);
    ns->body = subst(seq->body, remap);
    auto* nf = copy_node(func);
    nf->body = Ref<SeqExprNode>(ns);
    return Function(nf);
  }

  IRModule& mod() { return mod_; }

  // ---- one group at a time (fuse_block, and the deferred FuseOpsByPattern) ----

  // Bindings are appended in block order, so a variable is bound earlier in the group of
  // binding `index` iff its binding is in that group and comes before `index`.
  bool defined_in_group(const Expr& e, const PtrMap<int>& var_index, const std::vector<int>& group_of,
                        int index) const {
    auto* v = e.as<VarNode>();
    if (!v) return false;
    const int* at = var_index.find(v);
    return at && *at < index && group_of[*at] == group_of[index];
  }

  /// Adds binding `b` (number `index`) to group `c`; a group's bindings are added in block
  /// order. `defined_here(e)`: `e` is a variable bound earlier in the same group.
  /// `operand(e)` gives what operand `e` of `b` stands for (the variable an absorbed one was
  /// replaced by): the bindings need not be rebuilt to be described.
  template <class DefinedHere, class Operand = SameOperand>
  void append_binding(Creator& c, const Binding& b, int index, DefinedHere&& defined_here,
                      Operand&& operand = Operand()) {
    auto check = [&](const Expr& e0) {
      const Expr& e = operand(e0);
      c.check_def(e, defined_here(e), lift_constants_);
    };
    if (auto* vb = b.as<VarBindingNode>()) {
      if (auto* call = vb->value.as<CallNode>()) {
        for (const auto& a : call->args) {
          // A tuple argument with a field bound earlier in the group cannot become a parameter
          // (that field exists only inside the function): its fields are checked one by one.
          auto* tup = operand(a).template as<TupleNode>();
          bool inner = false;
          for (size_t k = 0; tup && k < tup->fields.size() && !inner; ++k)
            inner = defined_here(operand(tup->fields[k]));
          if (!inner) {
            check(a);
            continue;
          }
          for (const auto& f : tup->fields) check(f);
        }
      } else if (auto* tgi = vb->value.as<TupleGetItemNode>()) {
        check(tgi->tuple);
      } else {
        std::vector<const VarNode*> vs;
        used_vars(vb->value, vs);
        for (auto* v : vs) check(Var(v));
      }
    } else {
      std::vector<const VarNode*> vs;
      used_vars(binding_value(*b), vs);
      for (auto* v : vs) check(Var(v));
    }
    if (!b->var.as<DataflowVarNode>()) c.append_output(b->var.get());
    c.bindings.push_back(index);
  }

 private:
  // A cheap key for de-duplication, equal for structurally equal functions: the struct info of
  // the parameters and result, the attributes and the called operators. Hashing whole functions
  // dominated partitioning; candidates with equal keys are still compared structurally.
  static size_t dedup_key(const Function& func) {
    size_t h = structural_hash(func->ret_struct_info) * 31 + func->params.size();
    for (const auto& p : func->params) h = h * 1000003 ^ structural_hash(p->struct_info_);
    for (const auto& [k, v] : func->attrs) h = h * 31 ^ std::hash<std::string>()(k);
    if (auto* seq = func->body.as<SeqExprNode>()) {
      for (const auto& blk : seq->blocks) {
        h = h * 31 + blk->bindings.size();
        for (const auto& b : blk->bindings) {
          auto* vb = b.as<VarBindingNode>();
          auto* call = vb ? vb->value.as<CallNode>() : nullptr;
          h = h * 31 ^ size_t(vb && !call ? vb->value->kind() : b->kind());
          if (!call) continue;
          h = h * 31 + call->args.size();
          if (auto* op = call->op.as<OpNode>()) h = h * 31 ^ std::hash<std::string>()(op->name);
          if (auto* gv = call->op.as<GlobalVarNode>()) h = h * 31 ^ std::hash<std::string>()(gv->name_hint);
        }
      }
    }
    return h;
  }

  GlobalVar add_function(const Function& func, const std::string& hint) {
    if (!dedup_seeded_) {
      dedup_seeded_ = true;
      for (const auto& [name, entry] : mod_->functions) {
        auto* f = entry.second.as<FunctionNode>();
        if (f && f->attrs.count("Primitive")) dedup_.emplace(dedup_key(Function(f)), entry.first);
      }
    }
    size_t h = dedup_key(func);
    auto range = dedup_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it)
      if (mod_.contains(it->second->name_hint) && structural_equal(mod_.lookup(it->second), func))
        return it->second;
    std::string name = names_.fresh(hint);
    while (mod_.contains(name)) name = names_.fresh(hint);
    GlobalVar gv = make<GlobalVarNode>(name);
    gv->struct_info_ = func->struct_info_;
    mod_.add(gv, func);
    dedup_.emplace(h, gv);
    return gv;
  }

  // "fused" + "_" + the operator (or function) name of each call of the group.
  static std::string group_name(const Creator& c, const std::vector<Binding>& bindings) {
    std::string name = "fused";
    for (int i : c.bindings) {
      auto* vb = bindings[i].as<VarBindingNode>();
      if (auto* call = vb ? vb->value.as<CallNode>() : nullptr) append_name_part(name, *call);
    }
    return name;
  }

  // Both tensor struct infos have constant (IntImm) shapes or none.
  static bool same_constant_tensor_sinfo(const TensorStructInfoNode& a, const TensorStructInfoNode& b) {
    if (!(a.dtype == b.dtype) || a.ndim != b.ndim || a.shape.has_value() != b.shape.has_value()) return false;
    if (!a.shape) return true;
    if (a.shape->size() != b.shape->size()) return false;
    for (size_t k = 0; k < a.shape->size(); ++k) {
      auto* x = (*a.shape)[k].as<IntImmNode>();
      auto* y = (*b.shape)[k].as<IntImmNode>();
      if (x->value != y->value || !(x->dtype == y->dtype)) return false;
    }
    return true;
  }

  // Hash and equality of call attributes with structural_equal's rules (doubles: NaN equals NaN).
  static size_t attr_value_hash(const AttrValue& v) {
    size_t h = v.index() * 0x9e3779b97f4a7c15ULL;
    if (auto* b = std::get_if<bool>(&v)) return h ^ size_t(*b);
    if (auto* i = std::get_if<int64_t>(&v)) return h ^ std::hash<int64_t>()(*i);
    if (auto* d = std::get_if<double>(&v)) return h ^ (*d == 0 || std::isnan(*d) ? 0 : std::hash<double>()(*d));
    if (auto* s = std::get_if<std::string>(&v)) return h ^ std::hash<std::string>()(*s);
    if (auto* t = std::get_if<DataType>(&v)) return h ^ (size_t(t->code()) * 131 + size_t(t->bits()) * 17 + size_t(t->lanes()));
    if (auto* xs = std::get_if<std::vector<int64_t>>(&v))
      for (int64_t x : *xs) h = (h ^ size_t(x)) * 0x100000001b3ULL;
    return h;
  }
  // The values only: hashing every key and type key was most of the cost, and equal attributes
  // still hash equal.
  static size_t attrs_hash(const AttrsNode& a) {
    size_t h = a.values.size();
    for (const auto& kv : a.values) h = (h * 1000003) ^ attr_value_hash(kv.second);
    return h;
  }
  static bool same_attr_value(const AttrValue& a, const AttrValue& b) {
    if (a.index() != b.index()) return false;
    if (auto* x = std::get_if<double>(&a)) {
      double y = std::get<double>(b);
      return *x == y || (std::isnan(*x) && std::isnan(y));
    }
    return a == b;
  }
  static bool same_attrs(const AttrsNode& a, const AttrsNode& b) {
    if (a.type_key != b.type_key || a.values.size() != b.values.size()) return false;
    for (size_t k = 0; k < a.values.size(); ++k)
      if (a.values[k].first != b.values[k].first || !same_attr_value(a.values[k].second, b.values[k].second))
        return false;
    return true;
  }

  // An id per structurally distinct object (free variables compared by identity), cached by
  // address; the interned objects are kept alive so addresses are never reused.
  int64_t intern(const ObjectRef& x) {
    if (!x) return -1;
    // Tensor struct info with a constant shape (the common case) by an exact key: no generic
    // structural hashing.
    if (auto* t = x.as<TensorStructInfoNode>()) {
      // Many calls share a struct info object (a group function's result, a parameter's): a
      // small cache by address skips reading the shape. Entries keep their object alive, so an
      // address cannot come back as another object while cached.
      auto& cached = sinfo_cache_[(reinterpret_cast<uintptr_t>(t) >> 4) & (kSinfoCache - 1)];
      if (cached.first.get() == t) return cached.second;
      bool exact = true;
      size_t h = size_t(t->dtype.code()) * 131 + size_t(t->dtype.bits()) * 17 + size_t(t->dtype.lanes()) +
                 size_t(t->ndim + 1) * 1000003 + (t->shape ? 7 : 0);
      if (t->shape) {
        for (const auto& d : *t->shape) {
          auto* imm = d.as<IntImmNode>();
          if (!imm) {
            exact = false;
            break;
          }
          h = (h ^ size_t(imm->value) ^ (size_t(imm->dtype.bits()) << 56)) * 0x100000001b3ULL;
        }
      }
      if (exact) {
        int id = tensor_sinfo_ids_.find(h, [&](const TensorStructInfoNode* rep) { return same_constant_tensor_sinfo(*rep, *t); });
        // Only representatives are kept alive (nearly every binding has its own object).
        if (id < 0) {
          id = int(intern_keep_.size());
          tensor_sinfo_ids_.add(h, t, id);
          intern_keep_.push_back(x);
        }
        cached = {x, id};
        return id;
      }
    }
    // Call attributes likewise: every call has its own attrs object (a conv2d's padding,
    // layouts, ...), and structurally hashing each one was the larger part of fingerprinting.
    if (auto* a = x.as<AttrsNode>()) {
      size_t h = attrs_hash(*a);
      int id = attrs_ids_.find(h, [&](const AttrsNode* rep) { return same_attrs(*rep, *a); });
      if (id >= 0) return id;
      id = int(intern_keep_.size());
      attrs_ids_.add(h, a, id);
      intern_keep_.push_back(x);
      return id;
    }
    if (const int* id = intern_cache_.find(x.get())) return *id;
    auto& bucket = intern_buckets_[structural_hash(x)];
    int id = -1;
    for (const auto& [rep, rid] : bucket)
      if (structural_equal(rep, x, /*map_free_vars=*/false)) {
        id = rid;
        break;
      }
    if (id < 0) {
      id = int(intern_keep_.size());
      bucket.emplace_back(x, id);
    }
    intern_keep_.push_back(x);
    intern_cache_.emplace(x.get(), id);
    return id;
  }

  // A description of the function `create_function` would build, equal only for structurally
  // equal functions: lets a group reuse an earlier identical function without building it.
  // Empty when the group holds something it does not describe (the function is then built and
  // compared as before).
  // Fills `fp`; false (and `fp` left partly filled) when there is no fingerprint.
  template <class Operand>
  bool fingerprint_of(const Creator& c, const std::vector<Binding>& bindings, const DictAttrs& attrs,
                      std::vector<int64_t>& fp, Operand&& operand) {
    fp.clear();
    int64_t attrs_id = -1;
    for (size_t k = 0; k < fattrs_seen_.size(); ++k)
      if (fattrs_seen_[k] == attrs) attrs_id = int64_t(k);
    if (attrs_id < 0) {
      attrs_id = int64_t(fattrs_seen_.size());
      fattrs_seen_.push_back(attrs);
    }
    // Composites are small: positions are found by scanning (no table to allocate).
    if (c.bindings.size() > 64 || c.arguments.size() > 64) return false;
    // Written through a pointer into storage sized for the longest description (this runs once
    // per group; growing the vector element by element cost more than the rest).
    size_t bound = 4 + c.arguments.size() + c.outputs.size();
    for (int i : c.bindings) {
      auto* vb = bindings[i].as<VarBindingNode>();
      auto* call = vb ? vb->value.as<CallNode>() : nullptr;
      bound += 12 + (call ? call->sinfo_args.size() + 3 * call->args.size() : 0);
    }
    fp.resize(bound);
    int64_t* w = fp.data();
    auto put = [&w](int64_t x) { *w++ = x; };
    put(attrs_id);
    put(int64_t(c.arguments.size()));
    std::vector<const Object*>& locals = locals_;
    locals.clear();
    auto index_in = [](const auto& xs, const Object* p) -> int {
      for (size_t k = 0; k < xs.size(); ++k)
        if (xs[k].get() == p) return int(k);
      return -1;
    };
    auto local_index = [&](const Object* p) -> int {
      for (size_t k = 0; k < locals.size(); ++k)
        if (locals[k] == p) return int(k);
      return -1;
    };
    for (size_t k = 0; k < c.arguments.size(); ++k) put(intern(c.arguments[k]->struct_info_));
    put(int64_t(c.bindings.size()));
    enum : int64_t { kParam = -2, kLocal = -3, kLeaf = -4, kCall = -5, kGetItem = -6 };
    auto arg_token = [&](const Expr& a0) -> bool {
      const Expr& a = operand(a0);  // a temporary lives as long as the reference
      if (int k = index_in(c.arguments, a.get()); k >= 0) {
        put(kParam);
        put(k);
        return true;
      }
      if (a.as<VarNode>()) {
        int l = local_index(a.get());
        if (l < 0) return false;
        put(kLocal);
        put(l);
        return true;
      }
      if (a.as<ConstantNode>() || a.as<ShapeExprNode>() || a.as<PrimValueNode>() || a.as<OpNode>() ||
          a.as<GlobalVarNode>() || a.as<StringImmNode>() || a.as<DataTypeImmNode>() ||
          a.as<ExternFuncNode>()) {
        put(kLeaf);
        put(int64_t(a->kind()));
        put(intern(a));
        return true;
      }
      return false;
    };
    for (size_t li = 0; li < c.bindings.size(); ++li) {
      const Binding& b = bindings[c.bindings[li]];
      auto* vb = b.as<VarBindingNode>();
      if (!vb) return false;
      put(c.output_index(b->var.get()));
      put(int64_t(b->var->kind()));
      put(intern(b->var->struct_info_));
      if (auto* call = vb->value.as<CallNode>()) {
        if (!call->op.as<OpNode>() && !call->op.as<GlobalVarNode>()) return false;
        put(kCall);
        put(intern(call->op));
        put(intern(call->attrs));
        put(int64_t(call->sinfo_args.size()));
        for (const auto& si : call->sinfo_args) put(intern(si));
        put(int64_t(call->args.size()));
        for (const auto& a : call->args)
          if (!arg_token(a)) return false;
      } else if (auto* g = vb->value.as<TupleGetItemNode>()) {
        put(kGetItem);
        put(g->index);
        if (!arg_token(g->tuple)) return false;
      } else {
        return false;
      }
      locals.push_back(b->var.get());
    }
    put(int64_t(c.outputs.size()));
    for (auto* o : c.outputs) {
      int l = local_index(o);
      if (l < 0) return false;
      put(l);
    }
    fp.resize(size_t(w - fp.data()));
    return true;
  }

  struct FingerprintHash {
    size_t operator()(const std::vector<int64_t>& v) const {
      size_t h = v.size();
      for (int64_t x : v) h = (h ^ size_t(x)) * 0x100000001b3ULL;
      return h;
    }
  };

 public:
  /// Once every binding and output of `c` is known: notes whether the group is used at all and
  /// takes its fingerprint.
  template <class Operand = SameOperand>
  void create_function(Creator& c, const std::vector<Binding>& bindings, const DictAttrs& attrs,
                       Operand&& operand = Operand()) {
    if (c.outputs.empty()) return;  // dead code: nothing of the group is used
    c.has_outputs = true;
    // Composites repeat (one per match of a pattern), and so do merged groups of repeated
    // layers: a known fingerprint skips building and comparing the function.
    if (!fingerprint_of(c, bindings, attrs, c.fingerprint, operand)) c.fingerprint.clear();
    // Built (or found already made) when the group is emitted, in order.
  }

  void build_function(Creator& c, const std::vector<Binding>& bindings, const DictAttrs& attrs) {
    NameSupply local;
    NodeRemap remap(c.arguments.size() + c.outputs.size());
    std::vector<Var> params = c.make_params();
    for (size_t k = 0; k < c.arguments.size(); ++k) remap.emplace(c.arguments[k].get(), params[k]);
    std::vector<Expr> outputs(c.outputs.size());
    std::vector<Binding> out;
    for (int i : c.bindings) {
      const Binding& b = bindings[i];
      int idx = c.output_index(b->var.get());
      if (idx >= 0) {
        Var nv = make<VarNode>(local.fresh("gv"), b->var->struct_info_);
        Expr value = subst(binding_value(*b), remap);
        if (auto* mc = b.as<MatchCastNode>()) out.push_back(make<MatchCastNode>(nv, value, mc->struct_info));
        else out.push_back(make<VarBindingNode>(nv, value));
        remap[b->var.get()] = nv;
        outputs[idx] = nv;
      } else {
        out.push_back(subst_binding(b, remap));
      }
    }
    Expr body;
    if (outputs.size() == 1) {
      body = outputs[0];
    } else {
      std::vector<StructInfo> fs;
      for (const auto& o : outputs) fs.push_back(o->struct_info_);
      body = make<TupleNode>(outputs);
      body->struct_info_ = tuple_sinfo(fs);
    }
    Expr seq = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(std::move(out), true)}, body);
    seq->struct_info_ = body->struct_info_;
    DictAttrs fattrs = attrs;
    fattrs["Primitive"] = int64_t(1);
    Function f = make<FunctionNode>(std::move(params), seq, body->struct_info_, true, fattrs);
    f->struct_info_ = func_struct_info_of(*f);
    c.func = f;
  }

  // True when `s` mentions no symbolic variable: a call's result is then the callee's declared
  // result whatever the (already matching) arguments are.
  static bool is_static_sinfo(const StructInfo& s) {
    if (!s) return false;
    if (auto* t = s.as<TensorStructInfoNode>()) {
      if (!t->shape) return true;
      for (const auto& d : *t->shape)
        if (!d.as<IntImmNode>()) return false;
      return true;
    }
    if (auto* u = s.as<TupleStructInfoNode>()) {
      for (const auto& f : u->fields)
        if (!is_static_sinfo(f)) return false;
      return true;
    }
    return s.as<ObjectStructInfoNode>() != nullptr;
  }

  // The struct info of a call of the group function `gv` (made from `c`). The arguments carry
  // exactly the parameters' struct info (parameters are made from them, shared functions are
  // structurally equal), so for static signatures the derivation is done once per function.
  StructInfo call_ret_sinfo(const GlobalVar& gv, const Creator& c, const CallNode& call) {
    if (const StructInfo* hit = ret_sinfo_cache_.find(gv.get())) return *hit;
    StructInfo fsinfo = c.func ? c.func->struct_info_ : mod_.lookup(gv)->struct_info_;
    auto finfo = fsinfo.as_ref<FuncStructInfoNode>();
    StructInfo ret = derive_call_ret_struct_info(finfo, call);
    bool cacheable = finfo->params.has_value() && is_static_sinfo(finfo->ret);
    if (cacheable)
      for (const auto& p : *finfo->params) cacheable = cacheable && is_static_sinfo(p);
    if (cacheable) ret_sinfo_cache_.emplace(gv.get(), ret);
    return ret;
  }

  /// The variable bound to a group's call (or to one of its outputs): "lv", "lv1", ... when
  /// `like` is a DataflowVar, else "gv", "gv1", ... (one name supply per Fusor).
  Var emit_var(const Var& like, const Expr& value) {
    Var v = like.as<DataflowVarNode>() ? Var(make<DataflowVarNode>(numbered("lv", n_lv_), value->struct_info_))
                                        : make<VarNode>(numbered("gv", n_gv_), value->struct_info_);
    return v;
  }

  /// The function an earlier group with the fingerprint of `c` became, else null.
  GlobalVar known_function(const Creator& c) const {
    if (c.fingerprint.empty()) return GlobalVar();
    auto it = by_fingerprint_.find(c.fingerprint);
    return it == by_fingerprint_.end() ? GlobalVar() : it->second;
  }

  /// The function group `c` calls: the one an earlier group with the same fingerprint became,
  /// else built and added (or found structurally equal to one already in the module).
  GlobalVar group_function(Creator& c, const std::vector<Binding>& bindings, const DictAttrs& attrs) {
    GlobalVar gv;
    if (!c.fingerprint.empty()) {
      auto it = by_fingerprint_.find(c.fingerprint);
      if (it != by_fingerprint_.end()) gv = it->second;
    }
    if (!gv.defined()) {
      if (!c.func) build_function(c, bindings, attrs);
      gv = add_function(c.func, group_name(c, bindings));
      if (!c.fingerprint.empty()) by_fingerprint_.emplace(c.fingerprint, gv);
    }
    return gv;
  }

 private:

  BindingBlock fuse_block(const BindingBlock& blk, const BlockGroups& bg, NodeRemap& remap) {
    const auto& bindings = blk->bindings;
    int n = int(bindings.size());
    int G = int(bg.attrs.size());
    PARTITA_ICHECK(int(bg.group_of.size()) == n);
    PtrMap<int> var_index(n);
    for (int i = 0; i < n; ++i) var_index[bindings[i]->var.get()] = i;
    // The members of each group, in block order (CSR).
    std::vector<int> mem_off(G + 1, 0), members;
    for (int i = 0; i < n; ++i)
      if (bg.group_of[i] >= 0) ++mem_off[bg.group_of[i] + 1];
    for (int g = 0; g < G; ++g) mem_off[g + 1] += mem_off[g];
    members.resize(mem_off[G]);
    {
      std::vector<int> fill(mem_off.begin(), mem_off.end() - 1);
      for (int i = 0; i < n; ++i)
        if (bg.group_of[i] >= 0) members[fill[bg.group_of[i]]++] = i;
    }

    auto unit = [&](int i) { return bg.group_of[i] >= 0 ? bg.group_of[i] : G + i; };
    // Dependencies between units as (unit, producer) pairs, bucketed into CSR form below, and
    // the uses that make a member's variable an output of its group, in the order met.
    std::vector<std::pair<int, int>> dep_pairs;
    dep_pairs.reserve(2 * n);
    std::vector<std::pair<int, const VarNode*>> uses;  // (group, variable used outside it)
    std::vector<const VarNode*> vs;
    for (int i = 0; i < n; ++i) {
      int cur = unit(i);
      vs.clear();
      used_vars(binding_value(*bindings[i]), vs);
      int last = -1;
      for (auto* v : vs) {
        const int* at = var_index.find(v);
        if (!at || *at >= i) continue;
        int j = *at, prod = unit(j);
        if (prod == cur) continue;
        if (prod != last) dep_pairs.emplace_back(cur, prod);
        last = prod;
        if (bg.group_of[j] >= 0) uses.emplace_back(bg.group_of[j], v);
      }
    }
    std::vector<int> use_off(G + 1, 0);
    std::vector<const VarNode*> use_vars(uses.size());
    for (const auto& [g, v] : uses) ++use_off[g + 1];
    for (int g = 0; g < G; ++g) use_off[g + 1] += use_off[g];
    {
      std::vector<int> fill(use_off.begin(), use_off.end() - 1);
      for (const auto& [g, v] : uses) use_vars[fill[g]++] = v;
    }
    std::vector<int> dep_off(G + n + 1, 0), dep_edges(dep_pairs.size());
    for (const auto& [u, p] : dep_pairs) ++dep_off[u + 1];
    for (int u = 0; u < G + n; ++u) dep_off[u + 1] += dep_off[u];
    {
      std::vector<int> fill(dep_off.begin(), dep_off.end() - 1);
      for (const auto& [u, p] : dep_pairs) dep_edges[fill[u]++] = p;
    }

    std::vector<int> order;
    order_units(dep_off, dep_edges, n, unit, order, topo_scratch_);

    // Emission. One Creator serves every group, described when it is emitted: its bindings in
    // block order (non-DataflowVar ones are outputs), then the outputs the uses found.
    std::vector<Binding> out;
    out.reserve(n);
    Creator& c = creator_;
    for (int u : order) {
      if (u >= G) {
        out.push_back(subst_binding(bindings[u - G], remap));
        continue;
      }
      c.reset();
      for (int m = mem_off[u]; m < mem_off[u + 1]; ++m) {
        int i = members[m];
        append_binding(c, bindings[i], i, [&](const Expr& e) { return defined_in_group(e, var_index, bg.group_of, i); });
      }
      for (int k = use_off[u]; k < use_off[u + 1]; ++k) c.append_output(use_vars[k]);
      create_function(c, bindings, bg.attrs[u]);
      if (!c.has_outputs) continue;
      GlobalVar gv = group_function(c, bindings, bg.attrs[u]);
      std::vector<Expr> args;
      args.reserve(c.arguments.size());
      for (const auto& a : c.arguments) args.push_back(subst(a, remap));
      Call call = make<CallNode>(gv, std::move(args));
      call->struct_info_ = call_ret_sinfo(gv, c, *call);
      const Var& last = bindings[c.bindings.back()]->var;
      Var nv = emit_var(last, call);
      out.push_back(make<VarBindingNode>(nv, call));
      if (c.outputs.size() == 1) {
        remap[c.outputs[0]] = nv;
        continue;
      }
      auto* tinfo = call->struct_info_.as<TupleStructInfoNode>();
      for (int i : c.bindings) {
        int idx = c.output_index(bindings[i]->var.get());
        if (idx < 0) continue;
        Expr item = make<TupleGetItemNode>(nv, idx);
        item->struct_info_ = tinfo ? tinfo->fields[idx] : bindings[i]->var->struct_info_;
        Var iv = emit_var(bindings[i]->var, item);
        out.push_back(make<VarBindingNode>(iv, item));
        remap[bindings[i]->var.get()] = iv;
      }
    }
    return make<BindingBlockNode>(std::move(out), true);
  }

  IRModule mod_;
  bool lift_constants_;
  NameSupply names_;  // function names (all start with "fused")
  int n_lv_ = 0, n_gv_ = 0;
  bool dedup_seeded_ = false;
  std::unordered_multimap<size_t, GlobalVar> dedup_;
  // Fingerprint -> the function a group with that fingerprint became (added or found equal).
  std::unordered_map<std::vector<int64_t>, GlobalVar, FingerprintHash> by_fingerprint_;
  PtrMap<int> intern_cache_;
  PtrMap<StructInfo> ret_sinfo_cache_;  // keyed by GlobalVar node (kept alive by mod_)
  std::unordered_map<size_t, std::vector<std::pair<ObjectRef, int>>> intern_buckets_;
  std::vector<ObjectRef> intern_keep_;
  RepTable<const TensorStructInfoNode*> tensor_sinfo_ids_;
  RepTable<const AttrsNode*> attrs_ids_;
  static constexpr size_t kSinfoCache = 256;
  std::vector<std::pair<ObjectRef, int>> sinfo_cache_ = std::vector<std::pair<ObjectRef, int>>(kSinfoCache);
  std::vector<DictAttrs> fattrs_seen_;
  std::vector<const Object*> locals_;  // fingerprint_of's scratch
  Creator creator_;                      // fuse_block's, reset for each group
  UnitOrderScratch topo_scratch_;        // fuse_block's
};

}  // namespace partita::transform::detail
