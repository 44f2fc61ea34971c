// rewrite_bindings (see rewrite_bindings.h).
#include "rewrite_bindings.h"

namespace partita::transform::detail {

Function rewrite_bindings(const Function& func, const std::function<Binding(const Binding&)>& rewrite) {
  auto* seq = func->body.as<SeqExprNode>();
  if (!seq) return func;
  std::vector<BindingBlock> blocks;
  bool changed = false;
  for (const auto& blk : seq->blocks) {
    std::vector<Binding> bindings;
    bool block_changed = false;
    for (const auto& b : blk->bindings) {
      Binding nb = rewrite(b);
      block_changed = block_changed || !(nb == b);
      if (nb) bindings.push_back(std::move(nb));
    }
    changed = changed || block_changed;
    if (!block_changed) blocks.push_back(blk);
    else if (!bindings.empty()) blocks.push_back(make<BindingBlockNode>(std::move(bindings), blk->is_dataflow));
  }
  if (!changed) return func;
  auto* ns = copy_node(Ref<SeqExprNode>(seq));
  ns->blocks = std::move(blocks);
  auto* nf = copy_node(func);
  nf->body = SeqExpr(ns);
  return Function(nf);
}

}  // namespace partita::transform::detail
