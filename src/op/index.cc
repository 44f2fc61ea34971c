// Joining, splitting and indexing: concat, split, strided_slice, take.
#include "cost_utils.h"
#include "infer_utils.h"
#include "partita/op/ops.h"

namespace partita::op::detail {
namespace {

StructInfo infer_concat(const CallNode& call) {
  const StructInfo& s = arg_sinfo(call, 0);
  const auto* tup = s.as<TupleStructInfoNode>();
  if (!tup) fail(call, "TypeError", "argument 'tensors' must be a tuple of tensors");
  if (tup->fields.empty()) fail(call, "ValueError", "needs at least one tensor to concatenate");
  std::vector<const TensorStructInfoNode*> ts;
  DataType dtype;
  int ndim = -1;
  for (size_t i = 0; i < tup->fields.size(); ++i) {
    const auto* t = tup->fields[i].as<TensorStructInfoNode>();
    if (!t) fail(call, "TypeError", "field " + std::to_string(i) + " of argument 'tensors' is not a Tensor");
    if (i == 0) dtype = t->dtype;
    else if (!dtype.is_void() && !t->dtype.is_void() && !(dtype == t->dtype))
      fail(call, "TypeError", "all tensors must have the same dtype, but got " + dtype.str() + " and " + t->dtype.str());
    if (t->dtype.is_void()) dtype = DataType::Void();
    if (!t->is_unknown_ndim()) {
      if (ndim >= 0 && t->ndim != ndim)
        fail(call, "ValueError", "all tensors must have the same ndim, but got " + std::to_string(ndim) + " and " +
                                     std::to_string(t->ndim));
      ndim = t->ndim;
    }
    ts.push_back(t);
  }
  auto axis_attr = attr_opt_int(call, "axis");
  if (!axis_attr) {
    // axis=None concatenates flattened inputs.
    PrimExpr total = int_imm(0);
    for (const auto* t : ts) {
      if (!t->shape) return tensor_result(std::nullopt, dtype, 1);
      total = total + shape_product(*t->shape);
    }
    return tensor_result(std::vector<PrimExpr>{total}, dtype, 1);
  }
  if (ndim < 0) return tensor_result(std::nullopt, dtype, -1);
  if (ndim == 0) fail(call, "ValueError", "cannot concatenate scalars (0-d tensors)");
  int axis = normalize_axis(call, *axis_attr, ndim);
  std::vector<PrimExpr> out;
  PrimExpr total = int_imm(0);
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i]->shape) return tensor_result(std::nullopt, dtype, ndim);
    const auto& sh = *ts[i]->shape;
    if (out.empty()) out = sh;
    for (int k = 0; k < ndim; ++k) {
      if (k == axis) continue;
      if (dims_differ(out[k], sh[k]))
        fail(call, "ValueError", "tensor " + std::to_string(i) + " has shape " + shape_str(sh) +
                                     ", which differs from " + shape_str(out) + " in dimension " + std::to_string(k) +
                                     " (only the concatenation axis " + std::to_string(axis) + " may differ)");
    }
    total = total + sh[axis];
  }
  out[axis] = total;
  return tensor_result(std::move(out), dtype, ndim);
}

StructInfo infer_split(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  const AttrValue* ios = attr(call, "indices_or_sections");
  int64_t axis_attr = attr_int(call, "axis");
  const int64_t* sections = std::get_if<int64_t>(ios);
  const auto* indices = std::get_if<std::vector<int64_t>>(ios);
  if (!sections && !indices) fail(call, "TypeError", "attribute 'indices_or_sections' must be an int or a list of ints");
  size_t n_out = sections ? size_t(*sections) : indices->size() + 1;
  if (sections && *sections <= 0)
    fail(call, "ValueError", "the number of sections must be positive, got " + std::to_string(*sections));
  if (indices) {
    for (size_t k = 1; k < indices->size(); ++k)
      if ((*indices)[k] < (*indices)[k - 1]) fail(call, "ValueError", "indices must be ascending");
  }
  auto unknown_all = [&](int ndim) {
    std::vector<StructInfo> fields(n_out, tensor_result(std::nullopt, x.dtype, ndim));
    return tuple_sinfo(std::move(fields));
  };
  if (x.is_unknown_ndim()) return unknown_all(-1);
  int axis = normalize_axis(call, axis_attr, x.ndim);
  if (!x.shape) return unknown_all(x.ndim);
  const PrimExpr dim = (*x.shape)[axis];
  auto cdim = as_const_int(dim);
  std::vector<StructInfo> fields;
  auto with_dim = [&](PrimExpr d) {
    std::vector<PrimExpr> s = *x.shape;
    s[axis] = std::move(d);
    fields.push_back(tensor_result(std::move(s), x.dtype, x.ndim));
  };
  if (sections) {
    int64_t n = *sections;
    if (cdim && *cdim % n != 0)
      fail(call, "ValueError", "cannot split dimension " + std::to_string(axis) + " of size " + std::to_string(*cdim) +
                                   " into " + std::to_string(n) + " equal sections");
    PrimExpr part = floordiv(dim + int_imm(n - 1), int_imm(n));
    for (int64_t k = 0; k < n; ++k) with_dim(part);
  } else {
    // Sections between consecutive indices, clamped to [0, dim].
    auto clamp = [&](int64_t v) -> PrimExpr {
      if (cdim) return int_imm(std::clamp<int64_t>(v < 0 ? v + *cdim : v, 0, *cdim));
      if (v < 0) return max(dim + int_imm(v), int_imm(0));
      return min(int_imm(v), dim);
    };
    PrimExpr prev = int_imm(0);
    for (int64_t idx : *indices) {
      PrimExpr cur = clamp(idx);
      with_dim(max(cur - prev, int_imm(0)));
      prev = cur;
    }
    with_dim(max(dim - prev, int_imm(0)));
  }
  return tuple_sinfo(std::move(fields));
}

/// Length of x[begin:end:stride] along a dim of size `dim`, Python slice semantics.
PrimExpr slice_length(const CallNode& call, const PrimExpr& dim, const PrimExpr& begin, const PrimExpr& end,
                      int64_t stride, bool assume_inbound) {
  auto cd = as_const_int(dim), cb = as_const_int(begin), ce = as_const_int(end);
  if (cd && cb && ce) {
    int64_t n = *cd, b = *cb, e = *ce;
    if (stride > 0) {
      b = b < 0 ? std::max<int64_t>(b + n, 0) : std::min(b, n);
      e = e < 0 ? std::max<int64_t>(e + n, 0) : std::min(e, n);
      return int_imm(e > b ? (e - b + stride - 1) / stride : 0);
    }
    b = b < 0 ? std::max<int64_t>(b + n, -1) : std::min(b, n - 1);
    e = e < 0 ? std::max<int64_t>(e + n, -1) : std::min(e, n - 1);
    return int_imm(b > e ? (b - e + (-stride) - 1) / (-stride) : 0);
  }
  if (stride <= 0) return {};  // symbolic reversed slices: leave the dim unknown
  PrimExpr b = begin, e = end;
  if (!assume_inbound) {
    auto clamp = [&](const PrimExpr& v) -> PrimExpr {
      auto c = as_const_int(v);
      if (c && *c < 0) return max(dim + v, int_imm(0));
      return min(v, dim);
    };
    b = clamp(begin);
    e = clamp(end);
  } else {
    if (cb && *cb < 0) b = dim + begin;
    if (ce && *ce < 0) e = dim + end;
  }
  PrimExpr len = floordiv(e - b + int_imm(stride - 1), int_imm(stride));
  return assume_inbound ? len : max(len, int_imm(0));
}

StructInfo infer_strided_slice(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  bool assume_inbound = attr_bool(call, "assume_inbound");
  auto axes = prim_tuple_values(call, 1);
  auto begin = prim_tuple_values(call, 2);
  auto end = prim_tuple_values(call, 3);
  std::optional<std::vector<PrimExpr>> strides;
  if (call.args.size() > 4) strides = prim_tuple_values(call, 4);
  if (axes && begin && end) {
    size_t n = axes->size();
    if (begin->size() != n || end->size() != n || (strides && strides->size() != n))
      fail(call, "ValueError", "axes, begin, end and strides must have the same length, got " +
                                   std::to_string(n) + ", " + std::to_string(begin->size()) + ", " +
                                   std::to_string(end->size()) +
                                   (strides ? ", " + std::to_string(strides->size()) : std::string()));
  }
  if (x.is_unknown_ndim()) return tensor_result(std::nullopt, x.dtype, -1);
  if (!x.shape || !axes || !begin || !end || (call.args.size() > 4 && !strides))
    return tensor_result(std::nullopt, x.dtype, x.ndim);
  std::vector<int64_t> axis_values;
  for (const auto& a : *axes) {
    auto c = as_const_int(a);
    if (!c) fail(call, "ValueError", "axes must be constant integers");
    axis_values.push_back(*c);
  }
  std::vector<int> norm = normalize_axes(call, axis_values, x.ndim);
  std::vector<PrimExpr> out = *x.shape;
  for (size_t k = 0; k < norm.size(); ++k) {
    int64_t stride = 1;
    if (strides) {
      auto c = as_const_int((*strides)[k]);
      if (!c) return tensor_result(std::nullopt, x.dtype, x.ndim);
      if (*c == 0) fail(call, "ValueError", "stride of axis " + std::to_string(norm[k]) + " is zero");
      stride = *c;
    }
    PrimExpr len = slice_length(call, out[norm[k]], (*begin)[k], (*end)[k], stride, assume_inbound);
    if (!len) return tensor_result(std::nullopt, x.dtype, x.ndim);
    out[norm[k]] = len;
  }
  return tensor_result(std::move(out), x.dtype, x.ndim);
}

// A unit-stride slice is one contiguous run of its input when, after the last axis it narrows,
// it keeps every axis whole, and before that axis it keeps one index of each: a channel slice of
// an NCHW tensor of batch 1 (ShuffleNet's split), a row range of a matrix.
std::optional<int64_t> slice_view_offset(const CallNode& call) {
  auto in = static_shape(call.args[0]->struct_info_), out = static_shape(call.struct_info_);
  auto start = op::unit_slice_begin(call);
  if (!in || !out || !start || in->size() != out->size()) return std::nullopt;
  int64_t offset = 0, stride = 1;
  bool narrowed = false;  // an axis at or after this one is narrowed
  for (size_t d = in->size(); d-- > 0;) {
    if ((*out)[d] <= 0) return std::nullopt;
    if (narrowed && (*out)[d] != 1) return std::nullopt;
    if ((*out)[d] != (*in)[d]) narrowed = true;
    offset += (*start)[d] * stride;
    stride *= (*in)[d];
  }
  return offset;
}

StructInfo infer_take(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  const TensorStructInfoNode& idx = tensor_arg(call, 1);
  if (!idx.dtype.is_void() && !idx.dtype.is_int() && !idx.dtype.is_uint())
    fail(call, "TypeError", "argument 'indices' must have an integer dtype, but has " + idx.dtype.str());
  std::string mode = attr_string(call, "mode");
  if (mode != "fast" && mode != "nan" && mode != "wrap" && mode != "clip")
    fail(call, "ValueError", "mode must be one of fast, nan, wrap, clip; got '" + mode + "'");
  auto axis_attr = attr_opt_int(call, "axis");
  if (!axis_attr && !x.is_unknown_ndim() && x.ndim != 1)
    fail(call, "ValueError", "without an axis the input must be 1-D, but it has ndim " + std::to_string(x.ndim));
  if (x.is_unknown_ndim() || idx.is_unknown_ndim()) return tensor_result(std::nullopt, x.dtype, -1);
  int axis = axis_attr ? normalize_axis(call, *axis_attr, x.ndim) : 0;
  int out_ndim = x.ndim - 1 + idx.ndim;
  if (!x.shape || !idx.shape) return tensor_result(std::nullopt, x.dtype, out_ndim);
  std::vector<PrimExpr> out(x.shape->begin(), x.shape->begin() + axis);
  out.insert(out.end(), idx.shape->begin(), idx.shape->end());
  out.insert(out.end(), x.shape->begin() + axis + 1, x.shape->end());
  return tensor_result(std::move(out), x.dtype, out_ndim);
}

/// Reads only the elements it writes: twice the result's bytes (plus the indices for take).
std::optional<PrimExpr> gather_bytes(const CallNode& call, bool with_indices) {
  auto out = sinfo_bytes(call.struct_info_);
  if (!out) return std::nullopt;
  PrimExpr total = int_imm(2) * *out;
  if (!with_indices) return total;
  auto idx = call.args.size() > 1 ? sinfo_bytes(call.args[1]->struct_info_) : std::nullopt;
  if (!idx) return std::nullopt;
  return total + *idx;
}

}  // namespace

void register_index_ops() {
  OpDef concat;
  concat.name = "relax.concat";
  concat.attrs_type_key = "relax.attrs.ConcatAttrs";
  concat.args = {{"tensors"}};
  concat.attrs = {{"axis", AttrKind::OptionalInt, int64_t(0)}};
  concat.infer = infer_concat;
  concat.fusion_kind = FusionKind::Injective;
  add_op(std::move(concat));

  OpDef split;
  split.name = "relax.split";
  split.attrs_type_key = "relax.attrs.SplitAttrs";
  split.args = {{"x"}};
  split.attrs = {{"indices_or_sections", AttrKind::IntOrIntList, std::monostate{}, true},
                 {"axis", AttrKind::Int, int64_t(0)}};
  split.infer = infer_split;
  split.fusion_kind = FusionKind::Injective;
  add_op(std::move(split));

  OpDef slice;
  slice.name = "relax.strided_slice";
  slice.attrs_type_key = "relax.attrs.StridedSliceAttrs";
  slice.args = {{"x"}, {"axes"}, {"begin"}, {"end"}, {"strides", true}};
  slice.attrs = {{"assume_inbound", AttrKind::Bool, false}};
  slice.infer = infer_strided_slice;
  slice.fusion_kind = FusionKind::Injective;
  slice.view = ViewKind::Sometimes;
  slice.view_offset = slice_view_offset;
  slice.bytes = [](const CallNode& call) { return gather_bytes(call, false); };
  add_op(std::move(slice));

  OpDef take;
  take.name = "relax.take";
  take.attrs_type_key = "relax.attrs.TakeAttrs";
  take.args = {{"x"}, {"indices"}};
  take.attrs = {{"axis", AttrKind::OptionalInt, std::monostate{}}, {"mode", AttrKind::String, std::string("fast")}};
  take.infer = infer_take;
  take.fusion_kind = FusionKind::Injective;
  take.bytes = [](const CallNode& call) { return gather_bytes(call, true); };
  add_op(std::move(take));
}

}  // namespace partita::op::detail
