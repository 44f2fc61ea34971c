// FuseOpsByPattern: pattern-based partitioning (TVM's PatternBasedPartitioner), grouping into
// composite functions, and the optional codegen annotation (CompositeFunctionAnnotator).
#include "partita/transform/fuse_ops_by_pattern.h"

#include "fuse_ops_by_pattern_deferred.h"

#include <algorithm>
#include <unordered_set>

#include "partita/dpl/matcher.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/ptr_map.h"
#include "partita/support/error.h"

namespace partita::transform {

std::string codegen_name_of(const std::string& composite_name) {
  auto pos = composite_name.find('.');
  if (pos == std::string::npos || pos == 0)
    throw_error("ValueError", "composite name '" + composite_name +
                                  "' must start with a codegen name followed by '.', e.g. 'dnnl.conv2d'");
  return composite_name.substr(0, pos);
}

bool has_leaking_intermediate_variables(const PatternCheckContext& ctx) {
  Var output;
  if (auto it = ctx.value_to_bound_var->find(ctx.matched_expr); it != ctx.value_to_bound_var->end())
    output = it->second;
  for (const auto& [var, value] : ctx.matched_bindings) {
    if (var == output) continue;
    if (!var.as<DataflowVarNode>()) return true;
    auto uses = ctx.var_usages->find(var);
    if (uses == ctx.var_usages->end()) continue;
    for (const auto& user : uses->second)
      if (!ctx.matched_bindings.count(user)) return true;
  }
  return false;
}

namespace {

bool is_group_pattern(const dpl::Pattern& p) {
  return p->kind == dpl::PatternKind::Call || p->kind == dpl::PatternKind::TupleGetItem;
}

void collect_used_vars(const Expr& value, std::vector<const VarNode*>& out) {
  if (auto* v = value.as<VarNode>()) {
    out.push_back(v);
  } else if (auto* c = value.as<CallNode>()) {
    for (const auto& a : c->args) collect_used_vars(a, out);
  } else if (auto* t = value.as<TupleNode>()) {
    for (const auto& f : t->fields) collect_used_vars(f, out);
  } else if (auto* g = value.as<TupleGetItemNode>()) {
    collect_used_vars(g->tuple, out);
  } else if (value.as<FunctionNode>() || value.as<SeqExprNode>() || value.as<IfNode>()) {
    post_order_visit(value, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) out.push_back(v);
    });
  }
}

// Partitions one dataflow block for one pattern.
BlockGroups partition_block(const FusionPattern& pat, const BindingBlock& blk) {
  const auto& bindings = blk->bindings;
  int n = int(bindings.size());
  // Side tables indexed by binding position; the maps only translate node addresses to
  // positions (flat tables: one allocation each, not one per binding).
  PtrMap<int> value_index(n);  // bound value -> binding index
  PtrMap<int> var_index(n);
  std::vector<int> offsets{0}, edges;
  offsets.reserve(n + 1);
  edges.reserve(2 * n);
  std::vector<std::vector<int>> users(pat.check ? n : 0);  // only the check context needs them
  std::vector<const VarNode*> used;
  for (int i = 0; i < n; ++i) {
    const Binding& b = bindings[i];
    var_index[b->var.get()] = i;
    if (auto* vb = b.as<VarBindingNode>()) value_index.emplace(vb->value.get(), i);
    used.clear();
    collect_used_vars(binding_value(*b), used);
    for (auto* v : used) {
      const int* found = var_index.find(v);
      if (!found || *found == i) continue;
      int j = *found;
      if (int(edges.size()) == offsets.back() || edges.back() != j) edges.push_back(j);
      if (pat.check && (users[j].empty() || users[j].back() != i)) users[j].push_back(i);
    }
    offsets.push_back(int(edges.size()));
  }
  // Variable -> bound value, through the last binding of the variable (as a map would keep).
  dpl::BindingLookup lookup = [&](const VarNode* v) -> const Expr* {
    const int* i = var_index.find(v);
    if (!i) return nullptr;
    auto* vb = bindings[*i].as<VarBindingNode>();
    return vb ? &vb->value : nullptr;
  };
  GroupGraph graph(std::move(offsets), std::move(edges));
  std::vector<char> composite(n, 0);  // per root: formed by a match
  std::vector<int> matched;
  dpl::MatchList m;  // reused by every match attempt
  std::vector<std::pair<int, std::map<std::string, AttrValue>>> extra_attrs;

  // The block-wide maps are built on the first check and shared by all (building them per
  // match made partitioning quadratic for patterns with a check, i.e. every real backend's).
  std::shared_ptr<const PatternCheckContext::VarUsages> var_usages;
  std::shared_ptr<const PatternCheckContext::BoundVars> value_to_bound_var;
  auto make_context = [&](const Expr& root, const dpl::MatchList& m) {
    PatternCheckContext ctx;
    ctx.matched_expr = root;
    for (const auto& [name, p] : pat.annotation_patterns)
      for (const auto& [q, e] : m)
        if (q->get() == p.get()) ctx.annotated_expr[name] = e;
    for (const auto& [p, e] : m) {
      if (!is_group_pattern(*p)) continue;
      if (const int* at = value_index.find(e.get())) ctx.matched_bindings[bindings[*at]->var] = e;
    }
    if (!var_usages) {
      PatternCheckContext::VarUsages::Map usages;
      PatternCheckContext::BoundVars::Map bound;
      for (int i = 0; i < n; ++i) {
        auto& list = usages[bindings[i]->var];
        if (!users.empty())
          for (int u : users[i]) list.push_back(bindings[u]->var);
        if (auto* vb = bindings[i].as<VarBindingNode>()) bound[vb->value] = bindings[i]->var;
      }
      var_usages = std::make_shared<const PatternCheckContext::VarUsages>(std::move(usages));
      value_to_bound_var = std::make_shared<const PatternCheckContext::BoundVars>(std::move(bound));
    }
    ctx.var_usages = var_usages;
    ctx.value_to_bound_var = value_to_bound_var;
    return ctx;
  };

  // Most bindings cannot match: when the pattern's root is a call of a fixed operator, only
  // calls of that operator are handed to the matcher.
  const OpNode* root_op = nullptr;
  if (pat.pattern->kind == dpl::PatternKind::Call && pat.pattern->op->kind == dpl::PatternKind::Expr)
    root_op = pat.pattern->op->expr.as<OpNode>();
  for (int i = 0; i < n; ++i) {
    auto* vb = bindings[i].as<VarBindingNode>();
    auto* call = vb ? vb->value.as<CallNode>() : nullptr;
    if (!call) continue;
    if (root_op) {
      auto* op = call->op.as<OpNode>();
      if (!op || (op != root_op && op->name != root_op->name)) continue;
    }
    if (!dpl::match_with_lookup(pat.pattern, vb->value, lookup, m)) continue;
    // The bindings the match covers: the root and every call / get-item matched below it.
    matched.assign(1, i);
    bool ok = true;
    for (const auto& [p, e] : m) {
      if (!is_group_pattern(*p) || e == vb->value) continue;
      const int* at = value_index.find(e.get());
      if (!at || *at > i) {
        ok = false;  // not bound in this block before the root: cannot be grouped
        break;
      }
      matched.push_back(*at);
    }
    if (!ok) continue;
    if (pat.check) {
      PatternCheckContext ctx = make_context(vb->value, m);
      if (!pat.check(ctx)) continue;
    }
    if (!graph.group_match(matched, composite)) continue;
    // Attributes live on the group's output binding index (resolved below).
    if (pat.attrs_getter) {
      PatternCheckContext ctx = make_context(vb->value, m);
      auto extra = pat.attrs_getter(ctx.annotated_expr);
      extra_attrs.emplace_back(i, std::move(extra));
    }
  }
  BlockGroups bg;
  bg.group_of.assign(n, -1);
  std::vector<int> root_to_group(n, -1);
  std::unordered_map<int, std::map<std::string, AttrValue>> extras;
  for (auto& [i, attrs] : extra_attrs) extras[graph.find(i)] = attrs;
  for (int i = 0; i < n; ++i) {
    int r = graph.find(i);
    if (!composite[r]) continue;
    if (root_to_group[r] < 0) {
      root_to_group[r] = int(bg.attrs.size());
      DictAttrs attrs;
      attrs["Composite"] = pat.name;
      if (auto e = extras.find(r); e != extras.end())
        for (const auto& [k, v] : e->second) attrs[k] = v;
      bg.attrs.push_back(std::move(attrs));
    }
    bg.group_of[i] = root_to_group[r];
  }
  return bg;
}

// Wraps each composite in a public function carrying "Codegen" (TVM's
// CompositeFunctionAnnotator): the composite becomes the local function `local_func`.
IRModule annotate_composites(IRModule mod) {
  NameSupply names;
  std::unordered_map<std::string, GlobalVar> wrapped;  // composite name -> wrapper
  auto wrap = [&](const GlobalVar& gv) -> GlobalVar {
    if (auto it = wrapped.find(gv->name_hint); it != wrapped.end()) return it->second;
    Function func = mod.lookup(gv).as_ref<FunctionNode>();
    std::string codegen = codegen_name_of(*func->attr_string("Composite"));
    auto* inner_node = copy_node(func);
    inner_node->attrs.erase("Primitive");
    Function inner(inner_node);
    std::vector<Var> params;
    std::vector<Expr> args;
    for (const auto& p : func->params) {
      params.push_back(make<VarNode>(p->name_hint, p->struct_info_));
      args.push_back(params.back());
    }
    Var local = make<VarNode>("local_func", inner->struct_info_);
    Call call = make<CallNode>(local, args);
    call->struct_info_ = func->ret_struct_info;
    Var output = make<VarNode>("output", func->ret_struct_info);
    std::vector<Binding> bs{make<VarBindingNode>(local, inner), make<VarBindingNode>(output, call)};
    Expr body = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(std::move(bs), false)}, output);
    body->struct_info_ = func->ret_struct_info;
    mod.remove(gv->name_hint);
    std::string hint = gv->name_hint + "_" + codegen;
    std::string name = names.fresh(hint);
    while (mod.contains(name)) name = names.fresh(hint);
    DictAttrs attrs{{"Codegen", codegen}, {"global_symbol", name}};
    Function wrapper = make<FunctionNode>(params, body, func->ret_struct_info, inner->is_pure, attrs);
    wrapper->struct_info_ = func_struct_info_of(*wrapper);
    GlobalVar ngv = make<GlobalVarNode>(name);
    ngv->struct_info_ = wrapper->struct_info_;
    mod.add(ngv, wrapper);
    wrapped.emplace(gv->name_hint, ngv);
    return ngv;
  };
  auto is_composite = [&](const Expr& op) -> const GlobalVarNode* {
    auto* gv = op.as<GlobalVarNode>();
    if (!gv) return nullptr;
    if (wrapped.count(gv->name_hint)) return gv;
    if (!mod.contains(gv->name_hint)) return nullptr;
    auto* f = mod.lookup(gv->name_hint).as<FunctionNode>();
    return f && f->attrs.count("Composite") ? gv : nullptr;
  };
  std::vector<std::string> names_before;
  for (const auto& [name, entry] : mod->functions) names_before.push_back(name);
  for (const auto& name : names_before) {
    if (!mod.contains(name)) continue;
    auto* f = mod.lookup(name).as<FunctionNode>();
    if (!f || f->attrs.count("Composite") || f->attrs.count("Codegen")) continue;
    auto* seq = f->body.as<SeqExprNode>();
    if (!seq) continue;
    std::vector<BindingBlock> blocks;
    bool changed = false;
    for (const auto& blk : seq->blocks) {
      std::vector<Binding> bs;
      bool bchanged = false;
      for (const auto& b : blk->bindings) {
        auto* vb = b.as<VarBindingNode>();
        auto* call = vb ? vb->value.as<CallNode>() : nullptr;
        const GlobalVarNode* gv = call ? is_composite(call->op) : nullptr;
        if (!gv) {
          bs.push_back(b);
          continue;
        }
        auto* nc = copy_node(Ref<CallNode>(call));
        nc->op = wrap(GlobalVar(gv));
        bs.push_back(make<VarBindingNode>(b->var, Expr(Call(nc))));
        bchanged = true;
      }
      blocks.push_back(bchanged ? make<BindingBlockNode>(std::move(bs), blk->is_dataflow) : blk);
      changed = changed || bchanged;
    }
    if (!changed) continue;
    auto* ns = copy_node(Ref<SeqExprNode>(seq));
    ns->blocks = std::move(blocks);
    auto* nf = copy_node(Ref<FunctionNode>(f));
    nf->body = SeqExpr(ns);
    mod.update(mod.get_global_var(name), Function(nf));
  }
  return mod;
}

}  // namespace

namespace detail {

IRModule fuse_patterns_one_by_one(const std::vector<FusionPattern>& patterns, IRModule mod,
                                  bool lift_constants, const std::vector<std::string>& entry_functions) {
  for (const auto& pat : patterns) {
    std::vector<std::string> entries = entry_functions;
    if (entries.empty()) {
      for (const auto& [name, entry] : mod->functions) {
        auto* f = entry.second.as<FunctionNode>();
        if (!f || f->attrs.count("Primitive") || f->attrs.count("Composite") || f->attrs.count("Codegen")) continue;
        entries.push_back(name);
      }
    }
    ModuleGroups groups;
    for (const auto& name : entries) {
      auto* f = mod.lookup(name).as<FunctionNode>();
      auto* seq = f ? f->body.as<SeqExprNode>() : nullptr;
      if (!seq) continue;
      for (const auto& blk : seq->blocks) {
        if (!blk->is_dataflow) continue;
        BlockGroups bg = partition_block(pat, blk);
        if (!bg.attrs.empty()) groups[name][blk.get()] = std::move(bg);
      }
    }
    if (!groups.empty()) mod = make_grouped_functions(mod, groups, lift_constants);
  }
  return mod;
}

}  // namespace detail

IRModule fuse_ops_by_pattern(const std::vector<FusionPattern>& patterns, IRModule mod,
                             bool bind_constants, bool annotate_codegen,
                             const std::vector<std::string>& entry_functions) {
  for (const auto& pat : patterns) {
    if (!pat.pattern) throw_error("ValueError", "FuseOpsByPattern: pattern '" + pat.name + "' is undefined");
    if (pat.name.empty()) throw_error("ValueError", "FuseOpsByPattern: a fusion pattern has an empty name");
    if (annotate_codegen) codegen_name_of(pat.name);
  }
  for (const auto& name : entry_functions) {
    if (!mod.lookup(name).as<FunctionNode>())
      throw_error("ValueError", "FuseOpsByPattern: entry function '" + name + "' is not a Relax function");
  }
  // Both paths give the same module; the deferred one handles the common cases much faster.
  if (auto fast = detail::fuse_patterns_deferred(patterns, mod, !bind_constants, entry_functions))
    mod = std::move(*fast);
  else
    mod = detail::fuse_patterns_one_by_one(patterns, std::move(mod), !bind_constants, entry_functions);
  if (annotate_codegen) return annotate_composites(mod);
  return mod;
}

Pass FuseOpsByPattern(std::vector<FusionPattern> patterns, bool bind_constants, bool annotate_codegen,
                      std::vector<std::string> entry_functions) {
  return create_module_pass(
      [=](IRModule mod, const PassContext&) {
        return fuse_ops_by_pattern(patterns, std::move(mod), bind_constants, annotate_codegen, entry_functions);
      },
      0, "FuseOpsByPattern");
}

}  // namespace partita::transform
