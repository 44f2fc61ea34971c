// RewriteAttention (include/partita/transform/attention.h): the scaled dot-product chain of
// multi-head attention, as PyTorch and ONNX export it, rewritten to one R.nn.attention call.
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/op/ops.h"
#include "partita/op/registry.h"
#include "partita/runtime/half.h"
#include "partita/transform/attention.h"
#include "partita/transform/basic.h"
#include "pass_util.h"

namespace partita::transform {

namespace {

/// Counts the uses of every variable, and notes the variables that a permute_dims
/// [0, 2, 1, 3] of a 4-d tensor reads (where an attention result can be bound directly).
class UseCounter : public detail::UseCounter {
 public:
  std::unordered_set<const Object*> permuted_back;
  void visit_binding_(const VarBindingNode* b) override {
    if (const CallNode* p = call_of(b->value, "relax.permute_dims")) {
      const auto* t = p->args[0]->struct_info_.as<TensorStructInfoNode>();
      if (t && t->ndim == 4 && op::permute_dims_axes(*p, 4) == op::IntList{0, 2, 1, 3})
        permuted_back.insert(p->args[0].get());
    }
    detail::UseCounter::visit_binding_(b);
  }
};

const TensorStructInfoNode* tensor_of(const Expr& e) { return e->struct_info_.as<TensorStructInfoNode>(); }

/// Element `i` of a float constant as a double.
double element(const Tensor& t, int64_t i) {
  const DataType dt = t.dtype();
  if (dt == DataType::Float(32)) return t.data_as<const float>()[i];
  if (dt == DataType::Float(64)) return t.data_as<const double>()[i];
  if (dt == DataType::Float(16)) return t.data_as<const runtime::Half>()[i].to_float();
  if (dt == DataType::BFloat16()) return t.data_as<const runtime::BFloat16>()[i].to_float();
  if (dt.is_bool() || dt == DataType::UInt(8)) return t.data_as<const uint8_t>()[i];
  return std::numeric_limits<double>::quiet_NaN();
}

int64_t numel(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape()) n *= d;
  return n;
}

/// The value of a one-element float constant.
std::optional<double> scalar_constant(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (!c || !c->data.dtype().is_float() || numel(c->data) != 1) return std::nullopt;
  return element(c->data, 0);
}

/// A masked-out score: -inf, or so negative that exp() of it underflows to 0 next to any score
/// a softmax row holds (HF models use -1e4, -1e9 or the dtype's lowest value).
bool is_masked_value(double v) { return v <= -1e4; }

/// The diagonal offset of a constant causal mask over (Sq, Skv) laid out as the last two
/// dimensions of `t` (its leading dimensions are 1): `value(i, j)` says whether position (i, j)
/// is visible; nullopt when the mask is not "visible exactly where j <= i + offset".
std::optional<int64_t> causal_offset(const Tensor& t, int64_t sq, int64_t skv,
                                     const std::function<std::optional<bool>(int64_t)>& visible) {
  const auto& shape = t.shape();
  if (shape.size() < 2 || shape[shape.size() - 2] != sq || shape.back() != skv) return std::nullopt;
  for (size_t d = 0; d + 2 < shape.size(); ++d)
    if (shape[d] != 1) return std::nullopt;
  int64_t offset = -1;
  while (offset + 1 < skv) {
    auto v = visible(offset + 1);
    if (!v) return std::nullopt;
    if (!*v) break;
    ++offset;
  }
  if (offset < 0) return std::nullopt;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < skv; ++j) {
      auto v = visible(i * skv + j);
      if (!v || *v != (j <= i + offset)) return std::nullopt;
    }
  return offset;
}

/// What one match of the chain rewrites to.
struct Chain {
  Expr q4, kt, v4;      // (B, N, Sq, H), (B, N, H, Skv), (B, N, Skv, Hv)
  double scale = 1.0;
  Expr bias;            // the additive mask as matched (any rank), or null
  std::string causal;   // "", "TopLeft", "BottomRight"
};

class AttentionRewriter : public ExprMutator {
 public:
  AttentionRewriter(const IRModule& mod, UseCounter counter)
      : ExprMutator(mod), uses_(std::move(counter)) {}

  bool changed = false;

  void visit_binding_(const VarBindingNode* b) override {
    if (builder_.current_block_is_dataflow()) {
      Expr value = visit_expr(b->value);
      if (auto chain = match(value)) {
        changed = true;
        // Read only by a permute_dims back to (B, S, N, H) (in this block, as a dataflow var is):
        // that binding takes the attention.
        if (b->var.as<DataflowVarNode>() && uses(b->var) == 1 && uses_.permuted_back.count(b->var.get())) {
          deferred_.emplace(b->var.get(), *chain);
          return;
        }
        Expr out = emit_attention(*chain);
        return reemit_binding(b, builder_.normalize(op::permute_dims(out, op::IntList{0, 2, 1, 3})));
      }
      if (const auto* p = call_of(value, "relax.permute_dims"))
        if (auto it = deferred_.find(p->args[0].get()); it != deferred_.end())
          return reemit_binding(b, emit_attention(it->second, false));
      return reemit_binding(b, value);
    }
    ExprMutator::visit_binding_(b);
  }

 private:
  int uses(const Expr& var) const { return uses_.uses(var); }

  /// The value bound to `e` when it is a variable bound in this function (as rewritten so far).
  Expr value_of(const Expr& e) {
    if (!e.as<VarNode>() && !e.as<DataflowVarNode>()) return Expr();
    return lookup_binding(e.as_ref<VarNode>());
  }

  /// The call of `op_name` bound to `e`, when `e` is used by the chain alone.
  const CallNode* inner(const Expr& e, const char* op_name) {
    if (uses(e) != 1) return nullptr;
    Expr v = value_of(e);
    return v ? call_of(v, op_name) : nullptr;
  }

  std::optional<Chain> match(const Expr& value) {
    const CallNode* mm2 = call_of(value, "relax.matmul");
    if (!mm2 || mm2->args.size() != 2) return std::nullopt;
    const CallNode* softmax = inner(mm2->args[0], "relax.nn.softmax");
    if (!softmax) return std::nullopt;
    const auto* st = tensor_of(mm2->args[0]);
    if (!st || st->ndim != 4) return std::nullopt;
    const auto* axis = softmax->attrs ? softmax->attrs->find("axis") : nullptr;
    const auto* ax = axis ? std::get_if<int64_t>(axis) : nullptr;
    if (!ax || (*ax != -1 && *ax != 3)) return std::nullopt;

    Chain chain;
    Expr scores = softmax->args[0];
    // The mask: scores + bias, bias + scores, or where(visible, scores, masked).
    if (const CallNode* add = inner(scores, "relax.add")) {
      const int side = is_scores(add->args[0]) ? 0 : 1;
      chain.bias = add->args[1 - side];
      scores = add->args[side];
    } else if (const CallNode* where = inner(scores, "relax.where")) {
      auto fill = scalar_constant(where->args[2]);
      const auto* cond = where->args[0].as<ConstantNode>();
      if (!fill || !is_masked_value(*fill) || !cond) return std::nullopt;
      chain.causal = "?";  // decided below, once Sq and Skv are known
      chain.bias = where->args[0];
      scores = where->args[1];
    }
    // The scale.
    const CallNode* mm1 = nullptr;
    if (const CallNode* mul = inner(scores, "relax.multiply")) {
      for (int side : {0, 1})
        if (auto s = scalar_constant(mul->args[1 - side]); s && (mm1 = inner(mul->args[side], "relax.matmul"))) {
          chain.scale = *s;
          break;
        }
    } else if (const CallNode* div = inner(scores, "relax.divide")) {
      auto s = scalar_constant(div->args[1]);
      if (s && *s != 0 && (mm1 = inner(div->args[0], "relax.matmul"))) chain.scale = 1.0 / *s;
    } else {
      mm1 = inner(scores, "relax.matmul");
    }
    if (!mm1 || mm1->args.size() != 2) return std::nullopt;
    chain.q4 = mm1->args[0];
    chain.kt = mm1->args[1];
    // PyTorch's SDPA export scales Q and Kᵀ each by sqrt(scale) before their product.
    for (Expr* operand : {&chain.q4, &chain.kt})
      if (const CallNode* mul = inner(*operand, "relax.multiply"))
        for (int side : {0, 1})
          if (auto s = scalar_constant(mul->args[size_t(1 - side)])) {
            chain.scale *= *s;
            *operand = mul->args[size_t(side)];
            break;
          }
    chain.v4 = mm2->args[1];
    // Shapes: Q (B, N, Sq, H), Kᵀ (B, N, H, Skv), V (B, N, Skv, Hv), one dtype, no broadcasting.
    const auto *q = tensor_of(chain.q4), *kt = tensor_of(chain.kt), *v = tensor_of(chain.v4);
    if (!q || !kt || !v || q->ndim != 4 || kt->ndim != 4 || v->ndim != 4 || !q->shape || !kt->shape || !v->shape)
      return std::nullopt;
    if (!(q->dtype == kt->dtype) || !(q->dtype == v->dtype) || !q->dtype.is_float()) return std::nullopt;
    const auto &qs = *q->shape, &ks = *kt->shape, &vs = *v->shape;
    auto equal = [](const PrimExpr& a, const PrimExpr& b) { return structural_equal_prim(a, b); };
    for (int d : {0, 1})
      if (!equal(qs[size_t(d)], ks[size_t(d)]) || !equal(qs[size_t(d)], vs[size_t(d)])) return std::nullopt;
    if (!equal(qs[3], ks[2]) || !equal(ks[3], vs[2])) return std::nullopt;
    if (chain.bias && !accept_mask(chain, qs, ks[3])) return std::nullopt;
    return chain;
  }

  static bool structural_equal_prim(const PrimExpr& a, const PrimExpr& b) {
    if (a.get() == b.get()) return true;
    auto x = as_const_int(a), y = as_const_int(b);
    if (x && y) return *x == *y;
    auto d = as_const_int(simplify(a - b));
    return d && *d == 0;
  }

  /// Whether `e` is the scaled score matrix (a multiply, divide or matmul used once).
  bool is_scores(const Expr& e) {
    return inner(e, "relax.multiply") || inner(e, "relax.divide") || inner(e, "relax.matmul");
  }

  /// Checks the mask of `chain` against (B, N, Sq, Skv) and classifies a constant causal one.
  bool accept_mask(Chain& chain, const std::vector<PrimExpr>& qs, const PrimExpr& skv_dim) {
    const bool from_where = chain.causal == "?";
    chain.causal.clear();
    auto sq = as_const_int(qs[2]), skv = as_const_int(skv_dim);
    if (const auto* c = chain.bias.as<ConstantNode>(); c && sq && skv) {
      const Tensor& t = c->data;
      auto offset = causal_offset(t, *sq, *skv, [&](int64_t i) -> std::optional<bool> {
        double v = element(t, i);
        if (from_where) return v != 0;
        if (v == 0) return true;
        if (is_masked_value(v)) return false;
        return std::nullopt;
      });
      if (offset && *offset == 0) chain.causal = "TopLeft";
      else if (offset && *skv > *sq && *offset == *skv - *sq) chain.causal = "BottomRight";
      if (!chain.causal.empty()) {
        chain.bias = Expr();
        return true;
      }
    }
    if (from_where) return false;  // a where() mask that is not causal has no attention form
    const auto* b = tensor_of(chain.bias);
    const auto* q = tensor_of(chain.q4);
    if (!b || !b->shape || b->ndim < 1 || b->ndim > 4 || !(b->dtype == q->dtype)) return false;
    const auto& bs = *b->shape;
    // Right-aligned against (B, N, Sq, Skv): equal or 1, and the last exactly Skv.
    const PrimExpr full[4] = {qs[0], qs[1], qs[2], skv_dim};
    for (size_t i = 0; i < bs.size(); ++i) {
      const PrimExpr& want = full[4 - bs.size() + i];
      auto one = as_const_int(bs[i]);
      const bool last = i + 1 == bs.size();
      if (!structural_equal_prim(bs[i], want) && (last || !one || *one != 1)) return false;
    }
    return true;
  }

  /// `x4` (B, N, S, H) in (B, S, N, H): the operand of a permute_dims [0, 2, 1, 3], or a new one.
  Expr bsnh_of(const Expr& x4) {
    if (Expr v = value_of(x4))
      if (const auto* p = call_of(v, "relax.permute_dims"); p && op::permute_dims_axes(*p, 4) == op::IntList{0, 2, 1, 3})
        return p->args[0];
    return builder_.emit(op::permute_dims(x4, op::IntList{0, 2, 1, 3}));
  }

  /// Kᵀ (B, N, H, Skv) in (B, Skv, N, H).
  Expr key_of(const Expr& kt) {
    if (Expr v = value_of(kt))
      if (const auto* p = call_of(v, "relax.permute_dims")) {
        op::IntList axes = op::permute_dims_axes(*p, 4);
        if (axes == op::IntList{0, 2, 3, 1}) return p->args[0];
        if (axes == op::IntList{0, 1, 3, 2}) return bsnh_of(p->args[0]);
      }
    return builder_.emit(op::permute_dims(kt, op::IntList{0, 3, 1, 2}));
  }

  /// The attention call of `c` (emitted when `emit`, else returned for the caller to bind).
  Expr emit_attention(const Chain& c, bool emit = true) {
    Expr q = bsnh_of(c.q4), k = key_of(c.kt), v = bsnh_of(c.v4);
    std::vector<Expr> args{q, k, v};
    if (c.bias) {
      Expr bias = c.bias;
      const auto* b = tensor_of(bias);
      if (b->ndim < 4) {
        std::vector<PrimExpr> shape(size_t(4 - b->ndim), int_imm(1));
        for (const PrimExpr& d : *b->shape) shape.push_back(d);
        bias = builder_.emit(op::reshape(bias, shape));
      }
      args.push_back(bias);
    }
    std::vector<std::pair<std::string, AttrValue>> attrs{{"scale", c.scale}};
    if (!c.causal.empty()) attrs.emplace_back("causal_mask", c.causal);
    const char* name = c.bias ? "relax.nn.attention_bias" : "relax.nn.attention";
    Expr call = builder_.normalize(op::make_call(name, std::move(args), std::move(attrs)));
    return emit ? builder_.emit(call) : call;
  }

  UseCounter uses_;  // and the variables a permute_dims back reads
  std::unordered_map<const Object*, Chain> deferred_;  // matched chains bound at their permute
};

}  // namespace

Pass RewriteAttention() {
  return create_function_pass(
      [](Function f, IRModule mod, const PassContext&) -> Function {
        if (f->attrs.count("Primitive") || f->attrs.count("Composite")) return f;
        UseCounter counter;
        counter.visit_expr(f);
        AttentionRewriter rewriter(mod, std::move(counter));
        Function out = rewriter.visit_expr(f).as_ref<FunctionNode>();
        if (!rewriter.changed) return f;
        return remove_all_unused(out, mod);
      },
      0, "RewriteAttention");
}

}  // namespace partita::transform
