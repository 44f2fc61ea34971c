// Transposed 2-D convolution (the gradient of conv2d with respect to its input; ONNX
// ConvTranspose): NCHW data, IOHW weight (in channels, out channels per group, kh, kw).
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

std::vector<int64_t> sized_list(const CallNode& call, const char* name, size_t n) {
  std::vector<int64_t> v = attr_int_list(call, name);
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() == 2 && n == 4) v = {v[0], v[1], v[0], v[1]};
  if (v.size() != n)
    fail(call, "ValueError", std::string("attribute '") + name + "' must have " + std::to_string(n) + " values");
  return v;
}

StructInfo infer_conv2d_transpose(const CallNode& call) {
  const TensorStructInfoNode& data = tensor_arg(call, 0);
  const TensorStructInfoNode& weight = tensor_arg(call, 1);
  for (auto [name, want] : {std::pair{"data_layout", "NCHW"}, {"kernel_layout", "IOHW"}, {"out_layout", "NCHW"}})
    if (attr_string(call, name) != want)
      fail(call, "ValueError", std::string("only ") + name + " \"" + want + "\" is supported, got \"" +
                                   attr_string(call, name) + "\"");
  auto strides = sized_list(call, "strides", 2), dilation = sized_list(call, "dilation", 2);
  auto pad = sized_list(call, "padding", 4), out_pad = sized_list(call, "output_padding", 2);
  for (size_t k = 0; k < 2; ++k) {
    if (strides[k] <= 0 || dilation[k] <= 0) fail(call, "ValueError", "strides and dilation must be positive");
    if (out_pad[k] < 0 || out_pad[k] >= std::max(strides[k], dilation[k]))
      fail(call, "ValueError", "output_padding must be smaller than the stride or the dilation");
  }
  int64_t groups = attr_int(call, "groups");
  if (groups <= 0) fail(call, "ValueError", "groups must be positive, got " + std::to_string(groups));
  DataType dtype = attr_dtype(call, "out_dtype");
  if (!data.dtype.is_void() && !weight.dtype.is_void() && !(data.dtype == weight.dtype))
    fail(call, "TypeError", "data and weight must have the same dtype, but got " + data.dtype.str() + " and " +
                                weight.dtype.str());
  if (dtype.is_void()) dtype = data.dtype;
  if (!data.is_unknown_ndim() && data.ndim != 4)
    fail(call, "ValueError", "data must be 4-D, but has ndim " + std::to_string(data.ndim));
  if (!weight.is_unknown_ndim() && weight.ndim != 4)
    fail(call, "ValueError", "weight must be 4-D, but has ndim " + std::to_string(weight.ndim));
  if (!data.shape || !weight.shape) return tensor_result(std::nullopt, dtype, 4);
  const auto& ds = *data.shape;
  const auto& ws = *weight.shape;
  if (dims_differ(ds[1], ws[0]))
    fail(call, "ValueError", "data has " + prim_str(ds[1]) + " channels but weight " + shape_str(ws) + " expects " +
                                 prim_str(ws[0]));
  if (auto ci = as_const_int(ws[0]); ci && *ci % groups != 0)
    fail(call, "ValueError", "input channels " + std::to_string(*ci) + " are not divisible by groups " +
                                 std::to_string(groups));
  auto extent = [&](const PrimExpr& in, const PrimExpr& k, size_t a) {
    PrimExpr out = (in - int_imm(1)) * int_imm(strides[a]) - int_imm(pad[a] + pad[a + 2]) +
                   int_imm(dilation[a]) * (k - int_imm(1)) + int_imm(out_pad[a] + 1);
    if (auto c = as_const_int(out); c && *c <= 0)
      fail(call, "ValueError", "the output would have size " + std::to_string(*c) + " on a spatial axis");
    return out;
  };
  return tensor_result(std::vector<PrimExpr>{ds[0], ws[1] * int_imm(groups), extent(ds[2], ws[2], 0),
                                             extent(ds[3], ws[3], 1)},
                       dtype, 4);
}

}  // namespace

void register_nn_conv_transpose_ops() {
  OpDef def;
  def.name = "relax.nn.conv2d_transpose";
  def.attrs_type_key = "relax.attrs.Conv2DTransposeAttrs";
  def.args = {{"data"}, {"weight"}};
  def.attrs = {{"strides", AttrKind::IntList, std::vector<int64_t>{1, 1}},
               {"padding", AttrKind::IntList, std::vector<int64_t>{0, 0, 0, 0}},
               {"output_padding", AttrKind::IntList, std::vector<int64_t>{0, 0}},
               {"dilation", AttrKind::IntList, std::vector<int64_t>{1, 1}},
               {"groups", AttrKind::Int, int64_t(1)},
               {"data_layout", AttrKind::String, std::string("NCHW")},
               {"kernel_layout", AttrKind::String, std::string("IOHW")},
               {"out_layout", AttrKind::String, std::string("NCHW")},
               {"out_dtype", AttrKind::DType, DataType::Void()}};
  def.infer = infer_conv2d_transpose;
  def.fusion_kind = FusionKind::OutEWiseFusable;
  // Every input element meets every weight element of its group once: 2 * in * (O/g * kh * kw).
  def.flops = [](const CallNode& call) -> std::optional<PrimExpr> {
    auto in = arg_numel(call, 0);
    const auto* w = call.args[1]->struct_info_.as<TensorStructInfoNode>();
    if (!in || !w || !w->shape || w->shape->size() != 4) return std::nullopt;
    const auto& ws = *w->shape;
    return int_imm(2) * *in * ws[1] * ws[2] * ws[3];
  };
  add_op(std::move(def));
}

}  // namespace partita::op::detail
