// C++ operator constructors (see ops.h): argument shaping as TVM's Python wrappers do it,
// then make_call.
#include "partita/op/ops.h"

#include "infer_utils.h"

#include "partita/support/error.h"

namespace partita::op {
namespace {

using Attr = std::pair<std::string, AttrValue>;

AttrValue opt(const std::optional<IntList>& v) { return v ? AttrValue(*v) : AttrValue(); }
AttrValue opt(const std::optional<int64_t>& v) { return v ? AttrValue(*v) : AttrValue(); }

/// A Tuple expression of int64 PrimValues, as TVM's strided_slice operands.
Expr prim_tuple(const std::vector<PrimExpr>& values) {
  std::vector<Expr> fields;
  for (const auto& v : values) fields.push_back(make<PrimValueNode>(v));
  return make<TupleNode>(std::move(fields));
}

IntList pair(const std::string& op, const char* name, IntList v) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) throw_error("ValueError", op + ": " + name + " must have 1 or 2 values");
  return v;
}

IntList padding4(const std::string& op, IntList v) {
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  if (v.size() != 4) throw_error("ValueError", op + ": padding must have 1, 2 or 4 values");
  return v;
}

Expr pool2d(const std::string& name, Expr data, IntList pool_size, IntList strides, IntList padding,
            IntList dilation, bool ceil_mode, bool count_include_pad, std::string layout,
            std::optional<std::string> out_layout) {
  std::string out = out_layout.value_or(layout);
  return make_call(name, {std::move(data)},
                   {{"pool_size", pair(name, "pool_size", std::move(pool_size))},
                    {"strides", pair(name, "strides", std::move(strides))},
                    {"dilation", pair(name, "dilation", std::move(dilation))},
                    {"padding", padding4(name, std::move(padding))},
                    {"ceil_mode", ceil_mode},
                    {"count_include_pad", count_include_pad},
                    {"layout", std::move(layout)},
                    {"out_layout", std::move(out)}});
}

Expr reduce(const char* name, Expr x, const std::optional<IntList>& axis, bool keepdims) {
  return make_call(name, {std::move(x)}, {{"axis", opt(axis)}, {"keepdims", keepdims}});
}

}  // namespace

#define PARTITA_BINARY(fn) \
  Expr fn(Expr x1, Expr x2) { return make_call("relax." #fn, {std::move(x1), std::move(x2)}); }
PARTITA_BINARY(add)
PARTITA_BINARY(subtract)
PARTITA_BINARY(multiply)
PARTITA_BINARY(divide)
PARTITA_BINARY(floor_divide)
PARTITA_BINARY(power)
PARTITA_BINARY(maximum)
PARTITA_BINARY(minimum)
PARTITA_BINARY(equal)
PARTITA_BINARY(not_equal)
PARTITA_BINARY(less)
PARTITA_BINARY(less_equal)
PARTITA_BINARY(greater)
PARTITA_BINARY(greater_equal)
#undef PARTITA_BINARY

Expr where(Expr condition, Expr x1, Expr x2) {
  return make_call("relax.where", {std::move(condition), std::move(x1), std::move(x2)});
}

#define PARTITA_UNARY(fn, name) \
  Expr fn(Expr x) { return make_call(name, {std::move(x)}); }
PARTITA_UNARY(negative, "relax.negative")
PARTITA_UNARY(abs, "relax.abs")
PARTITA_UNARY(exp, "relax.exp")
PARTITA_UNARY(log, "relax.log")
PARTITA_UNARY(sqrt, "relax.sqrt")
PARTITA_UNARY(rsqrt, "relax.rsqrt")
PARTITA_UNARY(tanh, "relax.tanh")
PARTITA_UNARY(sigmoid, "relax.sigmoid")
PARTITA_UNARY(erf, "relax.erf")
PARTITA_UNARY(flatten, "relax.flatten")
PARTITA_UNARY(nn::relu, "relax.nn.relu")
PARTITA_UNARY(nn::gelu, "relax.nn.gelu")
PARTITA_UNARY(nn::gelu_tanh, "relax.nn.gelu_tanh")
PARTITA_UNARY(nn::silu, "relax.nn.silu")
#undef PARTITA_UNARY

Expr clip(Expr x, Expr min, Expr max) {
  return make_call("relax.clip", {std::move(x), std::move(min), std::move(max)});
}
Expr clip(Expr x, double min, double max) {
  return clip(std::move(x), make<PrimValueNode>(make<FloatImmNode>(min, DataType::Float(64))),
              make<PrimValueNode>(make<FloatImmNode>(max, DataType::Float(64))));
}
Expr astype(Expr x, DataType dtype) { return make_call("relax.astype", {std::move(x)}, {{"dtype", dtype}}); }

Expr matmul(Expr x1, Expr x2, DataType out_dtype) {
  return make_call("relax.matmul", {std::move(x1), std::move(x2)}, {{"out_dtype", out_dtype}});
}

Expr permute_dims(Expr x, std::optional<IntList> axes) {
  return make_call("relax.permute_dims", {std::move(x)}, {{"axes", opt(axes)}});
}

IntList permute_dims_axes(const CallNode& call, int64_t ndim) {
  IntList perm;
  if (auto axes = detail::attr_opt_int_list(call, "axes")) {
    for (int64_t a : *axes) perm.push_back(a < 0 ? a + ndim : a);
  } else {
    for (int64_t k = ndim - 1; k >= 0; --k) perm.push_back(k);
  }
  return perm;
}

std::optional<IntList> unit_slice_begin(const CallNode& call) {
  if (call.args.size() < 4) return std::nullopt;
  auto in = static_shape(call.args[0]->struct_info_);
  auto axes = detail::prim_tuple_values(call, 1), begin = detail::prim_tuple_values(call, 2);
  if (!in || !axes || !begin || axes->size() != begin->size()) return std::nullopt;
  if (call.args.size() > 4) {
    auto strides = detail::prim_tuple_values(call, 4);
    if (!strides) return std::nullopt;
    for (const PrimExpr& st : *strides)
      if (as_const_int(st) != std::optional<int64_t>(1)) return std::nullopt;
  }
  const int64_t nd = int64_t(in->size());
  IntList start(in->size(), 0);
  for (size_t k = 0; k < axes->size(); ++k) {
    auto a = as_const_int((*axes)[k]), b = as_const_int((*begin)[k]);
    if (!a || !b || *a < -nd || *a >= nd) return std::nullopt;
    size_t axis = size_t(*a < 0 ? *a + nd : *a);
    int64_t dim = (*in)[axis];
    start[axis] = std::clamp<int64_t>(*b < 0 ? *b + dim : *b, 0, dim);
  }
  return start;
}

Expr reshape(Expr x, std::vector<PrimExpr> shape) {
  // Resolve a single -1 from the input's known shape, so the printed call has the real size.
  const auto* t = x && x->struct_info_ ? x->struct_info_.as<TensorStructInfoNode>() : nullptr;
  int infer_at = -1, count = 0;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (auto c = as_const_int(shape[k]); c && *c == -1) infer_at = int(k), ++count;
  }
  if (count == 1 && t && t->shape) {
    PrimExpr total = int_imm(1), known = int_imm(1);
    for (const auto& d : *t->shape) total = total * d;
    for (size_t k = 0; k < shape.size(); ++k)
      if (int(k) != infer_at) known = known * shape[k];
    auto ct = as_const_int(total), ck = as_const_int(known);
    if (!(ct && ck && (*ck == 0 || *ct % *ck != 0))) shape[infer_at] = floordiv(total, known);
  }
  return reshape(std::move(x), make<ShapeExprNode>(std::move(shape)));
}
Expr reshape(Expr x, Expr shape) { return make_call("relax.reshape", {std::move(x), std::move(shape)}); }

Expr squeeze(Expr x, std::optional<IntList> axis) {
  return make_call("relax.squeeze", {std::move(x)}, {{"axis", opt(axis)}});
}
Expr expand_dims(Expr x, IntList axis) {
  return make_call("relax.expand_dims", {std::move(x)}, {{"axis", std::move(axis)}});
}
Expr concat(std::vector<Expr> tensors, std::optional<int64_t> axis) {
  return make_call("relax.concat", {make<TupleNode>(std::move(tensors))}, {{"axis", opt(axis)}});
}
Expr split(Expr x, int64_t sections, int64_t axis) {
  return make_call("relax.split", {std::move(x)}, {{"indices_or_sections", sections}, {"axis", axis}});
}
Expr split(Expr x, IntList indices, int64_t axis) {
  return make_call("relax.split", {std::move(x)}, {{"indices_or_sections", std::move(indices)}, {"axis", axis}});
}
Expr strided_slice(Expr x, IntList axes, std::vector<PrimExpr> begin, std::vector<PrimExpr> end,
                   std::optional<std::vector<PrimExpr>> strides, bool assume_inbound) {
  std::vector<PrimExpr> axis_values;
  for (int64_t a : axes) axis_values.push_back(int_imm(a));
  std::vector<Expr> args{std::move(x), prim_tuple(axis_values), prim_tuple(begin), prim_tuple(end)};
  if (strides) args.push_back(prim_tuple(*strides));
  return make_call("relax.strided_slice", std::move(args), {{"assume_inbound", assume_inbound}});
}
Expr take(Expr x, Expr indices, std::optional<int64_t> axis, std::string mode) {
  return make_call("relax.take", {std::move(x), std::move(indices)}, {{"axis", opt(axis)}, {"mode", std::move(mode)}});
}
Expr broadcast_to(Expr x, std::vector<PrimExpr> shape) {
  return make_call("relax.broadcast_to", {std::move(x), make<ShapeExprNode>(std::move(shape))});
}

Expr sum(Expr x, std::optional<IntList> axis, bool keepdims) { return reduce("relax.sum", std::move(x), axis, keepdims); }
Expr mean(Expr x, std::optional<IntList> axis, bool keepdims) { return reduce("relax.mean", std::move(x), axis, keepdims); }
Expr max(Expr x, std::optional<IntList> axis, bool keepdims) { return reduce("relax.max", std::move(x), axis, keepdims); }
Expr min(Expr x, std::optional<IntList> axis, bool keepdims) { return reduce("relax.min", std::move(x), axis, keepdims); }
Expr variance(Expr x, std::optional<IntList> axis, bool keepdims) {
  return reduce("relax.variance", std::move(x), axis, keepdims);
}

Expr ones(std::vector<PrimExpr> shape, DataType dtype) {
  return make_call("relax.ones", {make<ShapeExprNode>(std::move(shape))}, {{"dtype", dtype}});
}
Expr zeros(std::vector<PrimExpr> shape, DataType dtype) {
  return make_call("relax.zeros", {make<ShapeExprNode>(std::move(shape))}, {{"dtype", dtype}});
}
Expr full(std::vector<PrimExpr> shape, Expr fill_value, DataType dtype) {
  return make_call("relax.full", {make<ShapeExprNode>(std::move(shape)), std::move(fill_value)}, {{"dtype", dtype}});
}
Expr ones_like(Expr x, DataType dtype) { return make_call("relax.ones_like", {std::move(x)}, {{"dtype", dtype}}); }
Expr zeros_like(Expr x, DataType dtype) { return make_call("relax.zeros_like", {std::move(x)}, {{"dtype", dtype}}); }

namespace nn {

Expr softmax(Expr data, int64_t axis) { return make_call("relax.nn.softmax", {std::move(data)}, {{"axis", axis}}); }
Expr log_softmax(Expr data, int64_t axis) {
  return make_call("relax.nn.log_softmax", {std::move(data)}, {{"axis", axis}});
}
Expr dropout(Expr data, double rate) { return make_call("relax.nn.dropout", {std::move(data)}, {{"rate", rate}}); }

Expr conv2d(Expr data, Expr weight, IntList strides, IntList padding, IntList dilation, int64_t groups,
            std::string data_layout, std::string kernel_layout, std::optional<std::string> out_layout,
            DataType out_dtype) {
  const std::string name = "relax.nn.conv2d";
  std::string out = out_layout.value_or(data_layout);
  return make_call(name, {std::move(data), std::move(weight)},
                   {{"strides", pair(name, "strides", std::move(strides))},
                    {"padding", padding4(name, std::move(padding))},
                    {"dilation", pair(name, "dilation", std::move(dilation))},
                    {"groups", groups},
                    {"data_layout", std::move(data_layout)},
                    {"kernel_layout", std::move(kernel_layout)},
                    {"out_layout", std::move(out)},
                    {"out_dtype", out_dtype}});
}

Expr max_pool2d(Expr data, IntList pool_size, IntList strides, IntList padding, IntList dilation, bool ceil_mode,
                bool count_include_pad, std::string layout, std::optional<std::string> out_layout) {
  return pool2d("relax.nn.max_pool2d", std::move(data), std::move(pool_size), std::move(strides), std::move(padding),
                std::move(dilation), ceil_mode, count_include_pad, std::move(layout), std::move(out_layout));
}
Expr avg_pool2d(Expr data, IntList pool_size, IntList strides, IntList padding, IntList dilation, bool ceil_mode,
                bool count_include_pad, std::string layout, std::optional<std::string> out_layout) {
  return pool2d("relax.nn.avg_pool2d", std::move(data), std::move(pool_size), std::move(strides), std::move(padding),
                std::move(dilation), ceil_mode, count_include_pad, std::move(layout), std::move(out_layout));
}
Expr adaptive_avg_pool2d(Expr data, std::optional<IntList> output_size, std::string layout,
                         std::optional<std::string> out_layout) {
  std::string out = out_layout.value_or(layout);
  if (output_size && output_size->size() == 1) output_size = IntList{(*output_size)[0], (*output_size)[0]};
  return make_call("relax.nn.adaptive_avg_pool2d", {std::move(data)},
                   {{"output_size", opt(output_size)}, {"layout", std::move(layout)}, {"out_layout", std::move(out)}});
}

Expr batch_norm(Expr data, Expr gamma, Expr beta, Expr moving_mean, Expr moving_var, int64_t axis, double epsilon,
                bool center, bool scale, double momentum, bool training) {
  return make_call("relax.nn.batch_norm",
                   {std::move(data), std::move(gamma), std::move(beta), std::move(moving_mean), std::move(moving_var)},
                   {{"axis", axis},
                    {"epsilon", epsilon},
                    {"center", center},
                    {"scale", scale},
                    {"momentum", momentum},
                    {"training", training}});
}

Expr layer_norm(Expr data, Expr gamma, Expr beta, IntList axes, double epsilon, bool center, bool scale) {
  return make_call("relax.nn.layer_norm", {std::move(data), std::move(gamma), std::move(beta)},
                   {{"axes", std::move(axes)}, {"epsilon", epsilon}, {"center", center}, {"scale", scale}});
}

Expr pad(Expr data, IntList pad_width, double pad_value, std::string pad_mode) {
  return make_call("relax.nn.pad", {std::move(data)},
                   {{"pad_width", std::move(pad_width)}, {"pad_value", pad_value}, {"pad_mode", std::move(pad_mode)}});
}

}  // namespace nn
}  // namespace partita::op
