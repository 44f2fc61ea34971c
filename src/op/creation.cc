// Tensor creation: ones, zeros, full (from a shape) and ones_like, zeros_like.
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo from_shape(const CallNode& call, DataType dtype) {
  int ndim = -1;
  auto shape = shape_arg(call, 0, &ndim);
  if (shape) {
    for (const auto& d : *shape) {
      if (auto c = as_const_int(d); c && *c < 0)
        fail(call, "ValueError", "shape " + shape_str(*shape) + " has a negative dimension");
    }
  }
  return tensor_result(std::move(shape), dtype, ndim);
}

StructInfo infer_init(const CallNode& call) {
  DataType dtype = attr_dtype(call, "dtype");
  if (dtype.is_void()) fail(call, "ValueError", "attribute 'dtype' must name a dtype");
  return from_shape(call, dtype);
}

StructInfo infer_full(const CallNode& call) {
  const TensorStructInfoNode& v = tensor_arg(call, 1);
  if (v.ndim > 0) fail(call, "ValueError", "argument 'fill_value' must be a scalar (0-d) tensor, got ndim " +
                                               std::to_string(v.ndim));
  DataType dtype = attr_dtype(call, "dtype");
  return from_shape(call, dtype.is_void() ? v.dtype : dtype);
}

StructInfo infer_like(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  DataType dtype = attr_dtype(call, "dtype");
  return tensor_result(x.shape, dtype.is_void() ? x.dtype : dtype, x.ndim);
}

/// Element-wise in TVM's terms (they fuse like any element-wise op); they only write their
/// result (the `_like` ops read their argument's shape, not its data).
void set_creation_traits(OpDef& def) {
  def.fusion_kind = FusionKind::ElementWise;
  def.flops = no_flops();
  def.bytes = result_bytes_only();
}

}  // namespace

void register_creation_ops() {
  for (const char* n : {"ones", "zeros"}) {
    OpDef def;
    def.name = std::string("relax.") + n;
    def.attrs_type_key = "relax.attrs.InitAttrs";
    def.args = {{"shape"}};
    def.attrs = {{"dtype", AttrKind::DType, std::monostate{}, true}};
    def.infer = infer_init;
    set_creation_traits(def);
    add_op(std::move(def));
  }
  OpDef full;
  full.name = "relax.full";
  full.attrs_type_key = "relax.attrs.InitAttrs";
  full.args = {{"shape"}, {"fill_value"}};
  full.attrs = {{"dtype", AttrKind::DType, DataType::Void()}};
  full.infer = infer_full;
  set_creation_traits(full);
  add_op(std::move(full));
  for (const char* n : {"ones_like", "zeros_like"}) {
    OpDef def;
    def.name = std::string("relax.") + n;
    def.attrs_type_key = "relax.attrs.InitAttrs";
    def.args = {{"x"}};
    def.attrs = {{"dtype", AttrKind::DType, DataType::Void()}};
    def.infer = infer_like;
    set_creation_traits(def);
    add_op(std::move(def));
  }
}

}  // namespace partita::op::detail
