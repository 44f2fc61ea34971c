// The `cublas.*` pattern table: TVM v0.26's names, order and check (python/tvm/relax/backend/
// cuda/cublas.py), with the rules of gemm_rules.h; see README.md for where it goes beyond TVM.
#include "cublas.h"
#include "gemm_rules.h"
#include "partita/dpl/pattern.h"
#include "partita/op/ops.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/patch_conv_to_matmul.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend::cublas {
namespace {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;
using transform::FusionPattern;
using transform::PatternCheckContext;

const Expr* annotated(const PatternCheckContext& ctx, const char* name) {
  auto it = ctx.annotated_expr.find(name);
  return it == ctx.annotated_expr.end() ? nullptr : &it->second;
}

bool check_matmul(const PatternCheckContext& ctx) {
  if (transform::has_leaking_intermediate_variables(ctx)) return false;
  const Expr* lhs = annotated(ctx, "lhs");
  const Expr* rhs = annotated(ctx, "rhs");
  const Expr* root = annotated(ctx, "root");
  if (!lhs || !rhs || !root) return false;
  MatmulOperands m{*lhs, *rhs, false, *root};
  if (const Expr* t = annotated(ctx, "transpose")) {
    // TVM takes any permute_dims here; only a swap of the last two axes is a transposed operand.
    auto* call = t->as<CallNode>();
    auto* rt = rhs->defined() && (*rhs)->struct_info_ ? (*rhs)->struct_info_.as<TensorStructInfoNode>() : nullptr;
    if (!call || !rt || rt->ndim < 2) return false;
    if (!swaps_last_two(op::permute_dims_axes(*call, rt->ndim), size_t(rt->ndim))) return false;
    m.transposed = true;
  }
  if (!matmul_unsupported(m).empty()) return false;
  if (const Expr* bias = annotated(ctx, "bias")) {
    bool matrix = false;
    if (!bias_unsupported(*root, *bias, *annotated(ctx, "add"), matrix).empty()) return false;
  }
  if (const Expr* sa = annotated(ctx, "scaleA"))
    if (!scale_unsupported(*root, *sa, *annotated(ctx, "scaleB"), ctx.matched_expr).empty()) return false;
  // cuBLASLt's GELU epilogue is the tanh approximation: within float16 / bfloat16 rounding of
  // erf's GELU (|error| < 3e-4), but 3e-4 is far above float32's, so a float32 GELU is left to
  // the generated kernels (matmul_bias then matches the rest). TVM fuses it in every dtype.
  const auto* act = ctx.matched_expr.as<CallNode>();
  const auto* act_op = act ? act->op.as<OpNode>() : nullptr;
  if (act_op && act_op->name == "relax.nn.gelu") {
    const auto* t = (*root)->struct_info_ ? (*root)->struct_info_.as<TensorStructInfoNode>() : nullptr;
    if (!t || t->dtype == DataType::Float(32) || t->dtype == DataType::Float(64)) return false;
  }
  return true;
}

// TVM's make_matmul_pattern (and its dequantize / multiply forms); "add" and "transpose" are
// annotations of ours, so the check sees the bias add's result and the transpose's axes.
FusionPattern matmul_pattern(const std::string& name, bool with_bias, const std::string& activation, bool transposed,
                             bool multiply = false) {
  FusionPattern f;
  f.name = "cublas." + name;
  Pattern lhs = wildcard(), rhs = wildcard();
  f.annotation_patterns = {{"lhs", lhs}, {"rhs", rhs}};
  Pattern b = rhs;
  if (transposed) {
    b = is_op("relax.permute_dims")({rhs});
    f.annotation_patterns["transpose"] = b;
  }
  Pattern out = is_op("relax.matmul")({lhs, b});
  f.annotation_patterns["root"] = out;
  if (with_bias) {
    Pattern bias = wildcard();
    out = is_op("relax.add")({out, bias});
    f.annotation_patterns["bias"] = bias;
    f.annotation_patterns["add"] = out;
  }
  if (!activation.empty()) out = is_op(activation)({out});
  if (multiply) {
    Pattern sa = wildcard(), sb = wildcard();
    f.annotation_patterns["scaleA"] = sa;
    f.annotation_patterns["scaleB"] = sb;
    std::vector<PrimExpr> one = {int_imm(1)};
    Pattern scale = is_op("relax.multiply")({sa.has_shape(one), sb.has_shape(one)});
    out = is_op("relax.astype")({is_op("relax.multiply")({out, scale})});
  }
  f.pattern = out;
  f.check = check_matmul;
  return f;
}

}  // namespace

std::vector<FusionPattern> cublas_patterns() {
  std::vector<FusionPattern> out;
  for (bool transposed : {false, true}) {
    std::string base = transposed ? "matmul_transposed" : "matmul";
    out.push_back(matmul_pattern(base, false, "", transposed));
    out.push_back(matmul_pattern(base + "_bias", true, "", transposed));
    out.push_back(matmul_pattern(base + "_bias_relu", true, "relax.nn.relu", transposed));
    out.push_back(matmul_pattern(base + "_bias_gelu", true, "relax.nn.gelu", transposed));
  }
  // TVM's matmul_transposed_dequantize comes here; Partita has no relax.dequantize (README.md).
  out.push_back(matmul_pattern("matmul_transposed_multiply", false, "", true, true));
  return out;
}

IRModule partition_for_cublas(IRModule mod, bool bind_constants) {
  // TVM's partition_for_cublas: FuseOpsByPattern(..., annotate_codegen=True), i.e. not merged.
  return transform::partition_for("cublas", std::move(mod), /*merge=*/false, bind_constants);
}

IRModule prepare_for_cublas(IRModule mod) {
  // Constants folded first (a kernel the rewrite flattens must be one), then the patch
  // convolutions as the products cuBLAS runs far faster than cuDNN the convolutions.
  mod = transform::FoldForInference()(std::move(mod));
  return transform::PatchConvToMatmul()(std::move(mod));
}

}  // namespace partita::backend::cublas
