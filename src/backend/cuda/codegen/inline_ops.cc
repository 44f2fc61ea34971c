// Inline evaluation of elementwise, broadcast and injective operators at an element index.
// Semantics follow the host kernels (src/runtime/kernels): integer division floors, maximum /
// minimum pick like std::max / std::min, clip compares in double, take's "clip" and "wrap"
// modes clamp and wrap; where the host would raise (an index out of range in "fast" mode) the
// kernel clamps instead, so it never reads outside a tensor.
#include <cmath>

#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"
#include "partita/op/ops.h"

namespace partita::backend::cuda {

namespace {

std::string call2(const std::string& f, const std::string& a, const std::string& b) {
  return f + "(" + a + ", " + b + ")";
}

}  // namespace

std::string KernelEmitter::compute(int v, const Index& idx) {
  const KValue& kv = values_[size_t(v)];
  const CallNode& call = *kv.call;
  const std::string& op = kv.op;
  const DataType dt = kv.dtype;
  const std::string T = compute_type(dt);
  auto operand = [&](size_t k) -> const KValue& { return values_[size_t(kv.operands.at(k))]; };
  // Operand k at the broadcast of this element.
  auto arg = [&](size_t k) { return eval(kv.operands.at(k), broadcast_index(idx, kv.shape, operand(k).shape)); };
  auto lit = [&](double x) { return float_literal(dt, x); };

  // ---- binary arithmetic and comparisons (numpy broadcasting) ----
  static const std::map<std::string, std::string> infix = {
      {"relax.add", "+"},   {"relax.subtract", "-"},    {"relax.multiply", "*"},   {"relax.equal", "=="},
      {"relax.not_equal", "!="}, {"relax.less", "<"}, {"relax.less_equal", "<="}, {"relax.greater", ">"},
      {"relax.greater_equal", ">="}};
  if (auto it = infix.find(op); it != infix.end()) return "(" + arg(0) + " " + it->second + " " + arg(1) + ")";
  if (op == "relax.divide" || op == "relax.floor_divide") {
    DataType in = operand(0).dtype;
    std::string a = arg(0), b = arg(1);
    if (in.is_float()) {
      std::string q = "(" + a + " / " + b + ")";
      return op == "relax.divide" ? q : math_fn(in, "floor") + q;
    }
    return "pt_floordiv<" + compute_type(in) + ">(" + a + ", " + b + ")";
  }
  if (op == "relax.power") {
    DataType in = operand(0).dtype;
    if (in.is_float()) return call2(math_fn(in, "pow"), arg(0), arg(1));
    return "(" + T + ")pow((double)" + arg(0) + ", (double)" + arg(1) + ")";
  }
  if (op == "relax.maximum") {
    std::string a = arg(0), b = arg(1);
    return "(" + a + " < " + b + " ? " + b + " : " + a + ")";
  }
  if (op == "relax.minimum") {
    std::string a = arg(0), b = arg(1);
    return "(" + b + " < " + a + " ? " + b + " : " + a + ")";
  }
  if (op == "relax.mod" || op == "relax.floor_mod") {
    // mod: the dividend's sign (C's fmod / %); floor_mod: the divisor's (Python's %).
    DataType in = operand(0).dtype;
    std::string a = arg(0), b = arg(1);
    if (in.is_float()) {
      std::string r = w_->fresh("v");
      w_->line("const " + T + " " + r + " = " + math_fn(in, "fmod") + "(" + a + ", " + b + ");");
      if (op == "relax.mod") return r;
      return "((" + r + " != " + lit(0) + " && ((" + r + " < " + lit(0) + ") != (" + b + " < " + lit(0) + "))) ? " + r +
             " + " + b + " : " + r + ")";
    }
    if (op == "relax.floor_mod") return "pt_floormod<" + T + ">(" + a + ", " + b + ")";
    return "(" + T + ")(" + b + " == 0 ? 0 : " + a + " % " + b + ")";
  }
  static const std::map<std::string, std::string> logical = {
      {"relax.logical_and", "&&"}, {"relax.logical_or", "||"}, {"relax.logical_xor", "!="}};
  if (auto it = logical.find(op); it != logical.end())
    return "((bool)" + arg(0) + " " + it->second + " (bool)" + arg(1) + ")";
  if (op == "relax.logical_not") return "(!" + arg(0) + ")";
  if (op == "relax.where") {
    std::string c = arg(0), a = arg(1), b = arg(2);
    return "(" + c + " ? " + a + " : " + b + ")";
  }

  // ---- unary ----
  if (op == "relax.negative") return "(" + T + ")(-" + arg(0) + ")";
  if (op == "relax.abs") {
    std::string x = arg(0);
    if (dt.is_float()) return math_fn(dt, "fabs") + "(" + x + ")";
    if (dt.is_uint()) return x;
    return "(" + T + ")(" + x + " < 0 ? -" + x + " : " + x + ")";
  }
  static const std::map<std::string, std::string> math = {{"relax.exp", "exp"},   {"relax.log", "log"},
                                                           {"relax.sqrt", "sqrt"}, {"relax.tanh", "tanh"},
                                                           {"relax.erf", "erf"}};
  if (auto it = math.find(op); it != math.end()) return math_fn(dt, it->second) + "(" + arg(0) + ")";
  static const std::map<std::string, std::string> more_math = {
      {"relax.sin", "sin"},   {"relax.cos", "cos"},   {"relax.tan", "tan"},     {"relax.asin", "asin"},
      {"relax.acos", "acos"}, {"relax.atan", "atan"}, {"relax.sinh", "sinh"},   {"relax.cosh", "cosh"},
      {"relax.asinh", "asinh"}, {"relax.acosh", "acosh"}, {"relax.atanh", "atanh"}};
  if (auto it = more_math.find(op); it != more_math.end()) return math_fn(dt, it->second) + "(" + arg(0) + ")";
  // Predicates of float elements (bool results).
  if (op == "relax.isnan") return "(bool)isnan(" + arg(0) + ")";
  if (op == "relax.isinf") return "(bool)isinf(" + arg(0) + ")";
  if (op == "relax.isfinite") return "(bool)isfinite(" + arg(0) + ")";
  // Rounding is the identity on integers and bool; round is to nearest even (rint), as numpy's.
  static const std::map<std::string, std::string> rounding = {
      {"relax.floor", "floor"}, {"relax.ceil", "ceil"}, {"relax.round", "rint"}, {"relax.trunc", "trunc"}};
  if (auto it = rounding.find(op); it != rounding.end()) {
    if (!dt.is_float()) return arg(0);
    return math_fn(dt, it->second) + "(" + arg(0) + ")";
  }
  if (op == "relax.sign") {
    std::string x = arg(0);
    if (dt.is_bool()) return x;
    if (dt.is_uint()) return "(" + T + ")(" + x + " > 0 ? 1 : 0)";
    std::string zero = int_literal(dt, 0), one = int_literal(dt, 1);
    std::string minus = "(" + T + ")(-" + one + ")";
    std::string e = "(" + x + " > " + zero + " ? " + one + " : (" + x + " < " + zero + " ? " + minus + " : " + zero + "))";
    if (dt.is_float()) e = "(" + x + " != " + x + " ? " + x + " : " + e + ")";  // NaN stays NaN
    return e;
  }
  if (op == "relax.rsqrt") return "(" + lit(1) + " / " + math_fn(dt, "sqrt") + "(" + arg(0) + "))";
  if (op == "relax.sigmoid") return "(" + lit(1) + " / (" + lit(1) + " + " + math_fn(dt, "exp") + "(-" + arg(0) + ")))";
  if (op == "relax.nn.silu") {
    std::string x = arg(0);
    return "(" + x + " / (" + lit(1) + " + " + math_fn(dt, "exp") + "(-" + x + ")))";
  }
  if (op == "relax.nn.gelu") {
    std::string x = arg(0);
    return "(" + lit(0.5) + " * " + x + " * (" + lit(1) + " + " + math_fn(dt, "erf") + "(" + x + " * " +
           lit(0.7071067811865476) + ")))";
  }
  if (op == "relax.nn.gelu_tanh") {
    std::string x = arg(0);
    return "(" + lit(0.5) + " * " + x + " * (" + lit(1) + " + " + math_fn(dt, "tanh") + "(" + lit(0.7978845608028654) +
           " * (" + x + " + " + lit(0.044715) + " * " + x + " * " + x + " * " + x + "))))";
  }
  if (op == "relax.nn.relu") {
    std::string x = arg(0);
    std::string zero = dt.is_float() ? lit(0) : int_literal(dt, 0);
    return "(" + x + " > " + zero + " ? " + x + " : " + zero + ")";
  }
  if (op == "relax.clip") {
    std::string x = arg(0);
    auto bound = [&](size_t i) {
      const auto* p = call.args.at(i).as<PrimValueNode>();
      if (auto* f = p->value.as<FloatImmNode>()) return f->value;
      return double(*as_const_int(p->value));
    };
    double lo = bound(1), hi = bound(2);
    std::string e = x;
    if (std::isfinite(hi))
      e = "((double)" + x + " > " + float_literal(DataType::Float(64), hi) + " ? (" + T + ")(" +
          float_literal(DataType::Float(64), hi) + ") : " + e + ")";
    if (std::isfinite(lo))
      e = "((double)" + x + " < " + float_literal(DataType::Float(64), lo) + " ? (" + T + ")(" +
          float_literal(DataType::Float(64), lo) + ") : " + e + ")";
    if (std::isinf(lo) && lo > 0) e = "(" + T + ")(" + float_literal(DataType::Float(64), lo) + ")";
    return e;
  }
  if (op == "relax.astype") return convert_expr(operand(0).dtype, dt, arg(0));

  // ---- creation ----
  if (op == "relax.zeros" || op == "relax.zeros_like") return int_literal(dt, 0);
  if (op == "relax.ones" || op == "relax.ones_like") return int_literal(dt, 1);
  if (op == "relax.full") {
    const KValue& fill = operand(0);
    return convert_expr(fill.dtype, dt, eval(kv.operands[0], Index{{}, "0", {}}));
  }

  // ---- data movement ----
  if (op == "relax.reshape" || op == "relax.flatten" || op == "relax.squeeze" || op == "relax.expand_dims")
    return eval(kv.operands[0], Index{dims_of(operand(0).shape), linear_of(idx), {}});
  if (op == "relax.broadcast_to") return arg(0);
  if (op == "relax.permute_dims") {
    const KValue& x = operand(0);
    std::vector<int64_t> axes = op::permute_dims_axes(call, int64_t(x.shape.size()));
    std::vector<std::string> oc = coords_of(idx);
    Index in{dims_of(x.shape), "", std::vector<std::string>(x.shape.size())};
    for (size_t i = 0; i < axes.size(); ++i) in.coords[size_t(axes[i])] = oc[i];
    return eval(kv.operands[0], in);
  }
  if (op == "relax.concat") {
    auto axis = attr_opt_int(call, "axis");
    size_t n = kv.operands.size();
    if (n == 1) return eval(kv.operands[0], axis ? Index{dims_of(operand(0).shape), "", coords_of(idx)}
                                                 : Index{dims_of(operand(0).shape), linear_of(idx), {}});
    std::vector<std::string> oc;
    std::string pos;
    int a = 0;
    if (axis) {
      oc = coords_of(idx);
      a = normalize_axis(*axis, int(kv.shape.size()));
      pos = oc[size_t(a)];
    } else {
      pos = linear_of(idx);
    }
    // Offsets of each piece along the axis (or in the flattened order).
    std::vector<std::string> start{"0"};
    for (size_t k = 0; k + 1 < n; ++k) {
      std::string len = axis ? dim(operand(k).shape[size_t(a)]) : numel(operand(k).shape);
      start.push_back(idx_var(start.back() == "0" ? len : start.back() + " + " + len));
    }
    std::string r = w_->fresh("v");
    w_->line(T + " " + r + ";");
    for (size_t k = 0; k < n; ++k) {
      if (k == 0) w_->open("if (" + pos + " < " + start[1] + ")");
      else if (k + 1 < n) w_->reopen("} else if (" + pos + " < " + start[k + 1] + ") {");
      else w_->reopen("} else {");
      Index in{dims_of(operand(k).shape), "", {}};
      std::string p = k == 0 ? pos : idx_var(pos + " - " + start[k]);
      if (axis) {
        in.coords = oc;
        in.coords[size_t(a)] = p;
      } else {
        in.linear = p;
      }
      w_->line(r + " = " + eval(kv.operands[k], in) + ";");
    }
    w_->close();
    return r;
  }
  if (op == "relax.strided_slice") {
    const KValue& x = operand(0);
    std::vector<std::string> oc = coords_of(idx);
    Index in{dims_of(x.shape), "", oc};
    const auto& axes = call.args[1].as<TupleNode>()->fields;
    const auto& begin = call.args[2].as<TupleNode>()->fields;
    for (size_t k = 0; k < axes.size(); ++k) {
      int a = normalize_axis(*as_const_int(axes[k].as<PrimValueNode>()->value), int(x.shape.size()));
      int64_t s = 1;
      if (call.args.size() > 4) s = *as_const_int(call.args[4].as<TupleNode>()->fields[k].as<PrimValueNode>()->value);
      std::string b = idx_var("(pt_idx)pt_slice_begin(" + dim(begin[k].as<PrimValueNode>()->value) + ", " +
                              in.dims[size_t(a)] + ", " + std::to_string(s) + ")");
      in.coords[size_t(a)] = idx_var(b + " + " + oc[size_t(a)] + (s == 1 ? "" : " * " + std::to_string(s)));
    }
    return eval(kv.operands[0], in);
  }
  if (op == "relax.take") {
    const KValue& x = operand(0);
    const KValue& ind = operand(1);
    auto axis = attr_opt_int(call, "axis");
    int a = axis ? normalize_axis(*axis, int(x.shape.size())) : 0;
    std::vector<std::string> oc = coords_of(idx);
    size_t ni = ind.shape.size();
    Index ii{dims_of(ind.shape), "", {}};
    if (ni == 0) ii.linear = "0";
    else ii.coords.assign(oc.begin() + a, oc.begin() + a + std::ptrdiff_t(ni));
    std::string iv = idx_var("(pt_idx)" + eval(kv.operands[1], ii));
    std::string d = axis ? dim(x.shape[size_t(a)]) : numel(x.shape);
    std::string mode = attr_string(call, "mode", "fast");
    std::string j;
    if (mode == "clip") {
      j = idx_var("(" + iv + " < 0 ? (pt_idx)0 : (" + iv + " >= " + d + " ? (pt_idx)(" + d + " - 1) : " + iv + "))");
    } else if (mode == "wrap") {
      j = idx_var("(" + d + " > 0 ? ((" + iv + " % " + d + ") + " + d + ") % " + d + " : (pt_idx)0)");
    } else {
      std::string t = idx_var("(" + iv + " < 0 ? " + iv + " + " + d + " : " + iv + ")");
      j = idx_var("(" + t + " < 0 ? (pt_idx)0 : (" + t + " >= " + d + " ? (pt_idx)(" + d + " - 1) : " + t + "))");
      if (mode == "nan") {
        Index in{dims_of(x.shape), "", {}};
        if (axis) {
          in.coords.assign(oc.begin(), oc.begin() + a);
          in.coords.push_back(j);
          in.coords.insert(in.coords.end(), oc.begin() + a + std::ptrdiff_t(ni), oc.end());
        } else {
          in.linear = j;
        }
        std::string r = w_->fresh("v");
        w_->line(T + " " + r + ";");
        w_->open("if (" + t + " >= 0 && " + t + " < " + d + ")");
        w_->line(r + " = " + eval(kv.operands[0], in) + ";");
        w_->reopen("} else {");
        w_->line(r + " = " + (dt.is_float() ? lit(NAN) : int_literal(dt, 0)) + ";");
        w_->close();
        return r;
      }
    }
    Index in{dims_of(x.shape), "", {}};
    if (axis) {
      in.coords.assign(oc.begin(), oc.begin() + a);
      in.coords.push_back(j);
      in.coords.insert(in.coords.end(), oc.begin() + a + std::ptrdiff_t(ni), oc.end());
    } else {
      in.linear = j;
    }
    return eval(kv.operands[0], in);
  }
  if (op == "relax.nn.pad") {
    const KValue& x = operand(0);
    std::vector<int64_t> pw = attr_ints(call, "pad_width").value_or(std::vector<int64_t>{});
    std::string mode = attr_string(call, "pad_mode", "constant");
    std::vector<std::string> oc = coords_of(idx);
    Index in{dims_of(x.shape), "", std::vector<std::string>(x.shape.size())};
    std::string cond;
    for (size_t k = 0; k < x.shape.size(); ++k) {
      int64_t before = pw[2 * k], after = pw[2 * k + 1];
      std::string i = before == 0 ? oc[k] : idx_var(oc[k] + " - " + std::to_string(before));
      const std::string& d = in.dims[k];
      if (mode == "constant") {
        if (before > 0) cond += std::string(cond.empty() ? "" : " && ") + i + " >= 0";
        if (after > 0) cond += std::string(cond.empty() ? "" : " && ") + i + " < " + d;
        in.coords[k] = i;
      } else if (mode == "reflect") {
        in.coords[k] = before == 0 && after == 0 ? i : idx_var("pt_reflect<pt_idx>(" + i + ", " + d + ")");
      } else {  // edge, replicate
        in.coords[k] = before == 0 && after == 0
                           ? i
                           : idx_var("(" + i + " < 0 ? (pt_idx)0 : (" + i + " >= " + d + " ? (pt_idx)(" + d + " - 1) : " + i + "))");
      }
    }
    if (cond.empty()) return eval(kv.operands[0], in);
    double value = attr_float(call, "pad_value", 0.0);
    std::string r = w_->fresh("v");
    w_->line(T + " " + r + ";");
    w_->open("if (" + cond + ")");
    w_->line(r + " = " + eval(kv.operands[0], in) + ";");
    w_->reopen("} else {");
    w_->line(r + " = " + float_literal(dt, value) + ";");
    w_->close();
    return r;
  }
  if (op == "relax.flip") {
    const KValue& x = operand(0);
    int a = normalize_axis(attr_int(call, "axis", 0), int(x.shape.size()));
    std::vector<std::string> oc = coords_of(idx);
    Index in{dims_of(x.shape), "", oc};
    in.coords[size_t(a)] = idx_var(in.dims[size_t(a)] + " - 1 - " + oc[size_t(a)]);
    return eval(kv.operands[0], in);
  }
  if (op == "relax.tile") {
    // numpy.tile: the input's axes are the output's trailing ones; each reads coordinate % size.
    const KValue& x = operand(0);
    std::vector<std::string> oc = coords_of(idx);
    size_t off = kv.shape.size() - x.shape.size();
    Index in{dims_of(x.shape), "", {}};
    for (size_t k = 0; k < x.shape.size(); ++k) {
      const std::string& d = in.dims[k];
      if (prove_equal(x.shape[k], kv.shape[off + k])) in.coords.push_back(oc[off + k]);
      else if (d == "1" || d == "0") in.coords.push_back("0");
      else in.coords.push_back(idx_var(oc[off + k] + " % " + d));
    }
    return eval(kv.operands[0], in);
  }
  if (op == "relax.tril" || op == "relax.triu") {
    // tril keeps columns j <= i + k, triu j >= i + k, of the last two axes.
    std::vector<std::string> oc = coords_of(idx);
    size_t n = oc.size();
    std::string k = std::to_string(attr_int(call, "k", 0));
    std::string keep = oc[n - 1] + (op == "relax.tril" ? " <= " : " >= ") + oc[n - 2] + " + (" + k + ")";
    std::string x = eval(kv.operands[0], idx);
    return "((" + keep + ") ? " + x + " : " + int_literal(dt, 0) + ")";
  }
  if (op == "relax.gather_elements") {
    // out[c] = x[c with c[axis] = indices[c]]; negative indices count from the end. Where the
    // host raises (an index out of range, indices larger than the data on another axis) the
    // kernel clamps, so it never reads outside the data.
    const KValue& x = operand(0);
    const KValue& ind = operand(1);
    int a = normalize_axis(attr_int(call, "axis", 0), int(x.shape.size()));
    std::vector<std::string> oc = coords_of(idx);
    Index in{dims_of(x.shape), "", {}};
    for (size_t k = 0; k < x.shape.size(); ++k) {
      if (int(k) == a) {
        std::string iv = idx_var("(pt_idx)" + eval(kv.operands[1], Index{dims_of(ind.shape), linear_of(idx), oc}));
        in.coords.push_back(idx_var("pt_resolve_index(" + iv + ", " + in.dims[k] + ")"));
      } else if (prove_equal(x.shape[k], ind.shape[k])) {
        in.coords.push_back(oc[k]);
      } else {
        in.coords.push_back(idx_var("pt_min<pt_idx>(" + oc[k] + ", " + in.dims[k] + " - 1)"));
      }
    }
    return eval(kv.operands[0], in);
  }
  if (op == "relax.gather_nd") {
    // indices (..., m) name slices of the data after batch_dims leading axes:
    // out[b..., p..., s...] = x[b..., indices[b..., p..., :], s...].
    const KValue& x = operand(0);
    const KValue& ind = operand(1);
    int64_t b = attr_int(call, "batch_dims", 0);
    size_t ni = ind.shape.size();
    auto mc = as_const_int(ind.shape.back());
    if (!mc) fail("gather_nd's indices need a known last dimension");
    int64_t m = *mc;
    std::vector<std::string> oc = coords_of(idx);
    Index in{dims_of(x.shape), "", {}};
    for (int64_t k = 0; k < b; ++k) in.coords.push_back(oc[size_t(k)]);
    std::vector<std::string> ic(oc.begin(), oc.begin() + std::ptrdiff_t(ni - 1));
    ic.push_back("");
    for (int64_t j = 0; j < m; ++j) {
      ic.back() = std::to_string(j);
      std::string iv = idx_var("(pt_idx)" + eval(kv.operands[1], Index{dims_of(ind.shape), "", ic}));
      in.coords.push_back(idx_var("pt_resolve_index(" + iv + ", " + in.dims[size_t(b + j)] + ")"));
    }
    for (size_t k = ni - 1; k < oc.size(); ++k) in.coords.push_back(oc[k]);
    return eval(kv.operands[0], in);
  }
  if (op == "relax.image.resize2d") return compute_resize2d(v, idx);
  fail("internal: no inline kernel for " + op);
}

std::string KernelEmitter::compute_field(int v, const Index& idx) {
  const KValue& kv = values_[size_t(v)];
  const CallNode& call = *kv.call;
  const std::string& op = kv.op;
  auto operand = [&](size_t k) -> const KValue& { return values_[size_t(kv.operands.at(k))]; };
  if (op == "relax.nn.dropout") {
    if (kv.field == 0) return eval(kv.operands[0], idx);
    return int_literal(kv.dtype, 1);  // the mask at inference
  }
  if (op == "relax.split") {
    const KValue& x = operand(0);
    int a = normalize_axis(attr_int(call, "axis", 0), int(x.shape.size()));
    const PrimExpr& d = x.shape[size_t(a)];
    const AttrValue* ios = find_attr(call, "indices_or_sections");
    PrimExpr start = int_imm(0);
    if (auto* n = std::get_if<int64_t>(ios)) {
      start = int_imm(kv.field) * floordiv(d + int_imm(*n - 1), int_imm(*n));
    } else if (auto* ind = std::get_if<std::vector<int64_t>>(ios); ind && kv.field > 0) {
      // The same clamping as split's struct-info inference.
      int64_t i = (*ind)[size_t(kv.field - 1)];
      auto cd = as_const_int(d);
      if (cd) start = int_imm(std::clamp<int64_t>(i < 0 ? i + *cd : i, 0, *cd));
      else if (i < 0) start = max(d + int_imm(i), int_imm(0));
      else start = min(int_imm(i), d);
    }
    std::vector<std::string> oc = coords_of(idx);
    Index in{dims_of(x.shape), "", oc};
    std::string s = dim(start);
    if (s != "0") in.coords[size_t(a)] = idx_var(oc[size_t(a)] + " + " + s);
    return eval(kv.operands[0], in);
  }
  if (op == "relax.nn.batch_norm") {
    // Inference: the moving statistics normalize; fields 1 and 2 are those statistics.
    const KValue& x = operand(0);
    if (kv.field == 1) return eval(kv.operands[3], idx);
    if (kv.field == 2) return eval(kv.operands[4], idx);
    int a = normalize_axis(attr_int(call, "axis", 1), int(x.shape.size()));
    DataType dt = kv.dtype;
    std::vector<std::string> oc = coords_of(idx);
    Index ch{dims_of(operand(1).shape), oc[size_t(a)], {}};
    std::string xv = eval(kv.operands[0], idx);
    std::string mean = eval(kv.operands[3], ch), var = eval(kv.operands[4], ch);
    std::string eps = float_literal(dt, attr_float(call, "epsilon", 1e-5));
    std::string e = "((" + xv + " - " + mean + ") * (" + float_literal(dt, 1) + " / " + math_fn(dt, "sqrt") + "(" +
                    var + " + " + eps + ")))";
    if (attr_bool(call, "scale", true)) e = "(" + e + " * " + eval(kv.operands[1], ch) + ")";
    if (attr_bool(call, "center", true)) e = "(" + e + " + " + eval(kv.operands[2], ch) + ")";
    return e;
  }
  fail("internal: no inline kernel for field " + std::to_string(kv.field) + " of " + op);
}

}  // namespace partita::backend::cuda
