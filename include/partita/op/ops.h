// C++ constructors for the registered operators, with TVM Relax's defaults.
//
// Each returns an un-normalized Call built through make_call (attributes in schema order,
// defaults filled); the BlockBuilder's normalizer infers its struct info. Tuple-like operands
// follow TVM: concat takes a Tuple expression of tensors; strided_slice's axes/begin/end/strides
// are Tuple expressions of int64 PrimValues; split's indices_or_sections is an attribute.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partita/op/registry.h"

namespace partita::op {

using IntList = std::vector<int64_t>;

// ---- element-wise binary ----
Expr add(Expr x1, Expr x2);
Expr subtract(Expr x1, Expr x2);
Expr multiply(Expr x1, Expr x2);
Expr divide(Expr x1, Expr x2);
Expr floor_divide(Expr x1, Expr x2);
Expr power(Expr x1, Expr x2);
Expr maximum(Expr x1, Expr x2);
Expr minimum(Expr x1, Expr x2);
Expr equal(Expr x1, Expr x2);
Expr not_equal(Expr x1, Expr x2);
Expr less(Expr x1, Expr x2);
Expr less_equal(Expr x1, Expr x2);
Expr greater(Expr x1, Expr x2);
Expr greater_equal(Expr x1, Expr x2);
Expr where(Expr condition, Expr x1, Expr x2);

// ---- element-wise unary ----
Expr negative(Expr x);
Expr abs(Expr x);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr rsqrt(Expr x);
Expr tanh(Expr x);
Expr sigmoid(Expr x);
Expr erf(Expr x);
/// `min` and `max` are scalar expressions (PrimValue).
Expr clip(Expr x, Expr min, Expr max);
Expr clip(Expr x, double min, double max);
Expr astype(Expr x, DataType dtype);

// ---- linear algebra ----
Expr matmul(Expr x1, Expr x2, DataType out_dtype = {});

// ---- manipulation and indexing ----
Expr permute_dims(Expr x, std::optional<IntList> axes = std::nullopt);
/// The permutation a (well-formed) permute_dims call applies to an `ndim`-d tensor: its axes
/// with negative ones resolved, or every axis reversed when it has none.
IntList permute_dims_axes(const CallNode& call, int64_t ndim);
/// A -1 in `shape` is resolved here when `x` already has a known shape (as TVM does).
Expr reshape(Expr x, std::vector<PrimExpr> shape);
Expr reshape(Expr x, Expr shape);
Expr flatten(Expr x);
Expr squeeze(Expr x, std::optional<IntList> axis = std::nullopt);
Expr expand_dims(Expr x, IntList axis);
Expr concat(std::vector<Expr> tensors, std::optional<int64_t> axis = 0);
Expr split(Expr x, int64_t sections, int64_t axis = 0);
Expr split(Expr x, IntList indices, int64_t axis = 0);
Expr strided_slice(Expr x, IntList axes, std::vector<PrimExpr> begin, std::vector<PrimExpr> end,
                   std::optional<std::vector<PrimExpr>> strides = std::nullopt, bool assume_inbound = false);
/// A strided_slice call's start along every axis of its (statically shaped) input, where its axes
/// and starts are constants and every stride is 1 (Python slice semantics: a negative start
/// counts from the end, starts clamp to the axis); else nullopt. Its extents are its result's
/// shape.
std::optional<IntList> unit_slice_begin(const CallNode& call);
Expr take(Expr x, Expr indices, std::optional<int64_t> axis = std::nullopt, std::string mode = "fast");
Expr broadcast_to(Expr x, std::vector<PrimExpr> shape);

// ---- reductions ----
Expr sum(Expr x, std::optional<IntList> axis = std::nullopt, bool keepdims = false);
Expr mean(Expr x, std::optional<IntList> axis = std::nullopt, bool keepdims = false);
Expr max(Expr x, std::optional<IntList> axis = std::nullopt, bool keepdims = false);
Expr min(Expr x, std::optional<IntList> axis = std::nullopt, bool keepdims = false);
Expr variance(Expr x, std::optional<IntList> axis = std::nullopt, bool keepdims = false);

// ---- creation ----
Expr ones(std::vector<PrimExpr> shape, DataType dtype);
Expr zeros(std::vector<PrimExpr> shape, DataType dtype);
/// `fill_value` is a scalar tensor; dtype None means the fill value's dtype.
Expr full(std::vector<PrimExpr> shape, Expr fill_value, DataType dtype = {});
Expr ones_like(Expr x, DataType dtype = {});
Expr zeros_like(Expr x, DataType dtype = {});

namespace nn {
Expr relu(Expr data);
Expr gelu(Expr data);
Expr gelu_tanh(Expr data);
Expr silu(Expr data);
Expr softmax(Expr data, int64_t axis = -1);
Expr log_softmax(Expr data, int64_t axis = -1);
/// Returns a call whose value is the tuple (output, mask).
Expr dropout(Expr data, double rate = 0.5);
/// strides/dilation of length 1 are repeated; padding of length 1 or 2 is expanded to
/// (top, left, bottom, right); out_layout defaults to data_layout.
Expr conv2d(Expr data, Expr weight, IntList strides = {1, 1}, IntList padding = {0, 0}, IntList dilation = {1, 1},
            int64_t groups = 1, std::string data_layout = "NCHW", std::string kernel_layout = "OIHW",
            std::optional<std::string> out_layout = std::nullopt, DataType out_dtype = {});
Expr max_pool2d(Expr data, IntList pool_size = {1, 1}, IntList strides = {1, 1}, IntList padding = {0, 0},
                IntList dilation = {1, 1}, bool ceil_mode = false, bool count_include_pad = false,
                std::string layout = "NCHW", std::optional<std::string> out_layout = std::nullopt);
Expr avg_pool2d(Expr data, IntList pool_size = {1, 1}, IntList strides = {1, 1}, IntList padding = {0, 0},
                IntList dilation = {1, 1}, bool ceil_mode = false, bool count_include_pad = false,
                std::string layout = "NCHW", std::optional<std::string> out_layout = std::nullopt);
Expr adaptive_avg_pool2d(Expr data, std::optional<IntList> output_size = std::nullopt, std::string layout = "NCHW",
                         std::optional<std::string> out_layout = std::nullopt);
/// Returns a call whose value is the tuple (output, new mean, new variance).
Expr batch_norm(Expr data, Expr gamma, Expr beta, Expr moving_mean, Expr moving_var, int64_t axis = 1,
                double epsilon = 1e-5, bool center = true, bool scale = true, double momentum = 0.1,
                bool training = true);
Expr layer_norm(Expr data, Expr gamma, Expr beta, IntList axes = {-1}, double epsilon = 1e-5, bool center = true,
                bool scale = true);
/// pad_width holds a (before, after) pair per axis.
Expr pad(Expr data, IntList pad_width, double pad_value = 0.0, std::string pad_mode = "constant");
}  // namespace nn

// Devices (src/op/device.cc)
/// A copy of `data` on `dst_vdevice` (TVM's relax.op.to_vdevice).
Expr to_vdevice(Expr data, VDevice dst_vdevice);
/// A hint that `data` is used on the device (DLPack type, id) with `memory_scope`, read by
/// RealizeVDevice (TVM's relax.op.hint_on_device).
Expr hint_on_device(Expr data, int64_t device_type, int64_t index, std::string memory_scope = "global");

}  // namespace partita::op
