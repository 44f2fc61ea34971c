// Element-wise binary operators with numpy broadcasting: arithmetic, comparisons, where.
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

/// The dtype of an arithmetic result: both operands must agree (void means unknown).
DataType binary_dtype(const CallNode& call, DataType a, DataType b) {
  if (a.is_void() || b.is_void()) return DataType::Void();
  if (!(a == b))
    fail(call, "TypeError", "operands must have the same dtype, but got " + a.str() + " and " + b.str());
  return a;
}

/// Struct info of broadcasting tensors `a` and `b` with result dtype `dtype`.
StructInfo broadcast_result(const CallNode& call, const TensorStructInfoNode& a, const TensorStructInfoNode& b,
                            DataType dtype) {
  if (a.shape && b.shape) {
    auto shape = broadcast_shapes(call, *a.shape, *b.shape);
    return tensor_result(std::move(shape), dtype, std::max(a.ndim, b.ndim));
  }
  int ndim = (a.is_unknown_ndim() || b.is_unknown_ndim()) ? -1 : std::max(a.ndim, b.ndim);
  return tensor_result(std::nullopt, dtype, ndim);
}

/// Scalar operands (R.Prim) act as 0-d tensors, as in TVM.
TensorStructInfo as_tensor(const CallNode& call, size_t i) {
  const StructInfo& s = arg_sinfo(call, i);
  if (const auto* p = s.as<PrimStructInfoNode>())
    return make<TensorStructInfoNode>(std::vector<PrimExpr>{}, p->dtype);
  const TensorStructInfoNode& t = tensor_arg(call, i);
  return TensorStructInfo(&t);
}

StructInfo infer_arith(const CallNode& call) {
  TensorStructInfo a = as_tensor(call, 0), b = as_tensor(call, 1);
  return broadcast_result(call, *a, *b, binary_dtype(call, a->dtype, b->dtype));
}

StructInfo infer_compare(const CallNode& call) {
  TensorStructInfo a = as_tensor(call, 0), b = as_tensor(call, 1);
  binary_dtype(call, a->dtype, b->dtype);
  return broadcast_result(call, *a, *b, DataType::Bool());
}

StructInfo infer_logical(const CallNode& call) {
  TensorStructInfo a = as_tensor(call, 0), b = as_tensor(call, 1);
  for (const auto& t : {a, b})
    if (!t->dtype.is_void() && !t->dtype.is_bool())
      fail(call, "TypeError", "operands must have dtype bool, but got " + t->dtype.str());
  return broadcast_result(call, *a, *b, DataType::Bool());
}

StructInfo infer_where(const CallNode& call) {
  const TensorStructInfoNode& c = tensor_arg(call, 0);
  TensorStructInfo a = as_tensor(call, 1), b = as_tensor(call, 2);
  if (!c.dtype.is_void() && !c.dtype.is_bool())
    fail(call, "TypeError", "argument 'condition' must have dtype bool, but has " + c.dtype.str());
  DataType dtype = binary_dtype(call, a->dtype, b->dtype);
  StructInfo ab = broadcast_result(call, *a, *b, dtype);
  return broadcast_result(call, c, *ab.as<TensorStructInfoNode>(), dtype);
}

// FLOPs: the fusion kind's default, one per output element.
void add_binary(const std::string& name, InferFn infer, bool commutative) {
  OpDef def;
  def.name = "relax." + name;
  def.args = {{"x1"}, {"x2"}};
  def.infer = std::move(infer);
  def.commutative = commutative;
  def.scalar_operands_as_tensors = true;
  def.fusion_kind = FusionKind::Broadcast;
  add_op(std::move(def));
}

}  // namespace

void register_binary_ops() {
  // Commutative as TVM's pattern matcher treats it: it tries swapped operands for add and
  // multiply only (maximum, minimum, equal are commutative too, but a pattern written for
  // maximum(c, x) must not match maximum(x, c) if partitions are to be TVM's).
  for (const char* n : {"add", "multiply"}) add_binary(n, infer_arith, true);
  // floor_mod: the sign of the divisor (Python's %); mod: the sign of the dividend (C's fmod).
  for (const char* n : {"maximum", "minimum", "subtract", "divide", "floor_divide", "power", "floor_mod", "mod"})
    add_binary(n, infer_arith, false);
  for (const char* n : {"logical_and", "logical_or", "logical_xor"}) add_binary(n, infer_logical, false);
  for (const char* n : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
    add_binary(n, infer_compare, false);
  OpDef where;
  where.name = "relax.where";
  where.args = {{"condition"}, {"x1"}, {"x2"}};
  where.infer = infer_where;
  where.scalar_operands_as_tensors = true;
  where.fusion_kind = FusionKind::Broadcast;
  add_op(std::move(where));
}

}  // namespace partita::op::detail
