// Helpers for the operators' cost traits (OpDef::flops, OpDef::bytes; internal to src/op):
// element and byte counts of struct info as PrimExprs, and the common cost functions.
#pragma once

#include <optional>

#include "partita/op/registry.h"

namespace partita::op::detail {

/// Elements of a tensor with a known shape; nullopt for anything else.
std::optional<PrimExpr> numel(const StructInfo& s);
/// Bytes of a tensor with a known shape and dtype, or of a tuple of such (summed); zero for
/// values that are not tensors (shapes, scalars); nullopt when a tensor's size is unknown.
std::optional<PrimExpr> sinfo_bytes(const StructInfo& s);
/// Elements of the call's result; a tuple result counts the elements of its tensors.
std::optional<PrimExpr> result_numel(const CallNode& call);
/// Elements of argument `i` (a tensor).
std::optional<PrimExpr> arg_numel(const CallNode& call, size_t i);

/// `per_element` FLOPs per result element.
CostFn flops_per_result_element(int64_t per_element);
/// No FLOPs (data movement, type conversion, creation).
CostFn no_flops();
/// Only the result is written; the arguments' data is not read (ones_like reads a shape only).
CostFn result_bytes_only();

}  // namespace partita::op::detail
