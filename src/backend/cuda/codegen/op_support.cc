#include "op_support.h"

#include <map>
#include <set>

#include "cuda_types.h"
#include "partita/transform/attention.h"

namespace partita::backend::cuda {
namespace {

enum class Rule {
  Arith,       // numeric operands (bool only for maximum / minimum)
  Compare,     // any operands, bool result
  Where,
  AnyUnary,    // any dtype but bool
  FloatUnary,  // float dtypes
  Clip,
  Cast,
  Any,         // data movement and creation: every dtype
  Concat,
  StridedSlice,
  Take,
  Pad,
  Full,
  BatchNorm,
  LayerNorm,
  FloatRow,    // softmax / log_softmax / mean / variance
  NumericReduce,  // sum / prod
  AnyReduce,      // max / min
  Matmul,
  Conv2d,
  Pool,
  Logical,     // bool operands (logical_and / or / xor / not)
  Rounding,    // floor / ceil / round / trunc / sign: every dtype (the identity on integers)
  Gather,      // gather_elements / gather_nd: integer indices
  Scatter,     // scatter_elements / scatter_nd: integer indices, a known reduction
  Resize,      // image.resize2d
  ConvTranspose,
  ArgReduce,   // argmax / argmin
  Cumsum,
  TopK,
  Attention,   // nn.attention / nn.attention_bias (a plain fallback)
};

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = [] {
    std::map<std::string, Rule> t;
    auto add = [&](std::initializer_list<const char*> names, Rule r) {
      for (const char* n : names) t[std::string("relax.") + n] = r;
    };
    add({"add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum", "mod", "floor_mod"},
        Rule::Arith);
    add({"logical_and", "logical_or", "logical_xor", "logical_not"}, Rule::Logical);
    add({"floor", "ceil", "round", "trunc", "sign"}, Rule::Rounding);
    add({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}, Rule::Compare);
    add({"where"}, Rule::Where);
    add({"negative", "abs", "nn.relu"}, Rule::AnyUnary);
    add({"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "nn.gelu", "nn.gelu_tanh", "nn.silu", "sin", "cos",
         "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "isnan", "isinf", "isfinite"},
        Rule::FloatUnary);
    add({"clip"}, Rule::Clip);
    add({"astype"}, Rule::Cast);
    add({"reshape", "flatten", "squeeze", "expand_dims", "permute_dims", "broadcast_to", "split", "ones", "zeros",
         "ones_like", "zeros_like", "nn.dropout", "flip", "tile", "tril", "triu"},
        Rule::Any);
    add({"concat"}, Rule::Concat);
    add({"strided_slice"}, Rule::StridedSlice);
    add({"take"}, Rule::Take);
    add({"nn.pad"}, Rule::Pad);
    add({"full"}, Rule::Full);
    add({"nn.batch_norm"}, Rule::BatchNorm);
    add({"nn.layer_norm"}, Rule::LayerNorm);
    add({"nn.softmax", "nn.log_softmax", "mean", "variance"}, Rule::FloatRow);
    add({"sum", "prod"}, Rule::NumericReduce);
    add({"max", "min"}, Rule::AnyReduce);
    add({"matmul"}, Rule::Matmul);
    add({"nn.conv2d"}, Rule::Conv2d);
    add({"nn.max_pool2d", "nn.avg_pool2d", "nn.adaptive_avg_pool2d"}, Rule::Pool);
    add({"gather_elements", "gather_nd"}, Rule::Gather);
    add({"scatter_elements", "scatter_nd"}, Rule::Scatter);
    add({"image.resize2d"}, Rule::Resize);
    add({"nn.conv2d_transpose"}, Rule::ConvTranspose);
    add({"argmax", "argmin"}, Rule::ArgReduce);
    add({"cumsum"}, Rule::Cumsum);
    add({"topk"}, Rule::TopK);
    add({"nn.attention", "nn.attention_bias"}, Rule::Attention);
    return t;
  }();
  return table;
}

const TensorStructInfoNode* tensor_of(const StructInfo& s) { return s ? s.as<TensorStructInfoNode>() : nullptr; }

// A known-shape tensor of a dtype the target handles, else the reason.
std::optional<std::string> check_tensor(const StructInfo& s, const std::string& what) {
  const TensorStructInfoNode* t = tensor_of(s);
  if (!t) return what + " is not a tensor";
  if (t->dtype.is_void()) return what + " has no known dtype";
  if (!t->shape) return what + " has no known shape";
  if (!dtype_supported(t->dtype)) return what + " has dtype " + t->dtype.str() + ", which the cuda target does not handle";
  return std::nullopt;
}

bool layout_ok(const std::string& layout, const char* letters) {
  if (layout.size() != 4) return false;
  std::set<char> seen(layout.begin(), layout.end());
  for (int k = 0; k < 4; ++k)
    if (!seen.count(letters[k])) return false;
  return seen.size() == 4;
}

std::string attr_str(const CallNode& call, const std::string& name, const std::string& dflt) {
  if (!call.attrs) return dflt;
  const AttrValue* v = call.attrs->find(name);
  if (auto* s = v ? std::get_if<std::string>(v) : nullptr) return *s;
  return dflt;
}

bool attr_flag(const CallNode& call, const std::string& name) {
  if (!call.attrs) return false;
  const AttrValue* v = call.attrs->find(name);
  auto* b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}

// A tuple of R.prim_value integers (constant when `constant`).
bool prim_tuple(const Expr& e, bool constant) {
  auto* t = e.as<TupleNode>();
  if (!t) return false;
  for (const auto& f : t->fields) {
    auto* p = f.as<PrimValueNode>();
    if (!p || p->value.as<FloatImmNode>()) return false;
    if (constant && !as_const_int(p->value)) return false;
  }
  return true;
}

bool is_integer(DataType t) { return t.is_int() || t.is_uint(); }

}  // namespace

bool op_takes_scalar_operands(const std::string& op_name) {
  auto it = rules().find(op_name);
  if (it == rules().end()) return false;
  Rule r = it->second;
  return r == Rule::Arith || r == Rule::Compare || r == Rule::Where || r == Rule::Logical;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [name, rule] : rules()) out.push_back(name);
  return out;
}

std::optional<std::string> unsupported_reason(const CallNode& call) {
  auto* op = call.op.as<OpNode>();
  if (!op) return "it is not an operator call";
  auto it = rules().find(op->name);
  if (it == rules().end()) return "the cuda target has no kernel for " + op->name;
  Rule rule = it->second;
  // The result.
  const StructInfo& rs = call.struct_info_;
  if (auto* tup = rs ? rs.as<TupleStructInfoNode>() : nullptr) {
    for (size_t k = 0; k < tup->fields.size(); ++k)
      if (auto why = check_tensor(tup->fields[k], "field " + std::to_string(k) + " of the result")) return why;
  } else if (auto why = check_tensor(rs, "the result")) {
    return why;
  }
  // Operands: tensors of known shape, R.prim_value scalars where they are operands.
  std::vector<const TensorStructInfoNode*> tensors;
  for (size_t i = 0; i < call.args.size(); ++i) {
    const Expr& a = call.args[i];
    std::string what = "argument " + std::to_string(i);
    if (auto* t = a.as<TupleNode>()) {
      if (rule != Rule::Concat) continue;  // strided_slice's index tuples
      for (const auto& f : t->fields) {
        if (!f.as<VarNode>() && !f.as<ConstantNode>()) return "a field of " + what + " is not a variable or constant";
        if (auto why = check_tensor(f->struct_info_, "a field of " + what)) return why;
        tensors.push_back(tensor_of(f->struct_info_));
      }
      continue;
    }
    if (a.as<PrimValueNode>() || a.as<ShapeExprNode>()) continue;
    if (rule == Rule::Concat) {
      // In a fused function the tuple is a parameter (a tuple of tensors).
      auto* tup = a->struct_info_ ? a->struct_info_.as<TupleStructInfoNode>() : nullptr;
      if (!a.as<VarNode>() || !tup) return what + " must be a tuple of tensors";
      for (const auto& f : tup->fields) {
        if (auto why = check_tensor(f, "a field of " + what)) return why;
        tensors.push_back(tensor_of(f));
      }
      continue;
    }
    if (!a.as<VarNode>() && !a.as<ConstantNode>()) return what + " is neither a variable nor a constant";
    if (a->struct_info_ && a->struct_info_.as<PrimStructInfoNode>()) {
      if (!op_takes_scalar_operands(op->name)) return what + " is a scalar variable";
      return what + " is a scalar variable (only R.prim_value literals are compiled)";
    }
    if (auto why = check_tensor(a->struct_info_, what)) return why;
    tensors.push_back(tensor_of(a->struct_info_));
  }
  for (size_t i = 0; i < call.args.size(); ++i)
    if (auto* p = call.args[i].as<PrimValueNode>(); p && op_takes_scalar_operands(op->name))
      if (!dtype_supported(p->value->dtype)) return "a scalar operand has dtype " + p->value->dtype.str();
  DataType in = tensors.empty() ? DataType::Void() : tensors[0]->dtype;
  if (tensors.empty())
    for (const auto& a : call.args)
      if (auto* p = a.as<PrimValueNode>()) in = p->value->dtype;
  const bool is_float = in.is_float();
  const bool is_bool = in.is_bool();
  switch (rule) {
    case Rule::Arith: {
      bool minmax = op->name == "relax.maximum" || op->name == "relax.minimum";
      if (is_bool && !minmax) return op->name + " of bool tensors is not supported";
      return std::nullopt;
    }
    case Rule::Compare:
    case Rule::Any:
    case Rule::Cast: return std::nullopt;
    case Rule::Where:
      if (tensors.empty() || !tensors[0]->dtype.is_bool()) return "the condition must be a bool tensor";
      return std::nullopt;
    case Rule::AnyUnary:
      if (is_bool) return op->name + " of a bool tensor is not supported";
      return std::nullopt;
    case Rule::FloatUnary:
    case Rule::FloatRow:
      if (!is_float) return op->name + " needs a float tensor, not " + in.str();
      return std::nullopt;
    case Rule::Clip:
      if (is_bool) return "clip of a bool tensor is not supported";
      for (size_t i = 1; i < call.args.size(); ++i) {
        auto* p = call.args[i].as<PrimValueNode>();
        if (!p || (!p->value.as<FloatImmNode>() && !as_const_int(p->value))) return "clip's bounds must be constants";
      }
      return std::nullopt;
    case Rule::Concat:
      if (tensors.empty()) return "concat needs at least one tensor";
      return std::nullopt;
    case Rule::StridedSlice:
      if (call.args.size() < 4 || !prim_tuple(call.args[1], true) || !prim_tuple(call.args[2], false) ||
          !prim_tuple(call.args[3], false) || (call.args.size() > 4 && !prim_tuple(call.args[4], true)))
        return "strided_slice needs constant axes and strides and integer begin / end given in the call";
      if (call.args.size() > 4)
        for (const auto& f : call.args[4].as<TupleNode>()->fields)
          if (*as_const_int(f.as<PrimValueNode>()->value) == 0) return "a stride of strided_slice is zero";
      return std::nullopt;
    case Rule::Take: {
      if (tensors.size() != 2 || !(tensors[1]->dtype.is_int() || tensors[1]->dtype.is_uint()))
        return "take's indices must be an integer tensor";
      std::string mode = attr_str(call, "mode", "fast");
      if (mode != "fast" && mode != "nan" && mode != "wrap" && mode != "clip") return "take mode '" + mode + "'";
      return std::nullopt;
    }
    case Rule::Pad: {
      std::string mode = attr_str(call, "pad_mode", "constant");
      if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "replicate")
        return "pad mode '" + mode + "' is not supported";
      return std::nullopt;
    }
    case Rule::Full:
      if (tensors.empty()) return "full's fill value must be a tensor";
      return std::nullopt;
    case Rule::BatchNorm:
      if (!is_float) return "batch_norm needs float tensors";
      if (attr_flag(call, "training")) return "batch_norm in training mode is not supported (only inference)";
      return std::nullopt;
    case Rule::LayerNorm: {
      if (!is_float) return "layer_norm needs a float tensor";
      const AttrValue* v = call.attrs ? call.attrs->find("axes") : nullptr;
      auto* axes = v ? std::get_if<std::vector<int64_t>>(v) : nullptr;
      if (!axes || axes->empty()) return "layer_norm needs its axes";
      int nd = tensors[0]->ndim;
      int prev = -1;
      for (int64_t a : *axes) {
        int n = int(a < 0 ? a + nd : a);
        if (n <= prev) return "layer_norm's axes must be increasing";
        prev = n;
      }
      return std::nullopt;
    }
    case Rule::NumericReduce:
      if (is_bool) return op->name + " of a bool tensor is not supported";
      return std::nullopt;
    case Rule::AnyReduce: return std::nullopt;
    case Rule::Matmul:
      if (tensors.size() != 2 || !(tensors[0]->dtype == tensors[1]->dtype)) return "matmul operands must have one dtype";
      if (is_bool) return "matmul of bool tensors is not supported";
      return std::nullopt;
    case Rule::Conv2d:
      if (tensors.size() != 2 || !(tensors[0]->dtype == tensors[1]->dtype)) return "conv2d operands must have one dtype";
      if (is_bool) return "conv2d of bool tensors is not supported";
      if (!layout_ok(attr_str(call, "data_layout", "NCHW"), "NCHW") ||
          !layout_ok(attr_str(call, "out_layout", "NCHW"), "NCHW") ||
          !layout_ok(attr_str(call, "kernel_layout", "OIHW"), "OIHW"))
        return "conv2d layouts must be orderings of NCHW / OIHW";
      return std::nullopt;
    case Rule::Pool:
      if (is_bool) return op->name + " of a bool tensor is not supported";
      if (!layout_ok(attr_str(call, "layout", "NCHW"), "NCHW") || !layout_ok(attr_str(call, "out_layout", "NCHW"), "NCHW"))
        return "pooling layouts must be orderings of NCHW";
      return std::nullopt;
    case Rule::Logical:
      for (const auto* t : tensors)
        if (!t->dtype.is_bool()) return op->name + " needs bool operands, not " + t->dtype.str();
      return std::nullopt;
    case Rule::Rounding: return std::nullopt;
    case Rule::Gather:
      if (tensors.size() != 2 || !is_integer(tensors[1]->dtype))
        return op->name + "'s indices must be an integer tensor";
      return std::nullopt;
    case Rule::Scatter: {
      if (tensors.size() != 3 || !is_integer(tensors[1]->dtype))
        return op->name + "'s indices must be an integer tensor";
      std::string r = attr_str(call, "reduction", "update");
      if (r != "update" && r != "add" && r != "mul" && r != "min" && r != "max")
        return op->name + " reduction '" + r + "' is not supported";
      if (is_bool && r != "update") return op->name + " of bool tensors with reduction '" + r + "' is not supported";
      return std::nullopt;
    }
    case Rule::Resize: {
      if (!is_float) return "resize2d needs a float tensor, not " + in.str();
      std::string layout = attr_str(call, "layout", "NCHW");
      if (layout != "NCHW" && layout != "NHWC") return "resize2d layout '" + layout + "' is not supported";
      return std::nullopt;
    }
    case Rule::ConvTranspose: {
      if (tensors.size() != 2 || !(tensors[0]->dtype == tensors[1]->dtype))
        return "conv2d_transpose operands must have one dtype";
      if (!is_float) return "conv2d_transpose needs float tensors, not " + in.str();
      auto* r = tensor_of(rs);
      if (!(r->dtype == in)) return "conv2d_transpose with an out_dtype other than its input's is not supported";
      return std::nullopt;
    }
    case Rule::ArgReduce: return std::nullopt;
    case Rule::Cumsum: {
      auto* r = tensor_of(rs);
      if (r->dtype.is_bool()) return "cumsum to a bool tensor is not supported";
      return std::nullopt;
    }
    case Rule::TopK: return std::nullopt;
    case Rule::Attention: {
      if (!is_float) return op->name + " needs float tensors, not " + in.str();
      for (const auto* t : tensors) {
        if (!(t->dtype == in)) return op->name + "'s operands must have one dtype";
        if (t->ndim != 4) return op->name + "'s operands must be 4-d";
      }
      const AttrValue* w = call.attrs ? call.attrs->find("window_size") : nullptr;
      if (w && std::get_if<int64_t>(w)) return op->name + " with window_size (sliding-window attention) has no kernel";
      // Its decomposition into matmul / softmax kernels (build() and partition_for_cuda run it for
      // the calls refused here) is far faster than the plain kernel, which takes the rest:
      // grouped key heads, causal masks over symbolic lengths.
      if (transform::attention_decomposable(call)) return op->name + " is decomposed into matmul and softmax";
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace partita::backend::cuda
