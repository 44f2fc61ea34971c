// Struct-info helpers: subsumption (base check), least common ancestor, erasure of undefined
// symbolic values, and deriving the result of a function call.
#include <algorithm>
#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/support/error.h"
#include "struct_info_prims.h"

namespace partita {

namespace {

const char* expr_kind_name(const Expr& e) { return node_kind_name(e->kind()); }

BaseCheckResult combine(BaseCheckResult a, BaseCheckResult b) { return std::min(a, b); }

// How `derived` fits `base` for one symbolic value.
BaseCheckResult prim_value_check(const PrimExpr& base, const PrimExpr& derived) {
  if (base.get() == derived.get()) return BaseCheckResult::Pass;
  auto cb = as_const_int(base), cd = as_const_int(derived);
  if (cb && cd) return *cb == *cd ? BaseCheckResult::Pass : BaseCheckResult::FailL1;
  if (prove_equal(base, derived)) return BaseCheckResult::Pass;
  return BaseCheckResult::FailL2;
}

BaseCheckResult dims_check(const std::optional<std::vector<PrimExpr>>& base, int base_ndim,
                           const std::optional<std::vector<PrimExpr>>& derived, int derived_ndim) {
  if (base_ndim >= 0) {
    if (derived_ndim < 0) return BaseCheckResult::FailL2;
    if (derived_ndim != base_ndim) return BaseCheckResult::FailL1;
  }
  if (!base) return BaseCheckResult::Pass;
  if (!derived) return BaseCheckResult::FailL2;
  if (base->size() != derived->size()) return BaseCheckResult::FailL1;
  BaseCheckResult r = BaseCheckResult::Pass;
  for (size_t i = 0; i < base->size(); ++i) r = combine(r, prim_value_check((*base)[i], (*derived)[i]));
  return r;
}

}  // namespace

const StructInfo& struct_info_of(const Expr& expr) {
  if (!expr) throw_error("ValueError", "struct_info_of: the expression is null");
  if (!expr->struct_info_) {
    std::string what = expr_kind_name(expr);
    if (auto* v = expr.as<VarNode>()) what += " '" + v->name_hint + "'";
    if (auto* g = expr.as<GlobalVarNode>()) what += " '" + g->name_hint + "'";
    throw_error("ValueError", "struct_info_of: " + what +
                                  " has no struct info (the expression was not normalized)");
  }
  return expr->struct_info_;
}

BaseCheckResult struct_info_base_check(const StructInfo& base, const StructInfo& derived) {
  using R = BaseCheckResult;
  if (!base || !derived) return R::FailL0;
  if (base.get() == derived.get()) return R::Pass;
  if (base.as<ObjectStructInfoNode>()) return R::Pass;
  if (base->kind() != derived->kind()) {
    // A value known only as an object may still be anything at run time.
    return derived.as<ObjectStructInfoNode>() ? R::FailL1 : R::FailL0;
  }
  if (auto* b = base.as<PrimStructInfoNode>()) {
    auto* d = derived.as<PrimStructInfoNode>();
    if (!b->dtype.is_void() && b->dtype != d->dtype) return d->dtype.is_void() ? R::FailL2 : R::FailL1;
    if (!b->value) return R::Pass;
    if (!d->value) return R::FailL2;
    return prim_value_check(b->value, d->value);
  }
  if (auto* b = base.as<ShapeStructInfoNode>()) {
    auto* d = derived.as<ShapeStructInfoNode>();
    return dims_check(b->values, b->ndim, d->values, d->ndim);
  }
  if (auto* b = base.as<TensorStructInfoNode>()) {
    auto* d = derived.as<TensorStructInfoNode>();
    R r = R::Pass;
    if (!b->dtype.is_void() && b->dtype != d->dtype) {
      if (!d->dtype.is_void()) return R::FailL1;
      r = R::FailL2;
    }
    // TVM's vdevice rule: a device the derived info does not know is a static mismatch; two
    // different devices can never fit.
    if (b->vdevice && !d->vdevice) r = combine(r, R::FailL1);
    if (b->vdevice && d->vdevice && !same_vdevice(b->vdevice, d->vdevice)) return R::FailL0;
    return combine(r, dims_check(b->shape, b->ndim, d->shape, d->ndim));
  }
  if (auto* b = base.as<TupleStructInfoNode>()) {
    auto* d = derived.as<TupleStructInfoNode>();
    if (b->fields.size() != d->fields.size()) return R::FailL1;
    R r = R::Pass;
    for (size_t i = 0; i < b->fields.size(); ++i)
      r = combine(r, struct_info_base_check(b->fields[i], d->fields[i]));
    return r;
  }
  auto* b = base.as<FuncStructInfoNode>();
  auto* d = derived.as<FuncStructInfoNode>();
  if (b->purity && !d->purity) return R::FailL1;
  R r = struct_info_base_check(b->ret, d->ret);
  if (!b->params) return r;
  if (!d->params) return combine(r, R::FailL2);
  if (b->params->size() != d->params->size()) return R::FailL1;
  for (size_t i = 0; i < b->params->size(); ++i) {
    // Parameters are contravariant: the derived function must accept what the base accepts.
    R p = struct_info_base_check((*d->params)[i], (*b->params)[i]);
    // Symbolic parameters of two signatures are different variables; only a static mismatch
    // is a definite failure.
    r = combine(r, p == R::FailL2 ? R::Pass : p);
  }
  return r;
}

bool is_base_of(const StructInfo& base, const StructInfo& derived) {
  return struct_info_base_check(base, derived) == BaseCheckResult::Pass;
}

// ---- symbolic variables ----

namespace {

void collect_prim_vars(const PrimExpr& e, std::vector<PrimVar>& out,
                       std::unordered_set<const Object*>& seen) {
  if (!e) return;
  if (auto* v = e.as<PrimVarNode>()) {
    if (seen.insert(v).second) out.push_back(PrimVar(v));
  } else if (auto* b = e.as<PrimBinaryNode>()) {
    collect_prim_vars(b->a, out, seen);
    collect_prim_vars(b->b, out, seen);
  }
}

}  // namespace

std::vector<PrimVar> prim_vars_of(const PrimExpr& expr) {
  std::vector<PrimVar> out;
  std::unordered_set<const Object*> seen;
  collect_prim_vars(expr, out, seen);
  return out;
}

namespace {

// The value of `e` with `v` set to `x` (nullopt when another variable occurs).
std::optional<int64_t> eval_with(const PrimExpr& e, const PrimVarNode* v, int64_t x) {
  if (auto c = as_const_int(e)) return *c;
  if (e.get() == v) return x;
  auto* b = e.as<PrimBinaryNode>();
  if (!b) return std::nullopt;
  auto l = eval_with(b->a, v, x), r = eval_with(b->b, v, x);
  if (!l || !r) return std::nullopt;
  int64_t p = *l, q = *r;
  switch (b->op) {
    case PrimOp::Add: return p + q;
    case PrimOp::Sub: return p - q;
    case PrimOp::Mul: return p * q;
    case PrimOp::FloorDiv:
    case PrimOp::FloorMod: {
      if (q == 0) return std::nullopt;
      int64_t d = p / q;
      if ((p % q != 0) && ((p < 0) != (q < 0))) --d;
      return b->op == PrimOp::FloorDiv ? d : p - d * q;
    }
    case PrimOp::Min: return std::min(p, q);
    case PrimOp::Max: return std::max(p, q);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> linear_in(const PrimExpr& expr, const PrimVarNode* v) {
  auto y0 = eval_with(expr, v, 0), y1 = eval_with(expr, v, 1);
  if (!y0 || !y1 || *y1 == *y0) return std::nullopt;
  int64_t a = *y1 - *y0, b = *y0;
  for (int64_t x : {2, 3, 7, 1000})  // linear where it counts (min / max / floordiv may not be)
    if (eval_with(expr, v, x) != a * x + b) return std::nullopt;
  return std::pair<int64_t, int64_t>{a, b};
}

std::vector<PrimVar> symbolic_vars_of(const StructInfo& info) {
  std::vector<PrimVar> out;
  std::unordered_set<const Object*> seen;
  detail::for_each_prim_expr(info, [&](const PrimExpr& e) { collect_prim_vars(e, out, seen); });
  return out;
}

std::vector<PrimVar> definable_symbolic_vars_of(const StructInfo& info) {
  std::vector<PrimVar> out;
  std::unordered_set<const Object*> seen;
  // Function signatures define their own variables; they define nothing outside.
  if (!info || info.as<FuncStructInfoNode>()) return out;
  if (auto* tu = info.as<TupleStructInfoNode>()) {
    for (auto& f : tu->fields)
      for (auto& v : definable_symbolic_vars_of(f))
        if (seen.insert(v.get()).second) out.push_back(v);
    return out;
  }
  detail::for_each_prim_expr(info, [&](const PrimExpr& e) {
    if (auto* v = e.as<PrimVarNode>())
      if (seen.insert(v).second) out.push_back(PrimVar(v));
  });
  return out;
}

// ---- substitution and erasure ----

namespace {

// `e` with variables rewritten by `f`; null when some variable has no value.
PrimExpr rewrite_prim(const PrimExpr& e,
                      const std::function<std::optional<PrimExpr>(const PrimVar&)>& f) {
  if (auto* v = e.as<PrimVarNode>()) {
    auto r = f ? f(PrimVar(v)) : std::nullopt;
    return r ? *r : PrimExpr();
  }
  if (auto* b = e.as<PrimBinaryNode>()) {
    PrimExpr a = rewrite_prim(b->a, f);
    PrimExpr c = rewrite_prim(b->b, f);
    if (!a || !c) return PrimExpr();
    if (a.get() == b->a.get() && c.get() == b->b.get()) return e;
    switch (b->op) {
      case PrimOp::Add: return a + c;
      case PrimOp::Sub: return a - c;
      case PrimOp::Mul: return a * c;
      case PrimOp::FloorDiv: return floordiv(a, c);
      case PrimOp::FloorMod: return floormod(a, c);
      case PrimOp::Min: return min(a, c);
      case PrimOp::Max: return max(a, c);
    }
  }
  return e;
}

using PrimFn = std::function<std::optional<PrimExpr>(const PrimVar&)>;

// Rewrites every value of `dims`; returns nullopt when any becomes undefined.
std::optional<std::vector<PrimExpr>> rewrite_dims(const std::vector<PrimExpr>& dims,
                                                  const PrimFn& f, bool* changed) {
  std::vector<PrimExpr> out;
  out.reserve(dims.size());
  for (auto& d : dims) {
    PrimExpr r = rewrite_prim(d, f);
    if (!r) return std::nullopt;
    if (r.get() != d.get()) *changed = true;
    out.push_back(r);
  }
  return out;
}

StructInfo erase_impl(const StructInfo& info, const PrimFn& f) {
  if (!info) return info;
  if (auto* p = info.as<PrimStructInfoNode>()) {
    if (!p->value) return info;
    PrimExpr r = rewrite_prim(p->value, f);
    if (r.get() == p->value.get()) return info;
    return make<PrimStructInfoNode>(p->dtype, r);
  }
  if (auto* s = info.as<ShapeStructInfoNode>()) {
    if (!s->values) return info;
    bool changed = false;
    auto dims = rewrite_dims(*s->values, f, &changed);
    if (!dims) return make<ShapeStructInfoNode>(s->ndim);
    return changed ? make<ShapeStructInfoNode>(std::move(*dims)) : info;
  }
  if (auto* t = info.as<TensorStructInfoNode>()) {
    if (!t->shape) return info;
    bool changed = false;
    auto dims = rewrite_dims(*t->shape, f, &changed);
    if (!dims) return make<TensorStructInfoNode>(t->dtype, t->ndim, t->vdevice);
    return changed ? make<TensorStructInfoNode>(std::move(*dims), t->dtype, t->vdevice) : info;
  }
  if (auto* tu = info.as<TupleStructInfoNode>()) {
    bool changed = false;
    std::vector<StructInfo> fields;
    for (auto& fi : tu->fields) {
      fields.push_back(erase_impl(fi, f));
      changed |= fields.back().get() != fi.get();
    }
    return changed ? make<TupleStructInfoNode>(std::move(fields)) : info;
  }
  // Object and function signatures (whose variables are their own) stay as they are.
  return info;
}

}  // namespace

StructInfo erase_to_well_defined(const StructInfo& info, const PrimFn& f_shape_var_map) {
  return erase_impl(info, f_shape_var_map);
}

StructInfo erase_to_well_defined(const StructInfo& info, const PrimVarMap& var_map) {
  return erase_impl(info, [&](const PrimVar& v) -> std::optional<PrimExpr> {
    auto it = var_map.find(v);
    if (it == var_map.end()) return std::nullopt;
    return it->second;
  });
}

StructInfo bind_struct_info(const StructInfo& info, const PrimVarMap& var_map) {
  if (auto* fn = info.as<FuncStructInfoNode>()) {
    std::optional<std::vector<StructInfo>> params;
    if (fn->params) {
      params.emplace();
      for (auto& p : *fn->params) params->push_back(bind_struct_info(p, var_map));
    }
    return make<FuncStructInfoNode>(std::move(params), bind_struct_info(fn->ret, var_map), fn->purity);
  }
  return erase_impl(info, [&](const PrimVar& v) -> std::optional<PrimExpr> {
    auto it = var_map.find(v);
    if (it == var_map.end()) return PrimExpr(v);
    return it->second;
  });
}

// ---- least common ancestor ----

namespace {

bool same_dims(const std::optional<std::vector<PrimExpr>>& a,
               const std::optional<std::vector<PrimExpr>>& b) {
  if (!a || !b || a->size() != b->size()) return false;
  for (size_t i = 0; i < a->size(); ++i)
    if (prim_value_check((*a)[i], (*b)[i]) != BaseCheckResult::Pass) return false;
  return true;
}

}  // namespace

StructInfo struct_info_lca(const StructInfo& a, const StructInfo& b) {
  if (!a) return b;
  if (!b) return a;
  if (a.get() == b.get()) return a;
  if (a->kind() != b->kind() || a.as<ObjectStructInfoNode>()) return object_sinfo();
  if (auto* pa = a.as<PrimStructInfoNode>()) {
    auto* pb = b.as<PrimStructInfoNode>();
    if (pa->dtype != pb->dtype) return object_sinfo();
    if (pa->value && pb->value && prim_value_check(pa->value, pb->value) == BaseCheckResult::Pass)
      return a;
    return make<PrimStructInfoNode>(pa->dtype);
  }
  if (auto* sa = a.as<ShapeStructInfoNode>()) {
    auto* sb = b.as<ShapeStructInfoNode>();
    if (sa->ndim != sb->ndim) return make<ShapeStructInfoNode>(-1);
    if (same_dims(sa->values, sb->values)) return a;
    return make<ShapeStructInfoNode>(sa->ndim);
  }
  if (auto* ta = a.as<TensorStructInfoNode>()) {
    auto* tb = b.as<TensorStructInfoNode>();
    DataType dtype = ta->dtype == tb->dtype ? ta->dtype : DataType::Void();
    // The device survives only when both sides are on it (TVM's StructInfoLCA).
    VDevice vdevice = ta->vdevice && tb->vdevice && same_vdevice(ta->vdevice, tb->vdevice) ? ta->vdevice : VDevice();
    if (ta->ndim != tb->ndim) return make<TensorStructInfoNode>(dtype, -1, vdevice);
    if (same_dims(ta->shape, tb->shape)) {
      if (dtype == ta->dtype && vdevice.get() == ta->vdevice.get()) return a;
      return make<TensorStructInfoNode>(*ta->shape, dtype, vdevice);
    }
    return make<TensorStructInfoNode>(dtype, ta->ndim, vdevice);
  }
  if (auto* ua = a.as<TupleStructInfoNode>()) {
    auto* ub = b.as<TupleStructInfoNode>();
    if (ua->fields.size() != ub->fields.size()) return object_sinfo();
    std::vector<StructInfo> fields;
    bool same = true;
    for (size_t i = 0; i < ua->fields.size(); ++i) {
      fields.push_back(struct_info_lca(ua->fields[i], ub->fields[i]));
      same &= fields.back().get() == ua->fields[i].get();
    }
    return same ? a : make<TupleStructInfoNode>(std::move(fields));
  }
  auto* fa = a.as<FuncStructInfoNode>();
  auto* fb = b.as<FuncStructInfoNode>();
  if (is_base_of(a, b) && is_base_of(b, a)) return a;
  return make<FuncStructInfoNode>(std::nullopt, struct_info_lca(fa->ret, fb->ret),
                                  fa->purity && fb->purity);
}

// ---- calls ----

StructInfo derive_call_ret_struct_info(const FuncStructInfo& finfo, const CallNode& call) {
  if (!finfo->params) {
    if (call.sinfo_args.size() == 1) return call.sinfo_args[0];
    return finfo->ret ? finfo->ret : object_sinfo();
  }
  const auto& params = *finfo->params;
  if (params.size() != call.args.size()) {
    throw_error("TypeError", "call expects " + std::to_string(params.size()) +
                                 " argument(s) but got " + std::to_string(call.args.size()));
  }
  // Bind bare-variable dimensions of the parameters to the arguments' values.
  PrimVarMap var_map;
  auto bind_dims = [&](const std::optional<std::vector<PrimExpr>>& p,
                       const std::optional<std::vector<PrimExpr>>& a) {
    if (!p || !a || p->size() != a->size()) return;
    for (size_t i = 0; i < p->size(); ++i)
      if (auto* v = (*p)[i].as<PrimVarNode>()) var_map.emplace(PrimVar(v), (*a)[i]);
  };
  std::function<void(const StructInfo&, const StructInfo&)> bind = [&](const StructInfo& p,
                                                                       const StructInfo& a) {
    if (!p || !a || p->kind() != a->kind()) return;
    if (auto* pt = p.as<TensorStructInfoNode>()) bind_dims(pt->shape, a.as<TensorStructInfoNode>()->shape);
    else if (auto* ps = p.as<ShapeStructInfoNode>()) bind_dims(ps->values, a.as<ShapeStructInfoNode>()->values);
    else if (auto* pp = p.as<PrimStructInfoNode>()) {
      auto* ap = a.as<PrimStructInfoNode>();
      if (pp->value && ap->value)
        if (auto* v = pp->value.as<PrimVarNode>()) var_map.emplace(PrimVar(v), ap->value);
    } else if (auto* pu = p.as<TupleStructInfoNode>()) {
      auto* au = a.as<TupleStructInfoNode>();
      for (size_t i = 0; i < pu->fields.size() && i < au->fields.size(); ++i) bind(pu->fields[i], au->fields[i]);
    }
  };
  for (size_t i = 0; i < params.size(); ++i) bind(params[i], struct_info_of(call.args[i]));
  for (size_t i = 0; i < params.size(); ++i) {
    StructInfo expected = erase_to_well_defined(params[i], var_map);
    BaseCheckResult r = struct_info_base_check(expected, struct_info_of(call.args[i]));
    if (r == BaseCheckResult::FailL0 || r == BaseCheckResult::FailL1) {
      throw_error("TypeError", "argument " + std::to_string(i) +
                                   " of the call does not fit the callee's parameter struct info");
    }
  }
  return erase_to_well_defined(finfo->ret, var_map);
}

StructInfo func_struct_info_of(const FunctionNode& func) {
  std::vector<StructInfo> params;
  for (auto& p : func.params) params.push_back(struct_info_of(p));
  StructInfo ret = func.ret_struct_info;
  if (!ret && func.body) ret = func.body->struct_info_;
  if (!ret) ret = object_sinfo();
  return make<FuncStructInfoNode>(std::move(params), ret, func.is_pure);
}

}  // namespace partita
