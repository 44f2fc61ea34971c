// Element-wise ONNX operators: arithmetic, Mod and comparisons (folded on import-time int
// vectors), logical operators, unary math (trigonometric, rounding, IsNaN / IsInf), activations
// as compositions of registered operators, Clip, Where, Cast, CastLike.
#include <cctype>
#include <cmath>

#include "importer.h"

namespace partita::frontend::onnx_detail {
namespace {

using Fn = Expr (*)(Expr, Expr);

std::vector<Value> one(Expr e) { return {Value{std::move(e), std::nullopt}}; }

/// Element-wise evaluation of two import-time int vectors (numpy broadcasting of rank <= 1).
std::optional<SymVec> fold_binary(const NodeContext& ctx, const std::string& op) {
  auto a = ctx.input_sym(0), b = ctx.input_sym(1);
  if (!a || !b || a->dtype != b->dtype) return std::nullopt;
  size_t na = a->values.size(), nb = b->values.size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  SymVec out;
  out.dtype = a->dtype;
  out.scalar = a->scalar && b->scalar;
  size_t n = std::max(na, nb);
  if (na == 0 || nb == 0) n = 0;
  for (size_t k = 0; k < n; ++k) {
    const PrimExpr& x = a->values[na == 1 ? 0 : k];
    const PrimExpr& y = b->values[nb == 1 ? 0 : k];
    PrimExpr r;
    if (op == "Add") r = x + y;
    else if (op == "Sub") r = x - y;
    else if (op == "Mul") r = x * y;
    else if (op == "Div") {
      auto cx = as_const_int(x), cy = as_const_int(y);
      if (cy && *cy == 0) return std::nullopt;
      if (cx && cy) r = int_imm(*cx / *cy);  // ONNX integer division truncates
      else r = floordiv(x, y);                // shapes are non-negative: floor == trunc
    } else {
      return std::nullopt;
    }
    out.values.push_back(r);
  }
  return out;
}

/// A comparison of two constant int vectors, as a bool constant.
std::optional<Tensor> fold_compare(const NodeContext& ctx, const std::string& op) {
  auto a = ctx.input_sym(0), b = ctx.input_sym(1);
  if (!a || !b || !a->all_const() || !b->all_const()) return std::nullopt;
  auto x = a->consts(), y = b->consts();
  size_t na = x.size(), nb = y.size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  size_t n = (na == 0 || nb == 0) ? 0 : std::max(na, nb);
  std::vector<int64_t> shape;
  if (!(a->scalar && b->scalar)) shape.push_back(int64_t(n));
  Tensor t = Tensor::empty(shape, DataType::Bool());
  for (size_t k = 0; k < n; ++k) {
    int64_t p = x[na == 1 ? 0 : k], q = y[nb == 1 ? 0 : k];
    bool r = op == "Equal" ? p == q : op == "Less" ? p < q : op == "Greater" ? p > q
           : op == "LessOrEqual" ? p <= q : p >= q;
    t.data_as<uint8_t>()[k] = r;
  }
  return t;
}

void binary(std::map<std::string, ConvertFn>& t, const std::string& name, Fn fn) {
  t[name] = [name, fn](NodeContext& ctx) -> std::vector<Value> {
    if (auto s = fold_binary(ctx, name)) return {Value{Expr(), s}};
    if (auto c = fold_compare(ctx, name); c && name != "Add" && name != "Sub" && name != "Mul" && name != "Div")
      return one(constant(*c));
    Expr a = ctx.input(0), b = ctx.input(1);
    unify_float_dtypes(ctx, a, b);
    return one(fn(a, b));
  };
}

void unary(std::map<std::string, ConvertFn>& t, const std::string& name, Expr (*fn)(Expr)) {
  t[name] = [fn](NodeContext& ctx) { return one(fn(ctx.input(0))); };
}

/// Folds a variadic op (Sum/Min/Max) left to right.
void variadic(std::map<std::string, ConvertFn>& t, const std::string& name, Fn fn) {
  t[name] = [fn](NodeContext& ctx) {
    Expr acc = ctx.input(0);
    for (size_t i = 1; i < ctx.num_inputs(); ++i) acc = ctx.emit(fn(acc, ctx.input(i)));
    return one(acc);
  };
}

}  // namespace

void register_elementwise(std::map<std::string, ConvertFn>& t) {
  binary(t, "Add", op::add);
  binary(t, "Sub", op::subtract);
  binary(t, "Mul", op::multiply);
  binary(t, "Div", op::divide);
  binary(t, "Equal", op::equal);
  binary(t, "Less", op::less);
  binary(t, "Greater", op::greater);
  binary(t, "LessOrEqual", op::less_equal);
  binary(t, "GreaterOrEqual", op::greater_equal);
  t["Pow"] = [](NodeContext& ctx) {
    Expr x = ctx.input(0), y = ctx.input(1);
    if (!(ctx.dtype(1) == ctx.dtype(0))) y = ctx.emit(op::astype(y, ctx.dtype(0)));
    return one(op::power(x, y));
  };
  variadic(t, "Sum", op::add);
  variadic(t, "Min", op::minimum);
  variadic(t, "Max", op::maximum);
  t["Mean"] = [](NodeContext& ctx) {
    Expr acc = ctx.input(0);
    for (size_t i = 1; i < ctx.num_inputs(); ++i) acc = ctx.emit(op::add(acc, ctx.input(i)));
    return one(op::divide(acc, ctx.scalar(double(ctx.num_inputs()), ctx.dtype(0))));
  };

  unary(t, "Relu", op::nn::relu);
  unary(t, "Sigmoid", op::sigmoid);
  unary(t, "Tanh", op::tanh);
  unary(t, "Erf", op::erf);
  unary(t, "Exp", op::exp);
  unary(t, "Log", op::log);
  unary(t, "Sqrt", op::sqrt);
  t["Neg"] = [](NodeContext& ctx) -> std::vector<Value> {
    if (auto s = ctx.input_sym(0)) {
      for (auto& v : s->values) v = int_imm(0) - v;
      return {Value{Expr(), s}};
    }
    return one(op::negative(ctx.input(0)));
  };
  unary(t, "Abs", op::abs);
  for (const char* name : {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                           "Floor", "Ceil", "Round", "Sign"}) {
    std::string op_name = "relax.";
    for (const char* c = name; *c; ++c) op_name += char(std::tolower(static_cast<unsigned char>(*c)));
    t[name] = [op_name](NodeContext& ctx) { return one(op::make_call(op_name, {ctx.input(0)})); };
  }
  t["Not"] = [](NodeContext& ctx) { return one(op::make_call("relax.logical_not", {ctx.input(0)})); };
  for (auto [name, op_name] : {std::pair{"And", "relax.logical_and"}, {"Or", "relax.logical_or"}, {"Xor", "relax.logical_xor"}})
    t[name] = [op_name = std::string(op_name)](NodeContext& ctx) {
      return one(op::make_call(op_name, {ctx.input(0), ctx.input(1)}));
    };
  t["Mod"] = [](NodeContext& ctx) {
    // fmod = 1: the sign of the dividend (C's fmod); 0 (integers only): the divisor's (Python's %).
    const char* op_name = ctx.attr_int("fmod", 0) ? "relax.mod" : "relax.floor_mod";
    if (!ctx.attr_int("fmod", 0) && ctx.dtype(0).is_float()) ctx.fail("fmod must be 1 for floating-point inputs");
    return one(op::make_call(op_name, {ctx.input(0), ctx.input(1)}));
  };
  t["IsNaN"] = [](NodeContext& ctx) { return one(op::make_call("relax.isnan", {ctx.input(0)})); };
  t["IsInf"] = [](NodeContext& ctx) {
    bool neg = ctx.attr_int("detect_negative", 1) != 0, pos = ctx.attr_int("detect_positive", 1) != 0;
    Expr x = ctx.input(0);
    if (!neg && !pos) return one(op::zeros_like(x, DataType::Bool()));
    Expr inf = op::make_call("relax.isinf", {x});
    if (neg && pos) return one(inf);
    Expr sign = ctx.emit(neg ? op::less(x, ctx.scalar(0, ctx.dtype(0))) : op::greater(x, ctx.scalar(0, ctx.dtype(0))));
    return one(op::make_call("relax.logical_and", {ctx.emit(inf), sign}));
  };
  t["CastLike"] = [](NodeContext& ctx) -> std::vector<Value> {
    DataType to = ctx.dtype(1);
    if (ctx.dtype(0) == to) return {ctx.input_value(0)};
    return one(op::astype(ctx.input(0), to));
  };
  t["Celu"] = [](NodeContext& ctx) {
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    DataType dt = ctx.dtype(0);
    double alpha = ctx.attr_float("alpha", 1.0);
    Expr x = ctx.input(0);
    Expr e = ctx.emit(op::subtract(ctx.emit(op::exp(ctx.emit(op::divide(x, ctx.scalar(alpha, dt))))), ctx.scalar(1, dt)));
    Expr neg = ctx.emit(op::minimum(ctx.emit(op::multiply(e, ctx.scalar(alpha, dt))), ctx.scalar(0, dt)));
    return one(op::add(ctx.emit(op::maximum(x, ctx.scalar(0, dt))), neg));
  };
  t["Shrink"] = [](NodeContext& ctx) {
    DataType dt = ctx.dtype(0);
    double lambd = ctx.attr_float("lambd", 0.5), bias = ctx.attr_float("bias", 0.0);
    Expr x = ctx.input(0);
    Expr low = ctx.emit(op::less(x, ctx.scalar(-lambd, dt)));
    Expr high = ctx.emit(op::greater(x, ctx.scalar(lambd, dt)));
    Expr up = ctx.emit(op::add(x, ctx.scalar(bias, dt))), down = ctx.emit(op::subtract(x, ctx.scalar(bias, dt)));
    Expr rest = ctx.emit(op::where(high, down, ctx.emit(op::zeros_like(x))));
    return one(op::where(low, up, rest));
  };
  t["ThresholdedRelu"] = [](NodeContext& ctx) {
    Expr x = ctx.input(0);
    Expr keep = ctx.emit(op::greater(x, ctx.scalar(ctx.attr_float("alpha", 1.0), ctx.dtype(0))));
    return one(op::where(keep, x, ctx.emit(op::zeros_like(x))));
  };
  t["Reciprocal"] = [](NodeContext& ctx) { return one(op::divide(ctx.scalar(1, ctx.dtype(0)), ctx.input(0))); };
  t["Identity"] = [](NodeContext& ctx) -> std::vector<Value> {
    return {ctx.input_value(0)};
  };
  t["Dropout"] = [](NodeContext& ctx) -> std::vector<Value> {
    if (ctx.has_input(2)) {
      // Training mode drops nothing at ratio 0 (what exporters leave for a dropout of p = 0).
      auto training = ctx.input_const(2);
      auto ratio = ctx.has_input(1) ? ctx.input_const(1) : std::nullopt;
      bool identity = ratio && tensor_doubles(*ratio).at(0) == 0.0;
      if (!training || (tensor_ints(*training).at(0) != 0 && !identity))
        ctx.fail("only inference (training_mode false, or ratio 0) is supported", "NotImplementedError");
    }
    std::vector<Value> outs{ctx.input_value(0)};
    if (ctx.has_output(1)) outs.push_back(Value{op::ones_like(ctx.input(0), DataType::Bool()), std::nullopt});
    return outs;
  };
  t["Softplus"] = [](NodeContext& ctx) {
    Expr e = ctx.emit(op::exp(ctx.input(0)));
    return one(op::log(ctx.emit(op::add(e, ctx.scalar(1, ctx.dtype(0))))));
  };
  t["Softsign"] = [](NodeContext& ctx) {
    Expr a = ctx.emit(op::abs(ctx.input(0)));
    return one(op::divide(ctx.input(0), ctx.emit(op::add(a, ctx.scalar(1, ctx.dtype(0))))));
  };
  t["LeakyRelu"] = [](NodeContext& ctx) {
    Expr x = ctx.input(0);
    DataType dt = ctx.dtype(0);
    Expr pos = ctx.emit(op::greater(x, ctx.scalar(0, dt)));
    Expr neg = ctx.emit(op::multiply(x, ctx.scalar(ctx.attr_float("alpha", 0.01), dt)));
    return one(op::where(pos, x, neg));
  };
  t["PRelu"] = [](NodeContext& ctx) {
    Expr x = ctx.input(0);
    Expr pos = ctx.emit(op::greater(x, ctx.scalar(0, ctx.dtype(0))));
    Expr neg = ctx.emit(op::multiply(x, ctx.input(1)));
    return one(op::where(pos, x, neg));
  };
  auto elu_like = [](NodeContext& ctx, double alpha, double gamma) {
    Expr x = ctx.input(0);
    DataType dt = ctx.dtype(0);
    Expr pos = ctx.emit(op::greater(x, ctx.scalar(0, dt)));
    Expr em1 = ctx.emit(op::subtract(ctx.emit(op::exp(x)), ctx.scalar(1, dt)));
    Expr neg = ctx.emit(op::multiply(em1, ctx.scalar(alpha, dt)));
    Expr y = ctx.emit(op::where(pos, x, neg));
    return gamma == 1.0 ? y : op::multiply(y, ctx.scalar(gamma, dt));
  };
  t["Elu"] = [elu_like](NodeContext& ctx) { return one(elu_like(ctx, ctx.attr_float("alpha", 1.0), 1.0)); };
  t["Selu"] = [elu_like](NodeContext& ctx) {
    return one(elu_like(ctx, ctx.attr_float("alpha", 1.67326319217681884765625),
                        ctx.attr_float("gamma", 1.05070102214813232421875)));
  };
  t["HardSigmoid"] = [](NodeContext& ctx) {
    DataType dt = ctx.dtype(0);
    Expr y = ctx.emit(op::multiply(ctx.input(0), ctx.scalar(ctx.attr_float("alpha", 0.2), dt)));
    y = ctx.emit(op::add(y, ctx.scalar(ctx.attr_float("beta", 0.5), dt)));
    return one(op::clip(y, 0.0, 1.0));
  };
  t["HardSwish"] = [](NodeContext& ctx) {
    DataType dt = ctx.dtype(0);
    Expr x = ctx.input(0);
    Expr y = ctx.emit(op::add(ctx.emit(op::multiply(x, ctx.scalar(1.0 / 6.0, dt))), ctx.scalar(0.5, dt)));
    y = ctx.emit(op::clip(y, 0.0, 1.0));
    return one(op::multiply(x, y));
  };
  t["Clip"] = [](NodeContext& ctx) -> std::vector<Value> {
    Expr x = ctx.input(0);
    DataType dt = ctx.dtype(0);
    bool has_min = ctx.has_input(1), has_max = ctx.has_input(2);
    auto cmin = has_min ? ctx.input_const(1) : std::nullopt;
    auto cmax = has_max ? ctx.input_const(2) : std::nullopt;
    if (dt.is_float() && has_min && has_max && cmin && cmax) {
      return one(op::clip(x, tensor_doubles(*cmin).at(0), tensor_doubles(*cmax).at(0)));
    }
    if (has_min) x = ctx.emit(op::maximum(x, ctx.input(1)));
    if (has_max) x = ctx.emit(op::minimum(x, ctx.input(2)));
    return one(x);
  };
  t["Where"] = [](NodeContext& ctx) -> std::vector<Value> {
    // Constant condition over import-time vectors (exported Reshape shape computations).
    auto c = ctx.input_const(0);
    auto a = ctx.input_sym(1), b = ctx.input_sym(2);
    if (c && a && b && a->dtype == b->dtype && c->ndim() <= 1) {
      auto cv = tensor_ints(*c);
      size_t n = std::max({cv.size(), a->values.size(), b->values.size()});
      auto pick = [&](const std::vector<PrimExpr>& v, size_t k) { return v.size() == 1 ? v[0] : v.at(k); };
      bool ok = (cv.size() == 1 || cv.size() == n) && (a->values.size() == 1 || a->values.size() == n) &&
                (b->values.size() == 1 || b->values.size() == n);
      if (ok) {
        SymVec out;
        out.dtype = a->dtype;
        out.scalar = c->ndim() == 0 && a->scalar && b->scalar;
        for (size_t k = 0; k < n; ++k)
          out.values.push_back((cv.size() == 1 ? cv[0] : cv[k]) ? pick(a->values, k) : pick(b->values, k));
        return {Value{Expr(), out}};
      }
    }
    Expr x = ctx.input(1), y = ctx.input(2);
    unify_float_dtypes(ctx, x, y);
    return one(op::where(ctx.input(0), x, y));
  };
  t["Cast"] = [](NodeContext& ctx) -> std::vector<Value> {
    DataType to = onnx_dtype(int(ctx.attr_int("to", 0)), "attribute 'to'");
    if (auto s = ctx.input_sym(0); s && (to == DataType::Int(64) || to == DataType::Int(32))) {
      s->dtype = to;
      return {Value{Expr(), s}};
    }
    if (ctx.dtype(0) == to) return {ctx.input_value(0)};
    return one(op::astype(ctx.input(0), to));
  };
}

}  // namespace partita::frontend::onnx_detail
