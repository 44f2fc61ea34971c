// Helpers of the transform passes (see pass_util.h).
#include "pass_util.h"

#include <algorithm>

#include "partita/ir/analysis.h"
#include "partita/ir/ptr_map.h"

namespace partita::transform::detail {

Binding rebind(const Binding& like, const Var& var, const Expr& value) {
  if (auto* mc = like.as<MatchCastNode>()) return make<MatchCastNode>(var, value, mc->struct_info);
  return make<VarBindingNode>(var, value);
}

Expr single_block_seq(std::vector<Binding> bindings, bool is_dataflow, const Expr& body,
                      StructInfo sinfo) {
  Expr seq = make<SeqExprNode>(
      std::vector<BindingBlock>{make<BindingBlockNode>(std::move(bindings), is_dataflow)}, body);
  seq->struct_info_ = sinfo ? std::move(sinfo) : body->struct_info_;
  return seq;
}

GlobalVar add_fresh_function(IRModule& mod, NameSupply& names, const std::string& hint,
                             const std::function<Function(const std::string&)>& make_func) {
  std::string name = names.fresh(hint);
  while (mod.contains(name)) name = names.fresh(hint);
  Function func = make_func(name);
  GlobalVar gv = make<GlobalVarNode>(name);
  gv->struct_info_ = func->struct_info_;
  mod.add(gv, func);
  return gv;
}

Function with_attrs(const Function& func, DictAttrs attrs) {
  if (attrs == func->attrs) return func;
  auto* out = copy_node(func);
  out->attrs = std::move(attrs);
  return Function(out);
}

bool has_codegen(const FunctionNode& func, const std::string& filter) {
  auto codegen = func.attr_string("Codegen");
  return codegen && (filter.empty() || *codegen == filter);
}

const FunctionNode* composite_callee(const IRModule& mod, const Expr& callee) {
  auto* gv = callee.as<GlobalVarNode>();
  if (!gv || !mod.contains(gv->name_hint)) return nullptr;
  auto* f = mod.lookup(gv->name_hint).as<FunctionNode>();
  return f && f->attrs.count("Composite") ? f : nullptr;
}

Function rewrite_blocks(const Function& func,
                        const std::function<BindingBlock(const BindingBlock&)>& rewrite) {
  auto* seq = func->body.as<SeqExprNode>();
  if (!seq) return func;
  std::vector<BindingBlock> blocks;
  bool changed = false;
  for (const auto& blk : seq->blocks) {
    BindingBlock nb = rewrite(blk);
    changed = changed || !(nb == blk);
    if (nb) blocks.push_back(std::move(nb));
  }
  if (!changed) return func;
  auto* ns = copy_node(Ref<SeqExprNode>(seq));
  ns->blocks = std::move(blocks);
  auto* nf = copy_node(func);
  nf->body = SeqExpr(ns);
  return Function(nf);
}

Function rewrite_bindings(const Function& func,
                          const std::function<Binding(const Binding&)>& rewrite) {
  return rewrite_blocks(func, [&](const BindingBlock& blk) -> BindingBlock {
    std::vector<Binding> bindings;
    bool changed = false;
    for (const auto& b : blk->bindings) {
      Binding nb = rewrite(b);
      changed = changed || !(nb == b);
      if (nb) bindings.push_back(std::move(nb));
    }
    if (!changed) return blk;
    if (bindings.empty()) return {};
    return make<BindingBlockNode>(std::move(bindings), blk->is_dataflow);
  });
}

Function redirect_calls(const Function& func,
                        const std::function<GlobalVar(const GlobalVarNode*)>& callee) {
  return rewrite_bindings(func, [&](const Binding& b) -> Binding {
    auto* vb = b.as<VarBindingNode>();
    auto* call = vb ? vb->value.as<CallNode>() : nullptr;
    auto* gv = call ? call->op.as<GlobalVarNode>() : nullptr;
    GlobalVar to = gv ? callee(gv) : GlobalVar();
    if (!to.defined()) return b;
    auto* nc = copy_node(Ref<CallNode>(call));
    nc->op = to;
    return make<VarBindingNode>(b->var, Expr(Call(nc)));
  });
}

// Functions are numbered in name order; a GlobalVar met in a call is resolved through the node the
// module itself keys the function by, by name only when it is another node (names are long: every
// merged function is named after all its operators).
IRModule remove_unreachable_functions(IRModule mod, const std::vector<std::string>& roots) {
  std::vector<const std::pair<const std::string, std::pair<GlobalVar, Expr>>*> entries;
  entries.reserve(mod->functions.size());
  PtrMap<int> index_of(mod->functions.size());
  for (const auto& entry : mod->functions) {
    index_of.emplace(entry.second.first.get(), int(entries.size()));
    entries.push_back(&entry);
  }
  std::vector<char> live(entries.size(), 0);
  std::vector<int> stack;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto* f = entries[i]->second.second.as<FunctionNode>();
    bool root = (f && f->attrs.count("global_symbol")) ||
                std::find(roots.begin(), roots.end(), entries[i]->first) != roots.end();
    if (root) {
      live[i] = 1;
      stack.push_back(int(i));
    }
  }
  PtrMap<char> seen;  // GlobalVar nodes already visited
  auto visit = [&](const GlobalVar& gv) {
    if (!seen.emplace(gv.get(), 1).second) return;
    int i = -1;
    if (const int* at = index_of.find(gv.get())) {
      i = *at;
    } else {
      auto it = mod->functions.find(gv->name_hint);
      if (it == mod->functions.end()) return;
      i = *index_of.find(it->second.first.get());
    }
    if (!live[i]) {
      live[i] = 1;
      stack.push_back(i);
    }
  };
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    const Expr& f = entries[i]->second.second;
    auto* fn = f.as<FunctionNode>();
    auto* seq = fn ? fn->body.as<SeqExprNode>() : nullptr;
    if (!seq) {
      for (const auto& gv : all_global_vars(f)) visit(gv);
      continue;
    }
    // Flat bindings of calls and leaves are scanned directly, as are local functions made of
    // such bindings (the inlined composites); anything else generically.
    auto scan = [&](auto&& self, const Expr& e) -> void {
      if (auto* c = e.as<CallNode>()) {
        if (auto* g = c->op.as<GlobalVarNode>()) visit(GlobalVar(g));
        bool leaf_args = true;
        for (const auto& a : c->args)
          leaf_args = leaf_args && (a.as<VarNode>() || a.as<ConstantNode>());
        if (leaf_args && !c->op.as<FunctionNode>()) return;
      } else if (e.as<VarNode>() || e.as<TupleGetItemNode>() || e.as<ConstantNode>()) {
        return;
      } else if (auto* lf = e.as<FunctionNode>()) {
        if (auto* ls = lf->body.as<SeqExprNode>()) {
          for (const auto& blk : ls->blocks)
            for (const auto& b : blk->bindings) self(self, binding_value(*b));
          self(self, ls->body);
          return;
        }
      }
      for (const auto& gv : all_global_vars(e)) visit(gv);
    };
    for (const auto& blk : seq->blocks)
      for (const auto& b : blk->bindings) scan(scan, binding_value(*b));
    scan(scan, seq->body);
  }
  std::vector<std::string> dead;
  for (size_t i = 0; i < entries.size(); ++i)
    if (!live[i]) dead.push_back(entries[i]->first);
  for (const auto& name : dead) mod.remove(name);
  return mod;
}

}  // namespace partita::transform::detail
