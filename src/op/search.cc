// Searching along an axis: argmax, argmin (int64 indices) and topk (values and indices).
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

/// The input's shape with `axis` removed (or kept as 1); axis None reduces every axis.
StructInfo infer_arg_reduce(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  auto axis = attr_opt_int(call, "axis");
  bool keepdims = attr_bool(call, "keepdims");
  const DataType idx = DataType::Int(64);
  if (x.is_unknown_ndim()) {
    if (!axis && !keepdims) return tensor_result(std::vector<PrimExpr>{}, idx, 0);
    return tensor_result(std::nullopt, idx, -1);
  }
  std::optional<int> a;
  if (axis) a = normalize_axis(call, *axis, x.ndim);
  int out_ndim = keepdims ? x.ndim : (a ? x.ndim - 1 : 0);
  if (!x.shape) return tensor_result(std::nullopt, idx, out_ndim);
  std::vector<PrimExpr> out;
  for (int k = 0; k < x.ndim; ++k) {
    bool reduced = !a || *a == k;
    if (!reduced) out.push_back((*x.shape)[size_t(k)]);
    else if (keepdims) out.push_back(int_imm(1));
  }
  return tensor_result(std::move(out), idx, out_ndim);
}

StructInfo infer_topk(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  int64_t k = attr_int(call, "k");
  std::string ret = attr_string(call, "ret_type");
  DataType idx = attr_dtype(call, "dtype");
  if (!idx.is_int() && !idx.is_uint()) fail(call, "TypeError", "attribute 'dtype' must be an integer dtype");
  if (ret != "both" && ret != "values" && ret != "indices")
    fail(call, "ValueError", "ret_type must be both, values or indices; got '" + ret + "'");
  if (k < 1) fail(call, "ValueError", "k must be positive, got " + std::to_string(k));
  if (x.is_unknown_ndim()) {
    StructInfo v = tensor_result(std::nullopt, x.dtype, -1), i = tensor_result(std::nullopt, idx, -1);
    return ret == "both" ? tuple_sinfo({v, i}) : ret == "values" ? v : i;
  }
  int axis = normalize_axis(call, attr_int(call, "axis"), x.ndim);
  std::optional<std::vector<PrimExpr>> shape = x.shape;
  if (shape) {
    if (auto d = as_const_int((*shape)[size_t(axis)]); d && k > *d)
      fail(call, "ValueError", "k = " + std::to_string(k) + " exceeds the size " + std::to_string(*d) + " of axis " +
                                   std::to_string(axis));
    (*shape)[size_t(axis)] = int_imm(k);
  }
  StructInfo v = tensor_result(shape, x.dtype, x.ndim), i = tensor_result(shape, idx, x.ndim);
  return ret == "both" ? tuple_sinfo({v, i}) : ret == "values" ? v : i;
}

}  // namespace

void register_search_ops() {
  for (const char* n : {"argmax", "argmin"}) {
    OpDef def;
    def.name = std::string("relax.") + n;
    def.attrs_type_key = "relax.attrs.ArgmaxArgminAttrs";
    def.args = {{"x"}};
    def.attrs = {{"axis", AttrKind::OptionalInt, std::monostate{}}, {"keepdims", AttrKind::Bool, false}};
    def.infer = infer_arg_reduce;
    def.fusion_kind = FusionKind::CommReduce;  // one comparison per input element
    add_op(std::move(def));
  }
  OpDef topk;
  topk.name = "relax.topk";
  topk.attrs_type_key = "relax.attrs.TopKAttrs";
  topk.args = {{"data"}};
  topk.attrs = {{"k", AttrKind::Int, int64_t(1)},
                {"axis", AttrKind::Int, int64_t(-1)},
                {"ret_type", AttrKind::String, std::string("both")},
                {"largest", AttrKind::Bool, true},
                {"dtype", AttrKind::DType, DataType::Int(32)}};
  topk.infer = infer_topk;
  topk.fusion_kind = FusionKind::Opaque;  // a selection, as TVM has it
  // About log2(k) comparisons per input element for a heap selection; counted as one per
  // element and level.
  topk.flops = [](const CallNode& call) -> std::optional<PrimExpr> {
    auto n = arg_numel(call, 0);
    if (!n) return std::nullopt;
    int64_t k = attr_int(call, "k"), levels = 1;
    while ((int64_t(1) << levels) < k) ++levels;
    return int_imm(levels) * *n;
  };
  add_op(std::move(topk));
}

}  // namespace partita::op::detail
