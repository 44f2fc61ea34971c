// The `cudnn.*` fusion patterns and their checks. Later entries have priority, so the plain
// convolution comes first and the longest fused chains last. The checks and the codegen read a
// match through the same read_conv_chain / *_unsupported functions, so the backend never takes a
// call its runtime cannot run.
#include <cmath>

#include "cudnn.h"
#include "partita/dpl/pattern.h"
#include "partita/support/error.h"
#include "partita/transform/attention.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/pass.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend::cudnn {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;
using transform::FusionPattern;
using transform::PatternCheckContext;

namespace {

const std::vector<std::pair<std::string, std::string>>& activations() {
  static const std::vector<std::pair<std::string, std::string>> acts = {{"relu", "relax.nn.relu"},
                                                                        {"gelu", "relax.nn.gelu"},
                                                                        {"silu", "relax.nn.silu"},
                                                                        {"sigmoid", "relax.sigmoid"},
                                                                        {"clip", "relax.clip"}};
  return acts;
}

std::string op_name(const CallNode& call) {
  const auto* op = call.op.as<OpNode>();
  return op ? op->name : "";
}

const TensorStructInfoNode* tensor_of(const Expr& e) {
  return e && e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
}

std::optional<std::vector<int64_t>> static_shape(const TensorStructInfoNode* t) {
  if (!t || !t->shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const PrimExpr& d : *t->shape) {
    auto v = as_const_int(d);
    if (!v) return std::nullopt;
    dims.push_back(*v);
  }
  return dims;
}

std::optional<std::vector<int64_t>> static_shape(const Expr& e) { return static_shape(tensor_of(e)); }

const TensorStructInfoNode* result_of(const CallNode& call) {
  return call.struct_info_ ? call.struct_info_.as<TensorStructInfoNode>() : nullptr;
}

std::optional<double> prim_number(const Expr& e) {
  const auto* pv = e.as<PrimValueNode>();
  if (!pv) return std::nullopt;
  if (const auto* f = pv->value.as<FloatImmNode>()) return f->value;
  if (auto c = as_const_int(pv->value)) return double(*c);
  return std::nullopt;
}

bool is_channel_bias(const Expr& e, int64_t channels) {
  auto s = static_shape(e);
  if (!s) return false;
  return *s == std::vector<int64_t>{1, channels, 1, 1} || *s == std::vector<int64_t>{channels, 1, 1};
}

bool supported_dtype(DataType dt) {
  return dt == DataType::Float(16) || dt == DataType::BFloat16() || dt == DataType::Float(32);
}

}  // namespace

std::optional<ConvChain> read_conv_chain(const CallNode& root, const std::function<Expr(const Expr&)>& value_of) {
  ConvChain chain;
  chain.root = &root;
  const CallNode* cur = &root;
  const std::string root_op = op_name(root);
  for (const auto& [name, op] : activations())
    if (root_op == op) {
      chain.activation = name;
      if (name == "clip") {
        auto lo = prim_number(root.args[1]), hi = prim_number(root.args[2]);
        if (!lo || !hi) return std::nullopt;
        chain.clip_min = *lo;
        chain.clip_max = *hi;
      }
      Expr next = value_of(root.args[0]);
      cur = next ? next.as<CallNode>() : nullptr;
      if (!cur) return std::nullopt;
    }
  std::vector<Expr> extras;  // from the convolution outwards
  while (op_name(*cur) == "relax.add") {
    const CallNode* inner = nullptr;
    int side = 0;
    for (; side < 2; ++side) {
      Expr v = value_of(cur->args[size_t(side)]);
      const auto* c = v ? v.as<CallNode>() : nullptr;
      if (c && (op_name(*c) == "relax.nn.conv2d" || op_name(*c) == "relax.add")) {
        inner = c;
        break;
      }
    }
    if (!inner || extras.size() == 2) return std::nullopt;
    extras.insert(extras.begin(), cur->args[size_t(1 - side)]);
    cur = inner;
  }
  if (op_name(*cur) != "relax.nn.conv2d") return std::nullopt;
  chain.conv = cur;
  chain.data = cur->args[0];
  chain.weight = cur->args[1];
  auto ws = static_shape(chain.weight);
  const int64_t channels = ws && ws->size() == 4 ? (*ws)[0] : -1;
  if (extras.size() == 2) {
    chain.bias = extras[0];
    chain.residual = extras[1];
  } else if (extras.size() == 1) {
    if (is_channel_bias(extras[0], channels)) chain.bias = extras[0];
    else chain.residual = extras[0];
  }
  return chain;
}

std::optional<std::string> conv_unsupported(const ConvChain& c) {
  const CallNode& conv = *c.conv;
  for (auto [name, want] : {std::pair{"data_layout", "NCHW"}, {"kernel_layout", "OIHW"}, {"out_layout", "NCHW"}}) {
    const auto* v = call_attr<std::string>(conv, name);
    if (v && *v != want) return std::string(name) + " " + *v + " (cudnn takes " + want + ")";
  }
  auto x = static_shape(c.data), w = static_shape(c.weight), y = static_shape(result_of(*c.root));
  if (!x || !w || !y || x->size() != 4 || w->size() != 4 || y->size() != 4)
    return std::string("conv2d operands must be 4-d tensors of static shape");
  const DataType dt = tensor_of(c.data)->dtype;
  if (!supported_dtype(dt)) return "dtype " + dt.str() + " (cudnn takes float16, bfloat16, float32)";
  if (!(tensor_of(c.weight)->dtype == dt) || !(result_of(*c.root)->dtype == dt))
    return std::string("the weight and the result must have the data's dtype");
  if (const auto* od = call_attr<DataType>(conv, "out_dtype"); od && !od->is_void() && !(*od == dt))
    return "out_dtype " + od->str() + " differs from the data's dtype";
  const int64_t groups = call_attr<int64_t>(conv, "groups") ? *call_attr<int64_t>(conv, "groups") : 1;
  if (groups < 1 || (*x)[1] % groups || (*w)[0] % groups || (*w)[1] * groups != (*x)[1])
    return "groups " + std::to_string(groups) + " do not divide the channels";
  for (const char* name : {"strides", "dilation"}) {
    const auto* v = call_attr<std::vector<int64_t>>(conv, name);
    if (v && (v->empty() || v->size() > 2 || (*v)[0] < 1 || v->back() < 1)) return std::string("bad ") + name;
  }
  if (const auto* p = call_attr<std::vector<int64_t>>(conv, "padding"); p && p->size() != 1 && p->size() != 2 && p->size() != 4)
    return std::string("padding must hold 1, 2 or 4 values");
  if (c.bias) {
    if (!is_channel_bias(c.bias, (*w)[0])) return std::string("the bias must have shape (1, K, 1, 1) or (K, 1, 1)");
    if (!(tensor_of(c.bias)->dtype == dt)) return std::string("the bias must have the data's dtype");
  }
  if (c.residual) {
    auto r = static_shape(c.residual);
    if (!r || *r != *y || !(tensor_of(c.residual)->dtype == dt))
      return std::string("the residual must have the convolution's shape and dtype");
  }
  if (c.activation == "clip" && !(c.clip_min <= c.clip_max)) return std::string("clip bounds are reversed");
  // Measured on cuDNN 9.14 (H200, docs/gpu.md): no engine fuses an epilogue into a float32
  // convolution, nor bias + gelu into a grouped bfloat16 one, and the separate activation
  // kernels the runtime falls back to have no GELU.
  if (c.activation == "gelu" && (dt == DataType::Float(32) || (dt == DataType::BFloat16() && groups != 1 && c.bias)))
    return std::string("gelu after a float32 convolution, or after a grouped bfloat16 one with a bias (cuDNN fuses "
                       "neither and has no separate gelu)");
  return std::nullopt;
}

std::optional<std::string> attention_unsupported(const CallNode& call) {
  const auto* q = tensor_of(call.args[0]);
  const DataType dt = q ? q->dtype : DataType::Void();
  if (!(dt == DataType::Float(16) || dt == DataType::BFloat16()))
    return "dtype " + dt.str() + " (cuDNN's fused attention takes float16 and bfloat16)";
  std::vector<std::vector<int64_t>> s;
  for (const Expr& a : call.args) {
    auto shape = static_shape(a);
    if (!shape || shape->size() != 4) return std::string("attention operands must be 4-d of static shape");
    if (!(tensor_of(a)->dtype == dt)) return std::string("attention operands must share one dtype");
    s.push_back(*shape);
  }
  const int64_t sq = s[0][1], heads = s[0][2], d = s[0][3], skv = s[1][1];
  if (s[1][2] != heads || s[2][2] != heads) return std::string("grouped-query heads (cudnn takes N == Nkv)");
  if (s[2][3] != d) return std::string("the value head dimension must equal the query's");
  if (d % 8 != 0 || d > 128) return "head dimension " + std::to_string(d) + " (cudnn takes multiples of 8 up to 128)";
  if (call.attrs && call.attrs->find("window_size") &&
      !std::holds_alternative<std::monostate>(*call.attrs->find("window_size")))
    return std::string("sliding-window attention");
  const auto* causal = call_attr<std::string>(call, "causal_mask");
  if (causal && *causal == "BottomRight" && skv < sq)
    return std::string("causal_mask BottomRight with more queries than keys (TVM's offset is |Sq - Skv|)");
  // cuDNN 9.14 refuses a bottom-right diagonal together with a bias (where Sq == Skv it is the
  // top-left one, which it takes).
  if (causal && *causal == "BottomRight" && skv != sq && s.size() == 4)
    return std::string("causal_mask BottomRight with a bias (cuDNN runs the bottom-right mask without a bias only)");
  if (s.size() == 4) {
    const auto& b = s[3];
    const int64_t want[4] = {s[0][0], heads, sq, skv};
    for (int i = 0; i < 3; ++i)
      if (b[size_t(i)] != want[i] && b[size_t(i)] != 1) return std::string("the bias does not broadcast");
    if (b[3] != skv) return std::string("the bias's last dimension must be Skv");
  }
  return std::nullopt;
}

namespace {

/// A depthwise convolution: groups equal to the input channels, more than one.
bool is_depthwise(const ConvChain& c) {
  const auto* g = call_attr<int64_t>(*c.conv, "groups");
  auto x = static_shape(c.data);
  return g && *g > 1 && x && x->size() == 4 && (*x)[1] == *g;
}

/// A placement preference of the current PassContext (false when unset).
bool config_flag(const char* key) {
  const AttrValue* v = transform::PassContext::current().get_config(key);
  if (!v) return false;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  if (const auto* n = std::get_if<int64_t>(v)) return *n != 0;
  throw_error("TypeError", std::string("PassContext config ") + key + " must be a bool or an int");
}

/// Whether the `cudnn.*` patterns leave attention `call` to other backends: cuDNN cannot run it,
/// or it has a bias and the PassContext does not ask for biased attention (the one rule for
/// the patterns' check and the prepare step).
bool attention_declined(const CallNode& call) {
  const bool biased = call.args.size() == 4;
  return (biased && !config_flag(kBiasedAttentionConfig)) || bool(attention_unsupported(call));
}

Expr lookup_in(const PatternCheckContext& ctx, const Expr& e) {
  if (!e.as<VarNode>()) return Expr();
  auto it = ctx.matched_bindings.find(e.as_ref<VarNode>());
  return it == ctx.matched_bindings.end() ? Expr() : it->second;
}

FusionPattern conv_entry(bool with_bias, bool with_res, int act) {
  std::string name = "cudnn.conv2d";
  Pattern p = dpl::with_bias_and_residual(is_op("relax.nn.conv2d")({wildcard(), wildcard()}),
                                          with_bias, with_res, name);
  if (act >= 0) {
    const auto& [act_name, op] = activations()[size_t(act)];
    p = op == "relax.clip" ? is_op(op)({p, wildcard(), wildcard()}) : is_op(op)({p});
    name += "_" + act_name;
  }
  FusionPattern f;
  f.name = name;
  f.pattern = p;
  f.check = [with_bias, with_res](const PatternCheckContext& ctx) {
    if (transform::has_leaking_intermediate_variables(ctx)) return false;
    const auto* root = ctx.matched_expr.as<CallNode>();
    if (!root) return false;
    auto chain = read_conv_chain(*root, [&](const Expr& e) { return lookup_in(ctx, e); });
    if (!chain || bool(chain->bias) != with_bias || bool(chain->residual) != with_res) return false;
    if (is_depthwise(*chain) && !config_flag(kTakeDepthwiseConfig)) return false;
    if (chain->activation == "clip" && !config_flag(kFuseClipConfig)) return false;
    return !conv_unsupported(*chain);
  };
  return f;
}

FusionPattern attention_entry(bool with_bias) {
  FusionPattern f;
  f.name = with_bias ? "cudnn.attention_bias" : "cudnn.attention";
  std::vector<Pattern> args{wildcard(), wildcard(), wildcard()};
  if (with_bias) args.push_back(wildcard());
  f.pattern = is_op(with_bias ? "relax.nn.attention_bias" : "relax.nn.attention")(args);
  f.check = [](const PatternCheckContext& ctx) {
    const auto* call = ctx.matched_expr.as<CallNode>();
    return call && !attention_declined(*call);
  };
  return f;
}

}  // namespace

std::vector<FusionPattern> cudnn_patterns() {
  std::vector<FusionPattern> out;
  out.push_back(attention_entry(false));
  out.push_back(attention_entry(true));
  for (int with_bias = 0; with_bias < 2; ++with_bias)
    for (int with_res = 0; with_res < 2; ++with_res)
      for (int act = -1; act < int(activations().size()); ++act) out.push_back(conv_entry(with_bias, with_res, act));
  return out;
}

IRModule partition_for_cudnn(IRModule mod, bool merge, bool bind_constants, std::optional<bool> depthwise) {
  if (depthwise) {  // the same context with the key set, current for this call
    transform::PassContext ctx = transform::PassContext::current();
    ctx.config[kTakeDepthwiseConfig] = *depthwise;
    transform::PassContext::Scope scope(ctx);
    return partition_for_cudnn(std::move(mod), merge, bind_constants, std::nullopt);
  }
  return transform::partition_for("cudnn", prepare_for_cudnn(std::move(mod)), merge, bind_constants);
}

IRModule prepare_for_cudnn(IRModule mod) {
  // Constants folded first, so masks and scales built from shape arithmetic are constants when
  // the attention chain is matched; an attention cuDNN cannot run goes back to matmul and
  // softmax, for the other backends of the compile to take.
  mod = transform::FoldForInference()(std::move(mod));
  mod = transform::RewriteAttention()(std::move(mod));
  return transform::DecomposeAttention(attention_declined)(std::move(mod));
}

}  // namespace partita::backend::cudnn
