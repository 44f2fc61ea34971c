// BindParams: see the header. Symbolic dimensions are solved from bound tensors only where the
// parameter's dimension is a bare symbolic variable (TVM's InferSymbolicVarMap does the same for
// dims; an expression such as n * 2 is checked only once its variables are known).
#include "partita/transform/bind_params.h"

#include <algorithm>

#include "partita/ir/analysis.h"
#include "partita/support/error.h"
#include "partita/ir/substitute.h"

namespace partita::transform {

namespace {

/// Substitutes variables and, in every symbolic value (struct info, shapes), symbolic variables.
class ParamSubstitutor : public Substitutor {
 public:
  ParamSubstitutor(PtrMap<Expr> remap, PrimVarMap prims)
      : Substitutor(std::move(remap)), prims_(std::move(prims)) {}
  PrimExpr visit_prim_expr(const PrimExpr& e) override {
    if (prims_.empty()) return e;
    return bind_struct_info(prim_sinfo(e->dtype, e), prims_).as<PrimStructInfoNode>()->value;
  }

 private:
  PrimVarMap prims_;
};

std::string param_list(const FunctionNode& f) {
  std::string s;
  for (const Var& p : f.params) s += (s.empty() ? "" : ", ") + p->name_hint;
  return "(" + s + ")";
}

Var resolve_param(const FunctionNode& f, const ParamBinding& b) {
  if (b.var) {
    for (const Var& p : f.params)
      if (p.get() == b.var.get()) return p;
    throw_error("ValueError", "BindParams: " + b.var->name_hint +
                                  " is not a parameter of the function; its parameters "
                                  "are " +
                                  param_list(f));
  }
  Var found;
  for (const Var& p : f.params) {
    if (p->name_hint != b.name) continue;
    if (found)
      throw_error("ValueError",
                  "BindParams: the function has several parameters named \"" + b.name + "\"");
    found = p;
  }
  if (!found)
    throw_error("ValueError", "BindParams: the function has no parameter named \"" + b.name +
                                  "\"; its parameters are " + param_list(f));
  return found;
}

/// Checks that `value` fits `param` and records the values of `param`'s symbolic dimensions.
void match_value(const Var& param, const Expr& value, PrimVarMap& prims) {
  const auto* want = param->struct_info_.as<TensorStructInfoNode>();
  const auto* have = value->struct_info_ ? value->struct_info_.as<TensorStructInfoNode>() : nullptr;
  if (!want || !have) return;
  const std::string where = "BindParams: parameter " + param->name_hint;
  if (!want->dtype.is_void() && !have->dtype.is_void() && want->dtype != have->dtype)
    throw_error("ValueError",
                where + " has dtype " + want->dtype.str() + ", the value " + have->dtype.str());
  if (!want->shape || !have->shape) {
    if (!want->is_unknown_ndim() && !have->is_unknown_ndim() && want->ndim != have->ndim)
      throw_error("ValueError", where + " has rank " + std::to_string(want->ndim) + ", the value " +
                                    std::to_string(have->ndim));
    return;
  }
  if (want->shape->size() != have->shape->size())
    throw_error("ValueError", where + " has rank " + std::to_string(want->shape->size()) +
                                  ", the value " + std::to_string(have->shape->size()));
  for (size_t i = 0; i < want->shape->size(); ++i) {
    const PrimExpr& w = (*want->shape)[i];
    const PrimExpr& h = (*have->shape)[i];
    if (const auto* v = w.as<PrimVarNode>()) {
      PrimVar pv(v);
      auto [it, inserted] = prims.emplace(pv, h);
      if (!inserted && !prove_equal(it->second, h))
        throw_error("ValueError", where + ": symbolic dimension " + v->name +
                                      " is given two values, " + prim_expr_str(it->second) +
                                      " and " + prim_expr_str(h));
    } else if (w.as<IntImmNode>() && h.as<IntImmNode>() && !prove_equal(w, h)) {
      throw_error("ValueError", where + " has dimension " + std::to_string(i) + " = " +
                                    prim_expr_str(w) + ", the value " + prim_expr_str(h));
    }
  }
}

}  // namespace

Function function_bind_params(const Function& func, const std::vector<ParamBinding>& params) {
  PtrMap<Expr> remap;
  PrimVarMap prims;
  std::vector<const VarNode*> bound;
  for (const ParamBinding& b : params) {
    if (!b.value)
      throw_error("ValueError",
                  "BindParams: no value for parameter " + (b.var ? b.var->name_hint : b.name));
    Var p = resolve_param(*func, b);
    Expr value = BlockBuilder().normalize(b.value);  // gives a new Constant its struct info
    if (!remap.emplace(p.get(), value).second)
      throw_error("ValueError", "BindParams: parameter " + p->name_hint + " is bound twice");
    match_value(p, value, prims);
    bound.push_back(p.get());
  }
  if (bound.empty()) return func;
  std::vector<Var> kept;
  for (const Var& p : func->params)
    if (std::find(bound.begin(), bound.end(), p.get()) == bound.end()) kept.push_back(p);
  Function unbound =
      make<FunctionNode>(kept, func->body, func->ret_struct_info, func->is_pure, func->attrs);
  ParamSubstitutor sub(std::move(remap), std::move(prims));
  return sub(unbound).as_ref<FunctionNode>();
}

Pass BindParams(std::string func_name, std::vector<ParamBinding> params) {
  return create_module_pass(
      [func_name, params](IRModule mod, const PassContext&) -> IRModule {
        if (!mod.contains(func_name))
          throw_error("ValueError",
                      "BindParams: the module has no function named \"" + func_name + "\"");
        GlobalVar gv = mod.get_global_var(func_name);
        const auto* f = mod.lookup(gv).as<FunctionNode>();
        if (!f)
          throw_error("ValueError", "BindParams: \"" + func_name + "\" is not a Relax function");
        mod.update(gv, function_bind_params(Function(f), params));
        return mod;
      },
      0, "BindParams");
}

}  // namespace partita::transform
