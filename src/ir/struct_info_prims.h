// Internal to the IR: visiting the PrimExprs a struct info holds (prim values, shape values,
// tensor dimensions, through tuples and function signatures), for the analyses and the functors.
#pragma once

#include "partita/ir/struct_info.h"

namespace partita::detail {

/// Calls `f` on every PrimExpr in `info`, in order.
template <class F>
void for_each_prim_expr(const StructInfo& info, F&& f) {
  if (!info) return;
  if (auto* p = info.as<PrimStructInfoNode>()) {
    if (p->value) f(p->value);
  } else if (auto* s = info.as<ShapeStructInfoNode>()) {
    if (s->values) for (auto& v : *s->values) f(v);
  } else if (auto* t = info.as<TensorStructInfoNode>()) {
    if (t->shape) for (auto& v : *t->shape) f(v);
  } else if (auto* tu = info.as<TupleStructInfoNode>()) {
    for (auto& fi : tu->fields) for_each_prim_expr(fi, f);
  } else if (auto* fn = info.as<FuncStructInfoNode>()) {
    if (fn->params) for (auto& p : *fn->params) for_each_prim_expr(p, f);
    for_each_prim_expr(fn->ret, f);
  }
}

}  // namespace partita::detail
