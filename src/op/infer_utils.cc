// Shared helpers for operator struct-info inference.
#include "infer_utils.h"

#include <set>

namespace partita::op::detail {

std::string op_name(const CallNode& call) {
  if (const auto* op = call.op.as<OpNode>()) return op->name;
  return "<call>";
}

void fail(const CallNode& call, const std::string& kind, const std::string& message) {
  throw_error(kind, op_name(call) + ": " + message);
}

std::string arg_name(const CallNode& call, size_t i) {
  if (const auto* op = call.op.as<OpNode>()) {
    if (const OpDef* def = find_op_def(op->name); def && i < def->args.size())
      return "argument '" + def->args[i].name + "'";
  }
  return "argument " + std::to_string(i);
}

const StructInfo& arg_sinfo(const CallNode& call, size_t i) {
  if (i >= call.args.size())
    fail(call, "TypeError", "missing " + arg_name(call, i) + " (got " + std::to_string(call.args.size()) +
                                " arguments)");
  const Expr& a = call.args[i];
  if (!a || !a->struct_info_)
    fail(call, "ValueError", arg_name(call, i) + " is not normalized (it has no struct info)");
  return a->struct_info_;
}

static const char* sinfo_kind(const StructInfo& s) {
  switch (s->kind()) {
    case NodeKind::ObjectStructInfo: return "an Object";
    case NodeKind::PrimStructInfo: return "a Prim";
    case NodeKind::ShapeStructInfo: return "a Shape";
    case NodeKind::TupleStructInfo: return "a Tuple";
    case NodeKind::FuncStructInfo: return "a Callable";
    default: return "a Tensor";
  }
}

const TensorStructInfoNode& tensor_arg(const CallNode& call, size_t i) {
  const StructInfo& s = arg_sinfo(call, i);
  const auto* t = s.as<TensorStructInfoNode>();
  if (!t) fail(call, "TypeError", arg_name(call, i) + " must be a Tensor, but is " + sinfo_kind(s));
  return *t;
}

const AttrValue* attr(const CallNode& call, const std::string& name) {
  const AttrValue* v = call.attrs ? call.attrs->find(name) : nullptr;
  if (!v) fail(call, "ValueError", "attribute '" + name + "' is missing (build calls with make_call)");
  return v;
}

template <class V>
static const V& attr_as(const CallNode& call, const std::string& name, const char* what) {
  const AttrValue* v = attr(call, name);
  if (const V* p = std::get_if<V>(v)) return *p;
  fail(call, "TypeError", "attribute '" + name + "' must be " + what);
}

int64_t attr_int(const CallNode& call, const std::string& name) { return attr_as<int64_t>(call, name, "an int"); }
double attr_float(const CallNode& call, const std::string& name) {
  const AttrValue* v = attr(call, name);
  if (const auto* i = std::get_if<int64_t>(v)) return double(*i);
  return attr_as<double>(call, name, "a float");
}
bool attr_bool(const CallNode& call, const std::string& name) { return attr_as<bool>(call, name, "a bool"); }
std::string attr_string(const CallNode& call, const std::string& name) {
  return attr_as<std::string>(call, name, "a string");
}
DataType attr_dtype(const CallNode& call, const std::string& name) {
  const AttrValue* v = attr(call, name);
  if (std::holds_alternative<std::monostate>(*v)) return DataType::Void();
  return attr_as<DataType>(call, name, "a dtype");
}
std::vector<int64_t> attr_int_list(const CallNode& call, const std::string& name) {
  const AttrValue* v = attr(call, name);
  if (const auto* i = std::get_if<int64_t>(v)) return {*i};
  return attr_as<std::vector<int64_t>>(call, name, "a list of ints");
}
std::optional<int64_t> attr_opt_int(const CallNode& call, const std::string& name) {
  const AttrValue* v = attr(call, name);
  if (std::holds_alternative<std::monostate>(*v)) return std::nullopt;
  return attr_as<int64_t>(call, name, "an int or None");
}
std::optional<std::vector<int64_t>> attr_opt_int_list(const CallNode& call, const std::string& name) {
  const AttrValue* v = attr(call, name);
  if (std::holds_alternative<std::monostate>(*v)) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return std::vector<int64_t>{*i};
  return attr_as<std::vector<int64_t>>(call, name, "a list of ints or None");
}

int normalize_axis(const CallNode& call, int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim)
    fail(call, "ValueError", "axis " + std::to_string(axis) + " is out of range for a tensor of ndim " +
                                 std::to_string(ndim));
  return int(axis < 0 ? axis + ndim : axis);
}

std::vector<int> normalize_axes(const CallNode& call, const std::vector<int64_t>& axes, int ndim) {
  std::vector<int> out;
  std::set<int> seen;
  for (int64_t a : axes) {
    int n = normalize_axis(call, a, ndim);
    if (!seen.insert(n).second) fail(call, "ValueError", "axis " + std::to_string(a) + " appears more than once");
    out.push_back(n);
  }
  return out;
}

std::string prim_str(const PrimExpr& e) { return prim_expr_str(e); }

std::string shape_str(const std::vector<PrimExpr>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + prim_str(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

bool dims_equal(const PrimExpr& a, const PrimExpr& b) {
  if (a == b) return true;
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return *ca == *cb;
  return prove_equal(a, b);
}

bool dims_differ(const PrimExpr& a, const PrimExpr& b) {
  auto ca = as_const_int(a), cb = as_const_int(b);
  return ca && cb && *ca != *cb;
}

std::optional<std::vector<PrimExpr>> broadcast_shapes(const CallNode& call, const std::vector<PrimExpr>& a,
                                                      const std::vector<PrimExpr>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<PrimExpr> out(n);
  bool known = true;
  for (size_t k = 0; k < n; ++k) {
    // Align from the right.
    const PrimExpr* da = k < n - a.size() ? nullptr : &a[k - (n - a.size())];
    const PrimExpr* db = k < n - b.size() ? nullptr : &b[k - (n - b.size())];
    if (!da) { out[k] = *db; continue; }
    if (!db) { out[k] = *da; continue; }
    auto ca = as_const_int(*da), cb = as_const_int(*db);
    if (ca && *ca == 1) out[k] = *db;
    else if (cb && *cb == 1) out[k] = *da;
    else if (dims_equal(*da, *db)) out[k] = *da;
    else if (ca && cb) {
      fail(call, "ValueError", "cannot broadcast shapes " + shape_str(a) + " and " + shape_str(b) + ": dimension " +
                                   std::to_string(k) + " is " + prim_str(*da) + " vs " + prim_str(*db));
    } else {
      known = false;  // e.g. n vs 4, or n vs m: decided only at run time
    }
  }
  if (!known) return std::nullopt;
  return out;
}

PrimExpr shape_product(const std::vector<PrimExpr>& shape) {
  PrimExpr p = int_imm(1);
  for (const auto& d : shape) p = p * d;
  return p;
}

StructInfo tensor_result(std::optional<std::vector<PrimExpr>> shape, DataType dtype, int ndim) {
  if (shape) return make<TensorStructInfoNode>(std::move(*shape), dtype);
  return make<TensorStructInfoNode>(dtype, ndim);
}

std::optional<std::vector<PrimExpr>> prim_tuple_values(const CallNode& call, size_t i) {
  if (i >= call.args.size()) return std::nullopt;
  const auto* t = call.args[i].as<TupleNode>();
  if (!t) {
    // A normalized argument may also be a variable of tuple-of-known-prim struct info.
    const StructInfo& s = arg_sinfo(call, i);
    const auto* ts = s.as<TupleStructInfoNode>();
    if (!ts) fail(call, "TypeError", arg_name(call, i) + " must be a tuple of integers");
    std::vector<PrimExpr> out;
    for (const auto& f : ts->fields) {
      const auto* p = f.as<PrimStructInfoNode>();
      if (!p) fail(call, "TypeError", arg_name(call, i) + " must be a tuple of integers");
      if (!p->value) return std::nullopt;
      out.push_back(p->value);
    }
    return out;
  }
  std::vector<PrimExpr> out;
  for (const auto& f : t->fields) {
    if (const auto* pv = f.as<PrimValueNode>()) {
      out.push_back(pv->value);
    } else if (f && f->struct_info_) {
      const auto* p = f->struct_info_.as<PrimStructInfoNode>();
      if (!p) fail(call, "TypeError", arg_name(call, i) + " must be a tuple of integers");
      if (!p->value) return std::nullopt;
      out.push_back(p->value);
    } else {
      fail(call, "TypeError", arg_name(call, i) + " must be a tuple of integers");
    }
  }
  return out;
}

}  // namespace partita::op::detail

namespace partita::op::detail {

std::optional<std::vector<PrimExpr>> shape_arg(const CallNode& call, size_t i, int* ndim) {
  if (i < call.args.size()) {
    if (const auto* s = call.args[i].as<ShapeExprNode>()) {
      *ndim = int(s->values.size());
      return s->values;
    }
  }
  const StructInfo& si = arg_sinfo(call, i);
  const auto* ss = si.as<ShapeStructInfoNode>();
  if (!ss) fail(call, "TypeError", arg_name(call, i) + " must be a shape (R.shape([...]))");
  *ndim = ss->ndim;
  return ss->values;
}

}  // namespace partita::op::detail
