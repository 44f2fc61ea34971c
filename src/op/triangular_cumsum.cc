// Operators along the last two axes or one axis with position-dependent results: tril / triu
// (keep the lower / upper triangle from diagonal k, zero the rest) and cumsum (running sums,
// inclusive or exclusive).
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo infer_triangle(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  if (!x.is_unknown_ndim() && x.ndim < 2)
    fail(call, "ValueError", "the input must have rank >= 2, but has rank " + std::to_string(x.ndim));
  return tensor_result(x.shape, x.dtype, x.ndim);
}

/// axis None flattens the input first (numpy.cumsum).
StructInfo infer_cumsum(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  DataType dt = attr_dtype(call, "dtype");
  if (dt.is_void()) dt = x.dtype;
  auto axis = attr_opt_int(call, "axis");
  if (!axis) {
    if (!x.shape) return tensor_result(std::nullopt, dt, 1);
    return tensor_result(std::vector<PrimExpr>{shape_product(*x.shape)}, dt, 1);
  }
  if (!x.is_unknown_ndim()) normalize_axis(call, *axis, x.ndim);
  return tensor_result(x.shape, dt, x.ndim);
}

}  // namespace

void register_triangular_cumsum_ops() {
  for (const char* n : {"tril", "triu"}) {
    OpDef def;
    def.name = std::string("relax.") + n;
    def.attrs_type_key = "relax.attrs.TriluAttrs";
    def.args = {{"x"}};
    def.attrs = {{"k", AttrKind::Int, int64_t(0)}};
    def.infer = infer_triangle;
    def.fusion_kind = FusionKind::Injective;
    def.flops = no_flops();  // a selection per element
    add_op(std::move(def));
  }
  OpDef cumsum;
  cumsum.name = "relax.cumsum";
  cumsum.attrs_type_key = "relax.attrs.ScanopAttrs";
  cumsum.args = {{"data"}};
  cumsum.attrs = {{"axis", AttrKind::OptionalInt, std::monostate{}},
                  {"dtype", AttrKind::DType, DataType::Void()},
                  {"exclusive", AttrKind::Bool, false}};
  cumsum.infer = infer_cumsum;
  cumsum.fusion_kind = FusionKind::Opaque;  // a scan, as TVM has it
  cumsum.flops = flops_per_result_element(1);
  add_op(std::move(cumsum));
}

}  // namespace partita::op::detail
