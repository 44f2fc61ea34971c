// nn activations, softmax-like ops and dropout.
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo infer_softmax(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  if (!x.dtype.is_void() && !x.dtype.is_float())
    fail(call, "TypeError", "requires a float tensor, but the input has dtype " + x.dtype.str());
  if (!x.is_unknown_ndim()) {
    if (x.ndim == 0) fail(call, "ValueError", "requires a tensor of at least 1 dimension, got a scalar");
    normalize_axis(call, attr_int(call, "axis"), x.ndim);
  }
  return tensor_result(x.shape, x.dtype, x.ndim);
}

StructInfo infer_dropout(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  double rate = attr_float(call, "rate");
  if (rate < 0 || rate >= 1) fail(call, "ValueError", "rate must be in [0, 1), got " + std::to_string(rate));
  StructInfo s = tensor_result(x.shape, x.dtype, x.ndim);
  return tuple_sinfo({s, s});  // (output, mask)
}

/// Per element: the running max, the subtraction, exp, the sum and the division (softmax) or the
/// final subtraction of log(sum) (log_softmax, which adds one log per reduced row).
std::optional<PrimExpr> softmax_flops(const CallNode& call, bool log) {
  auto n = result_numel(call);
  if (!n) return std::nullopt;
  PrimExpr flops = int_imm(5) * *n;
  if (!log) return flops;
  auto t = call.struct_info_.as_ref<TensorStructInfoNode>();
  int axis = normalize_axis(call, attr_int(call, "axis"), t->ndim);
  return flops + floordiv(*n, (*t->shape)[size_t(axis)]);
}

}  // namespace

void register_nn_ops() {
  add_unary("nn.relu", false, "data");
  for (const char* n : {"nn.gelu", "nn.gelu_tanh", "nn.silu"}) add_unary(n, true, "data");
  for (const char* n : {"nn.softmax", "nn.log_softmax"}) {
    OpDef def;
    def.name = std::string("relax.") + n;
    def.attrs_type_key = "relax.attrs.SoftmaxAttrs";
    def.args = {{"data"}};
    def.attrs = {{"axis", AttrKind::Int, int64_t(-1)}};
    def.infer = infer_softmax;
    def.fusion_kind = FusionKind::OutEWiseFusable;
    const bool log = def.name == "relax.nn.log_softmax";
    def.flops = [log](const CallNode& call) { return softmax_flops(call, log); };
    add_op(std::move(def));
  }
  OpDef dropout;
  dropout.name = "relax.nn.dropout";
  dropout.attrs_type_key = "relax.attrs.DropoutAttrs";
  dropout.args = {{"data"}};
  dropout.attrs = {{"rate", AttrKind::Float, 0.5}};
  dropout.infer = infer_dropout;
  dropout.fusion_kind = FusionKind::Opaque;
  dropout.flops = no_flops();  // inference: the identity (and a mask of ones)
  add_op(std::move(dropout));
}

}  // namespace partita::op::detail
