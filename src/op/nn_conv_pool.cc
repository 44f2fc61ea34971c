// 2-D convolution and pooling. Layouts are any ordering of the four letters (NCHW, NHWC for
// data; OIHW, HWIO, OHWI for kernels); packed layouts such as NCHW4c are rejected.
#include <array>

#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

/// Position of each letter of `letters` in `layout` (e.g. "NCHW" in "NHWC" -> {0, 3, 1, 2}).
std::array<int, 4> parse_layout(const CallNode& call, const std::string& attr_name, const std::string& layout,
                                const char* letters) {
  std::array<int, 4> pos{-1, -1, -1, -1};
  bool ok = layout.size() == 4;
  for (size_t k = 0; ok && k < 4; ++k) {
    const char* hit = std::char_traits<char>::find(letters, 4, layout[k]);
    if (!hit || pos[hit - letters] >= 0) ok = false;
    else pos[hit - letters] = int(k);
  }
  if (!ok)
    fail(call, "ValueError", "unsupported " + attr_name + " \"" + layout + "\": expected an ordering of " +
                                 std::string(letters, 4) + " such as \"" + std::string(letters, 4) + "\"");
  return pos;
}

/// An attribute list of length 1 or 2 as a pair (h, w).
std::array<int64_t, 2> pair_attr(const CallNode& call, const std::string& name) {
  std::vector<int64_t> v = attr_int_list(call, name);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  fail(call, "ValueError", "attribute '" + name + "' must have 1 or 2 values, got " + std::to_string(v.size()));
}

/// Padding of length 1, 2 or 4 as (top, left, bottom, right).
std::array<int64_t, 4> padding_attr(const CallNode& call, const std::string& name) {
  std::vector<int64_t> v = attr_int_list(call, name);
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  if (v.size() == 4) return {v[0], v[1], v[2], v[3]};
  fail(call, "ValueError", "attribute '" + name + "' must have 1, 2 or 4 values, got " + std::to_string(v.size()));
}

void check_positive(const CallNode& call, const std::string& name, const std::array<int64_t, 2>& v) {
  if (v[0] <= 0 || v[1] <= 0) fail(call, "ValueError", "attribute '" + name + "' must be positive");
}

/// floor((in + pad - dilation * (k - 1) - 1 [+ stride - 1 when ceil]) / stride) + 1
PrimExpr window_out(const CallNode& call, const PrimExpr& in, const PrimExpr& k, int64_t pad, int64_t stride,
                    int64_t dilation, bool ceil_mode, const char* axis) {
  PrimExpr num = in + int_imm(pad) - int_imm(dilation) * (k - int_imm(1)) - int_imm(1);
  if (ceil_mode) num = num + int_imm(stride - 1);
  PrimExpr out = floordiv(num, int_imm(stride)) + int_imm(1);
  if (auto c = as_const_int(out); c && *c <= 0)
    fail(call, "ValueError", std::string("the output ") + axis + " size would be " + std::to_string(*c) +
                                 ": the window is larger than the padded input");
  return out;
}

/// Output shape in `out_layout` from values given in N, C, H, W order.
std::vector<PrimExpr> to_layout(const std::array<int, 4>& pos, const std::array<PrimExpr, 4>& nchw) {
  std::vector<PrimExpr> out(4);
  for (int k = 0; k < 4; ++k) out[pos[k]] = nchw[k];
  return out;
}

StructInfo infer_conv2d(const CallNode& call) {
  const TensorStructInfoNode& data = tensor_arg(call, 0);
  const TensorStructInfoNode& weight = tensor_arg(call, 1);
  auto dpos = parse_layout(call, "data_layout", attr_string(call, "data_layout"), "NCHW");
  auto kpos = parse_layout(call, "kernel_layout", attr_string(call, "kernel_layout"), "OIHW");
  auto opos = parse_layout(call, "out_layout", attr_string(call, "out_layout"), "NCHW");
  auto strides = pair_attr(call, "strides");
  auto dilation = pair_attr(call, "dilation");
  auto pad = padding_attr(call, "padding");
  check_positive(call, "strides", strides);
  check_positive(call, "dilation", dilation);
  int64_t groups = attr_int(call, "groups");
  if (groups <= 0) fail(call, "ValueError", "groups must be positive, got " + std::to_string(groups));
  DataType dtype = attr_dtype(call, "out_dtype");
  if (!data.dtype.is_void() && !weight.dtype.is_void() && !(data.dtype == weight.dtype) && dtype.is_void())
    fail(call, "TypeError", "data and weight must have the same dtype when out_dtype is None, but got " +
                                data.dtype.str() + " and " + weight.dtype.str());
  if (dtype.is_void()) dtype = data.dtype;
  if (!data.is_unknown_ndim() && data.ndim != 4)
    fail(call, "ValueError", "data must be 4-D, but has ndim " + std::to_string(data.ndim));
  if (!weight.is_unknown_ndim() && weight.ndim != 4)
    fail(call, "ValueError", "weight must be 4-D, but has ndim " + std::to_string(weight.ndim));
  if (!data.shape || !weight.shape) return tensor_result(std::nullopt, dtype, 4);
  const auto& ds = *data.shape;
  const auto& ws = *weight.shape;
  const PrimExpr &n = ds[dpos[0]], &c = ds[dpos[1]], &h = ds[dpos[2]], &w = ds[dpos[3]];
  const PrimExpr &o = ws[kpos[0]], &i = ws[kpos[1]], &kh = ws[kpos[2]], &kw = ws[kpos[3]];
  PrimExpr in_channels = i * int_imm(groups);
  if (dims_differ(c, in_channels))
    fail(call, "ValueError", "data has " + prim_str(c) + " input channels but weight " + shape_str(ws) + " expects " +
                                 prim_str(in_channels) + " (" + prim_str(i) + " per group x " + std::to_string(groups) +
                                 " groups)");
  if (auto co = as_const_int(o); co && *co % groups != 0)
    fail(call, "ValueError", "output channels " + std::to_string(*co) + " are not divisible by groups " +
                                 std::to_string(groups));
  PrimExpr oh = window_out(call, h, kh, pad[0] + pad[2], strides[0], dilation[0], false, "height");
  PrimExpr ow = window_out(call, w, kw, pad[1] + pad[3], strides[1], dilation[1], false, "width");
  return tensor_result(to_layout(opos, {n, o, oh, ow}), dtype, 4);
}

StructInfo infer_pool2d(const CallNode& call) {
  const TensorStructInfoNode& data = tensor_arg(call, 0);
  auto dpos = parse_layout(call, "layout", attr_string(call, "layout"), "NCHW");
  auto opos = parse_layout(call, "out_layout", attr_string(call, "out_layout"), "NCHW");
  auto pool = pair_attr(call, "pool_size");
  auto strides = pair_attr(call, "strides");
  auto dilation = pair_attr(call, "dilation");
  auto pad = padding_attr(call, "padding");
  check_positive(call, "pool_size", pool);
  check_positive(call, "strides", strides);
  check_positive(call, "dilation", dilation);
  bool ceil_mode = attr_bool(call, "ceil_mode");
  if (!data.is_unknown_ndim() && data.ndim != 4)
    fail(call, "ValueError", "data must be 4-D, but has ndim " + std::to_string(data.ndim));
  if (!data.shape) return tensor_result(std::nullopt, data.dtype, 4);
  const auto& ds = *data.shape;
  PrimExpr oh = window_out(call, ds[dpos[2]], int_imm(pool[0]), pad[0] + pad[2], strides[0], dilation[0], ceil_mode,
                           "height");
  PrimExpr ow = window_out(call, ds[dpos[3]], int_imm(pool[1]), pad[1] + pad[3], strides[1], dilation[1], ceil_mode,
                           "width");
  return tensor_result(to_layout(opos, {ds[dpos[0]], ds[dpos[1]], oh, ow}), data.dtype, 4);
}

StructInfo infer_adaptive_pool2d(const CallNode& call) {
  const TensorStructInfoNode& data = tensor_arg(call, 0);
  auto dpos = parse_layout(call, "layout", attr_string(call, "layout"), "NCHW");
  auto opos = parse_layout(call, "out_layout", attr_string(call, "out_layout"), "NCHW");
  auto size = attr_opt_int_list(call, "output_size");
  if (size && size->size() != 1 && size->size() != 2)
    fail(call, "ValueError", "output_size must have 1 or 2 values, got " + std::to_string(size->size()));
  if (!data.is_unknown_ndim() && data.ndim != 4)
    fail(call, "ValueError", "data must be 4-D, but has ndim " + std::to_string(data.ndim));
  if (!data.shape) return tensor_result(std::nullopt, data.dtype, 4);
  const auto& ds = *data.shape;
  PrimExpr oh = ds[dpos[2]], ow = ds[dpos[3]];
  if (size) {
    oh = int_imm((*size)[0]);
    ow = int_imm(size->size() == 2 ? (*size)[1] : (*size)[0]);
  }
  return tensor_result(to_layout(opos, {ds[dpos[0]], ds[dpos[1]], oh, ow}), data.dtype, 4);
}

/// A multiply-add per output element and weight element of its group: 2 * out * (I * KH * KW),
/// read in the call's kernel layout.
std::optional<PrimExpr> conv2d_flops(const CallNode& call) {
  auto out = result_numel(call);
  if (call.args.size() != 2) return std::nullopt;
  const auto* w = call.args[1]->struct_info_.as<TensorStructInfoNode>();
  if (!out || !w || !w->shape || w->shape->size() != 4) return std::nullopt;
  auto kpos = parse_layout(call, "kernel_layout", attr_string(call, "kernel_layout"), "OIHW");
  const auto& ws = *w->shape;
  return int_imm(2) * *out * ws[kpos[1]] * ws[kpos[2]] * ws[kpos[3]];
}

/// One comparison or addition per output element and window element.
std::optional<PrimExpr> pool2d_flops(const CallNode& call) {
  auto out = result_numel(call);
  if (!out) return std::nullopt;
  auto pool = pair_attr(call, "pool_size");
  return *out * int_imm(pool[0] * pool[1]);
}

}  // namespace

void register_nn_conv_pool_ops() {
  OpDef conv;
  conv.name = "relax.nn.conv2d";
  conv.attrs_type_key = "relax.attrs.Conv2DAttrs";
  conv.args = {{"data"}, {"weight"}};
  conv.attrs = {{"strides", AttrKind::IntList, std::vector<int64_t>{1, 1}},
                {"padding", AttrKind::IntList, std::vector<int64_t>{0, 0, 0, 0}},
                {"dilation", AttrKind::IntList, std::vector<int64_t>{1, 1}},
                {"groups", AttrKind::Int, int64_t(1)},
                {"data_layout", AttrKind::String, std::string("NCHW")},
                {"kernel_layout", AttrKind::String, std::string("OIHW")},
                {"out_layout", AttrKind::String, std::string("NCHW")},
                {"out_dtype", AttrKind::DType, DataType::Void()}};
  conv.infer = infer_conv2d;
  conv.fusion_kind = FusionKind::OutEWiseFusable;
  conv.flops = conv2d_flops;
  add_op(std::move(conv));

  for (const char* n : {"nn.max_pool2d", "nn.avg_pool2d"}) {
    OpDef pool;
    pool.name = std::string("relax.") + n;
    pool.attrs_type_key = "relax.attrs.Pool2DAttrs";
    pool.args = {{"data"}};
    pool.attrs = {{"pool_size", AttrKind::IntList, std::vector<int64_t>{1, 1}},
                  {"strides", AttrKind::IntList, std::vector<int64_t>{1, 1}},
                  {"dilation", AttrKind::IntList, std::vector<int64_t>{1, 1}},
                  {"padding", AttrKind::IntList, std::vector<int64_t>{0, 0, 0, 0}},
                  {"ceil_mode", AttrKind::Bool, false},
                  {"count_include_pad", AttrKind::Bool, false},
                  {"layout", AttrKind::String, std::string("NCHW")},
                  {"out_layout", AttrKind::String, std::string("NCHW")}};
    pool.infer = infer_pool2d;
    pool.fusion_kind = FusionKind::OutEWiseFusable;
    pool.flops = pool2d_flops;
    add_op(std::move(pool));
  }

  OpDef adaptive;
  adaptive.name = "relax.nn.adaptive_avg_pool2d";
  adaptive.attrs_type_key = "relax.attrs.AdaptivePool2DAttrs";
  adaptive.args = {{"data"}};
  adaptive.attrs = {{"output_size", AttrKind::OptionalIntList, std::monostate{}},
                    {"layout", AttrKind::String, std::string("NCHW")},
                    {"out_layout", AttrKind::String, std::string("NCHW")}};
  adaptive.infer = infer_adaptive_pool2d;
  adaptive.fusion_kind = FusionKind::OutEWiseFusable;
  // Each input element is added into its window's sum once.
  adaptive.flops = [](const CallNode& call) { return arg_numel(call, 0); };
  add_op(std::move(adaptive));
}

}  // namespace partita::op::detail
