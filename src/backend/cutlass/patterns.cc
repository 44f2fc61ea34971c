// The `cutlass.*` pattern table, TVM's families (python/tvm/relax/backend/cuda/cutlass.py):
// matmul (plain and with a transposed weight) and NHWC conv2d, each alone, with a bias, with a
// bias and an activation, and as residual blocks (`..._residual_add`, `_residual_multiply`,
// optionally followed by relu); layer_norm; rms_norm (as models spell it); and the seed
// tutorial's element-wise multiply / add; attention (`relax.nn.attention`, with a bias
// `attention_bias`, which the prepare step makes of the scaled dot-product chains models spell
// out). Later entries have priority. Every check asks the description the codegen uses
// (fused_op.h), so what a check accepts is what the codegen emits.
#include "patterns.h"

#include <unordered_set>

#include "fused_op.h"
#include "partita/dpl/pattern.h"
#include "partita/transform/attention.h"
#include "partita/transform/fold_constant.h"

namespace partita::backend::cutlass {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;
using transform::FusionPattern;
using transform::PatternCheckContext;

namespace {

// The call a variable inside the match is bound to (null for values from outside).
std::function<const CallNode*(const Expr&)> producer_in(const PatternCheckContext& ctx) {
  return [&ctx](const Expr& e) -> const CallNode* {
    auto v = e.as_ref<VarNode>();
    if (!v) return nullptr;
    auto it = ctx.matched_bindings.find(Var(v));
    return it == ctx.matched_bindings.end() ? nullptr : it->second.as<CallNode>();
  };
}

// True when `to` is computed (transitively) from `from` in the block.
bool depends_on(const Var& to, const Var& from, const PatternCheckContext& ctx) {
  std::vector<Var> work{from};
  std::unordered_set<const VarNode*> seen;
  while (!work.empty()) {
    Var v = work.back();
    work.pop_back();
    if (v.get() == to.get()) return true;
    auto it = ctx.var_usages->find(v);
    if (it == ctx.var_usages->end()) continue;
    for (const Var& user : it->second)
      if (seen.insert(user.get()).second) work.push_back(user);
  }
  return false;
}

bool check_gemm(const PatternCheckContext& ctx) {
  if (transform::has_leaking_intermediate_variables(ctx)) return false;
  auto* last = ctx.matched_expr.as<CallNode>();
  if (!last) return false;
  auto g = describe_fused_gemm(last, producer_in(ctx), nullptr);
  if (!g || !unsupported_reason(*g).empty()) return false;
  // A residual computed from the GEMM's own result cannot be an input of the fused kernel.
  if (auto r = g->residual.as_ref<VarNode>()) {
    auto root = ctx.value_to_bound_var->find(Expr(static_cast<const ExprNode*>(g->root)));
    if (root == ctx.value_to_bound_var->end() || depends_on(Var(r), root->second, ctx)) return false;
  }
  return true;
}

bool check_layer_norm(const PatternCheckContext& ctx) {
  auto* call = ctx.matched_expr.as<CallNode>();
  return call && unsupported_layer_norm(*call).empty();
}

bool check_rms_norm(const PatternCheckContext& ctx) {
  if (transform::has_leaking_intermediate_variables(ctx)) return false;
  auto* last = ctx.matched_expr.as<CallNode>();
  if (!last) return false;
  auto r = describe_rms_norm(last, producer_in(ctx), nullptr);
  return r && unsupported_rms_norm(*r, call_info(last)).empty();
}

bool check_attention(const PatternCheckContext& ctx) {
  auto* call = ctx.matched_expr.as<CallNode>();
  return call && describe_attention(*call, nullptr);
}

bool check_stacked_attention(const PatternCheckContext& ctx) {
  if (transform::has_leaking_intermediate_variables(ctx)) return false;
  auto* call = ctx.matched_expr.as<CallNode>();
  auto bound = [&ctx](const Expr& e) -> Expr {
    auto v = e.as_ref<VarNode>();
    auto it = v ? ctx.matched_bindings.find(Var(v)) : ctx.matched_bindings.end();
    return it == ctx.matched_bindings.end() ? Expr() : it->second;
  };
  return call && describe_attention(*call, nullptr) && describe_stacked_attention(call, bound, nullptr);
}

bool check_binary(const PatternCheckContext& ctx) {
  auto* call = ctx.matched_expr.as<CallNode>();
  return call && unsupported_binary(*call).empty();
}

FusionPattern entry(const std::string& name, Pattern pattern, std::map<std::string, Pattern> annotations,
                    std::function<bool(const PatternCheckContext&)> check) {
  FusionPattern p;
  p.name = "cutlass." + name;
  p.pattern = std::move(pattern);
  p.annotation_patterns = std::move(annotations);
  p.check = std::move(check);
  return p;
}

const char* activation_op(const std::string& name) {
  if (name == "relu") return "relax.nn.relu";
  if (name == "gelu") return "relax.nn.gelu";
  if (name == "gelu_tanh") return "relax.nn.gelu_tanh";
  if (name == "silu") return "relax.nn.silu";
  return nullptr;
}

struct Base {
  std::string name;
  Pattern pattern;
  std::map<std::string, Pattern> annotations;
  bool with_bias;
};

// TVM's make_matmul_pattern / make_fused_bias_activation_pattern with annotations
// lhs, rhs, root, bias.
Base gemm_base(const std::string& op, bool transposed, bool with_bias, const std::string& act) {
  Pattern lhs = wildcard(), rhs = wildcard();
  Base b;
  b.annotations = {{"lhs", lhs}, {"rhs", rhs}};
  Pattern w = transposed ? is_op("relax.permute_dims")({rhs}) : rhs;
  Pattern out = is_op(op)({lhs, w});
  b.annotations["root"] = out;
  b.name = op == "relax.matmul" ? "matmul" : "conv2d";
  if (transposed) b.name += "_transposed";
  if (with_bias) {
    Pattern bias = wildcard();
    b.annotations["bias"] = bias;
    out = is_op("relax.add")({out, bias});
    b.name += "_bias";
  }
  if (!act.empty()) {
    out = is_op(activation_op(act))({out});
    b.name += "_" + act;
  }
  b.pattern = out;
  b.with_bias = with_bias;
  return b;
}

}  // namespace

std::vector<FusionPattern> cutlass_patterns() {
  std::vector<FusionPattern> out;
  // The seed tutorial's element-wise patterns, lowest priority.
  out.push_back(entry("multiply", is_op("relax.multiply")({wildcard(), wildcard()}), {}, check_binary));
  out.push_back(entry("add", is_op("relax.add")({wildcard(), wildcard()}), {}, check_binary));

  std::vector<Base> bases;
  bases.push_back(gemm_base("relax.nn.conv2d", false, false, ""));
  for (const char* act : {"", "relu", "silu"}) bases.push_back(gemm_base("relax.nn.conv2d", false, true, act));
  for (bool transposed : {false, true}) {
    bases.push_back(gemm_base("relax.matmul", transposed, false, ""));
    for (const char* act : {"", "relu", "gelu", "gelu_tanh", "silu"})
      bases.push_back(gemm_base("relax.matmul", transposed, true, act));
  }
  for (const Base& b : bases) out.push_back(entry(b.name, b.pattern, b.annotations, check_gemm));
  // Residual blocks on every base with a bias (without one, the residual is the "bias").
  for (const char* post : {"", "relu"}) {
    for (const Base& b : bases) {
      if (!b.with_bias) continue;
      for (const char* bin : {"add", "multiply"}) {
        Pattern residual = wildcard();
        Pattern p = is_op(std::string("relax.") + bin)({b.pattern, residual});
        if (*post) p = is_op(activation_op(post))({p});
        auto ann = b.annotations;
        ann["residual"] = residual;
        out.push_back(entry(b.name + "_residual_" + bin + (*post ? std::string("_") + post : ""), p, ann, check_gemm));
      }
    }
  }
  Pattern x = wildcard();
  out.push_back(
      entry("layer_norm", is_op("relax.nn.layer_norm")({x, wildcard(), wildcard()}), {{"data", x}}, check_layer_norm));
  Pattern rx = wildcard(), weight = wildcard(), eps = wildcard();
  Pattern mean = is_op("relax.mean")({is_op("relax.multiply")({rx, rx})});
  Pattern norm = is_op("relax.multiply")({rx, is_op("relax.rsqrt")({is_op("relax.add")({mean, eps})})});
  out.push_back(entry("rms_norm", is_op("relax.multiply")({norm, weight}),
                      {{"data", rx}, {"weight", weight}, {"eps", eps}}, check_rms_norm));
  Pattern q = wildcard(), k = wildcard(), v = wildcard(), bias = wildcard();
  out.push_back(entry("attention", is_op("relax.nn.attention")({q, k, v}), {{"query", q}, {"key", k}, {"value", v}},
                      check_attention));
  out.push_back(entry("attention_bias", is_op("relax.nn.attention_bias")({q, k, v, bias}),
                      {{"query", q}, {"key", k}, {"value", v}, {"bias", bias}}, check_attention));
  // Stacked QKV (TVM's make_stacked_attention_pattern, start_op="split"; TVM names both forms
  // cutlass.stacked_attention, the registry here keeps one pattern per name, so the bias form is
  // cutlass.stacked_attention_bias): the split and reshapes fuse into the attention, which reads
  // its operands from the stacked tensor in place.
  for (bool with_bias : {false, true}) {
    Pattern qkv = wildcard(), split = is_op("relax.split")({qkv});
    auto part = [&](int i) { return is_op("relax.reshape")({dpl::is_tuple_get_item(split, i), wildcard()}); };
    std::vector<Pattern> args{part(0), part(1), part(2)};
    std::map<std::string, Pattern> ann{{"stacked_qkv", qkv}, {"split", split}};
    if (with_bias) {
      Pattern b = wildcard();
      args.push_back(b);
      ann["bias"] = b;
    }
    out.push_back(entry(with_bias ? "stacked_attention_bias" : "stacked_attention",
                        is_op(with_bias ? "relax.nn.attention_bias" : "relax.nn.attention")(args),
                        ann, check_stacked_attention));
  }
  return out;
}

IRModule prepare_for_cutlass(IRModule mod) {
  // Constants folded first, so that the masks and scales of attention chains are constants when
  // they are matched; an attention the kernel cannot run goes back to matmul and softmax for the
  // GEMM patterns (and other backends) to take.
  mod = transform::FoldForInference()(std::move(mod));
  mod = transform::RewriteAttention()(std::move(mod));
  return transform::DecomposeAttention([](const CallNode& c) { return !describe_attention(c, nullptr); })(
      std::move(mod));
}

}  // namespace partita::backend::cutlass
