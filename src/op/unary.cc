// Element-wise unary operators (and nn activations): the result has the input's struct info.
#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {

/// Same shape and dtype as the input; `float_only` ops reject integer inputs as TVM does.
StructInfo infer_unary(const CallNode& call, bool float_only) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  if (float_only && !x.dtype.is_void() && !x.dtype.is_float())
    fail(call, "TypeError", "requires a float tensor, but the input has dtype " + x.dtype.str());
  return tensor_result(x.shape, x.dtype, x.ndim);
}

void add_unary(const std::string& name, bool float_only, const std::string& arg) {
  OpDef def;
  def.name = "relax." + name;
  def.args = {{arg}};
  def.infer = [float_only](const CallNode& call) { return infer_unary(call, float_only); };
  def.fusion_kind = FusionKind::ElementWise;  // FLOPs: the kind's default, one per element
  add_op(std::move(def));
}

namespace {

StructInfo infer_astype(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  DataType dtype = attr_dtype(call, "dtype");
  if (dtype.is_void()) fail(call, "ValueError", "attribute 'dtype' must name a dtype");
  return tensor_result(x.shape, dtype, x.ndim);
}

StructInfo infer_clip(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  for (size_t i : {size_t(1), size_t(2)}) {
    const StructInfo& s = arg_sinfo(call, i);
    if (!s.as<PrimStructInfoNode>())
      fail(call, "TypeError", arg_name(call, i) + " must be a scalar (R.prim_value)");
  }
  return tensor_result(x.shape, x.dtype, x.ndim);
}

}  // namespace

/// A predicate on each element (isnan, logical_not): the input's shape, dtype bool.
void add_predicate(const std::string& name, bool float_only, bool bool_only) {
  OpDef def;
  def.name = "relax." + name;
  def.args = {{"x"}};
  def.infer = [float_only, bool_only](const CallNode& call) {
    const TensorStructInfoNode& x = tensor_arg(call, 0);
    if (float_only && !x.dtype.is_void() && !x.dtype.is_float())
      fail(call, "TypeError", "requires a float tensor, but the input has dtype " + x.dtype.str());
    if (bool_only && !x.dtype.is_void() && !x.dtype.is_bool())
      fail(call, "TypeError", "requires a bool tensor, but the input has dtype " + x.dtype.str());
    return tensor_result(x.shape, DataType::Bool(), x.ndim);
  };
  def.fusion_kind = FusionKind::ElementWise;
  add_op(std::move(def));
}

void register_unary_ops() {
  for (const char* n : {"negative", "abs", "floor", "ceil", "round", "trunc", "sign"}) add_unary(n, false, "x");
  for (const char* n : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos", "tan", "asin",
                        "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"})
    add_unary(n, true, "x");
  for (const char* n : {"isnan", "isinf", "isfinite"}) add_predicate(n, true, false);
  add_predicate("logical_not", false, true);

  OpDef astype;
  astype.name = "relax.astype";
  astype.attrs_type_key = "relax.attrs.AstypeAttrs";
  astype.args = {{"x"}};
  astype.attrs = {{"dtype", AttrKind::DType, std::monostate{}, true}};
  astype.infer = infer_astype;
  astype.fusion_kind = FusionKind::ElementWise;
  astype.flops = no_flops();  // a conversion, not arithmetic
  add_op(std::move(astype));

  OpDef clip;
  clip.name = "relax.clip";
  clip.args = {{"x"}, {"min"}, {"max"}};
  clip.infer = infer_clip;
  clip.fusion_kind = FusionKind::ElementWise;
  add_op(std::move(clip));
}

}  // namespace partita::op::detail
