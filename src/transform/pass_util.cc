// Helpers of the transform passes (see pass_util.h).
#include "pass_util.h"

#include <algorithm>
#include <unordered_set>

#include "partita/ir/analysis.h"

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

Function with_attrs(const Function& func, const std::function<void(DictAttrs&)>& edit) {
  DictAttrs attrs = func->attrs;
  edit(attrs);
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

IRModule map_functions(IRModule mod, const std::function<Function(const Function&)>& rewrite) {
  IRModule out = mod;
  for (const auto& [gv, f] : mod.functions()) {
    auto fn = f.as_ref<FunctionNode>();
    if (Function nf = fn ? rewrite(fn) : fn; !(nf == fn)) out.update(gv, nf);
  }
  return out;
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

IRModule remove_unreachable_functions(IRModule mod, const std::vector<std::string>& roots) {
  std::unordered_set<std::string> live;
  std::vector<Expr> stack;
  auto reach = [&](const std::string& name) {
    if (mod.contains(name) && live.insert(name).second) stack.push_back(mod.lookup(name));
  };
  for (const auto& [name, entry] : mod->functions) {
    auto* f = entry.second.as<FunctionNode>();
    if ((f && f->attrs.count("global_symbol")) ||
        std::find(roots.begin(), roots.end(), name) != roots.end())
      reach(name);
  }
  while (!stack.empty()) {
    Expr f = std::move(stack.back());
    stack.pop_back();
    for (const auto& gv : all_global_vars(f)) reach(gv->name_hint);
  }
  for (const auto& [gv, f] : mod.functions())
    if (!live.count(gv->name_hint)) mod.remove(gv->name_hint);
  return mod;
}

}  // namespace partita::transform::detail
