// Operators that exporters spell out in primitive ONNX nodes, put back together after import:
//  - GELU (no ONNX operator before opset 20): x * 0.5 * (1 + erf(x / sqrt(2))) in any of its
//    association orders, with x / sqrt(2) or x * (1 / sqrt(2)) -> R.nn.gelu(x);
//  - SiLU (torch's nn.SiLU, exported as x * Sigmoid(x)) -> R.nn.silu(x);
//  - LayerNormalization before opset 17: mean / subtract / power 2 / mean / add eps / sqrt /
//    divide / multiply gamma / add beta over the trailing axes -> R.nn.layer_norm.
// A backend then sees one operator it runs (and fuses as a post-op) instead of a chain of
// element-wise ones, as ONNX Runtime's graph optimizations do. The rewritten intermediates are
// removed when nothing else uses them.
#include <cmath>

#include "importer.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/runtime/half.h"
#include "partita/transform/basic.h"

namespace partita::frontend::onnx_detail {
namespace {

/// The value of a one-element float constant of any float dtype, with the relative rounding
/// error of that dtype (a float16 export holds sqrt(2) as 1.4140625).
struct Scalar {
  double value, tolerance;
};
std::optional<Scalar> scalar_of(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (!c || c->data.numel() != 1) return std::nullopt;
  const DataType dt = c->data.dtype();
  if (dt == DataType::Float(64)) return Scalar{c->data.data_as<double>()[0], 1e-12};
  if (dt == DataType::Float(32)) return Scalar{double(c->data.data_as<float>()[0]), 1e-6};
  if (dt == DataType::Float(16)) return Scalar{double(c->data.data_as<runtime::Half>()[0].to_float()), 0x1p-10};
  if (dt == DataType::BFloat16()) return Scalar{double(c->data.data_as<runtime::BFloat16>()[0].to_float()), 0x1p-7};
  return std::nullopt;
}

/// `e` is a one-element float constant equal to `v` to its dtype's precision.
bool is_scalar(const Expr& e, double v) {
  auto s = scalar_of(e);
  return s && std::abs(s->value - v) <= s->tolerance * std::abs(v);
}

/// The scalar value of a one-element float constant.
std::optional<double> scalar_value(const Expr& e) {
  auto s = scalar_of(e);
  return s ? std::optional<double>(s->value) : std::nullopt;
}

class PatternFuser : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;

  void visit_binding_(const VarBindingNode* b) override {
    if (builder_.current_block_is_dataflow()) {
      Expr value = visit_expr(b->value);
      if (const auto* call = value.as<CallNode>()) {
        Expr fused = fuse_gelu(*call);
        if (!fused) fused = fuse_silu(*call);
        if (!fused) fused = fuse_layer_norm(*call);
        if (fused) return reemit_binding(b, builder_.normalize(fused));
      }
      return reemit_binding(b, value);
    }
    ExprMutator::visit_binding_(b);
  }

 private:
  /// The value bound to `e` when it is a variable bound in this function so far.
  Expr value_of(const Expr& e) { return e.as<VarNode>() ? lookup_binding(e.as_ref<VarNode>()) : Expr(); }

  /// The operands of a commutative call `call` as (the one matching `pred`, the other).
  template <class Pred>
  static std::optional<std::pair<Expr, Expr>> split(const CallNode* call, Pred pred) {
    if (!call) return std::nullopt;
    if (pred(call->args[0])) return std::pair{call->args[0], call->args[1]};
    if (pred(call->args[1])) return std::pair{call->args[1], call->args[0]};
    return std::nullopt;
  }

  /// `a` is 1 + erf(x / sqrt(2)) (or erf(x * 1/sqrt(2)) + 1); returns x.
  Expr erf_term(const Expr& a) {
    auto parts = split(call_of(value_of(a), "relax.add"), [](const Expr& e) { return is_scalar(e, 1.0); });
    if (!parts) return Expr();
    const CallNode* erf = call_of(value_of(parts->second), "relax.erf");
    if (!erf) return Expr();
    Expr scaled = value_of(erf->args[0]);
    if (const CallNode* div = call_of(scaled, "relax.divide"); div && is_scalar(div->args[1], std::sqrt(2.0)))
      return div->args[0];
    auto mul = split(call_of(scaled, "relax.multiply"), [](const Expr& e) { return is_scalar(e, std::sqrt(0.5)); });
    return mul ? mul->second : Expr();
  }

  /// x * sigmoid(x), in either order -> silu(x).
  Expr fuse_silu(const CallNode& outer) {
    if (!call_of(Expr(&outer), "relax.multiply")) return Expr();
    for (int k = 0; k < 2; ++k) {
      const CallNode* sig = call_of(value_of(outer.args[size_t(k)]), "relax.sigmoid");
      if (!sig || sig->args[0].get() != outer.args[size_t(1 - k)].get()) continue;
      const auto* t = sig->args[0]->struct_info_.as<TensorStructInfoNode>();
      if (!t || !t->dtype.is_float()) return Expr();
      return op::nn::silu(sig->args[0]);
    }
    return Expr();
  }

  Expr fuse_gelu(const CallNode& outer) {
    auto half = [](const Expr& e) { return is_scalar(e, 0.5); };
    if (!call_of(Expr(&outer), "relax.multiply")) return Expr();
    Expr x;
    // (x * A) * 0.5 and (x * 0.5) * A.
    if (auto p = split(&outer, half)) {
      if (auto m = split(call_of(value_of(p->second), "relax.multiply"), [&](const Expr& e) { return bool(erf_term(e)); });
          m && erf_term(m->first).get() == m->second.get())
        x = m->second;
    }
    for (int k = 0; !x && k < 2; ++k) {
      const Expr &a = outer.args[k], &other = outer.args[1 - k];
      if (auto h = split(call_of(value_of(other), "relax.multiply"), half)) {
        // (x * 0.5) * A: h->second is x; x * (A * 0.5): A is h->second and `a` is x.
        if (erf_term(a).get() == h->second.get()) x = h->second;
        else if (erf_term(h->second).get() == a.get()) x = a;
      }
    }
    if (!x) return Expr();
    const auto* t = x->struct_info_.as<TensorStructInfoNode>();
    if (!t || !t->dtype.is_float()) return Expr();
    return op::nn::gelu(x);
  }

  /// mean(x, axes, keepdims) over trailing axes of x; returns the axes.
  std::optional<std::vector<int64_t>> trailing_mean_axes(const CallNode* mean, const Expr& x) {
    if (!mean || mean->args[0].get() != x.get()) return std::nullopt;
    const auto* keep = mean->attrs->find("keepdims");
    const auto* axes = mean->attrs->find("axis");
    if (!keep || !std::get_if<bool>(keep) || !std::get<bool>(*keep) || !axes) return std::nullopt;
    const auto* list = std::get_if<std::vector<int64_t>>(axes);
    const auto* t = x->struct_info_.as<TensorStructInfoNode>();
    if (!list || list->empty() || !t || t->is_unknown_ndim()) return std::nullopt;
    std::vector<int64_t> norm;
    for (int64_t a : *list) norm.push_back(a < 0 ? a + t->ndim : a);
    for (size_t k = 0; k < norm.size(); ++k)
      if (norm[k] != t->ndim - int64_t(norm.size() - k)) return std::nullopt;
    return norm;
  }

  /// gamma / beta: a constant of the normalized dims' shape.
  static bool per_feature(const Expr& e, const std::vector<PrimExpr>& dims) {
    const auto* c = e.as<ConstantNode>();
    if (!c || c->data.ndim() != int(dims.size())) return false;
    for (size_t k = 0; k < dims.size(); ++k) {
      auto d = as_const_int(dims[k]);
      if (!d || *d != c->data.shape()[k]) return false;
    }
    return true;
  }

  Expr fuse_layer_norm(const CallNode& outer) {
    // add(multiply(y, gamma), beta)
    if (!call_of(Expr(&outer), "relax.add")) return Expr();
    for (int k = 0; k < 2; ++k) {
      const Expr &scaled = outer.args[k], &beta = outer.args[1 - k];
      const CallNode* mul = call_of(value_of(scaled), "relax.multiply");
      if (!mul || !beta.as<ConstantNode>()) continue;
      for (int j = 0; j < 2; ++j) {
        const Expr &y = mul->args[j], &gamma = mul->args[1 - j];
        if (!gamma.as<ConstantNode>()) continue;
        if (Expr fused = normalized(y, gamma, beta)) return fused;
      }
    }
    return Expr();
  }

  /// `y` = (x - mean) / sqrt(mean((x - mean)^2) + eps) -> layer_norm(x, gamma, beta).
  Expr normalized(const Expr& y, const Expr& gamma, const Expr& beta) {
    const CallNode* div = call_of(value_of(y), "relax.divide");
    if (!div) return Expr();
    const Expr& d = div->args[0];
    const CallNode* sub = call_of(value_of(d), "relax.subtract");
    const CallNode* sq = call_of(value_of(div->args[1]), "relax.sqrt");
    if (!sub || !sq) return Expr();
    const Expr& x = sub->args[0];
    auto axes = trailing_mean_axes(call_of(value_of(sub->args[1]), "relax.mean"), x);
    const CallNode* add = call_of(value_of(sq->args[0]), "relax.add");
    if (!axes || !add) return Expr();
    std::optional<double> eps = scalar_value(add->args[1]);
    Expr var = add->args[0];
    if (!eps) {
      eps = scalar_value(add->args[0]);
      var = add->args[1];
    }
    if (!eps || *eps < 0) return Expr();
    const CallNode* vmean = call_of(value_of(var), "relax.mean");
    const CallNode* pow = vmean ? call_of(value_of(vmean->args[0]), "relax.power") : nullptr;
    const CallNode* square = vmean ? call_of(value_of(vmean->args[0]), "relax.multiply") : nullptr;
    bool squared = (pow && pow->args[0].get() == d.get() && is_scalar(pow->args[1], 2.0)) ||
                   (square && square->args[0].get() == d.get() && square->args[1].get() == d.get());
    if (!squared || trailing_mean_axes(vmean, vmean->args[0]) != axes) return Expr();
    const auto* t = x->struct_info_.as<TensorStructInfoNode>();
    if (!t || !t->shape || !t->dtype.is_float()) return Expr();
    std::vector<PrimExpr> dims(t->shape->end() - int64_t(axes->size()), t->shape->end());
    if (!per_feature(gamma, dims) || !per_feature(beta, dims)) return Expr();
    return op::nn::layer_norm(x, gamma, beta, *axes, *eps);
  }
};

}  // namespace

Function fuse_exported_patterns(const Function& f, const IRModule& mod) {
  PatternFuser fuser(mod);
  Function fused = fuser.visit_expr(f).as_ref<FunctionNode>();
  if (fused.get() == f.get()) return f;
  return transform::remove_all_unused(fused, mod);
}

}  // namespace partita::frontend::onnx_detail
