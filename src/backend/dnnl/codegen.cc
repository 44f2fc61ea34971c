// The dnnl codegen: each offloaded function becomes a graph of oneDNN primitives (JSON, see
// module_format.h). Composite calls are expanded in place; then a peephole pass fuses
// bias adds, residual adds (sum post-op) and activations into the conv2d / matmul before them
// when the intermediate has no other use, and folds a transposing permute_dims into matmul.
#include <algorithm>
#include <nlohmann/json.hpp>
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

}  // namespace

// Why `call` cannot be lowered (empty when it can). Shared with the pattern checks.
std::string unsupported_reason(const CallNode& call) {
  auto* op = call.op.as<OpNode>();
  if (!op) return "a call of something other than an operator";
  const std::string& name = op->name;
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
  if (name == "relax.permute_dims") return "";
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
  if (name == "relax.add" || name == "relax.multiply") {
    // oneDNN broadcasts its second source only: one operand must have the result's shape.
    if (shapes[1] != *out && shapes[2] != *out) return name + " where both operands are broadcast";
    const auto& other = shapes[1] == *out ? shapes[2] : shapes[1];
    if (!jit_broadcast(broadcast_runs(*out, other).pattern))
      return name + " with a broadcast that oneDNN runs only on its reference kernel";
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
    json inputs = bind_params(env);
    int result = lower_body(fn, env);
    std::vector<int> outputs;
    if (result >= 0) outputs.push_back(result);
    else outputs = tuple_outputs_;
    fuse(outputs);
    json g;
    g["symbol"] = f_.symbol;
    g["values"] = values_;
    g["inputs"] = inputs;
    g["outputs"] = outputs;
    g["constants"] = constants_;
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
  // Lowers the bindings of `fn`; returns the value id of its (tensor) body, or -1 for a tuple
  // (then tuple_outputs_ holds the fields).
  int lower_body(const Function& fn, std::unordered_map<const VarNode*, int>& env) {
    const SeqExprNode& seq = codegen::walk_partition(fn, env, *this);
    if (auto* tup = seq.body.as<TupleNode>()) {
      tuple_outputs_.clear();
      for (const auto& f : tup->fields) tuple_outputs_.push_back(leaf(f, env));
      return -1;
    }
    return leaf(seq.body, env);
  }

  // walk_partition's hooks.
  template <class V, class L>
  friend const SeqExprNode& codegen::walk_partition(const Function&, codegen::ValueEnv<V>&, L&);
  int lower_op(const CallNode& call, const VarBindingNode&, std::unordered_map<const VarNode*, int>& env) {
    return lower_op(call, env);
  }
  int lower_composite(const Function& inner, std::unordered_map<const VarNode*, int>& params, const VarBindingNode&) {
    int r = lower_body(inner, params);
    if (r < 0) fail("a composite returns a tuple");
    return r;
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
    std::vector<int64_t> shape = *static_f32_shape(Expr(const_cast<CallNode*>(&call)));
    std::vector<int> in;
    for (const auto& a : call.args)
      if (!a.as<PrimValueNode>()) in.push_back(leaf(a, env));
    json j;
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
    } else if (name == "relax.add" || name == "relax.multiply") {
      j["op"] = "binary";
      j["alg"] = name == "relax.add" ? "add" : "mul";
      // oneDNN broadcasts the second operand only: put the full-shape one first.
      if (values_[in[0]] != shape) std::swap(in[0], in[1]);
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
    j["from"] = json::array({name});
    return add_node(std::move(j), std::move(in), shape);
  }

  // `n` computes `other` too: its Relax operators join n's ("from": for errors and reading).
  static void absorb_names(Node& n, const Node& other) {
    for (const auto& name : other.j["from"]) n.j["from"].push_back(name);
  }

  // Peephole fusion (see the file comment). `outputs` must stay materialized.
  void fuse(const std::vector<int>& outputs) {
    std::vector<int> uses(values_.size(), 0);
    for (const auto& n : nodes_)
      for (int v : n.in) uses[v]++;
    for (int v : outputs) uses[v] += 2;  // never fuse away an output
    std::unordered_map<int, size_t> producer;
    for (size_t i = 0; i < nodes_.size(); ++i) producer[nodes_[i].out] = i;
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
          } else if (is_conv && os == shape && std::none_of(n.post.begin(), n.post.end(), [](const json& p) {
                       return p["kind"] == "sum";
                     })) {
            // Residual add: dst is pre-filled with `other`, accumulated with a sum post-op.
            // It must be computed before `n` runs.
            if (producer.count(other) && producer[other] >= i) break;
            n.post.push_back({{"kind", "sum"}, {"in", other}});
          } else {
            break;
          }
        } else if (c.j["op"] == "eltwise") {
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

  std::vector<Node> nodes_;
  std::vector<int> tuple_outputs_;
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
  if (winograd != 0 && winograd != 1 && winograd != 2 && winograd != 4)
    throw_error("ValueError", "dnnl: winograd must be 0 (off), 1 (where faster), 2 or 4 (F(2x2) or F(4x4) always), got " +
                                  std::to_string(winograd));
  std::string graph = serialize_graph(functions, namer, threads, const_names, winograd);
  codegen::CodegenResult result;
  // Made by the runtime plug-in from its bytes, as an exported artifact is loaded.
  result.modules.push_back(
      runtime::load_module_from_binary(kModuleFormat.type_key, runtime::write_module_sections(kModuleFormat, {graph})));
  result.constants = namer.added();
  return result;
}

}  // namespace partita::backend::dnnl
