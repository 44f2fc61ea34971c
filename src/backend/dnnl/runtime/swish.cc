#include "swish.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

namespace partita::backend::dnnl {
namespace {

// exp(t) = 2^n e^r, n = round(t log2 e), r = t - n ln 2 (two-part ln 2), |r| <= ln 2 / 2;
// e^r by its Taylor polynomial to r^6 (relative error < 1.2e-7 there). t is clamped to
// [-87, 88] so that 2^n stays a normal float (the sigmoid is 0 or 1 to float precision beyond).
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723e-06f;
constexpr float kC[] = {1.f / 720, 1.f / 120, 1.f / 24, 1.f / 6, 0.5f, 1.f, 1.f};
constexpr float kLo = -87.f, kHi = 88.f;

float swish_scalar(float x) { return x / (1.f + std::exp(-x)); }

__attribute__((target("avx512f"))) void swish_avx512(const float* x, float* y, int64_t n) {
  const __m512 log2e = _mm512_set1_ps(kLog2e), ln2hi = _mm512_set1_ps(kLn2Hi), ln2lo = _mm512_set1_ps(kLn2Lo);
  const __m512 lo = _mm512_set1_ps(kLo), hi = _mm512_set1_ps(kHi), one = _mm512_set1_ps(1.f), two = _mm512_set1_ps(2.f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), v), lo), hi);
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(t, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, ln2lo, _mm512_fnmadd_ps(k, ln2hi, t));
    __m512 p = _mm512_set1_ps(kC[0]);
    for (int c = 1; c < 7; ++c) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC[c]));
    __m512 d = _mm512_add_ps(one, _mm512_scalef_ps(p, k));    // 1 + exp(-x)
    __m512 inv = _mm512_rcp14_ps(d);
    inv = _mm512_mul_ps(inv, _mm512_fnmadd_ps(d, inv, two));  // one Newton step
    _mm512_storeu_ps(y + i, _mm512_mul_ps(v, inv));
  }
  for (; i < n; ++i) y[i] = swish_scalar(x[i]);
}

__attribute__((target("avx2,fma"))) void swish_avx2(const float* x, float* y, int64_t n) {
  const __m256 log2e = _mm256_set1_ps(kLog2e), ln2hi = _mm256_set1_ps(kLn2Hi), ln2lo = _mm256_set1_ps(kLn2Lo);
  const __m256 lo = _mm256_set1_ps(kLo), hi = _mm256_set1_ps(kHi), one = _mm256_set1_ps(1.f), two = _mm256_set1_ps(2.f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), v), lo), hi);
    __m256 k = _mm256_round_ps(_mm256_mul_ps(t, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, ln2lo, _mm256_fnmadd_ps(k, ln2hi, t));
    __m256 p = _mm256_set1_ps(kC[0]);
    for (int c = 1; c < 7; ++c) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC[c]));
    // 2^k from the exponent bits (k in [-126, 127] after the clamp).
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    __m256 d = _mm256_fmadd_ps(p, _mm256_castsi256_ps(e), one);  // 1 + exp(-x)
    __m256 inv = _mm256_rcp_ps(d);
    inv = _mm256_mul_ps(inv, _mm256_fnmadd_ps(d, inv, two));
    inv = _mm256_mul_ps(inv, _mm256_fnmadd_ps(d, inv, two));    // rcp_ps has 12 bits: two steps
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, inv));
  }
  for (; i < n; ++i) y[i] = swish_scalar(x[i]);
}

}  // namespace

SwishPath swish_best_path() {
  static const SwishPath best = __builtin_cpu_supports("avx512f") ? SwishPath::kAvx512
                                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? SwishPath::kAvx2
                                                                                                  : SwishPath::kScalar;
  return best;
}

void swish(const float* x, float* y, int64_t n, int threads, SwishPath path) {
  // Chunks of 16K elements, a thread each (small maps run on fewer threads).
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int team = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for num_threads(int(std::min<int64_t>(team, std::max<int64_t>(chunks, 1)))) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t at = c * kChunk, m = std::min(kChunk, n - at);
    if (path == SwishPath::kAvx512) swish_avx512(x + at, y + at, m);
    else if (path == SwishPath::kAvx2) swish_avx2(x + at, y + at, m);
    else
      for (int64_t i = 0; i < m; ++i) y[at + i] = swish_scalar(x[at + i]);
  }
}

}  // namespace partita::backend::dnnl
