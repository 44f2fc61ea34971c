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
#include <functional>
#include <set>
#include <unordered_map>

#include "partita/ir/analysis.h"
#include "partita/ir/substitute.h"
#include "partita/transform/byoc_helpers.h"
#include "partita/support/error.h"
#include "pass_util.h"

namespace partita::transform {
namespace {

using VarMap = std::unordered_map<Var, Var, RefHash, RefEq>;

class Inliner {
 public:
  Inliner(IRModule mod, const InlineSelection& sel) : mod_(std::move(mod)), sel_(sel) {}

  IRModule run() {
    IRModule out = detail::map_functions(mod_, [&](const Function& fn) {
      if (fn->attrs.count("Codegen") || fn->attrs.count("Composite")) return fn;
      uses_ = detail::UseCounter();
      uses_.visit_expr(fn);
      return detail::rewrite_blocks(fn, std::bind_front(&Inliner::rewrite_block, this));
    });
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
    bool named = std::ranges::find(sel_.functions, gv->name_hint) != sel_.functions.end();
    // A host "Primitive" group (FuseOps) is inlined only when named, as build does.
    if (!codegen && !composite) return named && fn->attrs.count("Primitive") ? fn : Function();
    if (named || (sel_.backends.empty() && sel_.functions.empty())) return fn;
    auto chosen = [&](const std::string& b) {
      return (codegen && *codegen == b) || (composite && composite->rfind(b + ".", 0) == 0);
    };
    return std::ranges::any_of(sel_.backends, chosen) ? fn : Function();
  }

  BindingBlock rewrite_block(const BindingBlock& block) {
    std::vector<Binding> out;
    // Tuple-result calls: the item bindings `w = v[i]` that can take the producers' place.
    std::unordered_map<const VarNode*, std::map<int, Binding>> items;
    std::set<const BindingNode*> skip;
    for (const auto& b : block->bindings) {
      auto* vb = b.as<VarBindingNode>();
      auto* tgi = vb ? vb->value.as<TupleGetItemNode>() : nullptr;
      if (auto* tv = tgi ? tgi->tuple.as<VarNode>() : nullptr) items[tv].emplace(tgi->index, b);
    }
    for (const auto& b : block->bindings) {
      if (skip.count(b.get())) continue;
      auto* vb = b.as<VarBindingNode>();
      auto* call = vb ? vb->value.as<CallNode>() : nullptr;
      Function callee = call ? selected(call->op) : Function();
      if (!callee) {
        out.push_back(b);
        continue;
      }
      inlined_.insert(call->op.as<GlobalVarNode>()->name_hint);
      VarMap dest;  // fields of a tuple result -> the item variables that take their place
      auto* seq = callee->body.as<SeqExprNode>();
      auto* tup = seq ? seq->body.as<TupleNode>() : nullptr;
      if (auto it = items.find(vb->var.get()); tup && it != items.end()) {
        for (const auto& [index, w] : it->second) {
          auto fv = index < int(tup->fields.size()) ? tup->fields[index].as_ref<VarNode>() : Var();
          if (!fv || dest.count(fv) || std::ranges::count(callee->params, fv)) continue;
          dest[fv] = w->var;
          skip.insert(w.get());
        }
      }
      Expr result = inline_body(callee, call->args, dest, vb->var, block->is_dataflow, out);
      // A tuple result read only through the items that took its fields needs no binding.
      bool items_only = result.as<TupleNode>() && uses_.uses(vb->var) <= int(dest.size());
      if (!items_only && !(result == Expr(vb->var)))
        out.push_back(make<VarBindingNode>(vb->var, result));
    }
    // Nothing inlined or skipped: every binding is the one it was (inlining makes new ones).
    if (std::ranges::equal(out, block->bindings)) return block;
    return make<BindingBlockNode>(std::move(out), block->is_dataflow);
  }

  // Emits `callee`'s bindings into `out` with its parameters bound to `args`; returns the
  // expression standing for its result. The variables of `dest` bind theirs instead, and so does
  // a result variable `target` (when given).
  Expr inline_body(const Function& callee, const std::vector<Expr>& args, VarMap dest,
                   const Var& target, bool dataflow, std::vector<Binding>& out) {
    auto* seq = callee->body.as<SeqExprNode>();
    PARTITA_ICHECK(seq);
    if (auto rv = seq->body.as_ref<VarNode>(); rv && target) dest[rv] = target;
    VarRemap remap;
    for (size_t i = 0; i < callee->params.size() && i < args.size(); ++i)
      remap[callee->params[i]] = args[i];
    PtrMap<Function> local_funcs;  // local function variable -> its function
    for (const auto& block : seq->blocks) {
      for (const auto& b : block->bindings) {
        Var to = dest.contains(b->var) ? dest.at(b->var) : Var();  // the variable to bind, if set
        auto* vb = b.as<VarBindingNode>();
        if (auto fn = vb ? vb->value.as_ref<FunctionNode>() : Function()) {
          local_funcs[vb->var.get()] = fn;
          continue;
        }
        auto* call = vb ? vb->value.as<CallNode>() : nullptr;
        Function inner(call ? detail::composite_callee(mod_, call->op) : nullptr);
        if (inner) inlined_.insert(call->op.as<GlobalVarNode>()->name_hint);
        else if (Function* local = call ? local_funcs.find(call->op.get()) : nullptr) inner = *local;
        if (inner) {
          std::vector<Expr> inner_args;
          for (const auto& a : call->args) inner_args.push_back(substitute_vars(a, remap));
          Expr result = inline_body(inner, inner_args, {}, to, dataflow, out);
          if (to && !(result == Expr(to))) out.push_back(make<VarBindingNode>(to, result));
          remap[b->var] = to ? Expr(to) : result;
          continue;
        }
        // A match_cast's new variable keeps its struct info, a binding's takes its new value's.
        Expr value = substitute_vars(binding_value(*b), remap);
        if (!to) {
          const std::string& name = b->var->name_hint;
          StructInfo sinfo = vb && value->struct_info_ ? value->struct_info_ : b->var->struct_info_;
          to = dataflow ? Var(make<DataflowVarNode>(name, sinfo)) : make<VarNode>(name, sinfo);
        }
        out.push_back(detail::rebind(b, to, value));
        remap[b->var] = to;
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
  return module_pass(inline_compiler_functions, 0, "InlineCompilerFunctions", std::move(selection));
}

Function without_attrs(const Function& func, const std::vector<std::string>& keys) {
  return detail::with_attrs(func, [&](DictAttrs& attrs) {
    for (const auto& k : keys) attrs.erase(k);
  });
}

}  // namespace partita::transform
