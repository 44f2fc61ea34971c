// PatchConvToMatmul (include/partita/transform/patch_conv_to_matmul.h).
#include "partita/transform/patch_conv_to_matmul.h"

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/op/ops.h"

namespace partita::transform {

namespace {

/// An attribute list of one or two values as (height, width); nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> pair_attr(const CallNode& call, const char* name, int64_t absent) {
  const auto* v = call_attr<std::vector<int64_t>>(call, name);
  if (!v) return std::pair{absent, absent};
  if (v->size() == 1) return std::pair{(*v)[0], (*v)[0]};
  if (v->size() == 2) return std::pair{(*v)[0], (*v)[1]};
  return std::nullopt;
}

bool layout_is(const CallNode& call, const char* name, const char* want) {
  const auto* v = call_attr<std::string>(call, name);
  return !v || *v == want;
}

std::vector<PrimExpr> dims(std::initializer_list<int64_t> values) {
  std::vector<PrimExpr> out;
  for (int64_t v : values) out.push_back(int_imm(v));
  return out;
}

class PatchConvRewriter : public ExprMutator {
 public:
  explicit PatchConvRewriter(const IRModule& mod) : ExprMutator(mod) {}

  Expr visit_(const CallNode* call) override {
    Expr e = ExprMutator::visit_(call);
    const auto* c = e.as<CallNode>();
    if (!c) return e;
    if (auto m = as_matmul(*c)) return *m;
    return e;
  }

 private:
  Expr emit(const Expr& e) { return builder_.emit(e); }

  std::optional<Expr> as_matmul(const CallNode& conv) {
    const auto* op = conv.op.as<OpNode>();
    if (!op || op->name != "relax.nn.conv2d" || conv.args.size() != 2) return std::nullopt;
    if (!layout_is(conv, "data_layout", "NCHW") || !layout_is(conv, "kernel_layout", "OIHW") ||
        !layout_is(conv, "out_layout", "NCHW"))
      return std::nullopt;
    const auto* groups = call_attr<int64_t>(conv, "groups");
    if (groups && *groups != 1) return std::nullopt;
    auto x = static_shape(conv.args[0]->struct_info_), w = static_shape(conv.args[1]->struct_info_);
    auto y = static_shape(conv.struct_info_);
    if (!x || !w || !y || x->size() != 4 || w->size() != 4 || y->size() != 4) return std::nullopt;
    const int64_t n = (*x)[0], c = (*x)[1], o = (*w)[0], kh = (*w)[2], kw = (*w)[3], ho = (*y)[2], wo = (*y)[3];
    if ((*w)[1] != c || kh * kw <= 1 || ho < 1 || wo < 1) return std::nullopt;
    auto strides = pair_attr(conv, "strides", 1), dilation = pair_attr(conv, "dilation", 1);
    if (!strides || !dilation || *strides != std::pair{kh, kw} || *dilation != std::pair<int64_t, int64_t>{1, 1})
      return std::nullopt;
    if (const auto* p = call_attr<std::vector<int64_t>>(conv, "padding"))
      for (int64_t v : *p)
        if (v != 0) return std::nullopt;
    DataType out_dtype;
    if (const auto* od = call_attr<DataType>(conv, "out_dtype")) out_dtype = *od;

    Expr data = conv.args[0];
    if ((*x)[2] != ho * kh || (*x)[3] != wo * kw)  // rows and columns no patch covers
      data = emit(op::strided_slice(data, {2, 3}, dims({0, 0}), dims({ho * kh, wo * kw})));
    Expr patches = emit(op::reshape(data, dims({n, c, ho, kh, wo, kw})));
    patches = emit(op::permute_dims(patches, op::IntList{0, 2, 4, 1, 3, 5}));
    patches = emit(op::reshape(patches, dims({n, ho * wo, c * kh * kw})));
    // A constant kernel is flattened here (the same bytes), so the product's operand stays a
    // constant for the backend that takes it.
    const auto* constant = conv.args[1].as<ConstantNode>();
    Expr kernel = constant ? Expr(make<ConstantNode>(constant->data.view({o, c * kh * kw})))
                           : emit(op::reshape(conv.args[1], dims({o, c * kh * kw})));
    Expr product = emit(op::matmul(patches, emit(op::permute_dims(kernel, op::IntList{1, 0})), out_dtype));
    Expr channels_first = emit(op::permute_dims(product, op::IntList{0, 2, 1}));
    return op::reshape(channels_first, dims({n, o, ho, wo}));
  }
};

}  // namespace

Pass PatchConvToMatmul() {
  return create_function_pass(
      [](Function f, IRModule mod, const PassContext&) -> Function {
        if (!is_plain_function(*f)) return f;
        PatchConvRewriter rewriter(mod);
        return rewriter.visit_expr(f).as_ref<FunctionNode>();
      },
      0, "PatchConvToMatmul");
}

}  // namespace partita::transform
