// How every backend reads an offloaded function: its bindings in order, each one a leaf (a
// variable or a constant), an operator call, or a call of a local composite function whose body
// is read the same way with its parameters bound to the call's arguments.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "partita/ir/expr.h"

namespace partita::codegen {

/// The values a partition returns: the fields of its body when that is a tuple (a merged
/// partition returning several), else the body itself.
inline std::vector<Expr> partition_results(const SeqExprNode& seq) {
  if (auto* tuple = seq.body.as<TupleNode>()) return tuple->fields;
  return {seq.body};
}

template <class V>
using ValueEnv = std::unordered_map<const VarNode*, V>;

/// Walks the bindings of `fn`, recording in `env` what each variable lowers to, and returns its
/// body (for the backend to read the result). `Lowerer` supplies:
///   V leaf(const Expr& e, ValueEnv<V>& env);                      // a Var in env, or a Constant
///   V lower_op(const CallNode& call, const VarBindingNode& binding, ValueEnv<V>& env);
///   V lower_composite(const Function& composite, ValueEnv<V>& params, const VarBindingNode& binding);
///   [[noreturn]] void fail(const std::string& why) const;       // refuses the function
template <class V, class Lowerer>
const SeqExprNode& walk_partition(const Function& fn, ValueEnv<V>& env, Lowerer& lowerer) {
  auto* seq = fn->body.as<SeqExprNode>();
  if (!seq) lowerer.fail("a function body is not normalized");
  std::unordered_map<const VarNode*, Function> local;
  for (const auto& block : seq->blocks) {
    for (const auto& b : block->bindings) {
      auto* vb = b.as<VarBindingNode>();
      if (!vb) lowerer.fail("match_cast is not supported");
      const VarNode* var = vb->var.get();
      if (auto f = vb->value.as_ref<FunctionNode>()) {
        local[var] = f;
        continue;
      }
      if (vb->value.as<VarNode>() || vb->value.as<ConstantNode>()) {
        env[var] = lowerer.leaf(vb->value, env);
        continue;
      }
      auto* call = vb->value.as<CallNode>();
      if (!call) lowerer.fail(std::string("a binding of a ") + node_kind_name(vb->value->kind()) + " is not supported");
      if (call->op.as<OpNode>()) {
        env[var] = lowerer.lower_op(*call, *vb, env);
        continue;
      }
      auto* callee = call->op.as<VarNode>();
      auto it = callee ? local.find(callee) : local.end();
      if (it == local.end()) lowerer.fail("it calls something other than an operator or a local composite");
      const Function& composite = it->second;
      if (composite->params.size() != call->args.size())
        lowerer.fail("a composite call has the wrong number of arguments");
      ValueEnv<V> params;
      for (size_t i = 0; i < composite->params.size(); ++i)
        params[composite->params[i].get()] = lowerer.leaf(call->args[i], env);
      env[var] = lowerer.lower_composite(composite, params, *vb);
    }
  }
  return *seq;
}

}  // namespace partita::codegen
