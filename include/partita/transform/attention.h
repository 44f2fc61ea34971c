// Passes around relax.nn.attention: the rewrite of the scaled dot-product chain to it (so a
// backend with a fused attention kernel sees one call), and its decomposition back into matmul
// and softmax (for a code generator that has no attention kernel of its own).
#pragma once

#include <functional>

#include "partita/ir/expr.h"
#include "partita/transform/pass.h"

namespace partita::transform {

/// RewriteAttention: rewrites `matmul(softmax(scale · matmul(Q, Kᵀ) [+ mask]), V)` to
/// `R.nn.attention` / `R.nn.attention_bias` (TVM's make_attention_rewrite_pattern, generalised):
///  - Q, Kᵀ, V are 4-d (B, N, S, H) operands as PyTorch and ONNX export multi-head attention:
///    `permute_dims(q, [0, 2, 1, 3])` of a (B, S, N, H) tensor (taken as is), or any 4-d tensor
///    (a permute_dims to the operator's (B, S, N, H) layout is inserted); Kᵀ is
///    `permute_dims(k, [0, 2, 3, 1])`, `permute_dims(K, [0, 1, 3, 2])` or any (B, N, H, S) tensor;
///  - the scale is a multiply or divide by a scalar constant, or absent (scale 1);
///  - an additive mask (`+ bias`, rank ≤ 4, broadcast to (B, N, Sq, Skv), last dim Skv) becomes
///    the bias; a constant mask that is 0 on and below a diagonal and -inf (or ≤ -1e4) above it,
///    added or applied as `where(tril, scores, -inf)`, becomes causal_mask "TopLeft" (diagonal 0)
///    or "BottomRight" (diagonal Skv - Sq);
///  - softmax over the last axis; every intermediate used only inside the chain; one dtype.
/// The result is `permute_dims(attention, [0, 2, 1, 3])`, and a following permute_dims back to
/// (B, S, N, H) cancels it. Only dataflow blocks are rewritten.
Pass RewriteAttention();

/// DecomposeAttention: replaces each attention call `decompose` accepts (null: every call)
/// by permute_dims, matmul, multiply, add, softmax — TVM's legalization at the graph level. Calls
/// with a window_size, grouped-query heads (N ≠ Nkv) or a causal mask over symbolic sequence
/// lengths are left alone. `build()` runs it before FuseOpsByKind for the calls that a
/// kind-fusing code generator does not compile itself.
Pass DecomposeAttention(std::function<bool(const CallNode&)> decompose = {});

/// Whether DecomposeAttention can decompose `call` (an attention call with struct info): a code
/// generator with a slower attention kernel of its own leaves these to the decomposition.
bool attention_decomposable(const CallNode& call);

}  // namespace partita::transform
