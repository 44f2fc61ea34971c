// Internal to src/transform: TVM's Function-constructor rule for the return struct info, shared
// by the passes that rebuild functions whose values moved to a device.
#pragma once

#include <unordered_set>

#include "partita/ir/analysis.h"

namespace partita::transform::detail {

/// `f` returning its body's struct info when the declared one is a base of it (more precise:
/// the device it now lives on, a known shape), with symbolic variables its parameters do not
/// define erased — what TVM's Function constructor does for every rebuilt function. `f` itself
/// when the declaration stays; the result is not normalized (no struct_info_ on the node).
inline Function refine_return_struct_info(const Function& f) {
  if (!f || !f->ret_struct_info || !f->body || !f->body->struct_info_) return f;
  const StructInfo& body = f->body->struct_info_;
  if (f->ret_struct_info.get() == body.get() || !is_base_of(f->ret_struct_info, body)) return f;
  std::vector<StructInfo> params;
  for (const Var& p : f->params) params.push_back(p->struct_info_);
  std::unordered_set<const Object*> defined;
  for (const PrimVar& v : definable_symbolic_vars_of(tuple_sinfo(params))) defined.insert(v.get());
  StructInfo ret = erase_to_well_defined(body, [&](const PrimVar& v) -> std::optional<PrimExpr> {
    if (defined.count(v.get())) return PrimExpr(v);
    return std::nullopt;
  });
  return make<FunctionNode>(f->params, f->body, ret, f->is_pure, f->attrs);
}

}  // namespace partita::transform::detail
