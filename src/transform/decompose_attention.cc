// DecomposeAttention (include/partita/transform/attention.h): relax.nn.attention[_bias] as the
// graph of operators TVM's legalization computes — transposes to (B, N, S, H), Q·Kᵀ, the scale,
// the bias and the causal mask as additions, softmax, ·V, and the transpose back — for code
// generators that fuse ordinary operators but have no attention kernel.
#include <cmath>
#include <limits>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/op/ops.h"
#include "partita/runtime/half.h"
#include "partita/transform/attention.h"

namespace partita::transform {

namespace {

bool is_attention(const CallNode& call) {
  const auto* op = call.op.as<OpNode>();
  return op && (op->name == "relax.nn.attention" || op->name == "relax.nn.attention_bias");
}

void set_element(Tensor& t, int64_t i, double v) {
  const DataType dt = t.dtype();
  if (dt == DataType::Float(32)) t.data_as<float>()[i] = float(v);
  else if (dt == DataType::Float(64)) t.data_as<double>()[i] = v;
  else if (dt == DataType::Float(16)) t.data_as<runtime::Half>()[i] = runtime::Half::from(v);
  else t.data_as<runtime::BFloat16>()[i] = runtime::BFloat16::from(v);
}

class AttentionDecomposer : public ExprMutator {
 public:
  AttentionDecomposer(const IRModule& mod, std::function<bool(const CallNode&)> decompose)
      : ExprMutator(mod), decompose_(std::move(decompose)) {}

  Expr visit_(const CallNode* call) override {
    Expr e = ExprMutator::visit_(call);
    const auto* c = e.as<CallNode>();
    if (!c || !is_attention(*c) || (decompose_ && !decompose_(*c))) return e;
    if (auto d = decomposed(*c)) return *d;
    return e;
  }

 private:
  Expr emit(const Expr& e) { return builder_.emit(e); }

  std::optional<Expr> decomposed(const CallNode& call) {
    if (!attention_decomposable(call)) return std::nullopt;
    const auto &qs = *call.args[0]->struct_info_.as<TensorStructInfoNode>()->shape;
    const auto &ks = *call.args[1]->struct_info_.as<TensorStructInfoNode>()->shape;
    const auto* q = call.args[0]->struct_info_.as<TensorStructInfoNode>();
    const std::string* causal = call_attr<std::string>(call, "causal_mask");
    auto sq = as_const_int(qs[1]), skv = as_const_int(ks[1]);
    auto head_dim = as_const_int(qs[3]);
    const double* given_scale = call_attr<double>(call, "scale");
    const double scale = given_scale ? *given_scale : 1.0 / std::sqrt(double(*head_dim));
    const DataType dt = q->dtype;

    Expr qt = emit(op::permute_dims(call.args[0], op::IntList{0, 2, 1, 3}));
    Expr kt = emit(op::permute_dims(call.args[1], op::IntList{0, 2, 3, 1}));
    Expr vt = emit(op::permute_dims(call.args[2], op::IntList{0, 2, 1, 3}));
    Tensor s = Tensor::empty({}, dt);
    set_element(s, 0, scale);
    Expr scores = emit(op::multiply(emit(op::matmul(qt, kt)), make<ConstantNode>(s)));
    if (call.args.size() == 4) scores = emit(op::add(scores, call.args[3]));
    if (causal) {
      // 0 where key j is visible from query i (j <= i + offset), -inf elsewhere.
      const int64_t offset = *causal == "BottomRight" ? std::abs(*sq - *skv) : 0;
      Tensor mask = Tensor::empty({*sq, *skv}, dt);
      for (int64_t i = 0; i < *sq; ++i)
        for (int64_t j = 0; j < *skv; ++j)
          set_element(mask, i * *skv + j, j <= i + offset ? 0.0 : -std::numeric_limits<double>::infinity());
      scores = emit(op::add(scores, make<ConstantNode>(mask)));
    }
    Expr probs = emit(op::nn::softmax(scores, -1));
    Expr out = emit(op::matmul(probs, vt));
    return op::permute_dims(out, op::IntList{0, 2, 1, 3});
  }

  std::function<bool(const CallNode&)> decompose_;
};

}  // namespace

bool attention_decomposable(const CallNode& call) {
  if (!is_attention(call) || call.args.size() < 3) return false;
  auto find = [&](const char* name) { return call.attrs ? call.attrs->find(name) : nullptr; };
  const AttrValue* window = find("window_size");
  if (window && std::get_if<int64_t>(window)) return false;
  const auto* q = call.args[0]->struct_info_.as<TensorStructInfoNode>();
  const auto* k = call.args[1]->struct_info_.as<TensorStructInfoNode>();
  if (!q || !k || !q->shape || !k->shape || q->ndim != 4 || k->ndim != 4) return false;
  const auto &qs = *q->shape, &ks = *k->shape;
  auto heads = as_const_int(qs[2]), kv_heads = as_const_int(ks[2]);
  if (!heads || !kv_heads || *heads != *kv_heads) return false;
  const AttrValue* causal = find("causal_mask");
  if (causal && std::get_if<std::string>(causal) && (!as_const_int(qs[1]) || !as_const_int(ks[1]))) return false;
  const AttrValue* scale = find("scale");
  if (!(scale && std::get_if<double>(scale)) && !as_const_int(qs[3])) return false;
  return true;
}

Pass DecomposeAttention(std::function<bool(const CallNode&)> decompose) {
  return create_function_pass(
      [decompose](Function f, IRModule mod, const PassContext&) -> Function {
        if (!is_plain_function(*f)) return f;
        AttentionDecomposer decomposer(mod, decompose);
        return decomposer.visit_expr(f).as_ref<FunctionNode>();
      },
      0, "DecomposeAttention");
}

}  // namespace partita::transform
