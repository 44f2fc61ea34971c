// The dnnl codegen: each offloaded function becomes a graph of oneDNN primitives (JSON, see
// module_format.h). Composite calls are expanded in place; then a peephole pass fuses
// bias adds, residual adds (sum post-op) and activations into the conv2d / matmul before them
// when the intermediate has no other use, folds a transposing permute_dims into matmul, and a
// per-channel scale of a 1x1 convolution's source (squeeze-excitation) into its weights.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "binary_broadcast.h"
#include "dnnl.h"
#include "module_format.h"
#include "partita/codegen/json_graph_builder.h"
#include "partita/ir/struct_info.h"
#include "partita/op/ops.h"

namespace partita::backend::dnnl {

using codegen::CodegenFunction;
using codegen::UnsupportedFunction;
using codegen::static_f32_shape;
using json = nlohmann::json;

namespace {

std::string attr_str(const CallNode& call, const std::string& name, const std::string& dflt) {
  if (call.attrs.defined())
    if (const AttrValue* v = call.attrs->find(name))
      if (auto* s = std::get_if<std::string>(v)) return *s;
  return dflt;
}

std::vector<int64_t> attr_ints(const CallNode& call, const std::string& name, std::vector<int64_t> dflt) {
  if (call.attrs.defined())
    if (const AttrValue* v = call.attrs->find(name)) {
      if (auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
      if (auto* i = std::get_if<int64_t>(v)) return {*i};
    }
  return dflt;
}

int64_t attr_int(const CallNode& call, const std::string& name, int64_t dflt) {
  auto v = attr_ints(call, name, {dflt});
  return v.empty() ? dflt : v[0];
}

double attr_float(const CallNode& call, const std::string& name, double dflt) {
  if (call.attrs.defined())
    if (const AttrValue* v = call.attrs->find(name)) {
      if (auto* d = std::get_if<double>(v)) return *d;
      if (auto* i = std::get_if<int64_t>(v)) return double(*i);
    }
  return dflt;
}

bool attr_bool(const CallNode& call, const std::string& name, bool dflt) {
  if (call.attrs.defined())
    if (const AttrValue* v = call.attrs->find(name))
      if (auto* b = std::get_if<bool>(v)) return *b;
  return dflt;
}

std::optional<double> prim_number(const Expr& e) {
  auto* pv = e.as<PrimValueNode>();
  if (!pv) return std::nullopt;
  if (auto* f = pv->value.as<FloatImmNode>()) return f->value;
  if (auto c = as_const_int(pv->value)) return double(*c);
  return std::nullopt;
}

std::array<int64_t, 4> padding4(const std::vector<int64_t>& v) {
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  if (v.size() == 4) return {v[0], v[1], v[2], v[3]};
  return {-1, -1, -1, -1};
}

std::array<int64_t, 2> pair2(const std::vector<int64_t>& v) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  return {-1, -1};
}

// oneDNN eltwise algorithm names (the runtime maps them) for unary operators.
const std::map<std::string, std::string>& eltwise_algs() {
  static const std::map<std::string, std::string> m = {
      {"relax.nn.relu", "relu"},   {"relax.nn.gelu", "gelu_erf"}, {"relax.nn.gelu_tanh", "gelu_tanh"},
      {"relax.nn.silu", "swish"},  {"relax.sigmoid", "logistic"}, {"relax.tanh", "tanh"},
      {"relax.exp", "exp"},        {"relax.sqrt", "sqrt"},        {"relax.abs", "abs"},
      {"relax.clip", "clip"}};
  return m;
}

// The right (bottom) padding oneDNN's pooling needs for `out` windows over `in` (ceil_mode
// makes it larger than the attribute's; the runtime computes it the same way).
int64_t pool_right_padding(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad_left) {
  return (out - 1) * stride + kernel - in - pad_left;
}

// oneDNN's DNNL_MAX_NDIMS.
constexpr size_t kMaxDims = 12;

// How many trailing axes a layer_norm normalizes (its axes, in any order and sign, must be
// exactly the last k), or 0 when they are not trailing.
int64_t layer_norm_trailing_axes(const CallNode& call, int64_t ndim) {
  std::vector<int64_t> axes = attr_ints(call, "axes", {-1});
  for (auto& a : axes) a = a < 0 ? a + ndim : a;
  std::sort(axes.begin(), axes.end());
  int64_t k = int64_t(axes.size());
  if (k == 0 || k > ndim) return 0;
  for (int64_t i = 0; i < k; ++i)
    if (axes[size_t(i)] != ndim - k + i) return 0;
  return k;
}

// The checks shared by every operand and result: float32, static shape, 0 to 12 dims, no
// empty dimension (the host runs empty tensors).
std::string tensor_unsupported_reason(const std::string& name, const std::optional<std::vector<int64_t>>& s) {
  if (!s) return name + " of a tensor that is not float32 of static shape";
  if (s->size() > kMaxDims) return name + " of a tensor with more than 12 dimensions";
  if (std::find(s->begin(), s->end(), 0) != s->end()) return name + " of a tensor with no elements";
  return "";
}

// concat of a tuple of float32 tensors of one rank (1 or more dims) along any axis.
std::string concat_unsupported_reason(const CallNode& call) {
  auto out = static_f32_shape(Expr(const_cast<CallNode*>(&call)));
  if (auto why = tensor_unsupported_reason("concat", out); !why.empty()) return why;
  // An inline tuple, or (in a composite) a parameter standing for one.
  auto* tup = call.args.size() == 1 && call.args[0]->struct_info_ ? call.args[0]->struct_info_.as<TupleStructInfoNode>()
                                                                  : nullptr;
  if (!tup || tup->fields.empty()) return "concat of something other than a tuple of tensors";
  for (const auto& f : tup->fields) {
    auto* t = f.as<TensorStructInfoNode>();
    auto s = t && t->dtype == DataType::Float(32) ? static_shape(f) : std::nullopt;
    if (auto why = tensor_unsupported_reason("concat", s); !why.empty()) return why;
    if (s->size() != out->size()) return "concat of tensors of another rank";
  }
  if (out->empty()) return "concat of 0-d tensors";
  if (call.attrs.defined())
    if (const AttrValue* v = call.attrs->find("axis"); v && !std::get_if<int64_t>(v))
      return "concat without an axis (of the flattened tensors)";
  int64_t axis = attr_int(call, "axis", 0), nd = int64_t(out->size());
  if (axis < -nd || axis >= nd) return "concat axis out of range";
  return "";
}

// Inference batch_norm (the moving statistics) over axis 1 of a 2-d to 5-d tensor.
std::string batch_norm_unsupported_reason(const CallNode& call) {
  if (call.args.size() != 5) return "batch_norm needs 5 arguments";
  auto x = static_f32_shape(call.args[0]);
  if (auto why = tensor_unsupported_reason("batch_norm", x); !why.empty()) return why;
  if (x->size() < 2 || x->size() > 5) return "batch_norm of other than a 2-d to 5-d tensor";
  if (attr_bool(call, "training", true)) return "batch_norm in training mode";
  int64_t axis = attr_int(call, "axis", 1);
  if (axis != 1 && axis != 1 - int64_t(x->size())) return "batch_norm over an axis other than 1";
  for (size_t k = 1; k < 5; ++k) {
    auto s = static_f32_shape(call.args[k]);
    if (!s || *s != std::vector<int64_t>{(*x)[1]}) return "batch_norm parameters of another shape than (C)";
  }
  return "";
}

// resize2d as oneDNN's resampling computes it: NCHW; linear with half_pixel coordinates
// (pytorch_half_pixel where no output axis has size 1: the same), whose clamped taps at the
// borders are oneDNN's; nearest with asymmetric coordinates rounded down (PyTorch's nearest)
// by integer upscale factors, where oneDNN's (d + 0.5) / F - 0.5 rounds to the same source.
std::string resize_unsupported_reason(const CallNode& call) {
  auto out = static_f32_shape(Expr(const_cast<CallNode*>(&call)));
  if (auto why = tensor_unsupported_reason("resize2d", out); !why.empty()) return why;
  auto in = call.args.empty() ? std::nullopt : static_f32_shape(call.args[0]);
  if (auto why = tensor_unsupported_reason("resize2d", in); !why.empty()) return why;
  if (in->size() != 4 || out->size() != 4 || attr_str(call, "layout", "NCHW") != "NCHW")
    return "resize2d of other than NCHW";
  const std::string method = attr_str(call, "method", "linear");
  const std::string mode = attr_str(call, "coordinate_transformation_mode", "half_pixel");
  if (method == "linear") {
    if (mode == "half_pixel" || (mode == "pytorch_half_pixel" && (*out)[2] > 1 && (*out)[3] > 1)) return "";
    return "linear resize2d with coordinate_transformation_mode " + mode;
  }
  if (method == "nearest_neighbor") {
    if (mode != "asymmetric" || attr_str(call, "rounding_method", "round") != "floor")
      return "nearest resize2d other than asymmetric with floor rounding";
    if ((*out)[2] % (*in)[2] != 0 || (*out)[3] % (*in)[3] != 0)
      return "nearest resize2d by other than integer upscale factors";
    return "";
  }
  return "resize2d method " + method;
}

// reshape and strided_slice: their other arguments are a shape and tuples of integers.
std::string layout_op_unsupported_reason(const CallNode& call, const std::string& what) {
  auto out = static_f32_shape(Expr(const_cast<CallNode*>(&call)));
  if (auto why = tensor_unsupported_reason(what, out); !why.empty()) return why;
  auto in = call.args.empty() ? std::nullopt : static_f32_shape(call.args[0]);
  if (auto why = tensor_unsupported_reason(what, in); !why.empty()) return why;
  if (what == "strided_slice" && !op::unit_slice_begin(call))
    return "strided_slice with other than constant axes and starts and unit strides";
  return "";
}

}  // namespace

// Why `call` cannot be lowered (empty when it can). Shared with the pattern checks.
std::string unsupported_reason(const CallNode& call) {
  auto* op = call.op.as<OpNode>();
  if (!op) return "a call of something other than an operator";
  const std::string& name = op->name;
  if (name == "relax.concat") return concat_unsupported_reason(call);
  if (name == "relax.nn.batch_norm") return batch_norm_unsupported_reason(call);
  if (name == "relax.image.resize2d") return resize_unsupported_reason(call);
  if (name == "relax.reshape") return layout_op_unsupported_reason(call, "reshape");
  if (name == "relax.strided_slice") return layout_op_unsupported_reason(call, "strided_slice");
  auto out = static_f32_shape(Expr(const_cast<CallNode*>(&call)));
  if (!out) return name + " does not produce a float32 tensor of static shape";
  std::vector<std::vector<int64_t>> shapes = {*out};
  for (const auto& a : call.args) {
    if (a.as<PrimValueNode>()) continue;
    auto s = static_f32_shape(a);
    if (!s) return name + " has an argument that is not a float32 tensor of static shape";
    shapes.push_back(*s);
  }
  // oneDNN memory has 1 to 12 dimensions (a 0-d tensor runs as one element) and no zero-size
  // dimension (the host runs empty tensors).
  for (const auto& s : shapes) {
    if (s.size() > kMaxDims) return name + " of a tensor with more than 12 dimensions";
    if (std::find(s.begin(), s.end(), 0) != s.end()) return name + " of a tensor with no elements";
  }
  if (name == "relax.nn.conv2d") {
    if (attr_str(call, "data_layout", "NCHW") != "NCHW" || attr_str(call, "kernel_layout", "OIHW") != "OIHW" ||
        attr_str(call, "out_layout", "NCHW") != "NCHW")
      return "conv2d layouts other than NCHW/OIHW";
    if (padding4(attr_ints(call, "padding", {0})).at(0) < 0) return "conv2d padding is malformed";
    return "";
  }
  if (name == "relax.nn.max_pool2d" || name == "relax.nn.avg_pool2d") {
    if (attr_str(call, "layout", "NCHW") != "NCHW" || attr_str(call, "out_layout", "NCHW") != "NCHW")
      return "pooling layout other than NCHW";
    auto d = pair2(attr_ints(call, "dilation", {1, 1}));
    if (d[0] != 1 || d[1] != 1) return "dilated pooling";
    bool include_pad = attr_bool(call, "count_include_pad", false);
    if (attr_bool(call, "ceil_mode", false) && include_pad) return "avg pooling with ceil_mode and count_include_pad";
    // Windows lying wholly in the padding: the host gives them 0 (average) or the lowest
    // float (max); oneDNN refuses them (0 / 0 when excluding the padding).
    auto in = static_f32_shape(call.args[0]);
    auto kernel = pair2(attr_ints(call, "pool_size", {1, 1})), strides = pair2(attr_ints(call, "strides", {1, 1}));
    auto pad = padding4(attr_ints(call, "padding", {0}));
    for (int k = 0; k < 2; ++k) {
      int64_t right = pool_right_padding((*in)[size_t(2 + k)], (*out)[size_t(2 + k)], kernel[size_t(k)],
                                         strides[size_t(k)], pad[size_t(k)]);
      if (pad[size_t(k)] >= kernel[size_t(k)] || right >= kernel[size_t(k)])
        return "pooling with a window wholly in the padding";
    }
    return "";
  }
  if (name == "relax.mean") {
    // Over the two spatial axes of an NCHW map (a global average pool, as exports write it):
    // average pooling over the whole map.
    auto in = static_f32_shape(call.args[0]);
    std::vector<int64_t> axes = attr_ints(call, "axis", {});
    for (auto& a : axes) a = a < 0 ? a + int64_t(in->size()) : a;
    std::sort(axes.begin(), axes.end());
    if (in->size() != 4 || axes != std::vector<int64_t>{2, 3}) return "mean over other than the spatial axes of a 4-d map";
    return "";
  }
  if (name == "relax.nn.adaptive_avg_pool2d") {
    if (attr_str(call, "layout", "NCHW") != "NCHW" || attr_str(call, "out_layout", "NCHW") != "NCHW")
      return "pooling layout other than NCHW";
    auto in = static_f32_shape(call.args[0]);
    if (in->size() != 4 || (*in)[2] % (*out)[2] != 0 || (*in)[3] % (*out)[3] != 0)
      return "adaptive pooling whose output size does not divide the input size";
    return "";
  }
  if (name == "relax.matmul") {
    // Batch dimensions broadcast (oneDNN broadcasts either operand's); a 1-d operand, which
    // drops a dimension from the result, stays on the host.
    auto a = static_f32_shape(call.args[0]), b = static_f32_shape(call.args[1]);
    if (a->size() < 2 || b->size() < 2) return "matmul of a 1-d operand";
    if (call.attrs.defined())
      if (const AttrValue* od = call.attrs->find("out_dtype"))
        if (auto* dt = std::get_if<DataType>(od); dt && !dt->is_void() && *dt != DataType::Float(32))
          return "matmul with out_dtype " + dt->str();
    return "";
  }
  if (name == "relax.permute_dims") return out->empty() ? "permute_dims of a 0-d tensor (oneDNN has no 0-d reorder)" : "";
  if (name == "relax.nn.softmax") {
    // oneDNN's jit softmax runs over the innermost axis (dims of size 1 after it do not count).
    int64_t nd = int64_t(out->size()), axis = attr_int(call, "axis", -1);
    if (axis < 0) axis += nd;
    for (int64_t k = axis + 1; k < nd; ++k)
      if ((*out)[size_t(k)] != 1) return "softmax over an inner axis (oneDNN runs it only on its reference kernel)";
    return "";
  }
  if (name == "relax.nn.layer_norm") {
    if (layer_norm_trailing_axes(call, int64_t(out->size())) == 0) return "layer_norm over other than trailing axes";
    return "";
  }
  if (name == "relax.add" || name == "relax.multiply" || name == "relax.divide") {
    // oneDNN broadcasts its second source only: one operand must have the result's shape (the
    // dividend: a quotient's operands do not swap).
    if (name == "relax.divide" && shapes[1] != *out) return name + " whose dividend is broadcast";
    if (shapes[1] != *out && shapes[2] != *out) return name + " where both operands are broadcast";
    const auto& other = shapes[1] == *out ? shapes[2] : shapes[1];
    if (!jit_broadcast(broadcast_runs(*out, other).pattern))
      return name + " with a broadcast that oneDNN runs only on its reference kernel";
    return "";
  }
  if (name == "relax.nn.pad") {
    std::string mode = attr_str(call, "pad_mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect") return "pad_mode " + mode;
    if (attr_ints(call, "pad_width", {}).size() != 2 * shapes[1].size()) return "pad_width of another rank";
    return "";
  }
  if (name == "relax.clip") {
    if (!prim_number(call.args[1]) || !prim_number(call.args[2])) return "clip bounds are not constants";
    return "";
  }
  if (eltwise_algs().count(name)) return "";
  return "operator " + name + " is not supported";
}

namespace {

struct Node {
  json j;  // op, attributes
  std::vector<int> in;
  int out = -1;
  json post = json::array();
  bool dead = false;
};

class GraphBuilder : public codegen::JsonGraphBuilder {
 public:
  using JsonGraphBuilder::JsonGraphBuilder;

  json build() {
    const Function& fn = f_.func;
    std::unordered_map<const VarNode*, int> env;
    json inputs = bind_tensor_and_tuple_params(env);
    int result = walk(fn, env);
    std::vector<int> outputs = is_tuple(result) ? tuple_fields(result) : std::vector<int>{result};
    for (int v : outputs)
      if (v < 0) fail("a partition returns a tuple inside a tuple");
    if (outputs.empty()) fail("a partition returns an empty tuple");
    rewrite_eltwise(outputs);
    fuse(outputs);
    json g = graph(inputs, outputs);
    json nodes = json::array();
    for (auto& n : nodes_) {
      if (n.dead) continue;
      json j = n.j;
      j["in"] = n.in;
      j["out"] = n.out;
      j["post"] = n.post;
      nodes.push_back(std::move(j));
    }
    g["nodes"] = nodes;
    return g;
  }

 private:
  // Lowers the bindings of `fn` (the partition, or a composite in it) and returns the value of
  // its body: a tensor's id, or a tuple id. Bindings are leaves, operator calls, calls of
  // local composite functions (read the same way, their parameters bound to the arguments)
  // and fields of tuples (batch_norm's, whose fields 1 and 2 are its moving statistics in
  // inference). codegen::walk_partition's reading, with tuples.
  int walk(const Function& fn, std::unordered_map<const VarNode*, int>& env) {
    auto* seq = fn->body.as<SeqExprNode>();
    if (!seq) fail("a function body is not normalized");
    std::unordered_map<const VarNode*, Function> local;
    for (const auto& block : seq->blocks)
      for (const auto& b : block->bindings) {
        auto* vb = b.as<VarBindingNode>();
        if (!vb) fail("match_cast is not supported");
        const VarNode* var = vb->var.get();
        if (auto f = vb->value.as_ref<FunctionNode>()) {
          local[var] = f;
        } else if (auto* get = vb->value.as<TupleGetItemNode>()) {
          const std::vector<int>& fields = tuple_fields(leaf(get->tuple, env));
          if (get->index < 0 || size_t(get->index) >= fields.size()) fail("a tuple index out of range");
          env[var] = fields[size_t(get->index)];
        } else if (auto* call = vb->value.as<CallNode>()) {
          if (call->op.as<OpNode>()) {
            env[var] = lower_op(*call, env);
            continue;
          }
          auto* callee = call->op.as<VarNode>();
          auto it = callee ? local.find(callee) : local.end();
          if (it == local.end()) fail("it calls something other than an operator or a local composite");
          const Function& composite = it->second;
          if (composite->params.size() != call->args.size()) fail("a composite call has the wrong number of arguments");
          std::unordered_map<const VarNode*, int> params;
          for (size_t i = 0; i < composite->params.size(); ++i)
            params[composite->params[i].get()] = leaf(call->args[i], env);
          env[var] = walk(composite, params);
        } else if (vb->value.as<VarNode>() || vb->value.as<ConstantNode>() || vb->value.as<TupleNode>()) {
          env[var] = leaf(vb->value, env);
        } else {
          fail(std::string("a binding of a ") + node_kind_name(vb->value->kind()) + " is not supported");
        }
      }
    return leaf(seq->body, env);
  }

 public:
  // The base's, remembering each constant's data (scalars become eltwise attributes); a tuple
  // of tensors (concat's operand) is a tuple id, standing for the values of its fields.
  int leaf(const Expr& e, std::unordered_map<const VarNode*, int>& env) {
    if (auto* t = e.as<TupleNode>()) {
      std::vector<int> fields;
      for (const auto& f : t->fields) fields.push_back(leaf(f, env));
      return make_tuple(std::move(fields));
    }
    int id = JsonGraphBuilder::leaf(e, env);
    if (auto* c = e.as<ConstantNode>()) const_data_[id] = c->data;
    return id;
  }

 private:
  // Tuples have ids below -1 (values have ids from 0): -2 - index into tuples_.
  int make_tuple(std::vector<int> fields) {
    tuples_.push_back(std::move(fields));
    return -1 - int(tuples_.size());
  }
  const std::vector<int>& tuple_fields(int id) const {
    if (id > -2 || size_t(-2 - id) >= tuples_.size()) fail("a tuple was expected");
    return tuples_[size_t(-2 - id)];
  }
  bool is_tuple(int id) const { return id <= -2; }

  // The parameters as values: a tensor one value, a tuple of tensors one value per field
  // (the VM passes a tuple argument of an external function as its fields, in order).
  json bind_tensor_and_tuple_params(std::unordered_map<const VarNode*, int>& env) {
    json inputs = json::array();
    for (const auto& p : f_.func->params) {
      if (auto* t = p->struct_info_ ? p->struct_info_.as<TupleStructInfoNode>() : nullptr) {
        std::vector<int> fields;
        for (const auto& field : t->fields) {
          auto* ts = field.as<TensorStructInfoNode>();
          auto shape = ts && ts->dtype == DataType::Float(32) ? static_shape(field) : std::nullopt;
          if (!shape) fail("parameter '" + p->name_hint + "' is not a tuple of float32 tensors of static shape");
          fields.push_back(new_value(*shape));
          inputs.push_back(fields.back());
        }
        env[p.get()] = make_tuple(std::move(fields));
        continue;
      }
      auto shape = static_f32_shape(p);
      if (!shape) fail("parameter '" + p->name_hint + "' is not a float32 tensor of static shape");
      env[p.get()] = new_value(*shape);
      inputs.push_back(env[p.get()]);
    }
    return inputs;
  }

  // The value of a constant of one element, else nullopt.
  std::optional<double> scalar_constant(int id) const {
    auto it = const_data_.find(id);
    if (it == const_data_.end() || it->second.numel() != 1) return std::nullopt;
    return double(it->second.data_as<float>()[0]);
  }

  int add_node(json j, std::vector<int> in, const std::vector<int64_t>& shape) {
    Node n;
    n.j = std::move(j);
    n.in = std::move(in);
    n.out = new_value(shape);
    nodes_.push_back(std::move(n));
    return nodes_.back().out;
  }

  int lower_op(const CallNode& call, std::unordered_map<const VarNode*, int>& env) {
    std::string why = unsupported_reason(call);
    if (!why.empty()) fail(why);
    const std::string& name = call.op.as<OpNode>()->name;
    json j;
    j["from"] = json::array({name});
    if (name == "relax.nn.batch_norm") {
      // A tuple: the normalized tensor and, in inference, the moving statistics unchanged.
      std::vector<int> in;
      for (const auto& a : call.args) in.push_back(leaf(a, env));
      j["op"] = "batch_norm";
      j["eps"] = attr_float(call, "epsilon", 1e-5);
      j["scale"] = attr_bool(call, "scale", true);
      j["shift"] = attr_bool(call, "center", true);
      j["relu"] = false;
      for (int v : in)
        if (is_tuple(v)) fail("batch_norm of a tuple");
      int out = add_node(std::move(j), in, values_[size_t(in[0])].get<std::vector<int64_t>>());
      return make_tuple({out, in[3], in[4]});
    }
    std::vector<int64_t> shape = *static_f32_shape(Expr(const_cast<CallNode*>(&call)));
    if (name == "relax.image.resize2d") {
      int x = leaf(call.args[0], env);
      if (is_tuple(x)) fail("resize2d of a tuple");
      j["op"] = "resample";
      j["alg"] = attr_str(call, "method", "linear") == "linear" ? "linear" : "nearest";
      return add_node(std::move(j), {x}, shape);
    }
    if (name == "relax.reshape" || name == "relax.strided_slice") {
      // A reshape is a view of its source where its layout allows; a slice, a copy of a view.
      int x = leaf(call.args[0], env);
      if (is_tuple(x)) fail(name + " of a tuple");
      if (values_[size_t(x)].get<std::vector<int64_t>>() == shape) return x;  // the value itself
      j["op"] = name == "relax.reshape" ? "reshape" : "slice";
      if (name == "relax.strided_slice") j["begin"] = *op::unit_slice_begin(call);
      return add_node(std::move(j), {x}, shape);
    }
    if (name == "relax.concat") {
      std::vector<int> in = tuple_fields(leaf(call.args[0], env));
      if (in.size() == 1) return in[0];  // a copy: the value itself
      int64_t axis = attr_int(call, "axis", 0);
      j["op"] = "concat";
      j["axis"] = axis < 0 ? axis + int64_t(shape.size()) : axis;
      return add_node(std::move(j), std::move(in), shape);
    }
    std::vector<int> in;
    for (const auto& a : call.args)
      if (!a.as<PrimValueNode>()) in.push_back(leaf(a, env));
    for (int v : in)
      if (is_tuple(v)) fail(name + " of a tuple");
    if (name == "relax.nn.pad") {
      std::vector<int64_t> widths = attr_ints(call, "pad_width", {});
      if (std::all_of(widths.begin(), widths.end(), [](int64_t w) { return w == 0; })) return in[0];  // a copy
      j["op"] = "pad";
      j["mode"] = attr_str(call, "pad_mode", "constant");
      j["value"] = attr_float(call, "pad_value", 0.0);
      j["widths"] = attr_ints(call, "pad_width", {});
      return add_node(std::move(j), std::move(in), shape);
    }
    if (name == "relax.add" || name == "relax.multiply" || name == "relax.divide") {
      // By a constant scalar: an eltwise linear op (alpha * x + beta), which fuses into the
      // convolution or product before it as a post-op (hard-swish's and hard-sigmoid's
      // arithmetic, attention's 1 / sqrt(d)), where a binary op would be a primitive of its own.
      for (int k = 0; k < (name == "relax.divide" ? 1 : 2); ++k) {
        auto c = scalar_constant(in[size_t(1 - k)]);
        if (!c || values_[size_t(in[size_t(k)])].get<std::vector<int64_t>>() != shape) continue;
        if (name == "relax.divide" && *c == 0) break;  // x / 0: oneDNN's binary gives the infinities
        j["op"] = "eltwise";
        j["alg"] = "linear";
        j["alpha"] = name == "relax.add" ? 1.0 : name == "relax.multiply" ? *c : 1.0 / *c;
        j["beta"] = name == "relax.add" ? *c : 0.0;
        return add_node(std::move(j), {in[size_t(k)]}, shape);
      }
    }
    if (name == "relax.nn.conv2d") {
      j["op"] = "conv2d";
      j["strides"] = pair2(attr_ints(call, "strides", {1, 1}));
      j["dilation"] = pair2(attr_ints(call, "dilation", {1, 1}));
      j["padding"] = padding4(attr_ints(call, "padding", {0}));
      j["groups"] = attr_int(call, "groups", 1);
      j["has_bias"] = false;
    } else if (name == "relax.nn.max_pool2d" || name == "relax.nn.avg_pool2d") {
      j["op"] = "pool";
      bool max = name == "relax.nn.max_pool2d";
      j["alg"] = max ? "max" : (attr_bool(call, "count_include_pad", false) ? "avg_include" : "avg_exclude");
      j["kernel"] = pair2(attr_ints(call, "pool_size", {1, 1}));
      j["strides"] = pair2(attr_ints(call, "strides", {1, 1}));
      j["padding"] = padding4(attr_ints(call, "padding", {0}));
    } else if (name == "relax.mean") {
      // A pool of the whole map to (N, C, 1, 1); without keepdims, viewed as (N, C).
      auto xs = *static_f32_shape(call.args[0]);
      j["op"] = "pool";
      j["alg"] = "avg_exclude";
      j["kernel"] = std::vector<int64_t>{xs[2], xs[3]};
      j["strides"] = std::vector<int64_t>{xs[2], xs[3]};
      j["padding"] = std::vector<int64_t>{0, 0, 0, 0};
      int pooled = add_node(std::move(j), std::move(in), {xs[0], xs[1], 1, 1});
      if (shape.size() == 4) return pooled;
      json r;
      r["from"] = json::array({name});
      r["op"] = "reshape";
      return add_node(std::move(r), {pooled}, shape);
    } else if (name == "relax.nn.adaptive_avg_pool2d") {
      // An output size dividing the input: plain average pooling with windows of in / out.
      auto in = *static_f32_shape(call.args[0]), out = *static_f32_shape(Expr(const_cast<CallNode*>(&call)));
      std::vector<int64_t> window = {in[2] / out[2], in[3] / out[3]};
      j["op"] = "pool";
      j["alg"] = "avg_exclude";
      j["kernel"] = window;
      j["strides"] = window;
      j["padding"] = std::vector<int64_t>{0, 0, 0, 0};
    } else if (name == "relax.matmul") {
      j["op"] = "matmul";
      j["transpose_b"] = false;
      j["has_bias"] = false;
    } else if (name == "relax.permute_dims") {
      j["op"] = "permute";
      j["axes"] = op::permute_dims_axes(call, int64_t(shape.size()));
    } else if (name == "relax.nn.softmax") {
      j["op"] = "softmax";
      int64_t axis = attr_int(call, "axis", -1);
      j["axis"] = axis < 0 ? axis + int64_t(shape.size()) : axis;
    } else if (name == "relax.nn.layer_norm") {
      j["op"] = "layer_norm";
      j["axes"] = layer_norm_trailing_axes(call, int64_t(shape.size()));
      j["eps"] = attr_float(call, "epsilon", 1e-5);
      j["scale"] = attr_bool(call, "scale", true);
      j["shift"] = attr_bool(call, "center", true);
    } else if (name == "relax.add" || name == "relax.multiply" || name == "relax.divide") {
      j["op"] = "binary";
      j["alg"] = name == "relax.add" ? "add" : name == "relax.multiply" ? "mul" : "div";
      // oneDNN broadcasts the second operand only: put the full-shape one first.
      if (values_[in[0]] != shape && name != "relax.divide") std::swap(in[0], in[1]);
      if (values_[in[0]] != shape) fail(name + " where neither operand has the result's shape");
      if (values_[in[1]].size() > shape.size()) fail(name + " with a higher-rank second operand");
    } else {
      j["op"] = "eltwise";
      j["alg"] = eltwise_algs().at(name);
      j["alpha"] = name == "relax.nn.silu" ? 1.0 : 0.0;
      j["beta"] = 0.0;
      if (name == "relax.clip") {
        j["alpha"] = *prim_number(call.args[1]);
        j["beta"] = *prim_number(call.args[2]);
      }
    }
    return add_node(std::move(j), std::move(in), shape);
  }

  // `n` computes `other` too: its Relax operators join n's ("from": for errors and reading).
  static void absorb_names(Node& n, const Node& other) {
    for (const auto& name : other.j["from"]) n.j["from"].push_back(name);
  }

  // Uses of each value by live nodes (post-op inputs included); outputs count twice, so they
  // are never fused away.
  std::vector<int> value_uses(const std::vector<int>& outputs) const {
    std::vector<int> uses(values_.size(), 0);
    for (const auto& n : nodes_) {
      if (n.dead) continue;
      for (int v : n.in) uses[size_t(v)]++;
      for (const auto& p : n.post)
        if (p.contains("in")) uses[p["in"].get<size_t>()]++;
      if (n.j.contains("scale_in")) uses[n.j["scale_in"].get<size_t>()]++;
    }
    for (int v : outputs) uses[size_t(v)] += 2;
    return uses;
  }

  static bool is_eltwise(const Node& n, const char* alg) { return n.j["op"] == "eltwise" && n.j["alg"] == alg; }

  // Peepholes on element-wise chains, before fusion: consecutive linear ops become one;
  // x * clip(x / 6 + 0.5, 0, 1) (ONNX's HardSwish as the importer spells it) becomes oneDNN's
  // hardswish; a ReLU after a batch_norm becomes the batch_norm's fused ReLU.
  void rewrite_eltwise(const std::vector<int>& outputs) {
    std::vector<int> uses = value_uses(outputs);
    std::unordered_map<int, size_t> producer;
    for (size_t i = 0; i < nodes_.size(); ++i) producer[nodes_[i].out] = i;
    // The single-use node producing `v`, or null.
    auto single_producer = [&](int v) -> Node* {
      auto it = producer.find(v);
      if (it == producer.end() || uses[size_t(v)] != 1 || nodes_[it->second].dead) return nullptr;
      return &nodes_[it->second];
    };
    auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); };
    for (auto& n : nodes_) {
      if (n.dead) continue;
      if (is_eltwise(n, "linear")) {
        // linear(a2, b2)(linear(a1, b1)(x)) = linear(a1 a2, b1 a2 + b2)(x)
        if (Node* p = single_producer(n.in[0]); p && is_eltwise(*p, "linear")) {
          double a1 = p->j["alpha"], b1 = p->j["beta"], a2 = n.j["alpha"], b2 = n.j["beta"];
          n.j["alpha"] = a1 * a2;
          n.j["beta"] = b1 * a2 + b2;
          n.in[0] = p->in[0];
          absorb_names(n, *p);
          p->dead = true;
        }
      } else if (n.j["op"] == "binary" && n.j["alg"] == "mul" && n.in.size() == 2) {
        for (int k = 0; k < 2; ++k) {
          const int x = n.in[size_t(k)];
          Node* clip = single_producer(n.in[size_t(1 - k)]);
          if (!clip || !is_eltwise(*clip, "clip") || clip->j["alpha"] != 0.0 || clip->j["beta"] != 1.0) continue;
          Node* lin = single_producer(clip->in[0]);
          if (!lin || !is_eltwise(*lin, "linear") || lin->in[0] != x || !near(lin->j["alpha"], 1.0 / 6.0) ||
              !near(lin->j["beta"], 0.5))
            continue;
          json j = {{"op", "eltwise"}, {"alg", "hardswish"}, {"alpha", 0.0}, {"beta", 0.0}, {"from", json::array()}};
          for (const Node* part : {&*lin, &*clip, &n})
            for (const auto& name : part->j["from"]) j["from"].push_back(name);
          lin->dead = clip->dead = true;
          uses[size_t(x)]--;
          n.j = std::move(j);
          n.in = {x};
          break;
        }
      } else if (is_eltwise(n, "relu") && n.j["alpha"] == 0.0) {
        if (Node* p = single_producer(n.in[0]); p && p->j["op"] == "batch_norm" && !p->j["relu"].get<bool>()) {
          p->j["relu"] = true;
          absorb_names(*p, n);
          producer[n.out] = size_t(p - nodes_.data());
          p->out = n.out;
          n.dead = true;
        }
      }
    }
  }

  // Whether `e` would be a second eltwise post-op of an algorithm already in `post` with other
  // parameters: oneDNN 2.6's post-op kernels then apply the first one's parameters to both
  // (conv + clip(0, 0.25) + sigmoid + clip(0, 1) clips at 0.25), so such chains are not fused.
  static bool conflicting_eltwise(const json& post, const json& e) {
    for (const auto& p : post)
      if (p["kind"] == "eltwise" && p["alg"] == e["alg"] && (p["alpha"] != e["alpha"] || p["beta"] != e["beta"]))
        return true;
    return false;
  }

  // Peephole fusion (see the file comment). `outputs` must stay materialized.
  void fuse(const std::vector<int>& outputs) {
    std::vector<int> uses = value_uses(outputs);
    std::unordered_map<int, size_t> producer;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (!nodes_[i].dead) producer[nodes_[i].out] = i;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      if (n.dead) continue;
      if (n.j["op"] == "matmul") {
        // permute_dims swapping the last two axes of the weight -> transpose_b.
        auto it = producer.find(n.in[1]);
        if (it != producer.end() && uses[n.in[1]] == 1) {
          Node& p = nodes_[it->second];
          std::vector<int64_t> axes = p.j["axes"].is_array() ? p.j["axes"].get<std::vector<int64_t>>()
                                                               : std::vector<int64_t>{};
          size_t nd = axes.size();
          bool swap_last = p.j["op"] == "permute" && nd >= 2 && axes[nd - 1] == int64_t(nd - 2) &&
                           axes[nd - 2] == int64_t(nd - 1);
          for (size_t k = 0; swap_last && k + 2 < nd; ++k) swap_last = axes[k] == int64_t(k);
          if (swap_last) {
            p.dead = true;
            absorb_names(n, p);
            n.in[1] = p.in[0];
            n.j["transpose_b"] = true;
          }
        }
      }
      if (n.j["op"] != "conv2d" && n.j["op"] != "matmul") continue;
      bool is_conv = n.j["op"] == "conv2d";
      if (is_conv) fold_source_scale(n, uses, producer);
      // Follow single-use consumers: bias add, residual add (conv), activations.
      while (true) {
        int v = n.out;
        if (uses[v] != 1) break;
        size_t k = i + 1;
        while (k < nodes_.size() && (nodes_[k].dead || std::find(nodes_[k].in.begin(), nodes_[k].in.end(), v) ==
                                                          nodes_[k].in.end()))
          ++k;
        if (k == nodes_.size()) break;
        Node& c = nodes_[k];
        const std::vector<int64_t>& shape = values_[v];
        if (c.j["op"] == "binary" && c.j["alg"] == "add" && values_[c.out] == shape) {
          int other = c.in[0] == v ? c.in[1] : c.in[0];
          if (other == v) break;
          const auto& os = values_[other];
          int64_t channels = is_conv ? shape[1] : shape.back();
          int64_t numel = 1;
          for (int64_t d : os) numel *= d;
          bool bias_shaped = numel == channels && (is_conv ? (os.size() >= 3 && os[os.size() - 3] == channels)
                                                           : (os.empty() ? false : os.back() == channels));
          if (bias_shaped && !n.j["has_bias"].get<bool>() && n.post.empty()) {
            n.j["has_bias"] = true;
            n.in.push_back(other);
          } else if (is_conv && os == shape && n.post.empty()) {
            // (Only as the first post-op: after an eltwise one oneDNN 2.6 sums wrongly.)
            // Residual add: dst is pre-filled with `other`, accumulated with a sum post-op.
            // It must be computed before `n` runs.
            if (producer.count(other) && producer[other] >= i) break;
            n.post.push_back({{"kind", "sum"}, {"in", other}});
          } else {
            break;
          }
        } else if (c.j["op"] == "eltwise" && !conflicting_eltwise(n.post, c.j)) {
          n.post.push_back({{"kind", "eltwise"}, {"alg", c.j["alg"]}, {"alpha", c.j["alpha"]}, {"beta", c.j["beta"]}});
        } else {
          break;
        }
        // `n` now produces c's value.
        c.dead = true;
        absorb_names(n, c);
        producer[c.out] = i;
        n.out = c.out;
      }
    }
  }

  // conv1x1(x * s), s one scale per channel of x, a single image (squeeze-excitation blocks) =
  // conv1x1(x) with the weights' input channels scaled: the runtime scales the Cout x C
  // weights per call ("scale_in") instead of multiplying the C x H x W source, where that is
  // the smaller work (2 Cout < H W: MobileNetV3's and EfficientNet's early blocks).
  void fold_source_scale(Node& n, const std::vector<int>& uses, const std::unordered_map<int, size_t>& producer) {
    auto it = producer.find(n.in[0]);
    if (it == producer.end() || uses[size_t(n.in[0])] != 1 || n.in.size() != 2) return;
    Node& m = nodes_[it->second];
    if (m.dead || m.j["op"] != "binary" || m.j["alg"] != "mul" || m.in.size() != 2) return;
    const std::vector<int64_t>&xs = values_[m.in[0]], &ss = values_[m.in[1]], &ws = values_[n.in[1]];
    if (xs.size() != 4 || xs[0] != 1 || ws.size() != 4 || ws[2] != 1 || ws[3] != 1 || ws[1] != xs[1]) return;
    const std::vector<int64_t> per_channel{1, xs[1], 1, 1};
    std::vector<int64_t> s4(4 - std::min<size_t>(ss.size(), 4), 1);  // right-aligned to rank 4
    s4.insert(s4.end(), ss.begin(), ss.end());
    if (s4 != per_channel || n.j["groups"] != 1 || n.j["strides"] != json::array({1, 1}) ||
        n.j["dilation"] != json::array({1, 1}) || n.j["padding"] != json::array({0, 0, 0, 0}) ||
        2 * ws[0] >= xs[2] * xs[3])
      return;
    n.in[0] = m.in[0];
    n.j["scale_in"] = m.in[1];
    absorb_names(n, m);
    m.dead = true;
  }

  std::vector<Node> nodes_;
  std::vector<std::vector<int>> tuples_;  // tuple id -2 - k -> its fields' values
  std::map<int, Tensor> const_data_;     // constants' data, by value id
};

}  // namespace

std::string serialize_graph(const std::vector<CodegenFunction>& functions, codegen::ConstantNamer& namer,
                            int64_t num_threads, std::vector<std::string>& const_names, int64_t winograd) {
  json g;
  g["version"] = 1;
  g["num_threads"] = num_threads;
  if (winograd != 1) g["winograd"] = winograd;  // absent: the default, graphs stay as before
  g["functions"] = json::array();
  for (const auto& f : functions) g["functions"].push_back(GraphBuilder(f, namer, const_names).build());
  return g.dump();
}

codegen::CodegenResult codegen(const std::vector<CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  std::vector<std::string> const_names;
  int64_t threads = target.get_int("num_threads");
  if (threads < 0) throw_error("ValueError", "dnnl: num_threads must be >= 0 (0 = every core), got " + std::to_string(threads));
  int64_t winograd = target.get_int("winograd");
  if (winograd < 0 || winograd > 4)
    throw_error("ValueError", "dnnl: winograd must be 0 (off), 1 (where faster), 2 or 4 (our F(2x2) or F(4x4) always) "
                              "or 3 (oneDNN's always), got " +
                                  std::to_string(winograd));
  std::string graph = serialize_graph(functions, namer, threads, const_names, winograd);
  return codegen::module_from_bytes(kModuleFormat.type_key,
                                    runtime::write_module_sections(kModuleFormat, {graph}), namer);
}

}  // namespace partita::backend::dnnl
