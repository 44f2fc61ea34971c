// Shape and data-movement ONNX operators. The int-vector operators (Shape, Gather, Unsqueeze,
// Concat, Slice, ...) are evaluated at import on SymVec values when their operands are known,
// so exported shape arithmetic folds into a constant (or symbolic) R.shape.
#include <cmath>
#include <limits>

#include "importer.h"

namespace partita::frontend::onnx_detail {
namespace {

using IntList = std::vector<int64_t>;

std::vector<Value> one(Expr e) { return {Value{std::move(e), std::nullopt}}; }
std::vector<Value> sym(SymVec s) { return {Value{Expr(), std::move(s)}}; }

/// Python-style slice bounds of one axis of constant size `n`, clamped as ONNX does.
/// Returns (begin, end) in the form strided_slice reads (end -(n+1) = "before the start").
std::pair<int64_t, int64_t> clamp_slice(int64_t b, int64_t e, int64_t step, int64_t n) {
  if (step > 0) {
    b = b < 0 ? std::max<int64_t>(b + n, 0) : std::min(b, n);
    e = e < 0 ? std::max<int64_t>(e + n, 0) : std::min(e, n);
    return {b, e};
  }
  b = b < 0 ? std::max<int64_t>(b + n, -1) : std::min(b, n - 1);
  e = e < 0 ? std::max<int64_t>(e + n, -1) : std::min(e, n - 1);
  return {b, e == -1 ? -(n + 1) : e};
}

/// Elements picked by a slice of a constant-length vector.
std::vector<size_t> slice_indices(int64_t b, int64_t e, int64_t step, int64_t n) {
  auto [cb, ce] = clamp_slice(b, e, step, n);
  if (ce == -(n + 1)) ce = -1;
  std::vector<size_t> out;
  if (step > 0)
    for (int64_t k = cb; k < ce; k += step) out.push_back(size_t(k));
  else
    for (int64_t k = cb; k > ce; k += step) out.push_back(size_t(k));
  return out;
}

std::vector<Value> constant_node(NodeContext& ctx) {
  const auto& n = ctx.node;
  if (n.attribute_size() != 1) ctx.fail("must have exactly one value attribute");
  const auto& a = n.attribute(0);
  auto make_vec = [&](DataType dt, const std::vector<double>& v, bool scalar) {
    Tensor t = Tensor::empty(scalar ? IntList{} : IntList{int64_t(v.size())}, dt);
    for (size_t k = 0; k < v.size(); ++k) {
      if (dt == DataType::Float(32)) t.data_as<float>()[k] = float(v[k]);
      else t.data_as<int64_t>()[k] = int64_t(v[k]);
    }
    return t;
  };
  Tensor t;
  if (a.name() == "value") {
    if (!a.has_t()) ctx.fail("attribute 'value' must be a tensor");
    t = tensor_from_proto(a.t(), "attribute 'value'");
  } else if (a.name() == "value_float") {
    t = make_vec(DataType::Float(32), {a.f()}, true);
  } else if (a.name() == "value_floats") {
    t = make_vec(DataType::Float(32), std::vector<double>(a.floats().begin(), a.floats().end()), false);
  } else if (a.name() == "value_int") {
    t = make_vec(DataType::Int(64), {double(a.i())}, true);
    t.data_as<int64_t>()[0] = a.i();
  } else if (a.name() == "value_ints") {
    t = make_vec(DataType::Int(64), std::vector<double>(a.ints_size(), 0), false);
    for (int k = 0; k < a.ints_size(); ++k) t.data_as<int64_t>()[k] = a.ints(k);
  } else {
    ctx.fail("attribute '" + a.name() + "' is not supported", "NotImplementedError");
  }
  Value v{constant(t), std::nullopt};
  if ((t.dtype() == DataType::Int(64) || t.dtype() == DataType::Int(32)) && t.ndim() <= 1 && t.numel() <= 1024) {
    SymVec s;
    s.scalar = t.ndim() == 0;
    s.dtype = t.dtype();
    for (int64_t x : tensor_ints(t)) s.values.push_back(int_imm(x));
    v.sym = s;
  }
  return {v};
}

std::vector<Value> shape_node(NodeContext& ctx) {
  std::vector<PrimExpr> shape = ctx.shape(0);
  int64_t r = int64_t(shape.size());
  auto clampi = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  int64_t start = clampi(ctx.attr_int("start", 0));
  int64_t end = ctx.attr("end") ? clampi(ctx.attr_int("end", r)) : r;
  SymVec s;
  for (int64_t k = start; k < end; ++k) s.values.push_back(shape[k]);
  return sym(s);
}

std::vector<Value> reshape_node(NodeContext& ctx) {
  auto target = ctx.input_sym(1);
  if (!target || target->scalar) ctx.fail("the shape (input 1) must be a 1-D tensor known at import", "NotImplementedError");
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  if (auto s = ctx.input_sym(0); s && target->values.size() <= 1 && target->all_const()) {
    // Reshaping an import-time vector between rank 0 and rank 1.
    SymVec out = *s;
    out.scalar = target->values.empty();
    if (out.values.size() == 1 || !out.scalar) return sym(out);
  }
  std::vector<PrimExpr> in = ctx.shape(0);
  std::vector<PrimExpr> shape = target->values;
  for (size_t k = 0; k < shape.size(); ++k) {
    auto c = as_const_int(shape[k]);
    if (c && *c == 0 && !allowzero) {
      if (k >= in.size()) ctx.fail("shape entry " + std::to_string(k) + " is 0 but the input has rank " +
                                   std::to_string(in.size()));
      shape[k] = in[k];
    }
  }
  // Resolve a -1 by cancelling the dims it shares with the input first, so that symbolic
  // shapes stay simple ((batch * 40) // (batch * 5) becomes 8).
  int minus_one = -1;
  for (size_t k = 0; k < shape.size(); ++k)
    if (auto c = as_const_int(shape[k]); c && *c == -1) minus_one = minus_one == -1 ? int(k) : -2;
  if (minus_one >= 0) {
    std::vector<PrimExpr> rest_in = in;
    PrimExpr known = int_imm(1);
    for (size_t k = 0; k < shape.size(); ++k) {
      if (int(k) == minus_one) continue;
      auto it = std::find_if(rest_in.begin(), rest_in.end(), [&](const PrimExpr& d) { return prove_equal(d, shape[k]); });
      if (it != rest_in.end()) rest_in.erase(it);
      else known = known * shape[k];
    }
    PrimExpr total = int_imm(1);
    for (const auto& d : rest_in) total = total * d;
    auto ct = as_const_int(total), ck = as_const_int(known);
    if (ck && *ck == 1) shape[minus_one] = total;
    else if (ct && ck && *ck != 0 && *ct % *ck == 0) shape[minus_one] = int_imm(*ct / *ck);
    else if (ck && *ck != 0) shape[minus_one] = floordiv(total, known);
  }
  return one(op::reshape(ctx.input(0), shape));
}

std::vector<Value> flatten_node(NodeContext& ctx) {
  std::vector<PrimExpr> in = ctx.shape(0);
  int64_t r = int64_t(in.size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -r || axis > r) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  PrimExpr a = int_imm(1), b = int_imm(1);
  for (int64_t k = 0; k < r; ++k) (k < axis ? a : b) = (k < axis ? a : b) * in[k];
  return one(op::reshape(ctx.input(0), std::vector<PrimExpr>{a, b}));
}

std::vector<Value> concat_node(NodeContext& ctx) {
  std::vector<SymVec> syms;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    auto s = ctx.input_sym(i);
    if (!s || s->scalar || (!syms.empty() && !(s->dtype == syms[0].dtype))) break;
    syms.push_back(*s);
  }
  if (syms.size() == ctx.num_inputs() && !syms.empty()) {
    norm_axis(ctx, ctx.attr_int("axis", 0), 1);
    SymVec out;
    out.dtype = syms[0].dtype;
    for (const auto& s : syms) out.values.insert(out.values.end(), s.values.begin(), s.values.end());
    return sym(out);
  }
  std::vector<Expr> xs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) xs.push_back(ctx.input(i));
  if (!ctx.attr("axis")) ctx.fail("attribute 'axis' is required");
  return one(op::concat(xs, norm_axis(ctx, ctx.attr_int("axis", 0), ctx.ndim(0))));
}

std::vector<Value> split_node(NodeContext& ctx) {
  int nd = ctx.ndim(0);
  int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), nd);
  size_t n_out = size_t(ctx.node.output_size());
  Expr call;
  if (ctx.has_input(1)) {
    IntList sizes = ctx.const_ints(1, "split");
    if (sizes.size() != n_out)
      ctx.fail("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(n_out) + " outputs");
    IntList indices;
    int64_t acc = 0;
    for (size_t k = 0; k + 1 < sizes.size(); ++k) indices.push_back(acc += sizes[k]);
    if (auto d = as_const_int(ctx.shape(0)[axis]); d && acc + sizes.back() != *d)
      ctx.fail("split sizes add up to " + std::to_string(acc + sizes.back()) + " but the axis has size " +
               std::to_string(*d));
    call = op::split(ctx.input(0), indices, axis);
  } else {
    call = op::split(ctx.input(0), int64_t(n_out), axis);
  }
  Expr tup = ctx.emit(call);
  std::vector<Value> outs;
  for (size_t k = 0; k < n_out; ++k) outs.push_back(Value{make<TupleGetItemNode>(tup, int(k)), std::nullopt});
  return outs;
}

std::vector<Value> slice_node(NodeContext& ctx) {
  auto starts = ctx.input_sym(1), ends = ctx.input_sym(2);
  if (!starts || !ends) ctx.fail("starts and ends must be known at import", "NotImplementedError");
  size_t n = starts->values.size();
  if (ends->values.size() != n) ctx.fail("starts and ends differ in length");
  IntList axes, steps(n, 1);
  if (ctx.has_input(3)) axes = ctx.const_ints(3, "axes");
  else for (size_t k = 0; k < n; ++k) axes.push_back(int64_t(k));
  if (ctx.has_input(4)) steps = ctx.const_ints(4, "steps");
  if (axes.size() != n || steps.size() != n) ctx.fail("starts, ends, axes and steps differ in length");
  for (int64_t s : steps)
    if (s == 0) ctx.fail("a step is zero");
  std::vector<PrimExpr> shape = ctx.shape(0);
  int64_t r = int64_t(shape.size());
  for (auto& a : axes) a = norm_axis(ctx, a, r);

  if (auto data = ctx.input_sym(0); data && !data->scalar && starts->all_const() && ends->all_const()) {
    SymVec out = *data;
    out.values.clear();
    auto sc = starts->consts(), ec = ends->consts();
    for (size_t idx : slice_indices(sc[0], ec[0], steps[0], int64_t(data->values.size())))
      out.values.push_back(data->values[idx]);
    return sym(out);
  }
  std::vector<PrimExpr> begin, end, strides;
  for (size_t k = 0; k < n; ++k) {
    PrimExpr b = starts->values[k], e = ends->values[k];
    auto cb = as_const_int(b), ce = as_const_int(e), cd = as_const_int(shape[axes[k]]);
    if (cb && ce && cd) {
      auto [nb, ne] = clamp_slice(*cb, *ce, steps[k], *cd);
      b = int_imm(nb);
      e = int_imm(ne);
    } else if (ce && *ce >= std::numeric_limits<int32_t>::max() && steps[k] > 0) {
      e = shape[axes[k]];  // "to the end"
    }
    begin.push_back(b);
    end.push_back(e);
    strides.push_back(int_imm(steps[k]));
  }
  bool unit = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; });
  return one(op::strided_slice(ctx.input(0), axes, begin, end,
                               unit ? std::nullopt : std::optional<std::vector<PrimExpr>>(strides)));
}

std::vector<Value> gather_node(NodeContext& ctx) {
  int nd = ctx.ndim(0);
  int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), nd);
  auto data = ctx.input_sym(0);
  auto idx = ctx.input_const(1);
  if (data && !data->scalar && idx && idx->ndim() <= 1) {
    SymVec out;
    out.dtype = data->dtype;
    out.scalar = idx->ndim() == 0;
    int64_t len = int64_t(data->values.size());
    for (int64_t i : tensor_ints(*idx)) {
      if (i < -len || i >= len) ctx.fail("index " + std::to_string(i) + " is out of range for size " + std::to_string(len));
      out.values.push_back(data->values[size_t(i < 0 ? i + len : i)]);
    }
    return sym(out);
  }
  Expr indices = ctx.input(1);
  if (idx) {
    // Negative constant indices count from the end: resolve them now when the size is known.
    auto vals = tensor_ints(*idx);
    auto dim = as_const_int(ctx.shape(0)[axis]);
    if (dim && std::any_of(vals.begin(), vals.end(), [](int64_t v) { return v < 0; })) {
      Tensor t = Tensor::empty(idx->shape(), DataType::Int(64));
      for (size_t k = 0; k < vals.size(); ++k) t.data_as<int64_t>()[k] = vals[k] < 0 ? vals[k] + *dim : vals[k];
      indices = constant(t);
    }
  }
  return one(op::take(ctx.input(0), indices, axis));
}

std::vector<Value> unsqueeze_node(NodeContext& ctx) {
  IntList axes = ctx.const_ints(1, "axes");
  if (auto s = ctx.input_sym(0); s && s->scalar && axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)) {
    s->scalar = false;
    return sym(*s);
  }
  return one(op::expand_dims(ctx.input(0), axes));
}

std::vector<Value> squeeze_node(NodeContext& ctx) {
  std::optional<IntList> axes;
  if (ctx.has_input(1)) axes = ctx.const_ints(1, "axes");
  if (auto s = ctx.input_sym(0); s && !s->scalar && s->values.size() == 1 &&
                                 (!axes || (axes->size() == 1 && ((*axes)[0] == 0 || (*axes)[0] == -1)))) {
    s->scalar = true;
    return sym(*s);
  }
  return one(op::squeeze(ctx.input(0), axes));
}

std::vector<Value> expand_node(NodeContext& ctx) {
  auto target = ctx.input_sym(1);
  if (!target || target->scalar) ctx.fail("the shape (input 1) must be a 1-D tensor known at import", "NotImplementedError");
  std::vector<PrimExpr> in = ctx.shape(0), to = target->values;
  size_t r = std::max(in.size(), to.size());
  std::vector<PrimExpr> out(r);
  for (size_t k = 0; k < r; ++k) {
    PrimExpr a = k + in.size() >= r ? in[k + in.size() - r] : PrimExpr();
    PrimExpr b = k + to.size() >= r ? to[k + to.size() - r] : PrimExpr();
    const int64_t kSym = -1;  // a symbolic dim
    int64_t ca = a ? as_const_int(a).value_or(kSym) : kSym, cb = b ? as_const_int(b).value_or(kSym) : kSym;
    if (!a) out[k] = b;
    else if (!b || cb == 1) out[k] = a;
    else if (ca == 1) out[k] = b;
    else if (ca != kSym && cb != kSym && ca != cb)
      ctx.fail("cannot expand dimension of size " + std::to_string(ca) + " to " + std::to_string(cb));
    else out[k] = a;
  }
  return one(op::broadcast_to(ctx.input(0), out));
}

std::vector<Value> constant_of_shape_node(NodeContext& ctx) {
  auto shape = ctx.input_sym(0);
  if (!shape || shape->scalar) ctx.fail("the shape (input 0) must be a 1-D tensor known at import", "NotImplementedError");
  Tensor value = Tensor::empty({}, DataType::Float(32));
  *value.data_as<float>() = 0.0f;
  if (const auto* a = ctx.attr("value")) {
    value = tensor_from_proto(a->t(), "attribute 'value'");
    if (value.numel() != 1) ctx.fail("attribute 'value' must hold one element");
    value = Tensor::from_buffer({}, value.dtype(), value.buffer());
  }
  DataType dt = value.dtype();
  if (shape->all_const() && shape->values.size() == 1 && (dt == DataType::Int(64) || dt == DataType::Int(32))) {
    int64_t len = shape->consts()[0];
    if (len >= 0 && len <= 1024) {
      SymVec out;
      out.dtype = dt;
      out.values.assign(size_t(len), int_imm(tensor_ints(value)[0]));
      return sym(out);
    }
  }
  return one(op::full(shape->values, constant(value), dt));
}

std::vector<Value> range_node(NodeContext& ctx) {
  DataType dt = ctx.dtype(0);
  if (!ctx.input_const(0) || !ctx.input_const(1) || !ctx.input_const(2))
    ctx.fail("start, limit and delta must be constants known at import", "NotImplementedError");
  double start = ctx.const_scalar(0, "start"), limit = ctx.const_scalar(1, "limit"), delta = ctx.const_scalar(2, "delta");
  if (delta == 0) ctx.fail("delta is zero");
  // The count in double first: converting an infinite or huge one to int64 is undefined.
  const double count = std::ceil((limit - start) / delta);
  if (!std::isfinite(count) && !(count < 0)) ctx.fail("the range's length is not finite");
  if (count > double(int64_t(1) << 28)) ctx.fail("the range is too long to fold");
  const int64_t n = count > 0 ? int64_t(count) : 0;
  ctx.reserve_constant({n}, dt, "the range");
  Tensor t = Tensor::empty({n}, dt);
  Value v;
  if (dt.is_int()) {
    if (!(std::fabs(start) < 0x1p63) || !(std::fabs(delta) < 0x1p63)) ctx.fail("start or delta is out of the int64 range");
    int64_t s = int64_t(start), d = int64_t(delta);
    SymVec sv;
    sv.dtype = dt;
    const bool keep_sym = (dt.bits() == 64 || dt.bits() == 32) && n <= 1024;
    for (int64_t k = 0; k < n; ++k) {
      // Wraps around as the int64 arithmetic of the reference does, without signed overflow.
      int64_t x = int64_t(uint64_t(s) + uint64_t(k) * uint64_t(d));
      if (dt.bits() == 64) t.data_as<int64_t>()[k] = x;
      else if (dt.bits() == 32) t.data_as<int32_t>()[k] = int32_t(x);
      else if (dt.bits() == 16) t.data_as<int16_t>()[k] = int16_t(x);
      else t.data_as<int8_t>()[k] = int8_t(x);
      if (keep_sym) sv.values.push_back(int_imm(x));
    }
    if (keep_sym) v.sym = sv;
  } else if (dt == DataType::Float(32)) {
    // Accumulate in the element type, as the reference does.
    float s = float(start), d = float(delta);
    for (int64_t k = 0; k < n; ++k) t.data_as<float>()[k] = s + float(k) * d;
  } else if (dt == DataType::Float(64)) {
    for (int64_t k = 0; k < n; ++k) t.data_as<double>()[k] = start + double(k) * delta;
  } else {
    ctx.fail("element type " + dt.str() + " is not supported", "NotImplementedError");
  }
  v.expr = constant(t);
  return {v};
}

std::vector<Value> pad_node(NodeContext& ctx) {
  std::string mode = ctx.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") ctx.fail("unknown mode '" + mode + "'");
  IntList pads = ctx.const_ints(1, "pads");
  int nd = ctx.ndim(0);
  if (pads.size() != size_t(2 * nd))
    ctx.fail("pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(nd));
  IntList width;
  for (int k = 0; k < nd; ++k) {
    if (pads[k] < 0 || pads[k + nd] < 0) ctx.fail("negative pads are not supported", "NotImplementedError");
    width.push_back(pads[k]);
    width.push_back(pads[k + nd]);
  }
  double value = ctx.has_input(2) ? ctx.const_scalar(2, "constant_value") : 0.0;
  return one(op::nn::pad(ctx.input(0), width, value, mode));
}

}  // namespace

void register_shape(std::map<std::string, ConvertFn>& t) {
  t["Constant"] = constant_node;
  t["Shape"] = shape_node;
  t["Size"] = [](NodeContext& ctx) {
    PrimExpr n = int_imm(1);
    for (const auto& d : ctx.shape(0)) n = n * d;
    SymVec s;
    s.scalar = true;
    s.values.push_back(n);
    return sym(s);
  };
  t["Reshape"] = reshape_node;
  t["Flatten"] = flatten_node;
  t["Concat"] = concat_node;
  t["Split"] = split_node;
  t["Slice"] = slice_node;
  t["Gather"] = gather_node;
  t["Unsqueeze"] = unsqueeze_node;
  t["Squeeze"] = squeeze_node;
  t["Transpose"] = [](NodeContext& ctx) {
    auto perm = ctx.attr_ints("perm");
    if (ctx.input_sym(0) && !ctx.input_value(0).expr) return std::vector<Value>{ctx.input_value(0)};
    return one(op::permute_dims(ctx.input(0), perm));
  };
  t["Expand"] = expand_node;
  t["ConstantOfShape"] = constant_of_shape_node;
  t["Range"] = range_node;
  t["Pad"] = pad_node;
}

}  // namespace partita::frontend::onnx_detail
