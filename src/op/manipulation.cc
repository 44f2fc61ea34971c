// Shape manipulation: reshape, permute_dims, flatten, squeeze, expand_dims, broadcast_to.
#include <set>

#include "cost_utils.h"
#include "infer_utils.h"
#include "partita/op/ops.h"

namespace partita::op::detail {
namespace {

StructInfo infer_reshape(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  int ndim = -1;
  auto shape = shape_arg(call, 1, &ndim);
  if (!shape) return tensor_result(std::nullopt, x.dtype, ndim);
  std::vector<PrimExpr> out = *shape;
  // One -1 may stand for "whatever is left", computable when the input shape is known.
  int infer_at = -1;
  for (size_t k = 0; k < out.size(); ++k) {
    auto c = as_const_int(out[k]);
    if (c && *c == -1) {
      if (infer_at >= 0) fail(call, "ValueError", "new shape " + shape_str(out) + " has more than one -1");
      infer_at = int(k);
    } else if (c && *c < 0) {
      fail(call, "ValueError", "new shape " + shape_str(out) + " has a negative dimension");
    }
  }
  if (infer_at >= 0) {
    if (!x.shape) return tensor_result(std::nullopt, x.dtype, int(out.size()));
    std::vector<PrimExpr> rest = out;
    rest.erase(rest.begin() + infer_at);
    PrimExpr total = shape_product(*x.shape), known = shape_product(rest);
    auto ct = as_const_int(total), ck = as_const_int(known);
    if (ct && ck && (*ck == 0 || *ct % *ck != 0))
      fail(call, "ValueError", "cannot reshape " + shape_str(*x.shape) + " into " + shape_str(out) +
                                   ": " + std::to_string(*ct) + " elements are not divisible by " + std::to_string(*ck));
    out[infer_at] = floordiv(total, known);
  } else if (x.shape) {
    PrimExpr a = shape_product(*x.shape), b = shape_product(out);
    if (dims_differ(a, b))
      fail(call, "ValueError", "cannot reshape " + shape_str(*x.shape) + " (" + prim_str(a) + " elements) into " +
                                   shape_str(out) + " (" + prim_str(b) + " elements)");
  }
  return tensor_result(std::move(out), x.dtype, int(shape->size()));
}

StructInfo infer_permute_dims(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  auto axes = attr_opt_int_list(call, "axes");
  if (x.is_unknown_ndim()) return tensor_result(std::nullopt, x.dtype, axes ? int(axes->size()) : -1);
  std::vector<int> perm;
  if (axes) {
    if (int(axes->size()) != x.ndim)
      fail(call, "ValueError", "axes has " + std::to_string(axes->size()) + " entries but the tensor has ndim " +
                                   std::to_string(x.ndim));
    perm = normalize_axes(call, *axes, x.ndim);
  } else {
    for (int k = x.ndim - 1; k >= 0; --k) perm.push_back(k);
  }
  if (!x.shape) return tensor_result(std::nullopt, x.dtype, x.ndim);
  std::vector<PrimExpr> out;
  for (int p : perm) out.push_back((*x.shape)[p]);
  return tensor_result(std::move(out), x.dtype, x.ndim);
}

StructInfo infer_flatten(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  if (!x.shape) return tensor_result(std::nullopt, x.dtype, 1);
  return tensor_result(std::vector<PrimExpr>{shape_product(*x.shape)}, x.dtype, 1);
}

StructInfo infer_squeeze(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  auto axis = attr_opt_int_list(call, "axis");
  if (x.is_unknown_ndim()) return tensor_result(std::nullopt, x.dtype, -1);
  if (axis) {
    std::vector<int> axes = normalize_axes(call, *axis, x.ndim);
    std::set<int> drop(axes.begin(), axes.end());
    int out_ndim = x.ndim - int(drop.size());
    if (!x.shape) return tensor_result(std::nullopt, x.dtype, out_ndim);
    std::vector<PrimExpr> out;
    for (int k = 0; k < x.ndim; ++k) {
      const PrimExpr& d = (*x.shape)[k];
      if (!drop.count(k)) { out.push_back(d); continue; }
      if (auto c = as_const_int(d); c && *c != 1)
        fail(call, "ValueError", "cannot squeeze axis " + std::to_string(k) + " of shape " + shape_str(*x.shape) +
                                     ": its size is " + std::to_string(*c) + ", not 1");
    }
    return tensor_result(std::move(out), x.dtype, out_ndim);
  }
  if (!x.shape) return tensor_result(std::nullopt, x.dtype, -1);
  std::vector<PrimExpr> out;
  for (const auto& d : *x.shape) {
    auto c = as_const_int(d);
    if (!c) return tensor_result(std::nullopt, x.dtype, -1);  // a symbolic dim might be 1
    if (*c != 1) out.push_back(d);
  }
  int n = int(out.size());
  return tensor_result(std::move(out), x.dtype, n);
}

StructInfo infer_expand_dims(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  std::vector<int64_t> axis = attr_int_list(call, "axis");
  if (x.is_unknown_ndim()) return tensor_result(std::nullopt, x.dtype, -1);
  int out_ndim = x.ndim + int(axis.size());
  std::vector<int> axes = normalize_axes(call, axis, out_ndim);
  if (!x.shape) return tensor_result(std::nullopt, x.dtype, out_ndim);
  std::set<int> inserted(axes.begin(), axes.end());
  std::vector<PrimExpr> out;
  size_t next = 0;
  for (int k = 0; k < out_ndim; ++k) out.push_back(inserted.count(k) ? int_imm(1) : (*x.shape)[next++]);
  return tensor_result(std::move(out), x.dtype, out_ndim);
}

StructInfo infer_broadcast_to(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  int ndim = -1;
  auto shape = shape_arg(call, 1, &ndim);
  if (!shape) return tensor_result(std::nullopt, x.dtype, ndim);
  if (!x.is_unknown_ndim() && x.ndim > int(shape->size()))
    fail(call, "ValueError", "cannot broadcast a tensor of ndim " + std::to_string(x.ndim) + " to the shape " +
                                 shape_str(*shape) + " of fewer dimensions");
  if (x.shape) {
    size_t off = shape->size() - x.shape->size();
    for (size_t k = 0; k < x.shape->size(); ++k) {
      const PrimExpr& from = (*x.shape)[k];
      const PrimExpr& to = (*shape)[off + k];
      auto c = as_const_int(from);
      if ((c && *c == 1) || dims_equal(from, to)) continue;
      if (dims_differ(from, to))
        fail(call, "ValueError", "cannot broadcast shape " + shape_str(*x.shape) + " to " + shape_str(*shape) +
                                     ": dimension " + std::to_string(off + k) + " is " + prim_str(from) + " vs " +
                                     prim_str(to));
    }
  }
  return tensor_result(*shape, x.dtype, int(shape->size()));
}

// A permute_dims that moves only axes of extent 1 leaves every element where it was (the
// transformer's (1, S, D) <-> (S, 1, D) around attention): a view, not a copy.
std::optional<int64_t> permute_view_offset(const CallNode& call) {
  if (call.args.size() != 1) return std::nullopt;
  auto shape = static_shape(call.args[0]->struct_info_);
  if (!shape) return std::nullopt;
  const int64_t n = int64_t(shape->size());
  int64_t previous = -1;
  for (int64_t a : permute_dims_axes(call, n)) {
    if (a < 0 || a >= n) return std::nullopt;
    if ((*shape)[size_t(a)] == 1) continue;
    if (a < previous) return std::nullopt;
    previous = a;
  }
  return 0;
}

}  // namespace

void register_index_ops();

void register_manipulation_ops() {
  OpDef reshape;
  reshape.name = "relax.reshape";
  reshape.args = {{"x"}, {"shape"}};
  reshape.infer = infer_reshape;
  reshape.fusion_kind = FusionKind::Injective;
  reshape.view = ViewKind::Always;
  add_op(std::move(reshape));

  OpDef permute;
  permute.name = "relax.permute_dims";
  permute.attrs_type_key = "relax.attrs.PermuteDimsAttrs";
  permute.args = {{"x"}};
  permute.attrs = {{"axes", AttrKind::OptionalIntList, std::monostate{}}};
  permute.infer = infer_permute_dims;
  permute.fusion_kind = FusionKind::Injective;
  permute.view = ViewKind::Sometimes;
  permute.view_offset = permute_view_offset;
  add_op(std::move(permute));

  OpDef flatten;
  flatten.name = "relax.flatten";
  flatten.args = {{"x"}};
  flatten.infer = infer_flatten;
  flatten.fusion_kind = FusionKind::Injective;
  flatten.view = ViewKind::Always;
  add_op(std::move(flatten));

  OpDef squeeze;
  squeeze.name = "relax.squeeze";
  squeeze.attrs_type_key = "relax.attrs.SqueezeAttrs";
  squeeze.args = {{"x"}};
  squeeze.attrs = {{"axis", AttrKind::OptionalIntList, std::monostate{}}};
  squeeze.infer = infer_squeeze;
  squeeze.fusion_kind = FusionKind::Injective;
  squeeze.view = ViewKind::Always;
  add_op(std::move(squeeze));

  OpDef expand;
  expand.name = "relax.expand_dims";
  expand.attrs_type_key = "relax.attrs.ExpandDimsAttrs";
  expand.args = {{"x"}};
  expand.attrs = {{"axis", AttrKind::IntList, std::monostate{}, true}};
  expand.infer = infer_expand_dims;
  expand.fusion_kind = FusionKind::Injective;
  expand.view = ViewKind::Always;
  add_op(std::move(expand));

  OpDef bcast;
  bcast.name = "relax.broadcast_to";
  bcast.args = {{"x"}, {"shape"}};
  bcast.infer = infer_broadcast_to;
  bcast.fusion_kind = FusionKind::Broadcast;
  bcast.flops = no_flops();  // data movement
  add_op(std::move(bcast));

  register_index_ops();
}

}  // namespace partita::op::detail
