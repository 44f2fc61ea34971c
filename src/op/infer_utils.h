// Helpers shared by the operator definitions (internal to src/op): argument access with
// user-facing errors, axis normalization, shape broadcasting, shape printing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::op::detail {

/// The operator name of a call ("relax.add"), or "<call>" when the callee is not an Op.
std::string op_name(const CallNode& call);

/// Throws Error(kind, "<op>: <message>").
[[noreturn]] void fail(const CallNode& call, const std::string& kind, const std::string& message);

/// The struct info of argument `i`; throws when the argument is missing or not normalized.
const StructInfo& arg_sinfo(const CallNode& call, size_t i);
/// Argument `i` as a tensor; throws TypeError naming the argument otherwise.
const TensorStructInfoNode& tensor_arg(const CallNode& call, size_t i);
/// The positional name of argument `i` from the op's ArgSpec ("data"), or "argument i".
std::string arg_name(const CallNode& call, size_t i);

/// Attribute access with defaults resolved by make_call (they are always present).
const AttrValue* attr(const CallNode& call, const std::string& name);
int64_t attr_int(const CallNode& call, const std::string& name);
double attr_float(const CallNode& call, const std::string& name);
bool attr_bool(const CallNode& call, const std::string& name);
std::string attr_string(const CallNode& call, const std::string& name);
DataType attr_dtype(const CallNode& call, const std::string& name);
std::vector<int64_t> attr_int_list(const CallNode& call, const std::string& name);
/// nullopt when the attribute is None.
std::optional<int64_t> attr_opt_int(const CallNode& call, const std::string& name);
std::optional<std::vector<int64_t>> attr_opt_int_list(const CallNode& call, const std::string& name);

/// `axis` in [-ndim, ndim) mapped to [0, ndim); throws ValueError otherwise.
int normalize_axis(const CallNode& call, int64_t axis, int ndim);
/// Each axis normalized; throws on duplicates.
std::vector<int> normalize_axes(const CallNode& call, const std::vector<int64_t>& axes, int ndim);

/// "(10, n * 2)"
std::string prim_str(const PrimExpr& e);
std::string shape_str(const std::vector<PrimExpr>& shape);

/// Equal for all values of the variables (identity, or provably so).
bool dims_equal(const PrimExpr& a, const PrimExpr& b);
/// Provably different (both constants, unequal).
bool dims_differ(const PrimExpr& a, const PrimExpr& b);

/// Numpy broadcasting of two known shapes. Constant 1 broadcasts; a symbolic dim matched
/// against 1 or an equal dim is kept; two unrelated symbolic dims cannot be decided — nullopt
/// (the result has only a known ndim). Provably mismatched dims throw ValueError.
std::optional<std::vector<PrimExpr>> broadcast_shapes(const CallNode& call,
                                                      const std::vector<PrimExpr>& a,
                                                      const std::vector<PrimExpr>& b);

/// Product of dims (simplified).
PrimExpr shape_product(const std::vector<PrimExpr>& shape);

/// Result tensor struct info: with a shape when known, else with ndim (-1 unknown).
StructInfo tensor_result(std::optional<std::vector<PrimExpr>> shape, DataType dtype, int ndim);

/// The values of a tuple-of-PrimValue argument (strided_slice axes/begin/end/strides), or
/// nullopt when the argument is not a literal tuple of PrimValues.
std::optional<std::vector<PrimExpr>> prim_tuple_values(const CallNode& call, size_t i);

/// Registration of the operator families (each in its own file).
void add_op(OpDef def);
void register_binary_ops();
void register_unary_ops();
void register_reduction_ops();
void register_manipulation_ops();
void register_linear_algebra_ops();
void register_nn_ops();
void register_nn_conv_pool_ops();
void register_nn_norm_ops();
void register_creation_ops();
void register_search_ops();
void register_scatter_gather_ops();
void register_flip_tile_ops();
void register_triangular_cumsum_ops();
void register_nn_conv_transpose_ops();
void register_image_ops();
void register_device_ops();
void register_packed_call_ops();
void register_nn_attention_ops();

/// `infer` followed by TVM's device rule: tensors in the result that have no vdevice take the
/// operands' vdevice; operands on different vdevices are a TypeError (src/op/device.cc).
InferFn with_operand_vdevice(InferFn infer);

}  // namespace partita::op::detail

namespace partita::op::detail {

/// The values of a shape argument (a ShapeExpr, or anything of R.Shape struct info with known
/// values); nullopt with `ndim` set (-1 unknown) otherwise.
std::optional<std::vector<PrimExpr>> shape_arg(const CallNode& call, size_t i, int* ndim);

/// A statistical (reduction) family registration helper and unary helper shared across files.
StructInfo infer_unary(const CallNode& call, bool float_only);
void add_unary(const std::string& name, bool float_only, const std::string& arg);

}  // namespace partita::op::detail
