// Image resizing: relax.image.resize2d (TVM's operator and attributes, less the roi of ONNX's
// tf_crop_and_resize mode): nearest, linear and cubic interpolation over the two spatial axes.
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo infer_resize2d(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  const std::string layout = attr_string(call, "layout");
  if (layout != "NCHW" && layout != "NHWC")
    fail(call, "ValueError", "layout must be NCHW or NHWC, got \"" + layout + "\"");
  const std::string method = attr_string(call, "method");
  if (method != "nearest_neighbor" && method != "linear" && method != "cubic")
    fail(call, "ValueError", "method must be nearest_neighbor, linear or cubic; got '" + method + "'");
  const std::string mode = attr_string(call, "coordinate_transformation_mode");
  if (mode != "half_pixel" && mode != "align_corners" && mode != "asymmetric" && mode != "pytorch_half_pixel" &&
      mode != "tf_half_pixel_for_nn")
    fail(call, "ValueError", "unsupported coordinate_transformation_mode '" + mode + "'");
  const std::string rounding = attr_string(call, "rounding_method");
  if (rounding != "round" && rounding != "floor" && rounding != "ceil" && rounding != "round_prefer_floor" &&
      rounding != "round_prefer_ceil" && !rounding.empty())
    fail(call, "ValueError", "unsupported rounding_method '" + rounding + "'");
  if (!x.dtype.is_void() && !x.dtype.is_float())
    fail(call, "TypeError", "requires a float tensor, but the input has dtype " + x.dtype.str());
  DataType dtype = attr_dtype(call, "out_dtype");
  if (dtype.is_void()) dtype = x.dtype;
  if (!x.is_unknown_ndim() && x.ndim != 4)
    fail(call, "ValueError", "data must be 4-D, but has ndim " + std::to_string(x.ndim));
  int size_ndim = -1;
  auto size = shape_arg(call, 1, &size_ndim);
  if (size && size->size() != 2) fail(call, "ValueError", "size must have 2 values (height, width)");
  if (!x.shape || !size) return tensor_result(std::nullopt, dtype, 4);
  std::vector<PrimExpr> out = *x.shape;
  const size_t h = layout == "NCHW" ? 2 : 1;
  out[h] = (*size)[0];
  out[h + 1] = (*size)[1];
  return tensor_result(std::move(out), dtype, 4);
}

}  // namespace

void register_image_ops() {
  OpDef def;
  def.name = "relax.image.resize2d";
  def.attrs_type_key = "relax.attrs.Resize2DAttrs";
  def.args = {{"data"}, {"size"}};
  def.attrs = {{"layout", AttrKind::String, std::string("NCHW")},
               {"method", AttrKind::String, std::string("linear")},
               {"coordinate_transformation_mode", AttrKind::String, std::string("half_pixel")},
               {"rounding_method", AttrKind::String, std::string("round")},
               {"cubic_alpha", AttrKind::Float, -0.5},
               {"cubic_exclude", AttrKind::Int, int64_t(0)},
               {"extrapolation_value", AttrKind::Float, 0.0},
               {"out_dtype", AttrKind::DType, DataType::Void()}};
  def.infer = infer_resize2d;
  def.fusion_kind = FusionKind::Injective;
  // Per output element: nearest reads one input element, linear 4 (7 multiply-adds), cubic 16.
  def.flops = [](const CallNode& call) -> std::optional<PrimExpr> {
    auto out = result_numel(call);
    if (!out) return std::nullopt;
    std::string m = attr_string(call, "method");
    return int_imm(m == "nearest_neighbor" ? 0 : m == "linear" ? 7 : 40) * *out;
  };
  add_op(std::move(def));
}

}  // namespace partita::op::detail
