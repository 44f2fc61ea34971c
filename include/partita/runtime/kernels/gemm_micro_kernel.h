// The register-blocked product the runtime offers backends for their own matrix products (a
// Winograd convolution's transformed-domain products, products by a prepacked constant weight):
// c[R][8 * NV] = a[R][k] . b[k][8 * NV], with a's rows `lda` apart (read in place, not packed),
// b packed (8 * NV floats per step of k) and c's rows `ldc` apart. Up to 6 rows by 16 columns:
// 12 accumulators, two loads of b and six broadcasts of a per step. Public runtime API (header
// only), so a backend's runtime plug-in uses it without reaching into the runtime's sources.
//
// micro_kernel / panel_product: AVX2 + FMA only (callers check cpu_has_avx2_fma()). For
// products by packed panels, panel_product_isa takes the instruction set (GemmIsa) chosen at run
// time from the CPU (best_gemm_isa: cpuid): AVX-512 (8 rows x 32 columns, two zmm per row) or
// AVX2 + FMA (the 6 x 16 kernel above); kGeneric, a CPU with neither, has no kernel here
// (callers use a BLAS).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace partita::runtime::kernels {

constexpr int64_t kMicroRows = 6;     // rows of c per call
constexpr int64_t kMicroColumns = 16;  // columns of c per call (NV = 2)

inline bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// Accumulators are named variables (an array of them is kept on the stack by GCC),
// 2R + 2 + 1 <= 15 of the 16 ymm registers.
#define PARTITA_GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
template <int R, int NV>
__attribute__((target("avx2,fma"))) void micro_kernel(const float* a, int64_t lda, const float* b, int64_t k,
                                                      float* c, int64_t ldc) {
#define PARTITA_GEMM_DECL(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();
  PARTITA_GEMM_ROWS(PARTITA_GEMM_DECL)
#undef PARTITA_GEMM_DECL
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; ++p) {
    __m256 b0 = _mm256_loadu_ps(b + p * 8 * NV);
    __m256 b1 = NV == 2 ? _mm256_loadu_ps(b + p * 8 * NV + 8) : b0;
#define PARTITA_GEMM_FMA(r)                                            \
  if constexpr (R > r) {                                               \
    __m256 ar = _mm256_broadcast_ss(a + r * lda + p);                  \
    c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                        \
    if constexpr (NV == 2) c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1); \
  }
    PARTITA_GEMM_ROWS(PARTITA_GEMM_FMA)
#undef PARTITA_GEMM_FMA
  }
#define PARTITA_GEMM_STORE(r)                                          \
  if constexpr (R > r) {                                               \
    _mm256_storeu_ps(c + r * ldc, c##r##0);                            \
    if constexpr (NV == 2) _mm256_storeu_ps(c + r * ldc + 8, c##r##1); \
  }
  PARTITA_GEMM_ROWS(PARTITA_GEMM_STORE)
#undef PARTITA_GEMM_STORE
}
#undef PARTITA_GEMM_ROWS

using MicroKernel = void (*)(const float* a, int64_t lda, const float* b, int64_t k, float* c, int64_t ldc);

/// The kernel for `rows` (1..6) rows of c and `nv` (1 or 2) vectors of 8 columns.
inline MicroKernel micro_kernel_for(int64_t rows, int nv) {
  static const MicroKernel table[2][kMicroRows] = {
      {micro_kernel<1, 1>, micro_kernel<2, 1>, micro_kernel<3, 1>, micro_kernel<4, 1>, micro_kernel<5, 1>,
       micro_kernel<6, 1>},
      {micro_kernel<1, 2>, micro_kernel<2, 2>, micro_kernel<3, 2>, micro_kernel<4, 2>, micro_kernel<5, 2>,
       micro_kernel<6, 2>}};
  return table[nv - 1][rows - 1];
}

/// c[rows][cols] = a[rows][k] . panel, for any number of rows: `panel` is k steps of 8 * nv
/// packed floats, of which the first `cols` are columns of c (a narrower last panel of a
/// matrix goes through a full tile). a's rows are `lda` apart, c's `ldc`.
inline void panel_product(const float* a, int64_t lda, int64_t rows, const float* panel, int nv, int64_t k,
                          int64_t cols, float* c, int64_t ldc) {
  const int64_t width = 8 * nv;
  for (int64_t i = 0, r; i < rows; i += r) {
    // Six rows at a time; a tail of 7 to 11 as two near-equal calls, since a call of 1 or 2
    // rows streams the whole panel for little work.
    const int64_t left = rows - i;
    r = left > kMicroRows && left < 2 * kMicroRows ? (left + 1) / 2 : std::min(kMicroRows, left);
    MicroKernel f = micro_kernel_for(r, nv);
    if (cols == width) {
      f(a + i * lda, lda, panel, k, c + i * ldc, ldc);
    } else {
      float tile[kMicroRows * kMicroColumns];
      f(a + i * lda, lda, panel, k, tile, width);
      for (int64_t row = 0; row < r; ++row) std::memcpy(c + (i + row) * ldc, tile + row * width, sizeof(float) * cols);
    }
  }
}

/// The instruction sets of panel_product_isa's kernels (kGeneric: none of them).
enum class GemmIsa { kGeneric, kAvx2, kAvx512 };

inline const char* gemm_isa_name(GemmIsa isa) {
  return isa == GemmIsa::kAvx512 ? "avx512" : isa == GemmIsa::kAvx2 ? "avx2" : "generic";
}

/// Whether this CPU runs `isa`'s kernel (cpuid, through the compiler's CPU model).
inline bool gemm_isa_supported(GemmIsa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case GemmIsa::kAvx512: return __builtin_cpu_supports("avx512f");
    case GemmIsa::kAvx2: return cpu_has_avx2_fma();
    case GemmIsa::kGeneric: return true;
  }
  return false;
}

/// The fastest instruction set this CPU runs.
inline GemmIsa best_gemm_isa() {
  for (GemmIsa isa : {GemmIsa::kAvx512, GemmIsa::kAvx2})
    if (gemm_isa_supported(isa)) return isa;
  return GemmIsa::kGeneric;
}

// AVX-512: c[R][32] = a[R][k] . b[k][32], two zmm accumulators per row (2R + 2 of 32
// registers): per step two loads of b, R broadcasts of a, 2R FMAs.
#define PARTITA_GEMM_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
template <int R>
__attribute__((target("avx512f"))) void micro_kernel_avx512(const float* a, int64_t lda, const float* b, int64_t k,
                                                            float* c, int64_t ldc) {
#define PARTITA_GEMM_DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
  PARTITA_GEMM_ROWS8(PARTITA_GEMM_DECL)
#undef PARTITA_GEMM_DECL
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b + p * 32), b1 = _mm512_loadu_ps(b + p * 32 + 16);
#define PARTITA_GEMM_FMA(r)                               \
  if constexpr (R > r) {                                  \
    const __m512 ar = _mm512_set1_ps(a[r * lda + p]);     \
    c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0);           \
    c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1);           \
  }
    PARTITA_GEMM_ROWS8(PARTITA_GEMM_FMA)
#undef PARTITA_GEMM_FMA
  }
#define PARTITA_GEMM_STORE(r)                         \
  if constexpr (R > r) {                              \
    _mm512_storeu_ps(c + r * ldc, c##r##0);           \
    _mm512_storeu_ps(c + r * ldc + 16, c##r##1);      \
  }
  PARTITA_GEMM_ROWS8(PARTITA_GEMM_STORE)
#undef PARTITA_GEMM_STORE
}
#undef PARTITA_GEMM_ROWS8

/// Columns of a packed panel for `isa` (kAvx512 or kAvx2): 32 or 16.
inline int64_t gemm_panel_width(GemmIsa isa) { return isa == GemmIsa::kAvx512 ? 32 : kMicroColumns; }

/// Rows of c per kernel call for `isa` (kAvx512 or kAvx2).
inline int64_t gemm_rows(GemmIsa isa) { return isa == GemmIsa::kAvx512 ? 8 : kMicroRows; }

/// The panel kernel of `isa` (kAvx512 or kAvx2) for `rows` (1 .. gemm_rows(isa)) rows.
inline MicroKernel panel_kernel(GemmIsa isa, int64_t rows) {
  static const MicroKernel avx512[8] = {micro_kernel_avx512<1>, micro_kernel_avx512<2>, micro_kernel_avx512<3>,
                                        micro_kernel_avx512<4>, micro_kernel_avx512<5>, micro_kernel_avx512<6>,
                                        micro_kernel_avx512<7>, micro_kernel_avx512<8>};
  return isa == GemmIsa::kAvx512 ? avx512[rows - 1] : micro_kernel_for(rows, 2);
}

/// c[rows][cols] = a[rows][k] . panel on `isa`'s kernel (kAvx512 or kAvx2, which the caller
/// has checked the CPU runs): `panel` is k steps of gemm_panel_width(isa) packed floats, of
/// which the first `cols` are columns of c. a's rows are `lda` apart, c's `ldc`.
inline void panel_product_isa(GemmIsa isa, const float* a, int64_t lda, int64_t rows, const float* panel, int64_t k,
                              int64_t cols, float* c, int64_t ldc) {
  const int64_t most = gemm_rows(isa), width = gemm_panel_width(isa);
  for (int64_t i = 0, r; i < rows; i += r) {
    // `most` rows at a time; a tail of most + 1 to 2 most - 1 as two near-equal calls, since a
    // call of few rows streams the whole panel for little work.
    const int64_t left = rows - i;
    r = left > most && left < 2 * most ? (left + 1) / 2 : std::min(most, left);
    MicroKernel f = panel_kernel(isa, r);
    if (cols == width) {
      f(a + i * lda, lda, panel, k, c + i * ldc, ldc);
    } else {
      float tile[8 * 32];
      f(a + i * lda, lda, panel, k, tile, width);
      for (int64_t row = 0; row < r; ++row) std::memcpy(c + (i + row) * ldc, tile + row * width, sizeof(float) * cols);
    }
  }
}

}  // namespace partita::runtime::kernels
