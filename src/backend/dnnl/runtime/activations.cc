#include "activations.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source of their
// masked builtins, which -Wmaybe-uninitialized reports once they are inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace partita::backend::dnnl {
namespace {

// exp(t) = 2^k e^r, k = round(t log2 e), r = t - k ln 2 (two-part ln 2), |r| <= ln 2 / 2; e^r
// by its Taylor polynomial to r^6 (relative error < 1.2e-7 there). t is clamped to [-87, 88]
// so that 2^k stays a normal float (beyond, the results are 0 or 1 to float precision).
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723e-06f;
constexpr float kExpC[] = {1.f / 720, 1.f / 120, 1.f / 24, 1.f / 6, 0.5f, 1.f, 1.f};
constexpr float kExpLo = -87.f, kExpHi = 88.f;
// erf(z) = 1 - t (a1 + t (a2 + ...)) e^(-z^2), t = 1 / (1 + p z), z >= 0 (coefficients from
// the highest power down).
constexpr float kErfP = 0.3275911f;
constexpr float kErfA[] = {1.061405429f, -1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f};
constexpr float kInvSqrt2 = 0.70710678118654752f;

float silu_scalar(float x) { return x / (1.f + std::exp(-x)); }
float gelu_scalar(float x) { return 0.5f * x * (1.f + std::erf(x * kInvSqrt2)); }

// ---- AVX-512 ----
#define PT_TARGET __attribute__((target("avx512f"), always_inline)) inline
PT_TARGET __m512 exp512(__m512 t) {
  t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(kExpLo)), _mm512_set1_ps(kExpHi));
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Lo), _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Hi), t));
  __m512 p = _mm512_set1_ps(kExpC[0]);
  for (int c = 1; c < 7; ++c) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC[c]));
  return _mm512_scalef_ps(p, k);
}
PT_TARGET __m512 recip512(__m512 d) {  // 14 bits, then one Newton step
  __m512 r = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.f)));
}
PT_TARGET __m512 silu512(__m512 x) {
  return _mm512_mul_ps(x, recip512(_mm512_add_ps(_mm512_set1_ps(1.f), exp512(_mm512_sub_ps(_mm512_setzero_ps(), x)))));
}
PT_TARGET __m512 gelu512(__m512 x) {
  // |x| / sqrt 2, at most 10 (erf is 1 in float beyond; an infinite z would make 0 * inf).
  __m512 z = _mm512_min_ps(_mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(kInvSqrt2)), _mm512_set1_ps(10.f));
  __m512 t = recip512(_mm512_fmadd_ps(z, _mm512_set1_ps(kErfP), _mm512_set1_ps(1.f)));
  __m512 q = _mm512_set1_ps(kErfA[0]);
  for (int c = 1; c < 5; ++c) q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kErfA[c]));
  __m512 tail = _mm512_mul_ps(_mm512_mul_ps(q, t), exp512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(z, z))));
  // x Phi(x) = x (1 + erf) / 2 for x >= 0, x (1 - erf) / 2 = x tail / 2 for x < 0.
  __m512 phi2 = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ),
                                     _mm512_sub_ps(_mm512_set1_ps(2.f), tail), tail);
  return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), phi2);
}
#undef PT_TARGET

__attribute__((target("avx512f"))) void run_avx512(Activation f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  if (f == Activation::kSilu)
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, silu512(_mm512_loadu_ps(x + i)));
  else
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, gelu512(_mm512_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = f == Activation::kSilu ? silu_scalar(x[i]) : gelu_scalar(x[i]);
}

// ---- AVX2 ----
// The same computations as above in 8 lanes (written twice: GCC inlines target-specific
// intrinsics only into functions of that target, so one template cannot serve both paths).
#define PT_TARGET __attribute__((target("avx2,fma"), always_inline)) inline
PT_TARGET __m256 exp256(__m256 t) {
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(kExpLo)), _mm256_set1_ps(kExpHi));
  __m256 k = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Lo), _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Hi), t));
  __m256 p = _mm256_set1_ps(kExpC[0]);
  for (int c = 1; c < 7; ++c) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC[c]));
  // 2^k from the exponent bits (k in [-126, 127] after the clamp).
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
PT_TARGET __m256 recip256(__m256 d) {  // 12 bits, then two Newton steps
  __m256 r = _mm256_rcp_ps(d);
  r = _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.f)));
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.f)));
}
PT_TARGET __m256 silu256(__m256 x) {
  return _mm256_mul_ps(x, recip256(_mm256_add_ps(_mm256_set1_ps(1.f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), x)))));
}
PT_TARGET __m256 gelu256(__m256 x) {
  __m256 z = _mm256_min_ps(_mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), x), _mm256_set1_ps(kInvSqrt2)),
                           _mm256_set1_ps(10.f));
  __m256 t = recip256(_mm256_fmadd_ps(z, _mm256_set1_ps(kErfP), _mm256_set1_ps(1.f)));
  __m256 q = _mm256_set1_ps(kErfA[0]);
  for (int c = 1; c < 5; ++c) q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(kErfA[c]));
  __m256 tail = _mm256_mul_ps(_mm256_mul_ps(q, t), exp256(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(z, z))));
  __m256 phi2 = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.f), tail), tail, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
  return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), phi2);
}
#undef PT_TARGET

__attribute__((target("avx2,fma"))) void run_avx2(Activation f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  if (f == Activation::kSilu)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, silu256(_mm256_loadu_ps(x + i)));
  else
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu256(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = f == Activation::kSilu ? silu_scalar(x[i]) : gelu_scalar(x[i]);
}

}  // namespace

VectorPath best_vector_path() {
  static const VectorPath best = __builtin_cpu_supports("avx512f") ? VectorPath::kAvx512
                                 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                                     ? VectorPath::kAvx2
                                     : VectorPath::kScalar;
  return best;
}

void activation(Activation f, const float* x, float* y, int64_t n, int threads, VectorPath path) {
  // Chunks of 16K elements, a thread each (small maps run on fewer threads).
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int team = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for num_threads(int(std::min<int64_t>(team, std::max<int64_t>(chunks, 1)))) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t at = c * kChunk, m = std::min(kChunk, n - at);
    if (path == VectorPath::kAvx512) run_avx512(f, x + at, y + at, m);
    else if (path == VectorPath::kAvx2) run_avx2(f, x + at, y + at, m);
    else
      for (int64_t i = 0; i < m; ++i) y[at + i] = f == Activation::kSilu ? silu_scalar(x[at + i]) : gelu_scalar(x[at + i]);
  }
}

}  // namespace partita::backend::dnnl
