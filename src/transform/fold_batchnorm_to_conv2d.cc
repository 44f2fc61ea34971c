// FoldBatchnormToConv2D (TVM relax.transform.FoldBatchnormToConv2D, extended): an inference
// batch_norm with constant parameters is a per-channel affine map y = x * s + t, which a
// convolution next to it absorbs into its weight and a bias add:
//   before it:  bn(conv2d(x, W) [+ b])  =  conv2d(x, W * s[o]) + (b * s + t)
//   after it:   conv2d(bn(x), W)        =  conv2d(x, W * s[i]) + sum_{i,kh,kw}(W * t[i])
// The second needs no padding (padding would see zeros where the batch_norm gave t) and one
// group. The new weights and biases are emitted as arithmetic on constants; FoldConstant
// evaluates them.
#include <unordered_map>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/op/ops.h"
#include "partita/transform/basic.h"
#include "partita/transform/fold_constant.h"
#include "pass_util.h"

namespace partita::transform {

namespace {

using detail::UseCounter;

bool is_float_constant(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  return c && c->data.dtype().is_float() && c->data.dtype().bits() >= 32;
}

/// A conv2d this pass can rewrite: NCHW data, OIHW constant weight of static shape, no output
/// dtype change. Returns the weight's shape.
std::optional<std::vector<int64_t>> foldable_conv(const CallNode& conv) {
  const auto* dl = call_attr<std::string>(conv, "data_layout");
  const auto* kl = call_attr<std::string>(conv, "kernel_layout");
  const auto* ol = call_attr<std::string>(conv, "out_layout");
  if (!dl || *dl != "NCHW" || !kl || *kl != "OIHW" || !ol || *ol != "NCHW") return std::nullopt;
  if (const auto* od = call_attr<DataType>(conv, "out_dtype"); od && !od->is_void()) {
    const auto* t = conv.struct_info_.as<TensorStructInfoNode>();
    if (!t || !(t->dtype == *od) || !(conv.args[0]->struct_info_.as<TensorStructInfoNode>()->dtype == *od))
      return std::nullopt;
  }
  if (!is_float_constant(conv.args[1])) return std::nullopt;
  auto shape = static_shape(conv.args[1]->struct_info_);
  if (!shape || shape->size() != 4) return std::nullopt;
  return shape;
}

/// An inference batch_norm over axis 1 with constant parameters of `channels` elements.
bool foldable_batch_norm(const CallNode& bn, int64_t channels) {
  const auto* axis = call_attr<int64_t>(bn, "axis");
  const auto* training = call_attr<bool>(bn, "training");
  if (!axis || *axis != 1 || !training || *training) return false;
  const auto* data = bn.args[0]->struct_info_.as<TensorStructInfoNode>();
  if (!data || data->ndim != 4) return false;
  for (size_t i = 1; i < 5; ++i) {
    if (!is_float_constant(bn.args[i])) return false;
    auto shape = static_shape(bn.args[i]->struct_info_);
    if (!shape || *shape != std::vector<int64_t>{channels}) return false;
  }
  return true;
}

class BatchnormFolder : public ExprMutator {
 public:
  BatchnormFolder(const IRModule& mod, UseCounter uses) : ExprMutator(mod), uses_(std::move(uses)) {}

  void visit_binding_(const VarBindingNode* b) override {
    if (builder_.current_block_is_dataflow()) {
      if (auto folded = fold_into_previous(*b)) return reemit_binding(b, builder_.normalize(*folded));
      if (auto folded = fold_into_next(*b)) return reemit_binding(b, builder_.normalize(*folded));
    }
    ExprMutator::visit_binding_(b);
  }

 private:
  int uses(const Expr& var) const { return uses_.uses(var); }

  /// The value bound to `e` when it is a variable bound in this function (as rewritten so far).
  Expr value_of(const Expr& e) {
    if (!e.as<VarNode>()) return Expr();
    return lookup_binding(visit_expr(e).as_ref<VarNode>());
  }

  Expr emit(const Expr& e) { return builder_.emit(e); }

  /// s = gamma / sqrt(var + eps) and t = beta - mean * s, as (channels,) expressions.
  std::pair<Expr, Expr> scale_and_shift(const CallNode& bn) {
    const Expr &gamma = bn.args[1], &beta = bn.args[2], &mean = bn.args[3], &var = bn.args[4];
    DataType dt = bn.args[1]->struct_info_.as<TensorStructInfoNode>()->dtype;
    Tensor eps = Tensor::empty({}, dt);
    const double e = *call_attr<double>(bn, "epsilon");
    if (dt.bits() == 64) *eps.data_as<double>() = e;
    else *eps.data_as<float>() = float(e);
    Expr inv_std = emit(op::divide(constant_one(dt), emit(op::sqrt(emit(op::add(var, make<ConstantNode>(eps)))))));
    const bool scale = *call_attr<bool>(bn, "scale"), center = *call_attr<bool>(bn, "center");
    Expr s = scale ? emit(op::multiply(gamma, inv_std)) : inv_std;
    Expr ms = emit(op::multiply(mean, s));
    Expr t = center ? emit(op::subtract(beta, ms)) : emit(op::negative(ms));
    return {s, t};
  }

  static Expr constant_one(DataType dt) {
    Tensor one = Tensor::empty({}, dt);
    if (dt.bits() == 64) *one.data_as<double>() = 1.0;
    else *one.data_as<float>() = 1.0f;
    return make<ConstantNode>(one);
  }

  Expr reshape(const Expr& e, std::vector<int64_t> shape) {
    std::vector<PrimExpr> dims;
    for (int64_t d : shape) dims.push_back(int_imm(d));
    return emit(op::reshape(e, dims));
  }

  Expr conv_with_weight(const CallNode& conv, const Expr& data, const Expr& weight) {
    return emit(make<CallNode>(conv.op, std::vector<Expr>{data, weight}, conv.attrs, conv.sinfo_args));
  }

  /// `b` = TupleGetItem(bn(conv2d(x, W) [+ bias]), 0) with each intermediate used once.
  std::optional<Expr> fold_into_previous(const VarBindingNode& b) {
    const auto* item = b.value.as<TupleGetItemNode>();
    if (!item || item->index != 0 || uses(item->tuple) != 1) return std::nullopt;
    Expr bn_value = value_of(item->tuple);
    const CallNode* bn = call_of(bn_value, "relax.nn.batch_norm");
    if (!bn || uses(bn->args[0]) != 1) return std::nullopt;
    Expr producer = value_of(bn->args[0]);
    Expr bias;
    if (const CallNode* add = call_of(producer, "relax.add")) {
      // A per-channel constant bias: (1, O, 1, 1) or (O, 1, 1).
      if (!is_float_constant(add->args[1]) || uses(add->args[0]) != 1) return std::nullopt;
      bias = add->args[1];
      producer = value_of(add->args[0]);
    }
    const CallNode* conv = call_of(producer, "relax.nn.conv2d");
    if (!conv) return std::nullopt;
    auto w_shape = foldable_conv(*conv);
    if (!w_shape) return std::nullopt;
    const int64_t out_channels = (*w_shape)[0];
    if (!foldable_batch_norm(*bn, out_channels)) return std::nullopt;
    if (bias) {
      auto bs = static_shape(bias->struct_info_);
      if (!bs || (*bs != std::vector<int64_t>{1, out_channels, 1, 1} &&
                  *bs != std::vector<int64_t>{out_channels, 1, 1}))
        return std::nullopt;
    }
    auto [s, t] = scale_and_shift(*bn);
    Expr weight = emit(op::multiply(conv->args[1], reshape(s, {out_channels, 1, 1, 1})));
    Expr shift = reshape(t, {1, out_channels, 1, 1});
    if (bias) shift = emit(op::add(emit(op::multiply(bias, reshape(s, {1, out_channels, 1, 1}))), shift));
    return op::add(conv_with_weight(*conv, visit_expr(conv->args[0]), weight), shift);
  }

  /// `b` = conv2d(TupleGetItem(bn(x), 0), W), ungrouped, unpadded.
  std::optional<Expr> fold_into_next(const VarBindingNode& b) {
    const CallNode* conv = call_of(b.value, "relax.nn.conv2d");
    if (!conv) return std::nullopt;
    auto w_shape = foldable_conv(*conv);
    if (!w_shape) return std::nullopt;
    const auto* groups = call_attr<int64_t>(*conv, "groups");
    const auto* padding = call_attr<std::vector<int64_t>>(*conv, "padding");
    if (!groups || *groups != 1 || !padding) return std::nullopt;
    for (int64_t p : *padding)
      if (p != 0) return std::nullopt;
    const auto* item = value_of(conv->args[0]).as<TupleGetItemNode>();
    if (!item || item->index != 0) return std::nullopt;
    const CallNode* bn = call_of(value_of(item->tuple), "relax.nn.batch_norm");
    const int64_t out_channels = (*w_shape)[0], in_channels = (*w_shape)[1];
    if (!bn || !foldable_batch_norm(*bn, in_channels)) return std::nullopt;
    auto [s, t] = scale_and_shift(*bn);
    const Expr& w = conv->args[1];
    Expr weight = emit(op::multiply(w, reshape(s, {1, in_channels, 1, 1})));
    Expr shift = emit(op::sum(emit(op::multiply(w, reshape(t, {1, in_channels, 1, 1}))), std::vector<int64_t>{1, 2, 3}));
    return op::add(conv_with_weight(*conv, visit_expr(bn->args[0]), weight), reshape(shift, {1, out_channels, 1, 1}));
  }

  UseCounter uses_;
};

}  // namespace

Pass FoldBatchnormToConv2D() {
  return create_function_pass(
      [](Function f, IRModule mod, const PassContext&) -> Function {
        if (f->attrs.count("Primitive")) return f;
        UseCounter counter;
        counter.visit_expr(f);
        BatchnormFolder folder(mod, std::move(counter));
        Function folded = folder.visit_expr(f).as_ref<FunctionNode>();
        if (folded.get() == f.get()) return f;
        return remove_all_unused(folded, mod);
      },
      0, "FoldBatchnormToConv2D");
}

}  // namespace partita::transform
