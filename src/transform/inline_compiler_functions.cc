// InlineCompilerFunctions: undo partitioning and compositing (see byoc_helpers.h).
//
// A selected call `v = f(args)` is replaced by f's bindings with f's parameters bound to the
// arguments, recursively through calls of composites (local function bindings or global
// "Composite" functions). The binding that produces f's result binds `v` itself, and a tuple
// result feeds the `w = v[i]` bindings that read it, so no alias bindings are left behind and
// the module returns to its unpartitioned form. Inner variables take the kind of the block they
// land in and struct info re-derived from their new values (in the caller's symbolic variables:
// substitution derives a rebuilt node's).
#include <algorithm>
#include <set>
#include <unordered_map>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/substitute.h"
#include "partita/transform/byoc_helpers.h"
#include "partita/support/error.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "pass_util.h"

namespace partita::transform {
namespace {

using VarMap = std::unordered_map<Var, Var, RefHash, RefEq>;

class Inliner {
 public:
  Inliner(IRModule mod, const InlineSelection& sel) : mod_(std::move(mod)), sel_(sel) {}

  IRModule run() {
    IRModule out = mod_;
    for (const auto& [gv, func] : mod_.functions()) {
      auto* fn = func.as<FunctionNode>();
      if (!fn || fn->attrs.count("Codegen") || fn->attrs.count("Composite")) continue;
      uses_ = detail::UseCounter();
      uses_.visit_expr(func);
      Function updated = detail::rewrite_blocks(Function(fn), [&](const BindingBlock& block) {
        return rewrite_block(block);
      });
      if (updated.get() != fn) out.update(gv, updated);
    }
    // Inlined globals nobody calls any more go away.
    std::set<std::string> still_called;
    for (const auto& [gv, func] : out.functions())
      for (const auto& g : all_global_vars(func))
        if (g->name_hint != gv->name_hint) still_called.insert(g->name_hint);
    for (const auto& name : inlined_)
      if (!still_called.count(name) && out.contains(name)) out.remove(name);
    return out;
  }

 private:
  // The global function `gv` calls when the selection asks for it to be inlined.
  Function selected(const Expr& op) const {
    auto* gv = op.as<GlobalVarNode>();
    if (!gv || !mod_.contains(gv->name_hint)) return {};
    auto fn = mod_.lookup(gv->name_hint).as_ref<FunctionNode>();
    if (!fn) return {};
    auto codegen = fn->attr_string("Codegen");
    auto composite = fn->attr_string("Composite");
    bool named = std::find(sel_.functions.begin(), sel_.functions.end(), gv->name_hint) !=
                 sel_.functions.end();
    // A host "Primitive" group (FuseOps) is inlined only when named, as build does.
    if (!codegen && !composite) return named && fn->attrs.count("Primitive") ? fn : Function();
    if (named || (sel_.backends.empty() && sel_.functions.empty())) return fn;
    for (const auto& b : sel_.backends) {
      if (codegen && *codegen == b) return fn;
      if (composite && composite->rfind(b + ".", 0) == 0) return fn;
    }
    return {};
  }

  BindingBlock rewrite_block(const BindingBlock& block) {
    std::vector<Binding> out;
    bool changed = false;
    // Tuple-result calls: the item bindings `w = v[i]` that can take the producers' place.
    std::unordered_map<const VarNode*, std::map<int, Binding>> items;
    std::set<const BindingNode*> skip;
    for (const auto& b : block->bindings) {
      auto* vb = b.as<VarBindingNode>();
      if (!vb) continue;
      if (auto* tgi = vb->value.as<TupleGetItemNode>())
        if (auto* tv = tgi->tuple.as<VarNode>()) items[tv].emplace(tgi->index, b);
    }
    for (const auto& b : block->bindings) {
      if (skip.count(b.get())) {
        changed = true;
        continue;
      }
      auto* vb = b.as<VarBindingNode>();
      auto* call = vb ? vb->value.as<CallNode>() : nullptr;
      Function callee = call ? selected(call->op) : Function();
      if (!callee) {
        out.push_back(b);
        continue;
      }
      changed = true;
      inlined_.insert(call->op.as<GlobalVarNode>()->name_hint);
      VarMap dest;
      auto* seq = callee->body.as<SeqExprNode>();
      PARTITA_ICHECK(seq);
      int item_uses = 0;
      if (auto rv = seq->body.as_ref<VarNode>()) {
        dest[rv] = vb->var;
      } else if (auto* tup = seq->body.as<TupleNode>()) {
        auto it = items.find(vb->var.get());
        std::set<const VarNode*> taken;
        if (it != items.end()) {
          for (const auto& [index, w] : it->second) {
            auto fv = index < int(tup->fields.size()) ? tup->fields[index].as_ref<VarNode>() : Var();
            if (!fv || taken.count(fv.get()) || is_param(callee, fv)) continue;
            taken.insert(fv.get());
            dest[fv] = w->var;
            ++item_uses;
            skip.insert(w.get());
          }
        }
      }
      Expr result = inline_body(callee, call->args, dest, block->is_dataflow, out);
      bool need_binding = !(result == Expr(vb->var));
      if (need_binding && result.as<TupleNode>() && uses_.uses(vb->var) <= item_uses) need_binding = false;
      if (need_binding) out.push_back(make<VarBindingNode>(vb->var, result));
    }
    if (!changed) return block;
    return make<BindingBlockNode>(std::move(out), block->is_dataflow);
  }

  static bool is_param(const Function& f, const Var& v) {
    return std::find(f->params.begin(), f->params.end(), v) != f->params.end();
  }

  Var fresh_var(const Var& like, const Expr& value, bool dataflow) {
    StructInfo sinfo = value && value->struct_info_ ? value->struct_info_ : like->struct_info_;
    if (dataflow) return make<DataflowVarNode>(like->name_hint, sinfo);
    return make<VarNode>(like->name_hint, sinfo);
  }

  // Emits `callee`'s bindings into `out`; returns the expression standing for its result.
  Expr inline_body(const Function& callee, const std::vector<Expr>& args, const VarMap& dest, bool dataflow,
                   std::vector<Binding>& out) {
    std::unordered_map<Var, Expr, RefHash, RefEq> remap;
    for (size_t i = 0; i < callee->params.size() && i < args.size(); ++i) remap[callee->params[i]] = args[i];
    std::unordered_map<Var, Function, RefHash, RefEq> local_funcs;
    auto* seq = callee->body.as<SeqExprNode>();
    for (const auto& block : seq->blocks) {
      for (const auto& b : block->bindings) {
        auto dit = dest.find(b->var);
        auto* vb = b.as<VarBindingNode>();
        if (auto fn = vb ? vb->value.as_ref<FunctionNode>() : Function()) {
          local_funcs[vb->var] = fn;
          continue;
        }
        Function inner;
        auto* call = vb ? vb->value.as<CallNode>() : nullptr;
        if (call) {
          if (auto ov = call->op.as_ref<VarNode>(); ov && local_funcs.count(ov)) inner = local_funcs[ov];
          else if (const FunctionNode* fn = detail::composite_callee(mod_, call->op)) {
            inner = Function(fn);
            inlined_.insert(call->op.as<GlobalVarNode>()->name_hint);
          }
        }
        if (inner) {
          std::vector<Expr> inner_args;
          for (const auto& a : call->args) inner_args.push_back(substitute_vars(a, remap));
          Var target = dit != dest.end() ? dit->second : Var();
          VarMap inner_dest;
          auto* iseq = inner->body.as<SeqExprNode>();
          auto irv = iseq->body.as_ref<VarNode>();
          if (target && irv && !is_param(inner, irv)) inner_dest[irv] = target;
          Expr result = inline_body(inner, inner_args, inner_dest, dataflow, out);
          if (target && !(result == Expr(target))) out.push_back(make<VarBindingNode>(target, result));
          remap[b->var] = target ? Expr(target) : result;
          continue;
        }
        // A match_cast's new variable keeps its struct info, a binding's takes its new value's.
        Expr value = substitute_vars(binding_value(*b), remap);
        Var target = dit != dest.end() ? dit->second : fresh_var(b->var, vb ? value : Expr(), dataflow);
        out.push_back(detail::rebind(b, target, value));
        remap[b->var] = target;
      }
    }
    return substitute_vars(seq->body, remap);
  }

  IRModule mod_;
  InlineSelection sel_;
  detail::UseCounter uses_;
  std::set<std::string> inlined_;
};

}  // namespace

IRModule inline_compiler_functions(IRModule mod, const InlineSelection& selection) {
  return Inliner(std::move(mod), selection).run();
}

Pass InlineCompilerFunctions(InlineSelection selection) {
  return create_module_pass(
      [selection](IRModule mod, const PassContext&) { return inline_compiler_functions(std::move(mod), selection); },
      0, "InlineCompilerFunctions");
}

Function without_attrs(const Function& func, const std::vector<std::string>& keys) {
  DictAttrs attrs = func->attrs;
  for (const auto& k : keys) attrs.erase(k);
  return detail::with_attrs(func, std::move(attrs));
}

}  // namespace partita::transform
