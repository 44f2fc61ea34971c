// The ONNX graph driver: model checks, inputs and initializers, node-by-node conversion through
// the converter table, outputs; and the public entry points.
#include "importer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <set>

#include <onnx/defs/schema.h>

#include "partita/runtime/half.h"
#include "partita/ir/analysis.h"
#include "partita/transform/fold_constant.h"

namespace partita::frontend {
namespace onnx_detail {

// ---------------------------------------------------------------------------------------------
// SymVec
// ---------------------------------------------------------------------------------------------

bool SymVec::all_const() const {
  return std::all_of(values.begin(), values.end(), [](const PrimExpr& e) { return as_const_int(e).has_value(); });
}

std::vector<int64_t> SymVec::consts() const {
  std::vector<int64_t> out;
  for (const auto& e : values) out.push_back(*as_const_int(e));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tensors
// ---------------------------------------------------------------------------------------------

DataType onnx_dtype(int elem_type, const std::string& where) {
  using TP = ::onnx::TensorProto;
  switch (elem_type) {
    case TP::FLOAT: return DataType::Float(32);
    case TP::DOUBLE: return DataType::Float(64);
    case TP::FLOAT16: return DataType::Float(16);
    case TP::BFLOAT16: return DataType::BFloat16();
    case TP::INT8: return DataType::Int(8);
    case TP::INT16: return DataType::Int(16);
    case TP::INT32: return DataType::Int(32);
    case TP::INT64: return DataType::Int(64);
    case TP::UINT8: return DataType::UInt(8);
    case TP::UINT16: return DataType::UInt(16);
    case TP::UINT32: return DataType::UInt(32);
    case TP::UINT64: return DataType::UInt(64);
    case TP::BOOL: return DataType::Bool();
    default: break;
  }
  std::string name = ::onnx::TensorProto_DataType_IsValid(elem_type)
                         ? ::onnx::TensorProto_DataType_Name(::onnx::TensorProto_DataType(elem_type))
                         : std::to_string(elem_type);
  throw_error("NotImplementedError", where + ": element type " + name + " is not supported");
}

namespace {

template <class Dst, class Src>
void copy_cast(Tensor& t, const Src& src) {
  Dst* d = t.data_as<Dst>();
  for (int i = 0; i < src.size(); ++i) d[i] = static_cast<Dst>(src.Get(i));
}

}  // namespace

Tensor tensor_from_proto(const ::onnx::TensorProto& tp, const std::string& where) {
  if (tp.data_location() == ::onnx::TensorProto::EXTERNAL || tp.external_data_size() > 0)
    throw_error("NotImplementedError", where + ": tensors with external data are not supported");
  if (tp.has_segment()) throw_error("NotImplementedError", where + ": segmented tensors are not supported");
  DataType dtype = onnx_dtype(tp.data_type(), where);
  std::vector<int64_t> shape(tp.dims().begin(), tp.dims().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw_error("ValueError", where + ": negative dimension " + std::to_string(d));
    if (d > 0 && numel > (int64_t(1) << 40) / d)
      throw_error("ValueError", where + ": tensor is implausibly large");
    numel *= d;
  }
  const size_t nbytes = size_t(numel) * size_t(dtype.bytes());
  auto mismatch = [&](size_t have) {
    throw_error("ValueError", where + ": tensor of shape " + [&] {
      std::string s = "(";
      for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
      return s + ")";
    }() + " and type " + dtype.str() + " needs " + std::to_string(numel) + " elements but holds " +
                                 std::to_string(have));
  };
  // The elements stored are counted before the tensor is allocated: a small model declaring a
  // huge tensor is an error, not an allocation of its declared size (found by fuzz_onnx).
  using TP = ::onnx::TensorProto;
  if (tp.has_raw_data()) {
    if (tp.raw_data().size() != nbytes) mismatch(tp.raw_data().size() / std::max(1, dtype.bytes()));
  } else {
    int64_t held = numel;
    switch (tp.data_type()) {
      case TP::FLOAT: held = tp.float_data_size(); break;
      case TP::DOUBLE: held = tp.double_data_size(); break;
      case TP::INT64: held = tp.int64_data_size(); break;
      case TP::UINT32: case TP::UINT64: held = tp.uint64_data_size(); break;
      default: held = tp.int32_data_size(); break;
    }
    if (held != numel) mismatch(size_t(held));
  }
  Tensor t = Tensor::empty(shape, dtype);
  if (tp.has_raw_data()) {
    const std::string& raw = tp.raw_data();
    if (raw.size() != nbytes) mismatch(raw.size() / std::max(1, dtype.bytes()));
    if (nbytes) std::memcpy(t.data(), raw.data(), nbytes);
    return t;
  }
  switch (tp.data_type()) {
    case TP::FLOAT:
      if (tp.float_data_size() != numel) mismatch(size_t(tp.float_data_size()));
      copy_cast<float>(t, tp.float_data());
      break;
    case TP::DOUBLE:
      if (tp.double_data_size() != numel) mismatch(size_t(tp.double_data_size()));
      copy_cast<double>(t, tp.double_data());
      break;
    case TP::INT64:
      if (tp.int64_data_size() != numel) mismatch(size_t(tp.int64_data_size()));
      copy_cast<int64_t>(t, tp.int64_data());
      break;
    case TP::UINT32:
    case TP::UINT64:
      if (tp.uint64_data_size() != numel) mismatch(size_t(tp.uint64_data_size()));
      if (tp.data_type() == TP::UINT32) copy_cast<uint32_t>(t, tp.uint64_data());
      else copy_cast<uint64_t>(t, tp.uint64_data());
      break;
    case TP::INT32: case TP::INT16: case TP::INT8: case TP::UINT16: case TP::UINT8: case TP::BOOL:
    case TP::FLOAT16: case TP::BFLOAT16:
      if (tp.int32_data_size() != numel) mismatch(size_t(tp.int32_data_size()));
      switch (tp.data_type()) {
        case TP::INT32: copy_cast<int32_t>(t, tp.int32_data()); break;
        case TP::INT16: copy_cast<int16_t>(t, tp.int32_data()); break;
        case TP::INT8: copy_cast<int8_t>(t, tp.int32_data()); break;
        case TP::UINT16: case TP::FLOAT16: case TP::BFLOAT16: copy_cast<uint16_t>(t, tp.int32_data()); break;
        default: copy_cast<uint8_t>(t, tp.int32_data()); break;
      }
      break;
    default:
      throw_error("NotImplementedError", where + ": cannot read tensor data of this type");
  }
  return t;
}

Expr constant(const Tensor& t) { return make<ConstantNode>(t); }

namespace {

template <class T>
std::vector<T> read_all(const Tensor& t) {
  std::vector<T> out;
  const int64_t n = t.numel();
  out.reserve(size_t(n));
  auto get = [&](int64_t i) -> T {
    DataType d = t.dtype();
    if (d.is_float()) {
      if (d.bits() == 64) return T(t.data_as<double>()[i]);
      if (d.bits() == 32) return T(t.data_as<float>()[i]);
      // float16 / bfloat16 models (exported with .half()) carry their bounds and scalars so.
      if (d == DataType::Float(16)) return T(runtime::half_bits_to_float(t.data_as<uint16_t>()[i]));
      if (d == DataType::BFloat16()) return T(runtime::bfloat16_bits_to_float(t.data_as<uint16_t>()[i]));
      throw_error("NotImplementedError", "cannot read " + d.str() + " values at import");
    }
    const bool sgn = d.is_int();
    switch (d.bytes()) {
      case 1: return sgn ? T(t.data_as<int8_t>()[i]) : T(t.data_as<uint8_t>()[i]);
      case 2: return sgn ? T(t.data_as<int16_t>()[i]) : T(t.data_as<uint16_t>()[i]);
      case 4: return sgn ? T(t.data_as<int32_t>()[i]) : T(t.data_as<uint32_t>()[i]);
      default: return sgn ? T(t.data_as<int64_t>()[i]) : T(t.data_as<uint64_t>()[i]);
    }
  };
  for (int64_t i = 0; i < n; ++i) out.push_back(get(i));
  return out;
}

}  // namespace

std::vector<int64_t> tensor_ints(const Tensor& t) { return read_all<int64_t>(t); }
std::vector<double> tensor_doubles(const Tensor& t) { return read_all<double>(t); }

Tensor materialize(const SymVec& v, const std::string& where) {
  if (!v.all_const())
    throw_error("NotImplementedError", where + ": a shape value with symbolic elements is used as a tensor");
  std::vector<int64_t> c = v.consts();
  std::vector<int64_t> shape;
  if (!v.scalar) shape.push_back(int64_t(c.size()));
  Tensor t = Tensor::empty(shape, v.dtype);
  for (size_t i = 0; i < c.size(); ++i) {
    if (v.dtype == DataType::Int(32)) t.data_as<int32_t>()[i] = int32_t(c[i]);
    else t.data_as<int64_t>()[i] = c[i];
  }
  return t;
}

int64_t norm_axis(const NodeContext& ctx, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= std::max<int64_t>(ndim, 1))
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(ndim));
  return axis < 0 ? axis + ndim : axis;
}

// ---------------------------------------------------------------------------------------------
// The importer
// ---------------------------------------------------------------------------------------------

class Importer {
 public:
  explicit Importer(const OnnxImportOptions& options) : options_(options) {}

  IRModule run(const ::onnx::ModelProto& model);

  std::map<std::string, Value> values;
  BlockBuilder bb;
  const OnnxImportOptions& options_;

  std::string where() const { return options_.source_name; }

  /// Bytes of the constants made so far by NodeContext::reserve_constant.
  int64_t constant_bytes = 0;

  /// `e` (a call) evaluated to a constant when its arguments are constants and its result is a
  /// tensor of at most kFoldLimit elements; null otherwise.
  Expr fold(const Expr& e);
  static constexpr int64_t kFoldLimit = 4096;

 private:
  int64_t check_opset(const ::onnx::ModelProto& model) const;
  void check_supported(const ::onnx::GraphProto& g) const;
  StructInfo input_sinfo(const ::onnx::ValueInfoProto& vi);
  void convert_node(const ::onnx::NodeProto& node, int64_t opset, int index);

  std::map<std::string, PrimVar> dim_vars_;
  std::set<std::string> used_names_;
};

namespace {

std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

std::string node_label(const ::onnx::NodeProto& node, int index) {
  std::string name = node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
  return "node " + name + " (" + node.op_type() + ")";
}

}  // namespace

int64_t Importer::check_opset(const ::onnx::ModelProto& model) const {
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (options_.opset) opset = *options_.opset;
  if (opset < 0) opset = 13;  // no default-domain import: nothing in it is used
  if (opset < 13 || opset > 17)
    throw_error("NotImplementedError", where() + ": opset " + std::to_string(opset) +
                                           " is not supported (supported: opsets 13 to 17)");
  return opset;
}

void Importer::check_supported(const ::onnx::GraphProto& g) const {
  const auto& table = converters();
  std::map<std::string, std::vector<std::string>> missing;  // op type -> node names
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    std::string type = default_domain ? n.op_type() : n.domain() + "." + n.op_type();
    if (default_domain && table.count(n.op_type())) continue;
    missing[type].push_back(n.name().empty() ? "#" + std::to_string(i) : n.name());
  }
  if (missing.empty()) return;
  std::string msg = where() + ": " + std::to_string(missing.size()) + " unsupported operator type" +
                    (missing.size() > 1 ? "s" : "") + ":";
  for (const auto& [type, names] : missing) {
    msg += "\n  " + type + " (" + std::to_string(names.size()) + " node" + (names.size() > 1 ? "s" : "") + "): ";
    for (size_t k = 0; k < names.size(); ++k) msg += (k ? ", " : "") + names[k];
  }
  throw_error("NotImplementedError", msg);
}

StructInfo Importer::input_sinfo(const ::onnx::ValueInfoProto& vi) {
  const std::string w = where() + ": graph input '" + vi.name() + "'";
  if (!vi.type().has_tensor_type())
    throw_error("NotImplementedError", w + " is not a tensor (sequences, maps and optionals are not supported)");
  const auto& tt = vi.type().tensor_type();
  DataType dtype = onnx_dtype(tt.elem_type(), w);
  auto fresh = [&](const std::string& hint) {
    std::string name = sanitize(hint);
    std::string unique = name;
    for (int k = 1; used_names_.count(unique); ++k) unique = name + std::to_string(k);
    used_names_.insert(unique);
    return make<PrimVarNode>(unique);
  };
  auto named = [&](const std::string& n) -> PrimExpr {
    auto it = dim_vars_.find(n);
    if (it != dim_vars_.end()) return it->second;
    PrimVar v = fresh(n);
    dim_vars_.emplace(n, v);
    return v;
  };
  std::vector<PrimExpr> shape;
  if (auto it = options_.shape_dict.find(vi.name()); it != options_.shape_dict.end()) {
    for (const auto& d : it->second) {
      if (const auto* v = std::get_if<int64_t>(&d)) {
        shape.push_back(*v >= 0 ? int_imm(*v) : PrimExpr(fresh(sanitize(vi.name()) + "_dim" + std::to_string(shape.size()))));
      } else {
        shape.push_back(named(std::get<std::string>(d)));
      }
    }
    return tensor_sinfo(shape, dtype);
  }
  if (!tt.has_shape()) return tensor_sinfo_ndim(dtype, -1);
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const auto& d = tt.shape().dim(k);
    if (d.has_dim_value() && d.dim_value() >= 0) shape.push_back(int_imm(d.dim_value()));
    else if (d.has_dim_param() && !d.dim_param().empty()) shape.push_back(named(d.dim_param()));
    else shape.push_back(fresh(sanitize(vi.name()) + "_dim" + std::to_string(k)));
  }
  return tensor_sinfo(shape, dtype);
}

void Importer::convert_node(const ::onnx::NodeProto& node, int64_t opset, int index) {
  const std::string label = node_label(node, index);
  // Schema arity, when libonnx knows the op at this opset.
  if (const auto* schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), int(opset), node.domain())) {
    int n_in = node.input_size(), n_out = node.output_size();
    if (n_in < schema->min_input() || n_in > schema->max_input())
      throw_error("ValueError", where() + ": " + label + " has " + std::to_string(n_in) + " inputs, but " +
                                    node.op_type() + "-" + std::to_string(schema->since_version()) + " takes " +
                                    std::to_string(schema->min_input()) + " to " + std::to_string(schema->max_input()));
    if (n_out < schema->min_output() || n_out > schema->max_output())
      throw_error("ValueError", where() + ": " + label + " has " + std::to_string(n_out) + " outputs, but " +
                                    node.op_type() + " produces " + std::to_string(schema->min_output()) + " to " +
                                    std::to_string(schema->max_output()));
  }
  for (const auto& in : node.input())
    if (!in.empty() && !values.count(in))
      throw_error("ValueError", where() + ": " + label + " uses '" + in +
                                    "', which is neither a graph input, an initializer nor an earlier node's output");
  for (const auto& out : node.output())
    if (!out.empty() && values.count(out))
      throw_error("ValueError", where() + ": " + label + " defines '" + out + "', which is already defined");
  std::vector<Value> outs;
  try {
    NodeContext ctx(*this, node, opset);
    outs = converters().at(node.op_type())(ctx);
  } catch (const Error& e) {
    throw_error(e.kind(), where() + ": " + label + ": " + e.message());
  } catch (const std::exception& e) {
    // A converter reading past what a malformed node holds (an empty constant, ...) is still
    // a bad model, not a crash (found by fuzz_onnx: Clip with an empty min tensor).
    throw_error("ValueError", where() + ": " + label + ": malformed node (" + e.what() + ")");
  }
  for (int k = 0; k < node.output_size(); ++k) {
    const std::string& name = node.output(k);
    if (name.empty()) continue;
    if (size_t(k) >= outs.size() || (!outs[k].expr && !outs[k].sym))
      throw_error("NotImplementedError", where() + ": " + label + ": output " + std::to_string(k) + " ('" + name +
                                             "') is not supported");
    Value v = outs[k];
    if (v.expr && !v.expr.as<VarNode>() && !v.expr.as<ConstantNode>()) {
      try {
        Expr folded = fold(v.expr);
        v.expr = folded ? folded : bb.emit(v.expr);
      } catch (const Error& e) {
        throw_error(e.kind(), where() + ": " + label + ": " + e.message());
      }
    }
    values[name] = v;
  }
}

IRModule Importer::run(const ::onnx::ModelProto& model) {
  if (!model.has_graph()) throw_error("ValueError", where() + ": the model has no graph");
  const int64_t opset = check_opset(model);
  const auto& g = model.graph();
  check_supported(g);

  // Initializers (some exporters also list them among the inputs: those are not inputs).
  std::map<std::string, const ::onnx::TensorProto*> inits;
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) throw_error("ValueError", where() + ": an initializer has no name");
    inits[t.name()] = &t;
  }
  std::vector<Var> params;
  std::vector<std::string> param_names;
  for (const auto& vi : g.input()) {
    if (inits.count(vi.name())) continue;
    if (vi.name().empty()) throw_error("ValueError", where() + ": a graph input has no name");
    if (values.count(vi.name())) throw_error("ValueError", where() + ": graph input '" + vi.name() + "' is listed twice");
    Var v = make<VarNode>(sanitize(vi.name()), input_sinfo(vi));
    params.push_back(v);
    values[vi.name()] = Value{v, std::nullopt};
  }
  const int64_t num_input = int64_t(params.size());
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const auto& t : g.initializer()) {
    Tensor data = tensor_from_proto(t, where() + ": initializer '" + t.name() + "'");
    if (options_.keep_params_in_input) {
      Var v = make<VarNode>(sanitize(t.name()), tensor_sinfo(data.shape(), data.dtype()));
      params.push_back(v);
      values[t.name()] = Value{v, std::nullopt};
      kept.emplace_back(t.name(), data);
    } else {
      Value val{constant(data), std::nullopt};
      if ((data.dtype() == DataType::Int(64) || data.dtype() == DataType::Int(32)) && data.ndim() <= 1 &&
          data.numel() <= 64) {
        SymVec s;
        s.scalar = data.ndim() == 0;
        s.dtype = data.dtype();
        for (int64_t x : tensor_ints(data)) s.values.push_back(int_imm(x));
        val.sym = s;
      }
      values[t.name()] = val;
    }
  }

  bb.begin_function("main", params, DictAttrs{{"num_input", num_input}});
  bb.begin_dataflow();
  for (int i = 0; i < g.node_size(); ++i) convert_node(g.node(i), opset, i);

  if (g.output_size() == 0) throw_error("ValueError", where() + ": the graph has no outputs");
  std::vector<Expr> outs;
  for (const auto& o : g.output()) {
    auto it = values.find(o.name());
    if (it == values.end())
      throw_error("ValueError", where() + ": graph output '" + o.name() + "' is not produced by any node");
    Value v = it->second;
    if (!v.expr) v.expr = constant(materialize(*v.sym, where() + ": graph output '" + o.name() + "'"));
    outs.push_back(v.expr);
  }
  Expr result = outs.size() == 1 ? outs[0] : Expr(make<TupleNode>(outs));
  Var gv = bb.emit_output(result);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule mod = bb.get();
  GlobalVar main_gv = mod.get_global_var("main");
  mod.update(main_gv, fuse_exported_patterns(mod.lookup(main_gv).as_ref<FunctionNode>(), mod));
  if (!kept.empty()) {
    std::vector<Expr> consts;
    for (const auto& [name, t] : kept) consts.push_back(constant(t));
    mod.cow()->attrs["params"] = make<TupleNode>(std::move(consts));
  }
  return mod;
}

// ---------------------------------------------------------------------------------------------
// NodeContext
// ---------------------------------------------------------------------------------------------

NodeContext::NodeContext(Importer& imp, const ::onnx::NodeProto& node, int64_t opset)
    : node(node), opset(opset), imp(imp) {}

bool NodeContext::has_input(size_t i) const { return i < num_inputs() && !node.input(int(i)).empty(); }

Expr NodeContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required");
  Value& v = imp.values.at(node.input(int(i)));
  if (!v.expr) v.expr = constant(materialize(*v.sym, "input '" + node.input(int(i)) + "'"));
  if (!v.expr->struct_info_) v.expr = imp.bb.normalize(v.expr);  // constants get their struct info
  return v.expr;
}

Value NodeContext::input_value(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required");
  return imp.values.at(node.input(int(i)));
}

std::optional<SymVec> NodeContext::input_sym(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  const Value& v = imp.values.at(node.input(int(i)));
  if (v.sym) return v.sym;
  if (const auto* c = v.expr.as<ConstantNode>()) {
    DataType d = c->data.dtype();
    if ((d.is_int() || d.is_uint()) && c->data.ndim() <= 1 && c->data.numel() <= 1024) {
      SymVec s;
      s.scalar = c->data.ndim() == 0;
      s.dtype = d == DataType::Int(32) ? d : DataType::Int(64);
      for (int64_t x : tensor_ints(c->data)) s.values.push_back(int_imm(x));
      return s;
    }
  }
  return std::nullopt;
}

std::optional<Tensor> NodeContext::input_const(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  const Value& v = imp.values.at(node.input(int(i)));
  if (const auto* c = v.expr.as<ConstantNode>()) return c->data;
  if (!v.expr && v.sym && v.sym->all_const()) return materialize(*v.sym, "");
  return std::nullopt;
}

std::vector<int64_t> NodeContext::const_ints(size_t i, const std::string& what) const {
  if (auto s = input_sym(i); s && s->all_const()) return s->consts();
  if (auto t = input_const(i)) return tensor_ints(*t);
  fail(what + " (input " + std::to_string(i) + ") must be a constant known at import", "NotImplementedError");
}

double NodeContext::const_scalar(size_t i, const std::string& what) const {
  auto t = input_const(i);
  if (!t) fail(what + " (input " + std::to_string(i) + ") must be a constant known at import", "NotImplementedError");
  auto v = tensor_doubles(*t);
  if (v.empty()) fail(what + " is empty");
  return v[0];
}

const TensorStructInfoNode& NodeContext::tensor_info(size_t i) const {
  Expr e = input(i);
  const StructInfo& s = struct_info_of(e);
  const auto* t = s.as<TensorStructInfoNode>();
  if (!t) fail("input " + std::to_string(i) + " is not a tensor");
  return *t;
}

DataType NodeContext::dtype(size_t i) const {
  if (has_input(i)) {
    const Value& v = imp.values.at(node.input(int(i)));
    if (!v.expr && v.sym) return v.sym->dtype;
  }
  return tensor_info(i).dtype;
}

int NodeContext::ndim(size_t i) const {
  if (has_input(i)) {
    const Value& v = imp.values.at(node.input(int(i)));
    if (!v.expr && v.sym) return v.sym->scalar ? 0 : 1;
  }
  const auto& t = tensor_info(i);
  if (t.is_unknown_ndim()) fail("the rank of input " + std::to_string(i) + " is unknown", "NotImplementedError");
  return t.ndim;
}

std::vector<PrimExpr> NodeContext::shape(size_t i) const {
  if (has_input(i)) {
    const Value& v = imp.values.at(node.input(int(i)));
    if (!v.expr && v.sym) {
      if (v.sym->scalar) return {};
      return {int_imm(int64_t(v.sym->values.size()))};
    }
  }
  const auto& t = tensor_info(i);
  if (!t.shape) fail("the shape of input " + std::to_string(i) + " is unknown", "NotImplementedError");
  return *t.shape;
}

const ::onnx::AttributeProto* NodeContext::attr(const std::string& name) const {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != ::onnx::AttributeProto::INT && !a->has_i()) fail("attribute '" + name + "' must be an int");
  return a->i();
}

double NodeContext::attr_float(const std::string& name, double def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != ::onnx::AttributeProto::FLOAT && !a->has_f()) fail("attribute '" + name + "' must be a float");
  return a->f();
}

std::string NodeContext::attr_string(const std::string& name, const std::string& def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != ::onnx::AttributeProto::STRING && !a->has_s()) fail("attribute '" + name + "' must be a string");
  return a->s();
}

std::optional<std::vector<int64_t>> NodeContext::attr_ints(const std::string& name) const {
  const auto* a = attr(name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Expr Importer::fold(const Expr& e) {
  const auto* call = e.as<CallNode>();
  if (!call) return Expr();
  const op::OpDef* def = op::callee_op_def(*call);
  if (!def) return Expr();
  for (const auto& a : call->args)
    if (!a.as<ConstantNode>() && !a.as<ShapeExprNode>() && !a.as<PrimValueNode>() && !a.as<TupleNode>()) return Expr();
  Expr normalized = bb.normalize(e);
  auto shape = static_shape(normalized->struct_info_);
  if (!shape) return Expr();
  // Reshaping a constant (conv biases, normalization scales): the same bytes, a new shape.
  if (def->view == op::ViewKind::Always && !call->args.empty()) {
    if (const auto* c = call->args[0].as<ConstantNode>())
      return constant(Tensor::from_buffer(*shape, c->data.dtype(), c->data.buffer()));
  }
  int64_t numel = 1;
  for (int64_t d : *shape) numel *= d;
  if (numel > kFoldLimit) return Expr();
  if (auto value = transform::evaluate_constant_call(normalized.as_ref<CallNode>())) return constant(*value);
  return Expr();
}

// Small computations on constants (shape arithmetic in floats, scales, window functions) are
// evaluated here, so that converters needing a constant (Range, Resize's scales, Pad's value)
// see one; larger ones are left to FoldConstant before partitioning.
Expr NodeContext::emit(const Expr& e) const {
  if (Expr folded = imp.fold(e)) return folded;
  return imp.bb.emit(e);
}

namespace {

DataType float_dtype_of(const Expr& e) {
  const auto* t = e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
  return t && t->dtype.is_float() ? t->dtype : DataType::Void();
}

}  // namespace

/// Two float operands of different dtypes, which ONNX forbids but PyTorch's exporter writes into
/// float16 graphs (scaled_dot_product_attention's float32 scale and causal mask): a constant
/// takes the other operand's dtype, and a float32 operand meeting a 16-bit one takes the 16-bit
/// dtype — the reading the exporter meant. Other mismatches stay the operator's error.
void unify_float_dtypes(const NodeContext& ctx, Expr& a, Expr& b) {
  DataType da = float_dtype_of(a), db = float_dtype_of(b);
  if (da.is_void() || db.is_void() || da == db) return;
  const DataType f32 = DataType::Float(32);
  auto narrow = [](DataType d) { return d == DataType::Float(16) || d == DataType::BFloat16(); };
  if ((a.as<ConstantNode>() && !b.as<ConstantNode>()) || (da == f32 && narrow(db))) a = ctx.emit(op::astype(a, db));
  else if (b.as<ConstantNode>() || (db == f32 && narrow(da))) b = ctx.emit(op::astype(b, da));
}

Expr NodeContext::scalar(double v, DataType dtype) const { return full({}, v, dtype, "a scalar"); }

Expr NodeContext::full(const std::vector<int64_t>& shape, double v, DataType dtype, const std::string& what) const {
  if (!shape.empty()) reserve_constant(shape, dtype, what);
  Tensor t = Tensor::empty(shape, dtype);
  if (t.numel() == 0) return constant(t);
  void* first = t.data();
  if (dtype == DataType::Float(32)) *static_cast<float*>(first) = float(v);
  else if (dtype == DataType::Float(64)) *static_cast<double*>(first) = v;
  else if (dtype == DataType::Int(64)) *static_cast<int64_t*>(first) = int64_t(v);
  else if (dtype == DataType::Int(32)) *static_cast<int32_t*>(first) = int32_t(v);
  else if (dtype.is_bool() || dtype == DataType::UInt(8)) *static_cast<uint8_t*>(first) = uint8_t(v);
  else if (dtype == DataType::Int(8)) *static_cast<int8_t*>(first) = int8_t(v);
  else if (dtype == DataType::Int(16)) *static_cast<int16_t*>(first) = int16_t(v);
  // float16 / bfloat16 models (.half() exports): HardSwish's, InstanceNormalization's constants.
  else if (dtype == DataType::Float(16)) *static_cast<uint16_t*>(first) = runtime::float_to_half_bits(float(v));
  else if (dtype == DataType::BFloat16()) *static_cast<uint16_t*>(first) = runtime::float_to_bfloat16_bits(float(v));
  else fail("cannot make a " + dtype.str() + " constant", "NotImplementedError");
  const size_t element = dtype.bytes();
  auto* bytes = static_cast<unsigned char*>(first);
  for (int64_t i = 1; i < t.numel(); ++i) std::memcpy(bytes + size_t(i) * element, bytes, element);
  return constant(t);
}

size_t NodeContext::num_outputs() const {
  size_t n = size_t(node.output_size());
  while (n > 0 && node.output(int(n - 1)).empty()) --n;
  return n;
}

bool NodeContext::has_output(size_t i) const { return i < size_t(node.output_size()) && !node.output(int(i)).empty(); }

void NodeContext::reserve_constant(const std::vector<int64_t>& shape, DataType dtype, const std::string& what) const {
  // In double: a declared shape's product may not fit in 64 bits.
  double bytes = double(dtype.bytes());
  std::string dims;
  for (int64_t d : shape) {
    if (d < 0) fail(what + " would have a negative dimension (" + std::to_string(d) + ")");
    bytes *= double(d);
    dims += (dims.empty() ? "" : " x ") + std::to_string(d);
  }
  const int64_t limit = imp.options_.max_constant_bytes;
  if (bytes + double(imp.constant_bytes) > double(limit)) {
    char size[32];
    std::snprintf(size, sizeof size, "%.4g", bytes);
    fail(what + " (" + (dims.empty() ? std::string("a scalar") : dims) + " " + dtype.str() + ", " + size +
         " bytes) would bring the constants this import makes to more than max_constant_bytes = " +
         std::to_string(limit) + " (an option of the ONNX importer)");
  }
  imp.constant_bytes += int64_t(bytes);
}

void NodeContext::fail(const std::string& message, const std::string& kind) const { throw_error(kind, message); }

const std::map<std::string, ConvertFn>& converters() {
  static const std::map<std::string, ConvertFn> table = [] {
    std::map<std::string, ConvertFn> t;
    register_elementwise(t);
    register_nn(t);
    register_shape(t);
    register_reduce(t);
    register_index(t);
    register_einsum(t);
    register_signal(t);
    return t;
  }();
  return table;
}

}  // namespace onnx_detail

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

IRModule from_onnx(const ::onnx::ModelProto& model, const OnnxImportOptions& options) {
  onnx_detail::Importer imp(options);
  return imp.run(model);
}

IRModule from_onnx_bytes(std::string_view bytes, const OnnxImportOptions& options) {
  ::onnx::ModelProto model;
  if (bytes.size() > size_t(INT32_MAX))
    throw_error("IOError", options.source_name + ": the model is larger than 2 GiB");
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    throw_error("IOError", options.source_name + ": not a valid ONNX model (the protobuf data is corrupted or truncated)");
  return from_onnx(model, options);
}

IRModule from_onnx_file(const std::string& path, OnnxImportOptions options) {
  if (options.source_name == OnnxImportOptions{}.source_name) options.source_name = path;
  // Map the file instead of reading it: models carry ~100 MB of weights, and a copy into a
  // zero-filled buffer costs more than the protobuf parse itself.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_error("IOError", path + ": cannot open the file (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_error("IOError", path + ": not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    throw_error("IOError", path + ": the file is empty");
  }
  size_t size = size_t(st.st_size);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) throw_error("IOError", path + ": cannot map the file (" + std::strerror(errno) + ")");
  std::unique_ptr<void, std::function<void(void*)>> unmap(data, [size](void* p) { ::munmap(p, size); });
  ::madvise(data, size, MADV_SEQUENTIAL);
  return from_onnx_bytes(std::string_view(static_cast<const char*>(data), size), options);
}

std::vector<std::pair<std::string, Tensor>> onnx_params_of(const IRModule& mod) {
  std::vector<std::pair<std::string, Tensor>> out;
  auto it = mod->attrs.find("params");
  if (it == mod->attrs.end()) return out;
  const auto* tup = it->second.as<TupleNode>();
  if (!tup) return out;
  Expr main = mod.lookup("main");
  const auto& params = main.as<FunctionNode>()->params;
  int64_t num_input = 0;
  if (auto a = main.as<FunctionNode>()->attrs.find("num_input"); a != main.as<FunctionNode>()->attrs.end())
    num_input = std::get<int64_t>(a->second);
  for (size_t k = 0; k < tup->fields.size(); ++k) {
    std::string name = size_t(num_input) + k < params.size() ? params[num_input + k]->name_hint : std::to_string(k);
    out.emplace_back(name, tup->fields[k].as<ConstantNode>()->data);
  }
  return out;
}

Tensor onnx_tensor_from_bytes(std::string_view bytes, const std::string& source_name) {
  ::onnx::TensorProto tp;
  if (bytes.size() > size_t(INT32_MAX) || !tp.ParseFromArray(bytes.data(), int(bytes.size())))
    throw_error("IOError", source_name + ": not a valid ONNX TensorProto");
  return onnx_detail::tensor_from_proto(tp, source_name);
}

std::vector<std::string> onnx_supported_ops() {
  std::vector<std::string> out;
  for (const auto& [k, v] : onnx_detail::converters()) out.push_back(k);
  return out;
}

}  // namespace partita::frontend
