// Internal: the fixed C text every generated ccompiler source starts with: the C ABI types,
// error reporting, and broadcasting element-wise / matmul kernels instantiated per type by macro.
#pragma once

namespace partita::backend::ccompiler {

inline constexpr const char* kPrelude = R"C(#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The C ABI of partita/runtime/c_abi.h, copied so this file compiles on its own. */
typedef struct {
  void* data;
  const int64_t* shape;
  int32_t ndim;
  uint8_t dtype_code;
  uint8_t dtype_bits;
  uint16_t dtype_lanes;
} PartitaTensorC;

#define PT_MAXD 16
static __thread char pt_error[512];
const char* partita_last_error(void) { return pt_error; }

#define PT_FAIL(...) do { snprintf(pt_error, sizeof pt_error, __VA_ARGS__); rc = 1; goto done; } while (0)

static int64_t pt_numel(const int64_t* s, int n) {
  int64_t r = 1;
  for (int i = 0; i < n; ++i) r *= s[i];
  return r;
}

/* Broadcast shape of a and b into o (ndim max(an, bn)); 0 when incompatible. */
static int pt_broadcast(const int64_t* as, int an, const int64_t* bs, int bn, int64_t* os) {
  int on = an > bn ? an : bn;
  for (int i = 0; i < on; ++i) {
    int ai = i - (on - an), bi = i - (on - bn);
    int64_t x = ai >= 0 ? as[ai] : 1, y = bi >= 0 ? bs[bi] : 1;
    if (x != y && x != 1 && y != 1) return 0;
    os[i] = x == 1 ? y : x;
  }
  return 1;
}

/* Strides (in elements of `unit`) of shape s (ndim n) viewed as shape os (ndim on): 0 where
 * broadcast. */
static void pt_bstrides(const int64_t* s, int n, const int64_t* os, int on, int64_t unit, int64_t* st) {
  int64_t acc = unit;
  for (int i = on - 1; i >= 0; --i) {
    int si = i - (on - n);
    int64_t d = si >= 0 ? s[si] : 1;
    st[i] = (d == 1 && os[i] != 1) ? 0 : acc;
    acc *= d;
  }
}

#define PT_BINARY(NAME, T, EXPR)                                                              \
  static void NAME(const T* a, const int64_t* as, int an, const T* b, const int64_t* bs, int bn, \
                   T* o, const int64_t* os, int on) {                                        \
    int64_t n = pt_numel(os, on), na = pt_numel(as, an), nb = pt_numel(bs, bn);               \
    if (na == n && nb == n) {                                                                \
      for (int64_t i = 0; i < n; ++i) { T x = a[i], y = b[i]; o[i] = (EXPR); }                \
      return;                                                                                \
    }                                                                                        \
    if (nb == 1 && na == n) {                                                                \
      T y = b[0];                                                                            \
      for (int64_t i = 0; i < n; ++i) { T x = a[i]; o[i] = (EXPR); }                         \
      return;                                                                                \
    }                                                                                        \
    if (na == 1 && nb == n) {                                                                \
      T x = a[0];                                                                            \
      for (int64_t i = 0; i < n; ++i) { T y = b[i]; o[i] = (EXPR); }                         \
      return;                                                                                \
    }                                                                                        \
    int64_t ast[PT_MAXD], bst[PT_MAXD], idx[PT_MAXD];                                        \
    pt_bstrides(as, an, os, on, 1, ast);                                                     \
    pt_bstrides(bs, bn, os, on, 1, bst);                                                     \
    for (int d = 0; d < on; ++d) idx[d] = 0;                                                 \
    int64_t ao = 0, bo = 0;                                                                  \
    for (int64_t i = 0; i < n; ++i) {                                                        \
      T x = a[ao], y = b[bo];                                                                \
      o[i] = (EXPR);                                                                         \
      for (int d = on - 1; d >= 0; --d) {                                                    \
        ++idx[d]; ao += ast[d]; bo += bst[d];                                                \
        if (idx[d] < os[d]) break;                                                           \
        ao -= ast[d] * os[d]; bo -= bst[d] * os[d]; idx[d] = 0;                              \
      }                                                                                      \
    }                                                                                        \
  }

#define PT_UNARY(NAME, T, EXPR)                                      \
  static void NAME(const T* a, T* o, int64_t n) {                     \
    for (int64_t i = 0; i < n; ++i) { T x = a[i]; o[i] = (EXPR); }     \
  }

/* o (..., m, n) = a (..., m, k) @ b (..., k, n), batch dimensions broadcast. */
#define PT_MATMUL(NAME, T)                                                                    \
  static void NAME(const T* a, const int64_t* as, int an, const T* b, const int64_t* bs, int bn, \
                   T* o, const int64_t* os, int on) {                                        \
    int64_t m = as[an - 2], k = as[an - 1], n = bs[bn - 1];                                  \
    int nbd = on - 2;                                                                        \
    int64_t ast[PT_MAXD], bst[PT_MAXD], idx[PT_MAXD];                                        \
    pt_bstrides(as, an - 2, os, nbd, m * k, ast);                                            \
    pt_bstrides(bs, bn - 2, os, nbd, k * n, bst);                                            \
    int64_t batches = pt_numel(os, nbd), ao = 0, bo = 0;                                     \
    for (int d = 0; d < nbd; ++d) idx[d] = 0;                                                \
    for (int64_t bi = 0; bi < batches; ++bi) {                                               \
      const T* A = a + ao; const T* B = b + bo; T* O = o + bi * m * n;                       \
      for (int64_t i = 0; i < m * n; ++i) O[i] = 0;                                          \
      for (int64_t i = 0; i < m; ++i)                                                        \
        for (int64_t p = 0; p < k; ++p) {                                                    \
          T av = A[i * k + p]; const T* Br = B + p * n; T* Or = O + i * n;                   \
          for (int64_t j = 0; j < n; ++j) Or[j] += av * Br[j];                               \
        }                                                                                    \
      for (int d = nbd - 1; d >= 0; --d) {                                                   \
        ++idx[d]; ao += ast[d]; bo += bst[d];                                                \
        if (idx[d] < os[d]) break;                                                           \
        ao -= ast[d] * os[d]; bo -= bst[d] * os[d]; idx[d] = 0;                              \
      }                                                                                      \
    }                                                                                        \
  }

)C";

}  // namespace partita::backend::ccompiler
