// RemoveUnusedOutputs: see the header. As TVM, a call site is rewritten to a tuple of the new
// call's elements in the old positions (a NaN placeholder where an element is gone), so every
// existing TupleGetItem still reads the right value, and CanonicalizeBindings folds the reads.
#include "partita/transform/remove_unused_outputs.h"

#include <cmath>
#include <limits>
#include <map>

#include "partita/ir/analysis.h"
#include "partita/support/error.h"
#include "partita/ir/functor.h"
#include "partita/transform/basic.h"

namespace partita::transform {

namespace {

using UsageMasks = std::map<std::string, std::vector<bool>>;  // callee name -> used outputs

class UsageCollector : public ExprVisitor {
 public:
  explicit UsageCollector(UsageMasks& masks) : masks_(masks) {}

  void visit_binding_(const VarBindingNode* b) override {
    ExprVisitor::visit_binding_(b);
    known_[b->var.get()] = b->value;
  }
  void visit_binding_(const MatchCastNode* b) override {
    ExprVisitor::visit_binding_(b);
    known_[b->var.get()] = b->value;
  }
  void visit_(const TupleGetItemNode* op) override {
    if (std::vector<bool>* mask = callee_mask(op->tuple)) {
      if (op->index < 0 || size_t(op->index) >= mask->size())
        throw_error("IndexError", "RemoveUnusedOutputs: tuple index " + std::to_string(op->index) +
                                      " is out of range for a tuple of " +
                                      std::to_string(mask->size()));
      (*mask)[size_t(op->index)] = true;
      return;  // the tuple itself is only read through this element
    }
    ExprVisitor::visit_(op);
  }
  void visit_(const VarNode* op) override { use_whole(op); }
  void visit_(const DataflowVarNode* op) override { use_whole(op); }

 private:
  void use_whole(const VarNode* v) {
    if (std::vector<bool>* mask = callee_mask(Expr(v))) mask->assign(mask->size(), true);
  }
  std::vector<bool>* callee_mask(Expr e) {
    if (!e->struct_info_ || !e->struct_info_.as<TupleStructInfoNode>()) return nullptr;
    while (const auto* v = e.as<VarNode>()) {
      auto it = known_.find(v);
      if (it == known_.end()) break;
      e = it->second;
    }
    const auto* call = e.as<CallNode>();
    const auto* gv = call ? call->op.as<GlobalVarNode>() : nullptr;
    if (!gv) return nullptr;
    auto it = masks_.find(gv->name_hint);
    return it == masks_.end() ? nullptr : &it->second;
  }
  UsageMasks& masks_;
  std::unordered_map<const Object*, Expr> known_;
};

/// `f` returning only the elements `mask` keeps: from a literal tuple they are taken directly,
/// otherwise read into new bindings after the body's blocks (CanonicalizeBindings folds those).
Function drop_outputs(const Function& f, const std::vector<bool>& mask) {
  const auto* seq = f->body.as<SeqExprNode>();
  PARTITA_ICHECK(seq);  // function bodies are SeqExprs after normalization
  std::vector<BindingBlock> blocks = seq->blocks;
  std::vector<Expr> outputs;
  std::vector<Binding> reads;
  const auto* literal = seq->body.as<TupleNode>();
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) continue;
    if (literal) {
      outputs.push_back(literal->fields[i]);
      continue;
    }
    Expr item = make<TupleGetItemNode>(seq->body, int(i));
    const auto* t =
        seq->body->struct_info_ ? seq->body->struct_info_.as<TupleStructInfoNode>() : nullptr;
    PARTITA_ICHECK(t);  // the returned value has tuple struct info
    Var v = make<VarNode>("output", t->fields[i]);
    reads.push_back(make<VarBindingNode>(v, item));
    outputs.push_back(v);
  }
  if (!reads.empty()) blocks.push_back(make<BindingBlockNode>(reads, false));
  Expr result = outputs.size() == 1 ? outputs[0] : Expr(make<TupleNode>(outputs));
  Expr body = make<SeqExprNode>(blocks, result);
  // The return struct info is derived again by the normalizer.
  return make<FunctionNode>(f->params, body, StructInfo(), f->is_pure, f->attrs);
}

class CallSiteRewriter : public ExprMutator {
 public:
  CallSiteRewriter(const UsageMasks& masks, IRModule mod)
      : ExprMutator(mod), masks_(masks), mod_(mod) {}
  Expr visit_(const CallNode* op) override {
    Expr e = ExprMutator::visit_(op);
    const auto* call = e.as<CallNode>();
    const auto* gv = call->op.as<GlobalVarNode>();
    auto it = gv ? masks_.find(gv->name_hint) : masks_.end();
    if (it == masks_.end()) return e;
    const std::vector<bool>& mask = it->second;
    size_t used = std::count(mask.begin(), mask.end(), true);
    // The callee's new GlobalVar carries its new struct info.
    Expr new_call = builder_.normalize(make<CallNode>(mod_.get_global_var(gv->name_hint),
                                                      call->args, call->attrs, call->sinfo_args));
    std::vector<Expr> fields;
    int next = 0;
    for (bool u : mask) {
      if (!u) {
        fields.push_back(make<PrimValueNode>(
            make<FloatImmNode>(std::numeric_limits<double>::quiet_NaN(), DataType::Float(64))));
        continue;
      }
      fields.push_back(used == 1 ? new_call : Expr(make<TupleGetItemNode>(new_call, next)));
      ++next;
    }
    return make<TupleNode>(fields);
  }

 private:
  const UsageMasks& masks_;
  IRModule mod_;
};

IRModule remove_unused_outputs(IRModule mod) {
  UsageMasks masks;
  for (const auto& [gv, f] : mod.functions()) {
    const auto* fn = f.as<FunctionNode>();
    if (!fn || fn->attr_string("global_symbol")) continue;
    if (const auto* t =
            fn->ret_struct_info ? fn->ret_struct_info.as<TupleStructInfoNode>() : nullptr)
      masks[gv->name_hint] = std::vector<bool>(t->fields.size(), false);
  }
  if (masks.empty()) return mod;
  UsageCollector collector(masks);
  for (const auto& [gv, f] : mod.functions()) collector.visit_expr(f);
  std::erase_if(masks, [](const auto& kv) {
    return std::all_of(kv.second.begin(), kv.second.end(), [](bool u) { return u; });
  });
  if (masks.empty()) return mod;
  for (const auto& [name, mask] : masks) {
    GlobalVar gv = mod.get_global_var(name);
    Function nf = drop_outputs(mod.lookup(gv).as_ref<FunctionNode>(), mask);
    // Normalize so the callee has its new return struct info before callers are typed.
    nf = ExprMutator(mod).builder().normalize(nf).as_ref<FunctionNode>();
    GlobalVar new_gv = make<GlobalVarNode>(name);
    new_gv->struct_info_ = nf->struct_info_ ? nf->struct_info_ : func_struct_info_of(*nf);
    mod.update(new_gv, nf);
  }
  std::vector<std::pair<GlobalVar, Expr>> updates;
  for (const auto& [gv, f] : mod.functions()) {
    if (!f.as<FunctionNode>()) continue;
    CallSiteRewriter rewriter(masks, mod);
    Expr nf = rewriter.visit_expr(f);
    if (nf.get() != f.get()) updates.emplace_back(gv, nf);
  }
  for (auto& [gv, f] : updates) mod.update(gv, f);
  return mod;
}

}  // namespace

Pass RemoveUnusedOutputs() {
  Pass inner = create_module_pass(
      [](IRModule mod, const PassContext&) { return remove_unused_outputs(mod); }, 0,
      "RemoveUnusedOutputsInner");
  return Sequential({inner, CanonicalizeBindings(), DeadCodeElimination()}, "RemoveUnusedOutputs");
}

}  // namespace partita::transform
