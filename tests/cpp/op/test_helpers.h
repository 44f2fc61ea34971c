// Shared helpers for operator tests: normalized argument vars and inference shortcuts.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "partita/op/ops.h"
#include "partita/support/error.h"

namespace partita::op::testing {

inline const DataType f32 = DataType::Float(32);
inline const DataType i64 = DataType::Int(64);

inline Var tvar(const std::string& name, std::vector<int64_t> shape, DataType dtype = DataType::Float(32)) {
  return make<VarNode>(name, tensor_sinfo(std::move(shape), dtype));
}
inline Var svar(const std::string& name, std::vector<PrimExpr> shape, DataType dtype = DataType::Float(32)) {
  return make<VarNode>(name, tensor_sinfo(std::move(shape), dtype));
}
inline Var tvar_ndim(const std::string& name, int ndim, DataType dtype = DataType::Float(32)) {
  return make<VarNode>(name, tensor_sinfo_ndim(dtype, ndim));
}

/// Infers the struct info of a call expression built by ops.h.
inline StructInfo infer(const Expr& call) {
  const auto* c = call.as<CallNode>();
  PARTITA_ICHECK(c);
  return infer_struct_info(*c);
}

/// "(1, 16, n)" style rendering of a tensor result; "ndim=2" when only ndim is known;
/// with the dtype appended: "(2, 3) float32".
std::string describe(const StructInfo& s);

/// The message of the Error thrown by `f` ("" when none is thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

}  // namespace partita::op::testing
