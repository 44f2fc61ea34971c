// SiLU (swish: x * sigmoid(x)) and GELU (x * Phi(x), the erf form), vectorized for AVX-512 and
// AVX2 and threaded with OpenMP. oneDNN 2.6 computes both, as post-ops or primitives, far above
// its ReLU's cost (an AMD EPYC with AVX-512: swish 363 and ReLU 51 us on a 96 x 112 x 112 map;
// a 1x1 convolution 16 -> 96 at that size takes 195 us alone, 523 with the swish post-op;
// ConvNeXt's first pointwise product 1.06 ms alone, 1.51 with GELU): their exp and division
// cost more than the convolutions. Here exp comes from a degree-6 polynomial and the exponent
// bits, reciprocals from the approximate instruction and Newton steps, and erf from Abramowitz &
// Stegun 7.1.26 (absolute error <= 1.5e-7).
#pragma once

#include <cstdint>

namespace partita::backend::dnnl {

/// The activations computed here.
enum class Activation { kSilu, kGelu };

/// The code paths: scalar (libm), AVX2 with FMA, AVX-512F.
enum class VectorPath { kScalar, kAvx2, kAvx512 };

/// The fastest path this CPU runs.
VectorPath best_vector_path();

/// y[i] = f(x[i]) for i < n (y may be x), on a parallel region of `threads` OpenMP threads (0:
/// OpenMP's default).
void activation(Activation f, const float* x, float* y, int64_t n, int threads,
                VectorPath path = best_vector_path());

}  // namespace partita::backend::dnnl
