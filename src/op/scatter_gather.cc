// Element-wise indexing: gather_elements, gather_nd, scatter_elements, scatter_nd (ONNX's and
// TVM's semantics; indices may be negative, counting from the end).
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

void check_indices(const CallNode& call, size_t i) {
  const TensorStructInfoNode& idx = tensor_arg(call, i);
  if (!idx.dtype.is_void() && !idx.dtype.is_int() && !idx.dtype.is_uint())
    fail(call, "TypeError", arg_name(call, i) + " must have an integer dtype, but has " + idx.dtype.str());
}

void check_reduction(const CallNode& call) {
  std::string r = attr_string(call, "reduction");
  if (r != "update" && r != "add" && r != "mul" && r != "min" && r != "max")
    fail(call, "ValueError", "reduction must be update, add, mul, min or max; got '" + r + "'");
}

/// gather_elements: the indices' shape, the data's dtype; ranks must agree.
StructInfo infer_gather_elements(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  const TensorStructInfoNode& idx = tensor_arg(call, 1);
  check_indices(call, 1);
  if (!x.is_unknown_ndim() && !idx.is_unknown_ndim() && x.ndim != idx.ndim)
    fail(call, "ValueError", "data and indices must have the same rank, got " + std::to_string(x.ndim) + " and " +
                                 std::to_string(idx.ndim));
  if (!x.is_unknown_ndim()) normalize_axis(call, attr_int(call, "axis"), x.ndim);
  return tensor_result(idx.shape, x.dtype, idx.ndim);
}

/// gather_nd: indices (..., m) pick slices of data after `batch_dims` leading dims:
/// result = indices.shape[:-1] + data.shape[batch_dims + m:].
StructInfo infer_gather_nd(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  const TensorStructInfoNode& idx = tensor_arg(call, 1);
  check_indices(call, 1);
  int64_t b = attr_int(call, "batch_dims");
  if (b < 0) fail(call, "ValueError", "batch_dims must not be negative");
  if (!x.shape || !idx.shape) return tensor_result(std::nullopt, x.dtype, -1);
  if (idx.ndim < 1) fail(call, "ValueError", "indices must have rank >= 1");
  auto m = as_const_int(idx.shape->back());
  if (!m) return tensor_result(std::nullopt, x.dtype, -1);
  if (b + *m > x.ndim)
    fail(call, "ValueError", "indices address " + std::to_string(*m) + " dimensions after " + std::to_string(b) +
                                 " batch dimensions, but data has rank " + std::to_string(x.ndim));
  std::vector<PrimExpr> out(idx.shape->begin(), idx.shape->end() - 1);
  out.insert(out.end(), x.shape->begin() + b + *m, x.shape->end());
  return tensor_result(std::move(out), x.dtype, int(out.size()));
}

/// scatter_*: the data's struct info; updates must have the data's dtype.
StructInfo infer_scatter(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  check_indices(call, 1);
  const TensorStructInfoNode& u = tensor_arg(call, 2);
  if (!x.dtype.is_void() && !u.dtype.is_void() && !(x.dtype == u.dtype))
    fail(call, "TypeError", "updates must have the data's dtype " + x.dtype.str() + ", but have " + u.dtype.str());
  check_reduction(call);
  return tensor_result(x.shape, x.dtype, x.ndim);
}

/// Copies the data, then writes one element per update: bytes of data twice plus indices and
/// updates once.
std::optional<PrimExpr> scatter_bytes(const CallNode& call) {
  auto d = sinfo_bytes(call.args[0]->struct_info_), i = sinfo_bytes(call.args[1]->struct_info_),
       u = sinfo_bytes(call.args[2]->struct_info_);
  if (!d || !i || !u) return std::nullopt;
  return int_imm(2) * *d + *i + *u;
}

}  // namespace

void register_scatter_gather_ops() {
  OpDef ge;
  ge.name = "relax.gather_elements";
  ge.attrs_type_key = "relax.attrs.GatherElementsAttrs";
  ge.args = {{"data"}, {"indices"}};
  ge.attrs = {{"axis", AttrKind::Int, int64_t(0)}};
  ge.infer = infer_gather_elements;
  ge.fusion_kind = FusionKind::Injective;
  add_op(std::move(ge));

  OpDef gn;
  gn.name = "relax.gather_nd";
  gn.attrs_type_key = "relax.attrs.GatherNDAttrs";
  gn.args = {{"data"}, {"indices"}};
  gn.attrs = {{"batch_dims", AttrKind::Int, int64_t(0)}};
  gn.infer = infer_gather_nd;
  gn.fusion_kind = FusionKind::Injective;
  add_op(std::move(gn));

  OpDef se;
  se.name = "relax.scatter_elements";
  se.attrs_type_key = "relax.attrs.ScatterElementsAttrs";
  se.args = {{"data"}, {"indices"}, {"updates"}};
  se.attrs = {{"axis", AttrKind::Int, int64_t(0)}, {"reduction", AttrKind::String, std::string("update")}};
  se.infer = infer_scatter;
  se.fusion_kind = FusionKind::Opaque;  // writes data-dependent positions
  se.flops = [](const CallNode& call) { return arg_numel(call, 2); };
  se.bytes = scatter_bytes;
  add_op(std::move(se));

  OpDef sn;
  sn.name = "relax.scatter_nd";
  sn.attrs_type_key = "relax.attrs.ScatterNDAttrs";
  sn.args = {{"data"}, {"indices"}, {"updates"}};
  sn.attrs = {{"reduction", AttrKind::String, std::string("update")}};
  sn.infer = infer_scatter;
  sn.fusion_kind = FusionKind::Opaque;
  sn.flops = [](const CallNode& call) { return arg_numel(call, 2); };
  sn.bytes = scatter_bytes;
  add_op(std::move(sn));
}

}  // namespace partita::op::detail
