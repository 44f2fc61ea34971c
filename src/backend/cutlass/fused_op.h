// What one CUTLASS composite computes, read from its calls: the one description both the
// patterns' checks and the codegen use, so the checks accept exactly what the code generator
// emits. A fused GEMM is `root [+ bias] [act] [(+|*) residual [act]]` where root is a matmul
// (rhs optionally permute_dims-transposed) or an NHWC / OHWI conv2d; the epilogue's parts are
// compiled into the kernel (gemm_kernel.h: GemmEpilogue).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "partita/ir/expr.h"

namespace partita::backend::cutlass {

// The epilogue codes shared with the device code (device_code.h: PT_ACT_*, PT_C_*).
enum class Activation : int { kNone = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3, kSilu = 4 };
enum class ResidualMode : int { kNone = 0, kAddBeforeActivation = 1, kAdd = 2, kMultiply = 3 };

/// The activation an operator name stands for, or nullopt.
std::optional<Activation> activation_of(const std::string& op_name);

struct FusedGemm {
  bool conv2d = false;  // else matmul
  const CallNode* root = nullptr;
  Expr lhs, rhs;                // rhs: the weight as the root sees it before permute_dims
  bool rhs_transposed = false;  // matmul(x, permute_dims(w)): w is (N, K)
  Expr bias;                    // a vector of N elements (any leading 1s), or null
  Expr residual;                // same shape as the result, or null
  Activation act = Activation::kNone, post_act = Activation::kNone;
  ResidualMode residual_mode = ResidualMode::kNone;
  DataType in_dtype, out_dtype;
  const TensorStructInfoNode* out = nullptr;  // the root's result
};

/// Reads a chain ending at `last`. `producer(e)` is the call bound to `e` when `e` is a
/// variable inside the fused region, else null. Returns the description, or sets `why`.
std::optional<FusedGemm> describe_fused_gemm(const CallNode* last,
                                             const std::function<const CallNode*(const Expr&)>& producer,
                                             std::string* why);

/// Why the CUTLASS codegen cannot run this fused GEMM ("" when it can): dtypes, layouts,
/// alignment, static extents where the kernel needs them.
std::string unsupported_reason(const FusedGemm& g);

/// rms_norm as models spell it: x * rsqrt(mean(x * x, axis=-1, keepdims) + eps) * weight.
struct RmsNorm {
  Expr data, weight;
  double eps = 0;
};
std::optional<RmsNorm> describe_rms_norm(const CallNode* last,
                                         const std::function<const CallNode*(const Expr&)>& producer, std::string* why);

/// Why layer_norm / an element-wise binary op cannot run here ("" when it can).
std::string unsupported_layer_norm(const CallNode& call);
std::string unsupported_binary(const CallNode& call);
std::string unsupported_rms_norm(const RmsNorm& r, const TensorStructInfoNode* out);

/// An attention call (relax.nn.attention / attention_bias) as the attention kernels
/// (attention_kernel.h) take it: float16 / bfloat16, static head dimensions that are multiples of
/// 8 up to 128, as many key / value heads as query heads, no sliding window, a bottom-right causal
/// mask only with at least as many keys as queries, a bias of rows of Skv (a multiple of 8).
struct AttentionCall {
  DataType dtype;
  int64_t head_dim = 0, head_dim_v = 0;
  bool bias = false;
  std::string mask;                      // causal_mask: "", "TopLeft" or "BottomRight"
  double scale = 0;                      // the op's, else 1 / sqrt(head_dim)
  std::optional<int64_t> seq_q, seq_kv;  // the lengths, where static
  bool default_scale() const;            // scale is 1 / sqrt(head_dim)
};
/// Reads `call`; nullopt (and `why`) when the kernels cannot run it.
std::optional<AttentionCall> describe_attention(const CallNode& call, std::string* why);

/// Stacked QKV (TVM's cutlass.stacked_attention, the split form): one (B, S, W) tensor split
/// along its last axis into query, key and value, each reshaped to (B, S, N, D). The kernel
/// reads the three from the stacked tensor in place: each starts `offsets[i]` elements into a
/// row of `row` (= W) elements.
struct StackedQkv {
  Expr qkv;
  int64_t offsets[3] = {0, 0, 0};
  int64_t row = 0;
};
/// Reads the operands of `attention`; `bound(e)` is the value bound to `e` inside the fused
/// region (a call or a tuple item), else null. Returns the description, or sets `why`.
std::optional<StackedQkv> describe_stacked_attention(const CallNode* attention,
                                                     const std::function<Expr(const Expr&)>& bound, std::string* why);

const TensorStructInfoNode* tensor_info(const Expr& e);
const TensorStructInfoNode* call_info(const CallNode* call);
/// The op name of a call of an operator, or "".
std::string op_name(const CallNode& call);

}  // namespace partita::backend::cutlass
