// Reductions over axes (sum, mean, max, min, variance, prod) with keepdims.
#include <set>

#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo infer_reduce(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  auto axis = attr_opt_int_list(call, "axis");
  bool keepdims = attr_bool(call, "keepdims");
  if (x.is_unknown_ndim()) {
    // Reducing everything without keepdims gives a scalar whatever the rank.
    if (!axis && !keepdims) return tensor_result(std::vector<PrimExpr>{}, x.dtype, 0);
    return tensor_result(std::nullopt, x.dtype, -1);
  }
  std::set<int> reduced;
  if (axis) {
    for (int a : normalize_axes(call, *axis, x.ndim)) reduced.insert(a);
  } else {
    for (int k = 0; k < x.ndim; ++k) reduced.insert(k);
  }
  int out_ndim = keepdims ? x.ndim : x.ndim - int(reduced.size());
  if (!x.shape) return tensor_result(std::nullopt, x.dtype, out_ndim);
  std::vector<PrimExpr> out;
  for (int k = 0; k < x.ndim; ++k) {
    if (!reduced.count(k)) out.push_back((*x.shape)[k]);
    else if (keepdims) out.push_back(int_imm(1));
  }
  return tensor_result(std::move(out), x.dtype, out_ndim);
}

}  // namespace

void register_reduction_ops() {
  for (const char* n : {"sum", "mean", "max", "min", "variance", "prod"}) {
    OpDef def;
    def.name = std::string("relax.") + n;
    def.attrs_type_key = "relax.attrs.StatisticalAttrs";
    def.args = {{"x"}};
    def.attrs = {{"axis", AttrKind::OptionalIntList, std::monostate{}}, {"keepdims", AttrKind::Bool, false}};
    def.infer = infer_reduce;
    def.fusion_kind = FusionKind::CommReduce;  // FLOPs default: one per input element
    if (def.name == "relax.variance") {
      // The mean (an add per element), then the deviation, its square and their sum.
      def.flops = [](const CallNode& call) -> std::optional<PrimExpr> {
        auto n = arg_numel(call, 0);
        if (!n) return std::nullopt;
        return int_imm(4) * *n;
      };
    }
    add_op(std::move(def));
  }
}

}  // namespace partita::op::detail
