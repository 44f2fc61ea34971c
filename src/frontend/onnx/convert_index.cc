// Indexing, searching and rearranging ONNX operators: GatherElements, GatherND,
// ScatterElements, ScatterND, ArgMax, ArgMin, TopK, CumSum, Trilu, Tile, OneHot, EyeLike,
// DepthToSpace, SpaceToDepth, Hardmax.
#include <cstring>

#include "importer.h"

namespace partita::frontend::onnx_detail {
namespace {

using IntList = std::vector<int64_t>;

std::vector<Value> one(Expr e) { return {Value{std::move(e), std::nullopt}}; }

Expr call(const std::string& op, std::vector<Expr> args, std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
  return op::make_call(op, std::move(args), std::move(attrs));
}

std::vector<PrimExpr> dims(const IntList& v) {
  std::vector<PrimExpr> out;
  for (int64_t d : v) out.push_back(int_imm(d));
  return out;
}

/// ONNX's reduction attribute ("none", "add", "mul", "min", "max") as the operator's.
std::string scatter_reduction(const NodeContext& ctx) {
  std::string r = ctx.attr_string("reduction", "none");
  if (r == "none") return "update";
  if (r != "add" && r != "mul" && r != "min" && r != "max") ctx.fail("unknown reduction '" + r + "'");
  return r;
}

std::vector<Value> arg_extreme(NodeContext& ctx, const char* op_name) {
  int nd = ctx.ndim(0);
  int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), nd);
  bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  Expr x = ctx.input(0);
  if (ctx.attr_int("select_last_index", 0) == 0)
    return one(call(op_name, {x}, {{"axis", axis}, {"keepdims", keepdims}}));
  // The last extreme element: the first one of the reversed axis, counted from the end.
  auto dim = as_const_int(ctx.shape(0)[size_t(axis)]);
  if (!dim) ctx.fail("select_last_index needs a static axis size", "NotImplementedError");
  Expr flipped = ctx.emit(call("relax.flip", {x}, {{"axis", axis}}));
  Expr idx = ctx.emit(call(op_name, {flipped}, {{"axis", axis}, {"keepdims", keepdims}}));
  return one(op::subtract(ctx.scalar(double(*dim - 1), DataType::Int(64)), idx));
}

std::vector<Value> topk(NodeContext& ctx) {
  IntList k = ctx.const_ints(1, "K");
  if (k.size() != 1) ctx.fail("K must hold one value");
  int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), ctx.ndim(0));
  Expr t = ctx.emit(call("relax.topk", {ctx.input(0)},
                         {{"k", k[0]}, {"axis", axis}, {"ret_type", std::string("both")},
                          {"largest", ctx.attr_int("largest", 1) != 0}, {"dtype", DataType::Int(64)}}));
  return {Value{make<TupleGetItemNode>(t, 0), std::nullopt}, Value{make<TupleGetItemNode>(t, 1), std::nullopt}};
}

std::vector<Value> cumsum(NodeContext& ctx) {
  IntList axis_v = ctx.const_ints(1, "axis");
  if (axis_v.size() != 1) ctx.fail("axis must hold one value");
  int64_t axis = norm_axis(ctx, axis_v[0], ctx.ndim(0));
  bool reverse = ctx.attr_int("reverse", 0) != 0;
  Expr x = ctx.input(0);
  if (reverse) x = ctx.emit(call("relax.flip", {x}, {{"axis", axis}}));
  Expr y = call("relax.cumsum", {x}, {{"axis", axis}, {"exclusive", ctx.attr_int("exclusive", 0) != 0}});
  if (reverse) y = call("relax.flip", {ctx.emit(y)}, {{"axis", axis}});
  return one(y);
}

/// The axis-`axis` coordinate of each element of a rank-`rank` tensor of `dim` elements along
/// that axis: arange(dim) shaped to broadcast along `axis`.
Expr axis_coordinates(const NodeContext& ctx, int64_t dim, int64_t axis, int rank) {
  IntList shape(size_t(rank), 1);
  shape[size_t(axis)] = dim;
  ctx.reserve_constant(shape, DataType::Int(64), "the coordinates along axis " + std::to_string(axis));
  Tensor t = Tensor::empty(shape, DataType::Int(64));
  for (int64_t i = 0; i < dim; ++i) t.data_as<int64_t>()[i] = i;
  return constant(t);
}

std::vector<Value> one_hot(NodeContext& ctx) {
  IntList depth_v = ctx.const_ints(1, "depth");
  if (depth_v.size() != 1 || depth_v[0] <= 0) ctx.fail("depth must be one positive value");
  const int64_t depth = depth_v[0];
  auto values = ctx.input_const(2);
  if (!values || values->numel() != 2) ctx.fail("values must be a constant of two elements", "NotImplementedError");
  const int rank = ctx.ndim(0) + 1;
  int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), rank);
  Expr idx = ctx.input(0);
  if (!(ctx.dtype(0) == DataType::Int(64))) idx = ctx.emit(op::astype(idx, DataType::Int(64)));
  // Negative indices count from the end of the depth.
  Expr neg = ctx.emit(op::less(idx, ctx.scalar(0, DataType::Int(64))));
  idx = ctx.emit(op::where(neg, ctx.emit(op::add(idx, ctx.scalar(double(depth), DataType::Int(64)))), idx));
  idx = ctx.emit(op::expand_dims(idx, {axis}));
  Expr hot = ctx.emit(op::equal(idx, axis_coordinates(ctx, depth, axis, rank)));
  const Tensor& v = *values;
  auto element = [&](int64_t i) {
    Tensor s = Tensor::empty({}, v.dtype());
    std::memcpy(s.data(), static_cast<const uint8_t*>(v.data()) + i * v.dtype().bytes(), size_t(v.dtype().bytes()));
    return constant(s);
  };
  return one(op::where(hot, element(1), element(0)));
}

std::vector<Value> eye_like(NodeContext& ctx) {
  auto shape = static_shape(make<TensorStructInfoNode>(ctx.shape(0), ctx.dtype(0)));
  if (!shape || shape->size() != 2) ctx.fail("the input must be 2-D of static shape", "NotImplementedError");
  DataType dt = ctx.attr("dtype") ? onnx_dtype(int(ctx.attr_int("dtype", 1)), "attribute 'dtype'") : ctx.dtype(0);
  const int64_t k = ctx.attr_int("k", 0), rows = (*shape)[0], cols = (*shape)[1];
  ctx.reserve_constant({rows, cols}, DataType::Float(64), "the identity matrix");
  Tensor ones = Tensor::empty({rows, cols}, DataType::Float(64));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) ones.data_as<double>()[i * cols + j] = j - i == k ? 1.0 : 0.0;
  // Built in float64 and converted by an astype of the constant, which FoldConstant evaluates
  // before partitioning.
  if (dt == DataType::Float(64)) return one(constant(ones));
  return one(op::astype(constant(ones), dt));
}

/// DepthToSpace (blocks of channels become blocks of pixels) and SpaceToDepth: a reshape to 6-D,
/// a permutation, a reshape back.
std::vector<Value> depth_space(NodeContext& ctx, bool to_space) {
  auto s = static_shape(make<TensorStructInfoNode>(ctx.shape(0), ctx.dtype(0)));
  if (!s || s->size() != 4) ctx.fail("the input must be 4-D of static shape", "NotImplementedError");
  const int64_t b = ctx.attr_int("blocksize", 0), n = (*s)[0], c = (*s)[1], h = (*s)[2], w = (*s)[3];
  if (b <= 0) ctx.fail("blocksize must be positive");
  Expr x = ctx.input(0);
  if (to_space) {
    if (c % (b * b) != 0) ctx.fail("the channels are not divisible by blocksize^2");
    const bool crd = ctx.attr_string("mode", "DCR") == "CRD";
    IntList six = crd ? IntList{n, c / (b * b), b, b, h, w} : IntList{n, b, b, c / (b * b), h, w};
    IntList perm = crd ? IntList{0, 1, 4, 2, 5, 3} : IntList{0, 3, 4, 1, 5, 2};
    x = ctx.emit(op::permute_dims(ctx.emit(op::reshape(x, dims(six))), perm));
    return one(op::reshape(x, dims({n, c / (b * b), h * b, w * b})));
  }
  if (h % b != 0 || w % b != 0) ctx.fail("the spatial size is not divisible by blocksize");
  x = ctx.emit(op::permute_dims(ctx.emit(op::reshape(x, dims({n, c, h / b, b, w / b, b}))), IntList{0, 3, 5, 1, 2, 4}));
  return one(op::reshape(x, dims({n, c * b * b, h / b, w / b})));
}

std::vector<Value> hardmax(NodeContext& ctx) {
  const int nd = ctx.ndim(0);
  int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), nd);
  auto dim = as_const_int(ctx.shape(0)[size_t(axis)]);
  if (!dim) ctx.fail("the axis must have a static size", "NotImplementedError");
  Expr idx = ctx.emit(call("relax.argmax", {ctx.input(0)}, {{"axis", axis}, {"keepdims", true}}));
  Expr hot = ctx.emit(op::equal(idx, axis_coordinates(ctx, *dim, axis, nd)));
  return one(op::astype(hot, ctx.dtype(0)));
}

}  // namespace

void register_index(std::map<std::string, ConvertFn>& t) {
  t["GatherElements"] = [](NodeContext& ctx) {
    int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), ctx.ndim(0));
    return one(call("relax.gather_elements", {ctx.input(0), ctx.input(1)}, {{"axis", axis}}));
  };
  t["GatherND"] = [](NodeContext& ctx) {
    return one(call("relax.gather_nd", {ctx.input(0), ctx.input(1)}, {{"batch_dims", ctx.attr_int("batch_dims", 0)}}));
  };
  t["ScatterElements"] = [](NodeContext& ctx) {
    int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), ctx.ndim(0));
    return one(call("relax.scatter_elements", {ctx.input(0), ctx.input(1), ctx.input(2)},
                    {{"axis", axis}, {"reduction", scatter_reduction(ctx)}}));
  };
  t["ScatterND"] = [](NodeContext& ctx) {
    return one(call("relax.scatter_nd", {ctx.input(0), ctx.input(1), ctx.input(2)},
                    {{"reduction", scatter_reduction(ctx)}}));
  };
  t["ArgMax"] = [](NodeContext& ctx) { return arg_extreme(ctx, "relax.argmax"); };
  t["ArgMin"] = [](NodeContext& ctx) { return arg_extreme(ctx, "relax.argmin"); };
  t["TopK"] = topk;
  t["CumSum"] = cumsum;
  t["Trilu"] = [](NodeContext& ctx) {
    int64_t k = 0;
    if (ctx.has_input(1)) {
      IntList kv = ctx.const_ints(1, "k");
      if (kv.size() != 1) ctx.fail("k must hold one value");
      k = kv[0];
    }
    const char* op_name = ctx.attr_int("upper", 1) ? "relax.triu" : "relax.tril";
    return one(call(op_name, {ctx.input(0)}, {{"k", k}}));
  };
  t["Tile"] = [](NodeContext& ctx) {
    IntList reps = ctx.const_ints(1, "repeats");
    if (int(reps.size()) != ctx.ndim(0)) ctx.fail("repeats must have one value per input dimension");
    return one(call("relax.tile", {ctx.input(0)}, {{"repeats", reps}}));
  };
  t["OneHot"] = one_hot;
  t["EyeLike"] = eye_like;
  t["DepthToSpace"] = [](NodeContext& ctx) { return depth_space(ctx, true); };
  t["SpaceToDepth"] = [](NodeContext& ctx) { return depth_space(ctx, false); };
  t["Hardmax"] = hardmax;
}

}  // namespace partita::frontend::onnx_detail
