// What a cuBLASLt GEMM of this backend can compute, asked by the patterns' check (before
// partitioning) and by the codegen (which refuses a function breaking them): one rule set, so
// the two cannot disagree. Each function returns why not, or "" when the GEMM is supported.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partita/ir/expr.h"
#include "partita/ir/prim_expr.h"

namespace partita::backend::cublas {

/// The operands and result of one matmul (the right-hand side before a transpose).
struct MatmulOperands {
  Expr lhs, rhs;          // rhs: the (..., N, K) tensor when `transposed`, else (..., K, N)
  bool transposed = false;
  Expr product;           // the relax.matmul call
};

/// Dtypes (fp16, bf16, fp32 pairs; int8 x int8 -> int32), static reduction axis, ranks >= 2,
/// int8's multiples of 4 (TVM's IGEMM rule), no empty static dimension.
std::string matmul_unsupported(const MatmulOperands& m);
/// `axes` of a permute_dims over `ndim` axes swap the last two and keep the rest.
bool swaps_last_two(const std::vector<int64_t>& axes, size_t ndim);
/// The bias added to `product` (its result `sum`): a vector along the last axis (shape (N) or
/// (1, ..., 1, N)) or, beyond TVM, a matrix of the product's shape. Not for int8 (TVM's rule).
/// Sets `matrix` to which one it is.
std::string bias_unsupported(const Expr& product, const Expr& bias, const Expr& sum, bool& matrix);
/// `matmul_transposed_multiply`: one-element float scales, and the astype's dtype a cuBLASLt
/// result type of the product's inputs (their own dtype or float32).
std::string scale_unsupported(const Expr& product, const Expr& scale_a, const Expr& scale_b, const Expr& cast);

}  // namespace partita::backend::cublas
