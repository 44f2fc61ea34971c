// dtypes in generated CUDA: the storage type of a tensor element, the type values are computed
// in (float16 and bfloat16 compute in float and round when stored), literals, conversions.
#pragma once

#include <optional>
#include <string>

#include "partita/runtime/data_type.h"

namespace partita::backend::cuda {

/// Whether the cuda target handles tensors of `t` (floats of 16/32/64 bits, bfloat16, signed and
/// unsigned integers of 8..64 bits, bool).
bool dtype_supported(DataType t);
/// The C type of one stored element ("__half", "float", "pt_u8" for bool, ...).
std::string storage_type(DataType t);
/// The C type values of `t` are computed in ("float" for float16/bfloat16, "bool" for bool).
std::string compute_type(DataType t);
/// The C type reductions over `t` accumulate in ("float", "double", "pt_i64", "pt_u64").
std::string accumulate_type(DataType t);
/// `stored` (an element expression of storage type) as a compute-type expression.
std::string load_expr(DataType t, const std::string& stored);
/// `value` (of compute type) as a storage-type expression.
std::string store_expr(DataType t, const std::string& value);
/// `value`, of compute type of `from`, converted to the compute type of `to` as astype does
/// (narrowing to float16 / bfloat16 rounds to nearest even, to bool tests for non-zero).
std::string convert_expr(DataType from, DataType to, const std::string& value);
/// A literal of compute type of `t` with the value `v`, exact (hex floats, bit patterns for
/// infinities and NaN).
std::string float_literal(DataType t, double v);
std::string int_literal(DataType t, int64_t v);
/// The lowest / highest value of compute type of `t` (for max / min identities).
std::string lowest_literal(DataType t);
std::string highest_literal(DataType t);
/// The math function `name` ("exp", "sqrt", ...) for compute type of `t`: "expf" or "exp".
std::string math_fn(DataType t, const std::string& name);

}  // namespace partita::backend::cuda
