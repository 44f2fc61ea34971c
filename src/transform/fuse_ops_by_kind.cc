// FuseOpsByKind (see fuse_ops_by_kind.h): greedy grouping of operator calls by fusion kind under
// the invariants of a one-kernel group, then MakeGroupedFunctions.
#include "partita/transform/fuse_ops_by_kind.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "grouping.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/substitute.h"
#include "partita/ir/structural_equal.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform {

using op::FusionKind;
using detail::BlockGroups;
using detail::GroupGraph;

namespace {

std::map<std::string, KindFusion>& kind_fusions() {
  static std::map<std::string, KindFusion> table;
  return table;
}

// Backends register from static initializers, users at any time while other threads build.
std::mutex& kind_fusions_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void register_kind_fusion(const std::string& codegen, KindFusion fusion) {
  std::lock_guard lock(kind_fusions_mutex());
  kind_fusions()[codegen] = std::move(fusion);
}

std::optional<KindFusion> find_kind_fusion(const std::string& codegen) {
  std::lock_guard lock(kind_fusions_mutex());
  auto it = kind_fusions().find(codegen);
  if (it == kind_fusions().end()) return std::nullopt;
  return it->second;
}

FusionKind fusion_kind_of(const CallNode& call) {
  const op::OpDef* def = op::callee_op_def(call);
  if (!def || def->fusion_kind == FusionKind::Unset) return FusionKind::Opaque;
  return def->fusion_kind;
}

bool is_view_op(const std::string& op_name) {
  const op::OpDef* def = op::find_op_def(op_name);
  return def && def->view == op::ViewKind::Always;
}

namespace {

bool is_anchor_kind(FusionKind k) { return k == FusionKind::CommReduce || k == FusionKind::OutEWiseFusable; }

const TensorStructInfoNode* tensor_info(const Expr& e) {
  return e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
}

bool same_shape(const TensorStructInfoNode* a, const TensorStructInfoNode* b) {
  if (!a || !b || !a->shape || !b->shape || a->shape->size() != b->shape->size()) return false;
  for (size_t k = 0; k < a->shape->size(); ++k)
    if (!prove_equal((*a->shape)[k], (*b->shape)[k])) return false;
  return true;
}

// One binding of a dataflow block as the grouping sees it.
struct Node {
  bool fusible = false;
  bool is_tuple_op = false;  // a call returning a tuple: only its TupleGetItem bindings are values
  bool is_field = false;     // a TupleGetItem of a fusible tuple op of this block
  bool is_view = false;
  FusionKind kind = FusionKind::Opaque;
  const TensorStructInfoNode* sinfo = nullptr;
  std::vector<int> operands;  // in-block bindings it reads (fields: the tuple op's operands)
  std::vector<int> uses;      // in-block bindings that read it
  bool external = false;      // read after the block (an output variable of the dataflow block)
  int tuple_op = -1;          // fields: the binding of the tuple op
  std::vector<const VarNode*> reads;  // every variable its value reads
};

// The invariants of fuse_ops_by_kind.h, checked on a candidate group.
class BlockFusion {
 public:
  BlockFusion(const BindingBlockNode& block, const FuseOpsByKindOptions& options, const KindFusion& fusion)
      : block_(block), options_(options), fusion_(fusion) {}

  BlockGroups run() {
    build_nodes();
    std::vector<int> offsets{0}, edges;
    for (const Node& n : nodes_) {
      std::vector<int> deps = all_deps_[&n - nodes_.data()];
      edges.insert(edges.end(), deps.begin(), deps.end());
      offsets.push_back(int(edges.size()));
    }
    graph_.reset(offsets, edges);
    // A tuple op and its fields are one unit from the start: the tuple itself is never a value.
    for (int i = 0; i < int(nodes_.size()); ++i)
      if (nodes_[i].is_field) graph_.unite(i, nodes_[i].tuple_op);
    for (int i = 0; i < int(nodes_.size()); ++i) {
      const Node& n = nodes_[i];
      if (!n.fusible || n.is_tuple_op) continue;
      for (int p : n.operands) {
        if (!nodes_[p].fusible || graph_.find(p) == graph_.find(i)) continue;
        if (valid_merge(graph_.find(p), graph_.find(i))) graph_.unite(p, i);
      }
    }
    return collect();
  }

 private:
  void build_nodes() {
    const auto& bs = block_.bindings;
    nodes_.resize(bs.size());
    all_deps_.resize(bs.size());
    std::unordered_map<const VarNode*, int> index;
    for (size_t i = 0; i < bs.size(); ++i) index[bs[i]->var.get()] = int(i);
    auto deps_of = [&](const Expr& value, std::vector<int>& out) {
      std::vector<const VarNode*>& vars = nodes_[&out - all_deps_.data()].reads;
      detail::used_vars(value, vars);
      for (const VarNode* v : vars) {
        auto it = index.find(v);
        if (it != index.end() && std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
      }
    };
    for (size_t i = 0; i < bs.size(); ++i) {
      Node& n = nodes_[i];
      const Binding& b = bs[i];
      n.external = !b->var.as<DataflowVarNode>();
      n.sinfo = tensor_info(b->var);
      if (auto* mc = b.as<MatchCastNode>()) {
        deps_of(mc->value, all_deps_[i]);
        continue;
      }
      auto* vb = b.as<VarBindingNode>();
      deps_of(vb->value, all_deps_[i]);
      if (auto* call = vb->value.as<CallNode>()) {
        if (!call->op.as<OpNode>() || (fusion_.accepts && !fusion_.accepts(*call))) continue;
        FusionKind kind = fusion_.fusion_kind ? fusion_.fusion_kind(*call) : fusion_kind_of(*call);
        bool tuple_result = b->var->struct_info_ && b->var->struct_info_.as<TupleStructInfoNode>();
        // Without a check of the code generator, opaque calls (unknown to fusion) are left alone.
        if (kind == FusionKind::Opaque && !fusion_.accepts) continue;
        if (!tuple_result && !n.sinfo) continue;
        n.fusible = true;
        n.kind = kind;
        n.is_tuple_op = tuple_result;
        n.is_view = is_view_op(call->op.as<OpNode>()->name);
        n.operands = all_deps_[i];
      } else if (auto* get = vb->value.as<TupleGetItemNode>()) {
        auto* tv = get->tuple.as<VarNode>();
        auto it = tv ? index.find(tv) : index.end();
        if (it != index.end() && nodes_[it->second].fusible && nodes_[it->second].is_tuple_op && n.sinfo) {
          n.fusible = true;
          n.is_field = true;
          n.tuple_op = it->second;
          n.kind = nodes_[it->second].kind;
          n.operands = nodes_[it->second].operands;
        }
      }
    }
    for (size_t i = 0; i < bs.size(); ++i)
      for (int d : all_deps_[i]) nodes_[d].uses.push_back(int(i));
    // A tuple op is fusible only when nothing but its fields reads the tuple.
    for (size_t i = 0; i < bs.size(); ++i) {
      Node& n = nodes_[i];
      if (!n.is_tuple_op || !n.fusible) continue;
      bool only_fields = !n.external;
      for (int u : n.uses) only_fields = only_fields && nodes_[u].is_field && nodes_[u].tuple_op == int(i);
      if (!only_fields) {
        n.fusible = false;
        for (int u : n.uses)
          if (nodes_[u].tuple_op == int(i)) nodes_[u].fusible = nodes_[u].is_field = false;
      }
    }
  }

  // Whether the union of the groups rooted at `a` and `b` keeps every invariant.
  bool valid_merge(int a, int b) {
    std::vector<int> members;
    graph_.for_each_member(a, [&](int m) { members.push_back(m); });
    graph_.for_each_member(b, [&](int m) { members.push_back(m); });
    if (int(members.size()) > options_.max_group_size) return false;
    std::sort(members.begin(), members.end());
    std::vector<char> in(nodes_.size(), 0);
    for (int m : members) in[m] = 1;
    int anchor = -1;
    for (int m : members) {
      const Node& n = nodes_[m];
      if (!n.fusible) return false;
      if (n.kind == FusionKind::Opaque || n.kind == FusionKind::Tuple) return false;  // fuses with nothing
      if (n.is_field || n.is_tuple_op || !is_anchor_kind(n.kind)) continue;
      if (anchor >= 0) return false;
      anchor = m;
    }
    // Values downstream of the anchor (members in binding order, so operands come first).
    std::vector<char> down(nodes_.size(), 0);
    if (anchor >= 0) down[anchor] = 1;
    std::vector<int> cost(nodes_.size(), 1);
    std::set<const VarNode*> defined, inputs;
    for (int m : members) defined.insert(block_.bindings[m]->var.get());
    for (int m : members) {
      const Node& n = nodes_[m];
      for (const VarNode* v : n.reads)
        if (!defined.count(v)) inputs.insert(v);
      if (n.is_tuple_op) continue;  // its fields carry its operands
      int total = 1;
      for (int p : n.operands) {
        if (!in[p]) continue;
        if (anchor >= 0 && down[p] && m != anchor) {
          down[m] = 1;
          // An epilogue value is computed at the anchor's output element: its operands on the
          // anchor's side must be indexed like itself.
          if (!n.is_view && !(n.kind <= FusionKind::Broadcast && same_shape(nodes_[p].sinfo, n.sinfo))) return false;
        }
        bool same_index = n.is_view || (n.kind <= FusionKind::Broadcast && same_shape(nodes_[p].sinfo, n.sinfo));
        if (!same_index) total += cost[p];
      }
      cost[m] = total;
      if (total > options_.max_inline_cost) return false;
    }
    if (int(inputs.size()) > options_.max_inputs) return false;
    // Outputs: members read outside the group.
    for (int m : members) {
      const Node& n = nodes_[m];
      bool outside = n.external;
      for (int u : n.uses) outside = outside || !in[u];
      if (!outside) continue;
      if (n.is_tuple_op) return false;
      if (anchor >= 0 && !down[m]) return false;
    }
    return !graph_.merge_creates_cycle({a, b});
  }

  BlockGroups collect() {
    BlockGroups groups;
    groups.group_of.assign(nodes_.size(), -1);
    std::map<int, int> number;  // root -> group number
    for (int i = 0; i < int(nodes_.size()); ++i) {
      if (!nodes_[i].fusible) continue;
      int root = graph_.find(i);
      if (number.count(root)) continue;
      // Groups of views alone run as views on the VM; a tuple op whose fields are all unused has
      // no value to compute.
      bool only_views = true, has_value = false;
      int members = 0;
      graph_.for_each_member(root, [&](int m) {
        ++members;
        if (nodes_[m].is_tuple_op) return;
        has_value = true;
        only_views = only_views && nodes_[m].is_view;
      });
      if (only_views || !has_value || (options_.keep_single_bindings && members == 1)) continue;
      int g = int(groups.attrs.size());
      number[root] = g;
      // No codegen: TVM's FuseOps, whose "Primitive" functions the host runs.
      groups.attrs.push_back(options_.codegen.empty() ? DictAttrs{} : DictAttrs{{"Codegen", options_.codegen}});
    }
    groups.count = int(groups.attrs.size());
    for (int i = 0; i < int(nodes_.size()); ++i) {
      if (!nodes_[i].fusible) continue;
      auto it = number.find(graph_.find(i));
      if (it != number.end()) groups.group_of[i] = it->second;
    }
    return groups;
  }

  const BindingBlockNode& block_;
  const FuseOpsByKindOptions& options_;
  const KindFusion& fusion_;
  std::vector<Node> nodes_;
  std::vector<std::vector<int>> all_deps_;
  GroupGraph graph_;
};

// Whether `fn` is a group this pass made for `codegen` (for no codegen: a Primitive function
// without "Codegen").
bool made_by_fusion(const FunctionNode& fn, const std::string& codegen) {
  if (codegen.empty()) return !fn.attrs.count("Codegen") && fn.attrs.count("Primitive");
  return fn.attr_string("Codegen") == codegen;
}

// Gives a grouped function symbolic variables of its own (TVM's SymbolicVarRenewMutator): the
// grouping copies the caller's, and a variable must be defined by one function only.
class SymbolicVarRenewer : public ExprMutator {
 public:
  explicit SymbolicVarRenewer(const FunctionNode& fn) {
    auto add = [&](const StructInfo& s) {
      for (const PrimVar& v : symbolic_vars_of(s))
        if (!fresh_.count(v)) fresh_.emplace(v, make<PrimVarNode>(v->name, v->dtype));
    };
    for (const Var& p : fn.params) add(p->struct_info_);
    add(fn.ret_struct_info);
  }
  PrimExpr visit_prim_expr(const PrimExpr& e) override {
    if (fresh_.empty() || !e) return e;
    return bind_struct_info(prim_sinfo(e->dtype, e), fresh_).as<PrimStructInfoNode>()->value;
  }

 private:
  PrimVarMap fresh_;
};

Function renew_symbolic_vars(const Function& fn) {
  SymbolicVarRenewer renewer(*fn);
  Function out = renewer.visit_expr(fn).as_ref<FunctionNode>();
  if (out.get() != fn.get()) out->struct_info_ = func_struct_info_of(*out);
  return out;
}

// Binds the symbolic variables of a callee's parameter dims to the caller's argument dims: a
// bare variable directly, a * v + b (a flattened dim, n * 8) by solving for v.
void bind_dims(const StructInfo& param, const StructInfo& arg, PrimVarMap& bound) {
  if (!param || !arg) return;
  if (auto* pt = param.as<TupleStructInfoNode>()) {
    auto* at = arg.as<TupleStructInfoNode>();
    for (size_t k = 0; at && k < pt->fields.size() && k < at->fields.size(); ++k) bind_dims(pt->fields[k], at->fields[k], bound);
    return;
  }
  auto* p = param.as<TensorStructInfoNode>();
  auto* a = arg.as<TensorStructInfoNode>();
  if (!p || !a || !p->shape || !a->shape || p->shape->size() != a->shape->size()) return;
  for (size_t d = 0; d < p->shape->size(); ++d) {
    const PrimExpr& pe = (*p->shape)[d];
    std::vector<PrimVar> vars = prim_vars_of(pe);
    if (vars.size() != 1 || bound.count(vars[0])) continue;
    const PrimVarNode* v = vars[0].get();
    auto ab = linear_in(pe, v);
    if (!ab) continue;
    auto [scale, offset] = *ab;
    PrimExpr value = (*a->shape)[d];
    if (offset != 0) value = value - int_imm(offset);
    if (scale != 1) value = floordiv(value, int_imm(scale));
    bound.emplace(vars[0], value);
  }
}

// MakeGroupedFunctions derives a call's result from the callee's signature, which erases dims
// it cannot bind (a parameter of shape (n * 8,)); the VM needs the shapes of external results,
// so such a binding gets the result derived with bind_dims, in the caller's variables.
Function rederive_call_results(const Function& fn, const IRModule& mod, const std::string& codegen) {
  auto* seq = fn->body.as<SeqExprNode>();
  if (!seq) return fn;
  std::unordered_map<Var, Expr, RefHash, RefEq> remap;
  std::vector<BindingBlock> blocks;
  bool changed = false;
  for (const auto& block : seq->blocks) {
    std::vector<Binding> bindings;
    for (const auto& b : block->bindings) {
      Binding nb = b;
      if (!remap.empty())
        if (auto* old = b.as<VarBindingNode>())
          if (Expr value = substitute_vars(old->value, remap); value.get() != old->value.get())
            nb = make<VarBindingNode>(old->var, value);
      auto* vb = nb.as<VarBindingNode>();
      auto* call = vb ? vb->value.as<CallNode>() : nullptr;
      auto* callee = call ? call->op.as<GlobalVarNode>() : nullptr;
      auto* target = callee && mod.contains(callee->name_hint) ? mod.lookup(callee->name_hint).as<FunctionNode>() : nullptr;
      if (target && made_by_fusion(*target, codegen) && !static_shape(vb->var->struct_info_) &&
          target->params.size() == call->args.size()) {
        PrimVarMap bound;
        for (size_t k = 0; k < call->args.size(); ++k) bind_dims(target->params[k]->struct_info_, call->args[k]->struct_info_, bound);
        StructInfo ret = bind_struct_info(target->ret_struct_info, bound);
        bool complete = true;
        for (const PrimVar& v : symbolic_vars_of(ret))
          for (const Var& p : target->params)
            for (const PrimVar& pv : symbolic_vars_of(p->struct_info_)) complete = complete && !(pv == v);
        if (complete && !structural_equal(ret, vb->var->struct_info_)) {
          Var nv = vb->var.as<DataflowVarNode>() ? Var(make<DataflowVarNode>(vb->var->name_hint, ret))
                                                 : make<VarNode>(vb->var->name_hint, ret);
          auto* nc = copy_node(Ref<CallNode>(call));
          nc->struct_info_ = ret;
          remap[vb->var] = nv;
          nb = make<VarBindingNode>(nv, Call(nc));
          changed = true;
        }
      }
      bindings.push_back(nb);
    }
    blocks.push_back(make<BindingBlockNode>(std::move(bindings), block->is_dataflow));
  }
  if (!changed) return fn;
  auto* ns = copy_node(Ref<SeqExprNode>(seq));
  ns->blocks = std::move(blocks);
  ns->body = substitute_vars(seq->body, remap);
  ns->struct_info_ = ns->body->struct_info_;
  auto* nf = copy_node(fn);
  nf->body = SeqExpr(ns);
  return Function(nf);
}

// Then: MakeGroupedFunctions makes a shape argument with symbolic dims (reshape's R.shape([1, n, 64]))
// a parameter, as TVM does; the VM passes only tensors to compiled functions, so such shapes are
// put back into the grouped functions where their dims are defined there (by a parameter's or
// the result's shape: the codegen reads them from the tensors) and dropped from the calls.
IRModule finish_grouped_functions(IRModule mod, const std::string& codegen) {
  std::map<std::string, std::vector<size_t>> dropped;  // function -> removed parameter positions
  for (const auto& [gv, f] : mod.functions()) {
    auto fn = f.as_ref<FunctionNode>();
    if (!fn || !made_by_fusion(*fn, codegen) || !fn->attrs.count("Primitive")) continue;
    if (Function renewed = renew_symbolic_vars(fn); renewed.get() != fn.get()) {
      fn = renewed;
      gv->struct_info_ = fn->struct_info_;
      mod.update(gv, fn);
    }
    std::set<const PrimVarNode*> defined;
    auto define = [&](const StructInfo& s) {
      for (const PrimVar& v : symbolic_vars_of(s)) defined.insert(v.get());
    };
    for (const Var& p : fn->params)
      if (p->struct_info_ && !p->struct_info_.as<ShapeStructInfoNode>() && !p->struct_info_.as<PrimStructInfoNode>())
        define(p->struct_info_);
    define(fn->ret_struct_info);
    std::unordered_map<Var, Expr, RefHash, RefEq> remap;
    std::vector<Var> keep;
    std::vector<size_t> removed;
    for (size_t k = 0; k < fn->params.size(); ++k) {
      const Var& p = fn->params[k];
      Expr value;
      std::vector<PrimExpr> dims;
      if (auto* s = p->struct_info_ ? p->struct_info_.as<ShapeStructInfoNode>() : nullptr; s && s->values) {
        dims = *s->values;
        value = make<ShapeExprNode>(*s->values);
      } else if (auto* pr = p->struct_info_ ? p->struct_info_.as<PrimStructInfoNode>() : nullptr; pr && pr->value) {
        dims = {pr->value};
        value = make<PrimValueNode>(pr->value);
      }
      bool covered = value.defined();
      for (const PrimExpr& d : dims)
        for (const PrimVar& v : prim_vars_of(d)) covered = covered && defined.count(v.get());
      if (!covered) {
        keep.push_back(p);
        continue;
      }
      value->struct_info_ = p->struct_info_;
      remap[p] = value;
      removed.push_back(k);
    }
    if (removed.empty()) continue;
    auto nf = make<FunctionNode>(keep, substitute_vars(fn->body, remap), fn->ret_struct_info, fn->is_pure, fn->attrs);
    nf->struct_info_ = func_struct_info_of(*nf);
    gv->struct_info_ = nf->struct_info_;
    mod.update(gv, nf);
    dropped[gv->name_hint] = std::move(removed);
  }
  for (const auto& [gv, f] : mod.functions()) {
    auto fn = f.as_ref<FunctionNode>();
    auto* seq = fn ? fn->body.as<SeqExprNode>() : nullptr;
    if (!seq || fn->attrs.count("Codegen") || dropped.empty()) continue;
    bool changed = false;
    std::vector<BindingBlock> blocks;
    for (const auto& block : seq->blocks) {
      std::vector<Binding> bindings;
      for (const auto& b : block->bindings) {
        auto* vb = b.as<VarBindingNode>();
        auto* call = vb ? vb->value.as<CallNode>() : nullptr;
        auto* callee = call ? call->op.as<GlobalVarNode>() : nullptr;
        auto it = callee ? dropped.find(callee->name_hint) : dropped.end();
        if (it == dropped.end()) {
          bindings.push_back(b);
          continue;
        }
        auto* nc = copy_node(Ref<CallNode>(call));
        nc->args.clear();
        for (size_t k = 0; k < call->args.size(); ++k)
          if (std::find(it->second.begin(), it->second.end(), k) == it->second.end()) nc->args.push_back(call->args[k]);
        bindings.push_back(make<VarBindingNode>(vb->var, Call(nc)));
        changed = true;
      }
      blocks.push_back(make<BindingBlockNode>(std::move(bindings), block->is_dataflow));
    }
    if (!changed) continue;
    auto* ns = copy_node(Ref<SeqExprNode>(seq));
    ns->blocks = std::move(blocks);
    auto* nf = copy_node(fn);
    nf->body = SeqExpr(ns);
    mod.update(gv, Function(nf));
  }
  for (const auto& [gv, f] : mod.functions()) {
    auto fn = f.as_ref<FunctionNode>();
    if (!fn || fn->attrs.count("Codegen") || fn->attrs.count("Primitive")) continue;
    if (Function nf = rederive_call_results(fn, mod, codegen); nf.get() != fn.get()) mod.update(gv, nf);
  }
  return mod;
}

}  // namespace

IRModule fuse_ops_by_kind(IRModule mod, const FuseOpsByKindOptions& options) {
  // The options' callbacks, else those the code generator registered.
  KindFusion fusion{options.accepts, options.fusion_kind};
  if (auto registered = find_kind_fusion(options.codegen)) {
    if (!fusion.accepts) fusion.accepts = registered->accepts;
    if (!fusion.fusion_kind) fusion.fusion_kind = registered->fusion_kind;
  }
  std::vector<std::string> entries = options.entry_functions;
  if (entries.empty()) {
    for (const auto& [gv, f] : mod.functions())
      if (auto* fn = f.as<FunctionNode>(); fn && is_plain_function(*fn))
        entries.push_back(gv->name_hint);
  }
  detail::GroupFuser fuser(mod, /*lift_constants=*/false);
  bool grouped = false;
  for (const std::string& name : entries) {
    if (!mod.contains(name)) throw_error("KeyError", "FuseOpsByKind: entry function '" + name + "' is not in the module");
    auto* fn = mod.lookup(name).as<FunctionNode>();
    auto* seq = fn ? fn->body.as<SeqExprNode>() : nullptr;
    if (!seq) continue;
    // A fresh FunctionSlots numbers each block's bindings in binding order, as BlockFusion does.
    detail::FunctionSlots slots{Function(fn)};
    for (size_t b = 0; b < seq->blocks.size() && b < slots.blocks.size(); ++b) {
      if (!seq->blocks[b]->is_dataflow) continue;
      BlockGroups g = BlockFusion(*seq->blocks[b], options, fusion).run();
      if (g.count == 0) continue;
      fuser.fuse_block(slots, b, g);
      grouped = true;
    }
    if (slots.changed) fuser.mod().update(fuser.mod().get_global_var(name), slots.rebuild());
  }
  if (!grouped) return mod;
  return finish_grouped_functions(fuser.mod(), options.codegen);
}

Pass FuseOpsByKind(FuseOpsByKindOptions options) {
  return create_module_pass(
      [options](IRModule mod, const PassContext&) { return fuse_ops_by_kind(std::move(mod), options); }, 0,
      "FuseOpsByKind");
}

}  // namespace partita::transform
