// Normalizations (batch_norm, layer_norm) and pad.
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

void require_float(const CallNode& call, const TensorStructInfoNode& t, size_t i) {
  if (!t.dtype.is_void() && !t.dtype.is_float())
    fail(call, "TypeError", arg_name(call, i) + " must be a float tensor, but has dtype " + t.dtype.str());
}

/// Checks that argument `i` is a tensor whose shape is `expected` (when both are known).
void check_param(const CallNode& call, size_t i, const std::vector<PrimExpr>& expected, DataType dtype) {
  const TensorStructInfoNode& p = tensor_arg(call, i);
  require_float(call, p, i);
  if (!dtype.is_void() && !p.dtype.is_void() && !(p.dtype == dtype))
    fail(call, "TypeError", arg_name(call, i) + " has dtype " + p.dtype.str() + " but data has " + dtype.str());
  if (!p.is_unknown_ndim() && p.ndim != int(expected.size()))
    fail(call, "ValueError", arg_name(call, i) + " must have ndim " + std::to_string(expected.size()) + ", got " +
                                 std::to_string(p.ndim));
  if (!p.shape) return;
  for (size_t k = 0; k < expected.size(); ++k) {
    if (dims_differ((*p.shape)[k], expected[k]))
      fail(call, "ValueError", arg_name(call, i) + " has shape " + shape_str(*p.shape) + " but " +
                                   shape_str(expected) + " is required");
  }
}

StructInfo infer_batch_norm(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  require_float(call, x, 0);
  int64_t axis_attr = attr_int(call, "axis");
  StructInfo out = tensor_result(x.shape, x.dtype, x.ndim);
  if (x.is_unknown_ndim() || !x.shape) {
    for (size_t i = 1; i <= 4; ++i) require_float(call, tensor_arg(call, i), i);
    if (!x.is_unknown_ndim()) normalize_axis(call, axis_attr, x.ndim);
    return tuple_sinfo({out, arg_sinfo(call, 3), arg_sinfo(call, 4)});
  }
  int axis = normalize_axis(call, axis_attr, x.ndim);
  std::vector<PrimExpr> channel{(*x.shape)[axis]};
  for (size_t i = 1; i <= 4; ++i) check_param(call, i, channel, x.dtype);
  StructInfo stat = tensor_result(channel, x.dtype, 1);
  return tuple_sinfo({out, stat, stat});
}

StructInfo infer_layer_norm(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  require_float(call, x, 0);
  std::vector<int64_t> axes = attr_int_list(call, "axes");
  if (x.is_unknown_ndim() || !x.shape) {
    for (size_t i = 1; i <= 2; ++i) require_float(call, tensor_arg(call, i), i);
    if (!x.is_unknown_ndim()) normalize_axes(call, axes, x.ndim);
    return tensor_result(std::nullopt, x.dtype, x.ndim);
  }
  std::vector<PrimExpr> param;
  for (int a : normalize_axes(call, axes, x.ndim)) param.push_back((*x.shape)[a]);
  for (size_t i = 1; i <= 2; ++i) check_param(call, i, param, x.dtype);
  return tensor_result(x.shape, x.dtype, x.ndim);
}

StructInfo infer_pad(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  std::vector<int64_t> width = attr_int_list(call, "pad_width");
  std::string mode = attr_string(call, "pad_mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "replicate")
    fail(call, "ValueError", "pad_mode must be one of constant, reflect, edge, replicate; got '" + mode + "'");
  if (width.size() % 2 != 0)
    fail(call, "ValueError", "pad_width must hold a (before, after) pair per axis, got " + std::to_string(width.size()) +
                                 " values");
  int ndim = int(width.size() / 2);
  if (!x.is_unknown_ndim() && x.ndim != ndim)
    fail(call, "ValueError", "pad_width has " + std::to_string(width.size()) + " values but the input has ndim " +
                                 std::to_string(x.ndim) + " (needs " + std::to_string(2 * x.ndim) + ")");
  if (!x.shape) return tensor_result(std::nullopt, x.dtype, ndim);
  std::vector<PrimExpr> out;
  for (int k = 0; k < ndim; ++k) out.push_back((*x.shape)[k] + int_imm(width[2 * k] + width[2 * k + 1]));
  return tensor_result(std::move(out), x.dtype, ndim);
}

/// Per element of the data: the statistics when computed (batch_norm in training, layer_norm
/// always: the sum for the mean, the squared deviation and its sum — the deviation itself is the
/// normalization's subtraction), the normalization (subtract the mean, multiply by
/// 1/sqrt(var + eps)), then gamma and beta when `scale` and `center`. The per-channel or per-row
/// work (the square root) is not counted.
std::optional<PrimExpr> norm_flops(const CallNode& call, bool statistics) {
  auto n = arg_numel(call, 0);
  if (!n) return std::nullopt;
  int64_t per_element = 2 + (statistics ? 3 : 0) + (attr_bool(call, "scale") ? 1 : 0) +
                        (attr_bool(call, "center") ? 1 : 0);
  return int_imm(per_element) * *n;
}

}  // namespace

void register_nn_norm_ops() {
  OpDef bn;
  bn.name = "relax.nn.batch_norm";
  bn.attrs_type_key = "relax.attrs.BatchNormAttrs";
  bn.args = {{"data"}, {"gamma"}, {"beta"}, {"moving_mean"}, {"moving_var"}};
  bn.attrs = {{"axis", AttrKind::Int, int64_t(1)},      {"epsilon", AttrKind::Float, 1e-5},
              {"center", AttrKind::Bool, true},          {"scale", AttrKind::Bool, true},
              {"momentum", AttrKind::Float, 0.1},        {"training", AttrKind::Bool, true}};
  bn.infer = infer_batch_norm;
  bn.fusion_kind = FusionKind::OutEWiseFusable;
  bn.flops = [](const CallNode& call) { return norm_flops(call, attr_bool(call, "training")); };
  add_op(std::move(bn));

  OpDef ln;
  ln.name = "relax.nn.layer_norm";
  ln.attrs_type_key = "relax.attrs.LayerNormAttrs";
  ln.args = {{"data"}, {"gamma"}, {"beta"}};
  ln.attrs = {{"axes", AttrKind::IntList, std::monostate{}, true},
              {"epsilon", AttrKind::Float, 1e-5},
              {"center", AttrKind::Bool, true},
              {"scale", AttrKind::Bool, true}};
  ln.infer = infer_layer_norm;
  ln.fusion_kind = FusionKind::OutEWiseFusable;
  ln.flops = [](const CallNode& call) { return norm_flops(call, true); };
  add_op(std::move(ln));

  OpDef pad;
  pad.name = "relax.nn.pad";
  pad.attrs_type_key = "relax.attrs.PadAttrs";
  pad.args = {{"data"}};
  pad.attrs = {{"pad_width", AttrKind::IntList, std::monostate{}, true},
               {"pad_value", AttrKind::Float, 0.0},
               {"pad_mode", AttrKind::String, std::string("constant")}};
  pad.infer = infer_pad;
  pad.fusion_kind = FusionKind::Injective;
  add_op(std::move(pad));
}

}  // namespace partita::op::detail
