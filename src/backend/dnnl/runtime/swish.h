// SiLU (swish: x * sigmoid(x)) in place, vectorized for AVX-512 and AVX2, threaded with OpenMP.
// oneDNN 2.6 computes swish, as a post-op or a primitive, at about 7x its ReLU's time (an AMD
// EPYC with AVX-512: 363 against 51 us on a 96 x 112 x 112 map; a 1x1 convolution 16 -> 96 at
// that size takes 195 us alone, 523 with the swish post-op): its exp and its division cost more
// than EfficientNet's convolutions themselves. Here: exp from a degree-6 polynomial and the
// exponent bits, the reciprocal from the approximate one and a Newton step (about 2e-7 relative
// error; docs/benchmarks.md, "SiLU after the convolution").
#pragma once

#include <cstdint>

namespace partita::backend::dnnl {

/// The code paths: scalar (std::exp), AVX2 with FMA, AVX-512F.
enum class SwishPath { kScalar, kAvx2, kAvx512 };

/// The fastest path this CPU runs.
SwishPath swish_best_path();

/// y[i] = x[i] * sigmoid(x[i]) for i < n (y may be x), on a parallel region of `threads` OpenMP
/// threads (0: OpenMP's default).
void swish(const float* x, float* y, int64_t n, int threads, SwishPath path = swish_best_path());

}  // namespace partita::backend::dnnl
