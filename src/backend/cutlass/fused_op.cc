// Reading CUTLASS composites (see fused_op.h).
#include "fused_op.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "partita/ir/structural_equal.h"

namespace partita::backend::cutlass {

namespace {

const DataType kF16 = DataType::Float(16), kBF16 = DataType::BFloat16(), kF32 = DataType::Float(32),
               kI8 = DataType::Int(8), kI32 = DataType::Int(32);

std::vector<int64_t> attr_ints(const CallNode& call, const std::string& name, std::vector<int64_t> dflt) {
  if (!call.attrs.defined()) return dflt;
  const AttrValue* v = call.attrs->find(name);
  if (!v) return dflt;
  if (auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
  if (auto* i = std::get_if<int64_t>(v)) return {*i};
  return dflt;
}

std::string attr_string(const CallNode& call, const std::string& name, const std::string& dflt) {
  if (!call.attrs.defined()) return dflt;
  const AttrValue* v = call.attrs->find(name);
  if (auto* s = v ? std::get_if<std::string>(v) : nullptr) return *s;
  return dflt;
}

std::optional<int64_t> static_dim(const TensorStructInfoNode* t, int d) {
  if (!t || !t->shape || d < 0 || d >= t->ndim) return std::nullopt;
  return as_const_int((*t->shape)[size_t(d)]);
}

bool all_static(const TensorStructInfoNode* t) {
  if (!t || !t->shape) return false;
  for (const auto& d : *t->shape)
    if (!as_const_int(d)) return false;
  return true;
}

bool same_shape(const TensorStructInfoNode* a, const TensorStructInfoNode* b) {
  if (!a || !b || !a->shape || !b->shape || a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; ++d)
    if (!structural_equal((*a->shape)[size_t(d)], (*b->shape)[size_t(d)])) return false;
  return true;
}

// A vector of `n` elements with any number of leading 1s: (n,), (1, n), (1, 1, 1, n).
bool bias_like(const TensorStructInfoNode* t, std::optional<int64_t> n) {
  if (!t || !t->shape || t->ndim < 1 || !n) return false;
  for (int d = 0; d + 1 < t->ndim; ++d)
    if (static_dim(t, d) != 1) return false;
  return static_dim(t, t->ndim - 1) == n;
}

bool is_dtype(DataType t, std::initializer_list<DataType> allowed) {
  for (DataType a : allowed)
    if (t == a) return true;
  return false;
}

}  // namespace

const TensorStructInfoNode* tensor_info(const Expr& e) {
  return e.defined() && e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
}

const TensorStructInfoNode* call_info(const CallNode* call) {
  return call && call->struct_info_ ? call->struct_info_.as<TensorStructInfoNode>() : nullptr;
}

std::string op_name(const CallNode& call) {
  auto* op = call.op.as<OpNode>();
  return op ? op->name : std::string();
}

std::optional<Activation> activation_of(const std::string& op) {
  if (op == "relax.nn.relu") return Activation::kRelu;
  if (op == "relax.nn.gelu") return Activation::kGelu;
  if (op == "relax.nn.gelu_tanh") return Activation::kGeluTanh;
  if (op == "relax.nn.silu") return Activation::kSilu;
  return std::nullopt;
}

std::optional<FusedGemm> describe_fused_gemm(const CallNode* last,
                                             const std::function<const CallNode*(const Expr&)>& producer,
                                             std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<FusedGemm> {
    if (why) *why = w;
    return std::nullopt;
  };
  // Back from the last call to the matmul / conv2d, keeping the other operand of each step.
  std::vector<std::pair<const CallNode*, Expr>> chain;  // (call, its operand from outside)
  const CallNode* call = last;
  while (call) {
    std::string op = op_name(*call);
    if (op == "relax.matmul" || op == "relax.nn.conv2d") break;
    if (activation_of(op)) {
      if (call->args.size() != 1) return fail(op + " takes one argument");
      chain.emplace_back(call, Expr());
      call = producer(call->args[0]);
      if (!call) return fail("the chain does not start at a matmul or conv2d");
      continue;
    }
    if (op != "relax.add" && op != "relax.multiply") return fail("operator " + op + " cannot be fused into a GEMM");
    if (call->args.size() != 2) return fail(op + " takes two arguments");
    const CallNode* a = producer(call->args[0]);
    const CallNode* b = producer(call->args[1]);
    if ((a != nullptr) == (b != nullptr)) return fail(op + " must combine the chain with one outside value");
    chain.emplace_back(call, a ? call->args[1] : call->args[0]);
    call = a ? a : b;
  }
  if (!call) return fail("the chain does not start at a matmul or conv2d");
  FusedGemm g;
  g.root = call;
  g.conv2d = op_name(*call) == "relax.nn.conv2d";
  if (call->args.size() != 2) return fail("the GEMM takes two arguments");
  g.lhs = call->args[0];
  g.rhs = call->args[1];
  if (const CallNode* t = producer(g.rhs)) {
    if (g.conv2d || op_name(*t) != "relax.permute_dims" || t->args.size() != 1)
      return fail("the weight is computed inside the pattern by something other than permute_dims");
    auto* wi = tensor_info(t->args[0]);
    std::vector<int64_t> axes = attr_ints(*t, "axes", {});
    bool swap_last = wi && wi->ndim == 2 && (axes.empty() || axes == std::vector<int64_t>{1, 0});
    if (!swap_last) return fail("only a 2-d transpose of the weight is fused");
    g.rhs = t->args[0];
    g.rhs_transposed = true;
  }
  g.out = call_info(call);
  auto* li = tensor_info(g.lhs);
  if (!g.out || !li) return fail("the GEMM's operands have no tensor struct info");
  g.in_dtype = li->dtype;
  g.out_dtype = g.out->dtype;
  std::optional<int64_t> n = static_dim(g.out, g.out->ndim - 1);
  // Forward through the epilogue: [+ bias] [act] [(+|*) residual [act]].
  int stage = 0;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    std::string op = op_name(*it->first);
    if (auto a = activation_of(op)) {
      if (stage <= 1) {
        g.act = *a;
        stage = 2;
      } else if (stage == 3) {
        g.post_act = *a;
        stage = 4;
      } else {
        return fail("too many activations");
      }
      continue;
    }
    const Expr& other = it->second;
    auto* oi = tensor_info(other);
    if (!oi || oi->dtype != g.out_dtype) return fail(op + "'s other operand must be a tensor of the result's dtype");
    if (op == "relax.add" && stage == 0 && bias_like(oi, n) && oi->ndim <= g.out->ndim) {
      g.bias = other;
      stage = 1;
    } else if (stage <= 2 && same_shape(oi, g.out) && !g.residual.defined()) {
      g.residual = other;
      bool before = stage <= 1 && op == "relax.add";
      g.residual_mode = before ? ResidualMode::kAddBeforeActivation
                               : (op == "relax.add" ? ResidualMode::kAdd : ResidualMode::kMultiply);
      stage = before ? 1 : 3;
    } else {
      return fail(op +
                  " with a tensor of this shape cannot be fused (a bias is a vector of N, a residual "
                  "has the result's shape)");
    }
  }
  return g;
}

std::string unsupported_reason(const FusedGemm& g) {
  auto* li = tensor_info(g.lhs);
  auto* ri = tensor_info(g.rhs);
  if (!li || !ri || !g.out) return "operands without tensor struct info";
  if (li->dtype != ri->dtype) return "mixed operand dtypes " + li->dtype.str() + " and " + ri->dtype.str();
  DataType in = li->dtype, out = g.out_dtype;
  if (!is_dtype(in, {kF16, kBF16, kF32, kI8})) return "dtype " + in.str() + " is not supported";
  if (in == kI8 && out != kI32) return "int8 products must have out_dtype int32";
  if ((in == kF16 || in == kBF16) && out != in && out != kF32) return "out_dtype " + out.str() + " is not supported";
  if (in == kF32 && out != kF32) return "out_dtype " + out.str() + " is not supported";
  if (in == kI8 && (g.act == Activation::kGelu || g.act == Activation::kGeluTanh || g.act == Activation::kSilu ||
                    g.post_act != Activation::kNone || g.residual_mode == ResidualMode::kMultiply))
    return "int8 products fuse a bias, relu and a residual add only";
  // TMA moves 16-byte rows: K and N must be multiples of 16 bytes of their elements.
  int64_t in_align = 128 / in.bits(), out_align = 128 / out.bits();
  std::optional<int64_t> k, n = static_dim(g.out, g.out->ndim - 1);
  bool k_major_weight = g.rhs_transposed || g.conv2d;
  if (g.conv2d) {
    if (li->ndim != 4 || ri->ndim != 4) return "conv2d operands must be 4-d";
    if (attr_string(*g.root, "data_layout", "NCHW") != "NHWC" ||
        attr_string(*g.root, "kernel_layout", "OIHW") != "OHWI" || attr_string(*g.root, "out_layout", "NHWC") != "NHWC")
      return "conv2d must be NHWC with an OHWI kernel";
    if (attr_ints(*g.root, "groups", {1}) != std::vector<int64_t>{1}) return "grouped conv2d is not supported";
    if (in == kI8) return "int8 conv2d is not supported";
    if (!all_static(li) || !all_static(ri)) return "conv2d shapes must be static";
    k = *static_dim(ri, 1) * *static_dim(ri, 2) * *static_dim(ri, 3);
    if (*static_dim(ri, 3) != *static_dim(li, 3)) return "conv2d channels differ";
  } else {
    if (li->ndim < 2 || ri->ndim < 2) return "matmul of a 1-d operand is not supported";
    if (g.rhs_transposed && ri->ndim != 2) return "a transposed weight must be 2-d";
    if (ri->ndim > 2) {
      if (ri->ndim != li->ndim) return "batched matmul needs operands of equal rank";
      for (int d = 0; d + 2 < li->ndim; ++d)
        if (!structural_equal((*li->shape)[size_t(d)], (*ri->shape)[size_t(d)]))
          return "batched matmul needs equal batch dimensions";
    }
    if (!ri->shape || !all_static(ri)) return "the weight's shape must be static";
    k = static_dim(ri, g.rhs_transposed ? 1 : ri->ndim - 2);
    if (static_dim(li, li->ndim - 1) != k) return "K must be static";
    // tf32 and int8 tensor-core products read both operands K-major: a weight of shape (K, N)
    // is transposed by the codegen when it is a constant, else the product stays elsewhere.
    if ((in == kF32 || in == kI8) && !g.rhs_transposed && !(ri->ndim == 2 && g.rhs.as<ConstantNode>()))
      return "float32 / int8 need a transposed or constant weight";
    k_major_weight = k_major_weight || in == kF32 || in == kI8;
  }
  if (!n) return "N must be static";
  if (*k % in_align != 0) return "K = " + std::to_string(*k) + " is not a multiple of " + std::to_string(in_align);
  if (*n % out_align != 0 || (!k_major_weight && *n % in_align != 0))
    return "N = " + std::to_string(*n) + " is not a multiple of " + std::to_string(std::max(in_align, out_align));
  if (g.bias.defined() && tensor_info(g.bias)->ndim > g.out->ndim)
    return "the bias has more dimensions than the result";
  return "";
}

std::optional<RmsNorm> describe_rms_norm(const CallNode* last,
                                         const std::function<const CallNode*(const Expr&)>& producer,
                                         std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<RmsNorm> {
    if (why) *why = w;
    return std::nullopt;
  };
  auto other_of = [&](const CallNode* c, const CallNode*& inner) -> Expr {
    inner = producer(c->args[0]);
    if (inner && !producer(c->args[1])) return c->args[1];
    inner = producer(c->args[1]);
    if (inner && !producer(c->args[0])) return c->args[0];
    inner = nullptr;
    return Expr();
  };
  // weight * (x * rsqrt(mean(x * x) + eps))
  if (op_name(*last) != "relax.multiply" || last->args.size() != 2) return fail("rms_norm ends with a multiply");
  const CallNode* scaled = nullptr;
  Expr weight = other_of(last, scaled);
  if (!scaled || op_name(*scaled) != "relax.multiply") return fail("rms_norm: no x * rsqrt(...)");
  const CallNode* r = nullptr;
  Expr x = other_of(scaled, r);
  if (!r || op_name(*r) != "relax.rsqrt") return fail("rms_norm: no rsqrt");
  const CallNode* add = producer(r->args[0]);
  if (!add || op_name(*add) != "relax.add") return fail("rms_norm: no + eps");
  const CallNode* mean = nullptr;
  Expr eps = other_of(add, mean);
  auto* epsc = eps.as<ConstantNode>();
  if (!mean || op_name(*mean) != "relax.mean" || !epsc || epsc->data.numel() != 1)
    return fail("rms_norm: eps must be a scalar constant added to a mean");
  const CallNode* sq = producer(mean->args[0]);
  if (!sq || op_name(*sq) != "relax.multiply" || !structural_equal(sq->args[0], x) || !structural_equal(sq->args[1], x))
    return fail("rms_norm: the mean is not of x * x");
  auto* xi = tensor_info(x);
  std::vector<int64_t> axes = attr_ints(*mean, "axis", {});
  if (!xi || axes.size() != 1 || (axes[0] != -1 && axes[0] != xi->ndim - 1))
    return fail("rms_norm: mean over the last axis");
  RmsNorm out;
  out.data = x;
  out.weight = weight;
  const Tensor& t = epsc->data;
  if (t.dtype() == kF32)
    out.eps = double(static_cast<const float*>(t.data())[0]);
  else if (t.dtype() == DataType::Float(64))
    out.eps = static_cast<const double*>(t.data())[0];
  else if (t.dtype() == kF16 || t.dtype() == kBF16) {
    uint16_t bits = static_cast<const uint16_t*>(t.data())[0];
    uint32_t w = 0;
    if (t.dtype() == kBF16) {
      w = uint32_t(bits) << 16;
    } else {  // half -> float
      uint32_t sign = (bits >> 15) & 1, exp = (bits >> 10) & 31, man = bits & 1023;
      w = (sign << 31) | ((exp + 112) << 23) | (man << 13);
    }
    float v;
    std::memcpy(&v, &w, 4);
    if (t.dtype() == kF16 && ((bits >> 10) & 31) == 0)  // subnormal half: man * 2^-24
      v = float(bits & 1023) * 5.9604645e-08f * ((bits >> 15) ? -1.f : 1.f);
    out.eps = v;
  } else {
    return fail("rms_norm: eps has dtype " + t.dtype().str());
  }
  return out;
}

std::string unsupported_rms_norm(const RmsNorm& r, const TensorStructInfoNode* out) {
  auto* xi = tensor_info(r.data);
  auto* wi = tensor_info(r.weight);
  if (!xi || !wi || !out || !xi->shape) return "rms_norm operands without shapes";
  if (!is_dtype(xi->dtype, {kF16, kBF16, kF32}) || wi->dtype != xi->dtype || out->dtype != xi->dtype)
    return "rms_norm dtype " + xi->dtype.str() + " is not supported";
  if (!bias_like(wi, static_dim(xi, xi->ndim - 1))) return "rms_norm's weight must be a vector over the last axis";
  if (!same_shape(xi, out)) return "rms_norm's result must have the input's shape";
  return "";
}

std::string unsupported_layer_norm(const CallNode& call) {
  auto* xi = tensor_info(call.args.at(0));
  auto* out = call_info(&call);
  if (!xi || !out || !xi->shape) return "layer_norm operands without shapes";
  if (!is_dtype(xi->dtype, {kF16, kBF16, kF32})) return "layer_norm dtype " + xi->dtype.str() + " is not supported";
  std::vector<int64_t> axes = attr_ints(call, "axes", {});
  if (axes.size() != 1 || (axes[0] != -1 && axes[0] != xi->ndim - 1)) return "layer_norm over the last axis only";
  if (!call.attrs.defined() || !call.attrs->get<bool>("center") || !call.attrs->get<bool>("scale"))
    return "layer_norm needs center and scale";
  std::optional<int64_t> c = static_dim(xi, xi->ndim - 1);
  if (!c) return "layer_norm's last axis must be static";
  for (size_t i = 1; i < 3; ++i) {
    auto* p = tensor_info(call.args.at(i));
    if (!p || p->dtype != xi->dtype || !bias_like(p, c))
      return "layer_norm's gamma and beta must be vectors over the last axis";
  }
  return "";
}

std::string unsupported_binary(const CallNode& call) {
  auto* a = tensor_info(call.args.at(0));
  auto* b = tensor_info(call.args.at(1));
  auto* out = call_info(&call);
  if (!a || !b || !out || a->ndim < 0 || b->ndim < 0) return "operands without tensor struct info";
  if (a->dtype != b->dtype || out->dtype != a->dtype) return "mixed dtypes";
  if (!is_dtype(a->dtype, {kF16, kBF16, kF32, DataType::Float(64), kI32, DataType::Int(64), kI8}))
    return "dtype " + a->dtype.str() + " is not supported";
  if (out->ndim > 6) return "more than 6 dimensions";
  return "";
}

namespace {
bool same_dim(const TensorStructInfoNode* a, int da, const TensorStructInfoNode* b, int db) {
  return a->shape && b->shape && structural_equal((*a->shape)[size_t(da)], (*b->shape)[size_t(db)]);
}
}  // namespace

std::optional<AttentionCall> describe_attention(const CallNode& call, std::string* why) {
  auto no = [why](const std::string& w) -> std::optional<AttentionCall> {
    if (why) *why = w;
    return std::nullopt;
  };
  const TensorStructInfoNode* t[4] = {};
  for (size_t i = 0; i < call.args.size() && i < 4; ++i) {
    t[i] = tensor_info(call.args[i]);
    if (!t[i] || t[i]->ndim != 4 || !t[i]->shape) return no("attention operands must be 4-d tensors with shapes");
  }
  AttentionCall a;
  a.dtype = t[0]->dtype;
  if (!is_dtype(a.dtype, {kF16, kBF16}))
    return no("attention dtype " + a.dtype.str() + " (the kernel takes float16 and bfloat16)");
  for (size_t i = 1; i < call.args.size(); ++i)
    if (t[i]->dtype != a.dtype) return no("attention operands must share one dtype");
  std::optional<int64_t> d = static_dim(t[0], 3), dv = static_dim(t[2], 3);
  if (!d || !dv) return no("the head dimensions must be static");
  if (*d > 128 || *dv > 128 || *d % 8 || *dv % 8)
    return no("head dimensions " + std::to_string(*d) + " / " + std::to_string(*dv) + " (multiples of 8 up to 128)");
  a.head_dim = *d, a.head_dim_v = *dv;
  if (!same_dim(t[0], 2, t[1], 2) || !same_dim(t[0], 2, t[2], 2))
    return no("grouped-query heads (the kernel takes as many key / value heads as query heads)");
  const AttrValue* window = call.attrs.defined() ? call.attrs->find("window_size") : nullptr;
  if (window && !std::holds_alternative<std::monostate>(*window)) return no("sliding-window attention");
  a.seq_q = static_dim(t[0], 1), a.seq_kv = static_dim(t[1], 1);
  a.mask = attr_string(call, "causal_mask", "");
  if (a.mask == "BottomRight" && !same_dim(t[0], 1, t[1], 1) && !(a.seq_q && a.seq_kv && *a.seq_kv >= *a.seq_q))
    return no("causal_mask BottomRight without as many keys as queries or more (known at build time)");
  a.scale = 1.0 / std::sqrt(double(a.head_dim));
  if (const AttrValue* sv = call.attrs.defined() ? call.attrs->find("scale") : nullptr) {
    if (auto* f = std::get_if<double>(sv)) a.scale = *f;
    if (auto* i = std::get_if<int64_t>(sv)) a.scale = double(*i);
  }
  a.bias = t[3] != nullptr;
  if (a.bias) {
    // (B|1, N|1, Sq|1, Skv): rows of Skv elements, 8-element aligned (the kernel's vector loads).
    std::optional<int64_t> skv = static_dim(t[3], 3);
    if (!skv || *skv % 8 || !same_dim(t[3], 3, t[1], 1))
      return no("the bias's last dimension must be the static key length, a multiple of 8");
    const int of[3] = {0, 2, 1};  // bias dims 0..2 against the query's batch, heads, length
    for (int i = 0; i < 3; ++i)
      if (static_dim(t[3], i) != 1 && !same_dim(t[3], i, t[0], of[i])) return no("the bias does not broadcast");
  }
  return a;
}

bool AttentionCall::default_scale() const { return std::abs(scale * std::sqrt(double(head_dim)) - 1.0) < 1e-6; }

std::optional<StackedQkv> describe_stacked_attention(const CallNode* attention,
                                                     const std::function<Expr(const Expr&)>& bound,
                                                     std::string* why) {
  auto no = [why](const std::string& w) -> std::optional<StackedQkv> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!attention || attention->args.size() < 3) return no("not an attention call");
  StackedQkv s;
  const CallNode* split = nullptr;
  int64_t row_width[3] = {};
  for (int i = 0; i < 3; ++i) {
    auto* reshape = bound(attention->args[size_t(i)]).as<CallNode>();
    if (!reshape || op_name(*reshape) != "relax.reshape") return no("an operand is not a reshape");
    auto* item = bound(reshape->args[0]).as<TupleGetItemNode>();
    if (!item || item->index != i) return no("an operand is not the split's part of its position");
    auto* sp = bound(item->tuple).as<CallNode>();
    if (!sp || op_name(*sp) != "relax.split" || (split && sp != split)) return no("the parts come from different splits");
    split = sp;
    // The reshape splits the last axis into (heads, head dimension): (B, S, N·D) -> (B, S, N, D).
    auto* in = tensor_info(reshape->args[0]);
    auto* out = call_info(reshape);
    if (!in || !out || in->ndim != 3 || out->ndim != 4) return no("the parts are not (B, S, N·D) reshaped to (B, S, N, D)");
    std::optional<int64_t> w = static_dim(in, 2), n = static_dim(out, 2), d = static_dim(out, 3);
    if (!w || !n || !d || *w != *n * *d || !structural_equal((*in->shape)[0], (*out->shape)[0]) ||
        !structural_equal((*in->shape)[1], (*out->shape)[1]))
      return no("the parts are not (B, S, N·D) reshaped to (B, S, N, D) with static N and D");
    row_width[i] = *w;
  }
  auto* qkv = tensor_info(split->args[0]);
  std::optional<int64_t> width = static_dim(qkv, 2);
  if (!qkv || qkv->ndim != 3 || !width) return no("the stacked tensor is not 3-d with a static last axis");
  int64_t axis = attr_ints(*split, "axis", {0})[0];
  if (axis != 2 && axis != -1) return no("the split is not along the last axis");
  if (*width != row_width[0] + row_width[1] + row_width[2]) return no("the split has parts beside query, key and value");
  s.qkv = split->args[0];
  s.offsets[0] = 0;
  s.offsets[1] = row_width[0];
  s.offsets[2] = row_width[0] + row_width[1];
  s.row = *width;
  return s;
}

}  // namespace partita::backend::cutlass
