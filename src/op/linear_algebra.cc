// matmul: numpy semantics (batch broadcasting, 1-D operands promoted then squeezed).
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo infer_matmul(const CallNode& call) {
  const TensorStructInfoNode& a = tensor_arg(call, 0);
  const TensorStructInfoNode& b = tensor_arg(call, 1);
  DataType out_dtype = attr_dtype(call, "out_dtype");
  if (out_dtype.is_void()) {
    if (!a.dtype.is_void() && !b.dtype.is_void() && !(a.dtype == b.dtype))
      fail(call, "TypeError", "operands must have the same dtype when out_dtype is None, but got " + a.dtype.str() +
                                  " and " + b.dtype.str());
    out_dtype = a.dtype.is_void() ? b.dtype : a.dtype;
    if (a.dtype.is_void() || b.dtype.is_void()) out_dtype = DataType::Void();
  }
  if (a.ndim == 0 || b.ndim == 0) fail(call, "ValueError", "operands must have at least 1 dimension, got a scalar");
  if (a.is_unknown_ndim() || b.is_unknown_ndim()) return tensor_result(std::nullopt, out_dtype, -1);

  const bool a_vec = a.ndim == 1, b_vec = b.ndim == 1;
  const int a_batch = a_vec ? 0 : a.ndim - 2, b_batch = b_vec ? 0 : b.ndim - 2;
  const int out_ndim = std::max(a_batch, b_batch) + (a_vec ? 0 : 1) + (b_vec ? 0 : 1);
  if (!a.shape || !b.shape) return tensor_result(std::nullopt, out_dtype, out_ndim);

  const auto& as = *a.shape;
  const auto& bs = *b.shape;
  const PrimExpr& k_a = as[as.size() - 1];
  const PrimExpr& k_b = b_vec ? bs[0] : bs[bs.size() - 2];
  if (dims_differ(k_a, k_b))
    fail(call, "ValueError", "reduction dimensions differ: x1 " + shape_str(as) + " has " + prim_str(k_a) +
                                 " columns but x2 " + shape_str(bs) + " has " + prim_str(k_b) + " rows");
  std::vector<PrimExpr> batch_a(as.begin(), as.begin() + a_batch), batch_b(bs.begin(), bs.begin() + b_batch);
  auto batch = broadcast_shapes(call, batch_a, batch_b);
  if (!batch) return tensor_result(std::nullopt, out_dtype, out_ndim);
  std::vector<PrimExpr> out = *batch;
  if (!a_vec) out.push_back(as[as.size() - 2]);
  if (!b_vec) out.push_back(bs[bs.size() - 1]);
  return tensor_result(std::move(out), out_dtype, out_ndim);
}

/// A multiply-add per output element and reduction step: 2 * out * K (K: x1's last dimension).
std::optional<PrimExpr> matmul_flops(const CallNode& call) {
  auto out = result_numel(call);
  if (call.args.size() != 2) return std::nullopt;
  const auto* a = call.args[0]->struct_info_.as<TensorStructInfoNode>();
  if (!out || !a || !a->shape || a->shape->empty()) return std::nullopt;
  return int_imm(2) * *out * a->shape->back();
}

}  // namespace

void register_linear_algebra_ops() {
  OpDef def;
  def.name = "relax.matmul";
  def.attrs_type_key = "relax.attrs.MatmulAttrs";
  def.args = {{"x1"}, {"x2"}};
  def.attrs = {{"out_dtype", AttrKind::DType, DataType::Void()}};
  def.infer = infer_matmul;
  def.fusion_kind = FusionKind::OutEWiseFusable;
  def.flops = matmul_flops;
  add_op(std::move(def));
}

}  // namespace partita::op::detail
