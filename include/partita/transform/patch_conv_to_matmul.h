// PatchConvToMatmul: a convolution whose kernel tiles its input as the matrix product it is.
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

/// Rewrites each `R.nn.conv2d` whose kernel tiles its input — stride equal to the kernel size
/// (larger than 1×1), no padding, dilation 1, one group, NCHW data, OIHW kernel, static shapes:
/// the patch embedding of ViT and Swin — to the input cut into patches (reshape to
/// (N, C, Ho, kh, Wo, kw), permute_dims to (N, Ho, Wo, C, kh, kw), reshape to (N, Ho·Wo, C·kh·kw)),
/// a matmul with the kernel flattened to (O, C·kh·kw) and transposed, and the result permuted and
/// reshaped back to (N, O, Ho, Wo). Rows and columns of the input past the last whole patch are
/// cut off first (strided_slice), as the convolution ignores them. Why: with 3 input channels and a 16×16 kernel, cuDNN runs ViT-B/16's patch
/// embedding at 18 TFLOP/s on an H200 (401 µs at batch 32); as a product it is a GEMM cuBLAS runs
/// at hundreds (the cublas backend's prepare step, src/backend/cublas).
Pass PatchConvToMatmul();

}  // namespace partita::transform
