// Fused multi-head attention: relax.nn.attention (query, key, value) and relax.nn.attention_bias
// (the same with an additive bias), TVM's two operators behind `R.nn.attention(q, k, v,
// bias=None, scale=None, causal_mask=None, window_size=None)`.
//
// Layouts are TVM's: query (B, Sq, N, H), key (B, Skv, Nkv, H), value (B, Skv, Nkv, Hv), bias
// broadcastable to (B, N, Sq, Skv); the result is (B, Sq, N, Hv) of the query's dtype. N must
// be a multiple of Nkv (grouped-query attention: query head n reads key/value head
// n / (N / Nkv)). `scale` defaults to 1 / sqrt(H); `causal_mask` is "TopLeft" (key j is seen by
// query i when j <= i) or "BottomRight" (j <= i + |Sq - Skv|, TVM's offset); `window_size`
// is kept for code generators that implement sliding-window attention.
#include <cmath>

#include "cost_utils.h"
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

const char* const kAttentionArgNames[] = {"query", "key", "value", "bias"};

void check_dim_equal(const CallNode& call, const PrimExpr& a, const PrimExpr& b, const std::string& m1,
                     const std::string& m2, const std::string& dim) {
  if (dims_differ(a, b))
    fail(call, "ValueError", "the " + m1 + " " + dim + " and the " + m2 + " " + dim + " should be the same, but the " +
                                 dim + " of " + m1 + " is " + prim_str(a) + " while the " + dim + " of " + m2 +
                                 " is " + prim_str(b));
}

StructInfo infer_attention(const CallNode& call) {
  const bool with_bias = call.args.size() == 4;
  const TensorStructInfoNode* t[4] = {};
  for (size_t i = 0; i < call.args.size(); ++i) {
    t[i] = &tensor_arg(call, i);
    if (!t[i]->is_unknown_ndim() && t[i]->ndim != 4)
      fail(call, "ValueError",
           std::string("the ") + kAttentionArgNames[i] + " should have 4 dimensions" +
               (i < 3 ? ", namely [batch size, sequence length, number of heads, dimension of heads]" : "") +
               ", but has " + std::to_string(t[i]->ndim));
    if (!t[i]->dtype.is_void() && !t[i]->dtype.is_float())
      fail(call, "TypeError", std::string(kAttentionArgNames[i]) + " must be a float tensor, but has dtype " +
                                  t[i]->dtype.str());
    if (i > 0 && !t[i]->dtype.is_void() && !t[0]->dtype.is_void() && !(t[i]->dtype == t[0]->dtype))
      fail(call, "TypeError", std::string(kAttentionArgNames[i]) + " has dtype " + t[i]->dtype.str() +
                                  " but query has " + t[0]->dtype.str());
  }
  if (const AttrValue* mask = attr(call, "causal_mask")) {
    if (const auto* s = std::get_if<std::string>(mask); s && *s != "TopLeft" && *s != "BottomRight")
      fail(call, "ValueError", "causal_mask must be \"TopLeft\", \"BottomRight\" or None, got \"" + *s + "\"");
  }
  if (auto w = attr_opt_int(call, "window_size"); w && *w <= 0)
    fail(call, "ValueError", "window_size must be positive, got " + std::to_string(*w));
  if (!t[0]->shape || !t[1]->shape || !t[2]->shape) return tensor_result(std::nullopt, t[0]->dtype, 4);
  const auto& q = *t[0]->shape;
  const auto& k = *t[1]->shape;
  const auto& v = *t[2]->shape;
  check_dim_equal(call, q[0], k[0], "query", "key", "batch size");
  check_dim_equal(call, q[0], v[0], "query", "value", "batch size");
  for (size_t i : {size_t(1), size_t(2)}) {
    auto heads = as_const_int(q[2]);
    auto kv_heads = as_const_int((i == 1 ? k : v)[2]);
    if (heads && kv_heads && (*kv_heads <= 0 || *heads % *kv_heads != 0))
      fail(call, "ValueError", std::string("the query number of heads should be a multiple of the ") +
                                   kAttentionArgNames[i] + " number of heads, but the query has " +
                                   std::to_string(*heads) + " while the " + kAttentionArgNames[i] + " has " +
                                   std::to_string(*kv_heads));
  }
  check_dim_equal(call, k[2], v[2], "key", "value", "number of heads");
  check_dim_equal(call, k[1], v[1], "key", "value", "sequence length");
  check_dim_equal(call, q[3], k[3], "query", "key", "dimension of heads");
  if (with_bias && t[3]->shape) {
    const auto& b = *t[3]->shape;
    const PrimExpr expected[3] = {q[0], q[2], q[1]};
    const char* names[3] = {"batch size", "number of heads", "sequence length"};
    for (size_t d = 0; d < 3; ++d) {
      auto one = as_const_int(b[d]);
      if (dims_differ(expected[d], b[d]) && !(one && *one == 1))
        fail(call, "ValueError", std::string("the query ") + names[d] + " and the bias " + names[d] +
                                     " should be the same or broadcastable, but the " + names[d] + " of query is " +
                                     prim_str(expected[d]) + " while the " + names[d] + " of bias is " +
                                     prim_str(b[d]));
    }
    check_dim_equal(call, k[1], b[3], "key", "bias", "sequence length");
  }
  return tensor_result(std::vector<PrimExpr>{q[0], q[1], q[2], v[3]}, t[0]->dtype, 4);
}

/// Two multiply-adds per (query, key) pair and head dimension (Q·Kᵀ and P·V) plus the softmax's
/// scale, exponent, sum and division per score: 2·B·N·Sq·Skv·(H + Hv) + 4·B·N·Sq·Skv.
std::optional<PrimExpr> attention_flops(const CallNode& call) {
  const auto* q = call.args[0]->struct_info_.as<TensorStructInfoNode>();
  const auto* v = call.args[2]->struct_info_.as<TensorStructInfoNode>();
  if (!q || !v || !q->shape || !v->shape || q->ndim != 4 || v->ndim != 4) return std::nullopt;
  const auto& qs = *q->shape;
  const auto& vs = *v->shape;
  PrimExpr scores = qs[0] * qs[2] * qs[1] * vs[1];
  return int_imm(2) * scores * (qs[3] + vs[3]) + int_imm(4) * scores;
}

OpDef attention_def(const std::string& name, bool with_bias) {
  OpDef def;
  def.name = name;
  def.attrs_type_key = "relax.attrs.AttentionAttrs";
  def.args = {{"query"}, {"key"}, {"value"}};
  if (with_bias) def.args.push_back({"bias"});
  def.attrs = {{"scale", AttrKind::OptionalFloat, std::monostate{}},
               {"causal_mask", AttrKind::OptionalString, std::monostate{}},
               {"window_size", AttrKind::OptionalInt, std::monostate{}}};
  def.infer = infer_attention;
  // An anchor of its own: no generic fusing code generator knows how to fuse into it.
  def.fusion_kind = FusionKind::Opaque;
  def.flops = attention_flops;
  return def;
}

}  // namespace

void register_nn_attention_ops() {
  add_op(attention_def("relax.nn.attention", false));
  add_op(attention_def("relax.nn.attention_bias", true));
}

}  // namespace partita::op::detail
