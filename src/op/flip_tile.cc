// Reordering and repeating: flip (reverse one axis), tile (repeat the whole tensor per axis).
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo infer_flip(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  if (!x.is_unknown_ndim()) normalize_axis(call, attr_int(call, "axis"), x.ndim);
  return tensor_result(x.shape, x.dtype, x.ndim);
}

/// numpy.tile: `repeats` shorter than the rank repeats the trailing axes; longer adds leading
/// axes.
StructInfo infer_tile(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  std::vector<int64_t> reps = attr_int_list(call, "repeats");
  for (int64_t r : reps)
    if (r < 0) fail(call, "ValueError", "repeats must not be negative, got " + std::to_string(r));
  if (x.is_unknown_ndim()) return tensor_result(std::nullopt, x.dtype, -1);
  int nd = std::max(x.ndim, int(reps.size()));
  if (!x.shape) return tensor_result(std::nullopt, x.dtype, nd);
  std::vector<PrimExpr> out;
  for (int k = 0; k < nd; ++k) {
    int xi = k - (nd - x.ndim), ri = k - (nd - int(reps.size()));
    PrimExpr d = xi >= 0 ? (*x.shape)[size_t(xi)] : int_imm(1);
    int64_t r = ri >= 0 ? reps[size_t(ri)] : 1;
    out.push_back(d * int_imm(r));
  }
  return tensor_result(std::move(out), x.dtype, nd);
}

}  // namespace

void register_flip_tile_ops() {
  OpDef flip;
  flip.name = "relax.flip";
  flip.attrs_type_key = "relax.attrs.FlipAttrs";
  flip.args = {{"data"}};
  flip.attrs = {{"axis", AttrKind::Int, std::monostate{}, true}};
  flip.infer = infer_flip;
  flip.fusion_kind = FusionKind::Injective;
  add_op(std::move(flip));

  OpDef tile;
  tile.name = "relax.tile";
  tile.attrs_type_key = "relax.attrs.TileAttrs";
  tile.args = {{"data"}};
  tile.attrs = {{"repeats", AttrKind::IntList, std::monostate{}, true}};
  tile.infer = infer_tile;
  tile.fusion_kind = FusionKind::Injective;
  tile.bytes = [](const CallNode& call) -> std::optional<PrimExpr> {  // reads what it writes
    auto out = sinfo_bytes(call.struct_info_);
    if (!out) return std::nullopt;
    return int_imm(2) * *out;
  };
  add_op(std::move(tile));
}

}  // namespace partita::op::detail
