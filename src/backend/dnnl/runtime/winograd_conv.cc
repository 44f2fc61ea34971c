// Winograd F(2x2, 3x3) convolution (see winograd_conv.h).
//
// Transforms (Lavin & Gray): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
// G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], A^T = [1 1 1 0; 0 1 -1 -1].
// Every vector below holds the 8 channels of one nChw8c block.
#include "winograd_conv.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "partita/runtime/kernels/gemm_micro_kernel.h"

namespace partita::backend::dnnl {
namespace {

constexpr int64_t kRows = runtime::kernels::kMicroRows;  // tiles per micro-kernel call

// The 1-d transforms, on `alpha` = M + 2 vectors. Input (B^T d), output (A^T m).
template <int M>
__attribute__((target("avx2,fma"), always_inline)) inline void in_1d(const __m256* d, __m256* r) {
  if constexpr (M == 2) {
    r[0] = _mm256_sub_ps(d[0], d[2]);
    r[1] = _mm256_add_ps(d[1], d[2]);
    r[2] = _mm256_sub_ps(d[2], d[1]);
    r[3] = _mm256_sub_ps(d[1], d[3]);
  } else {
    const __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f),
                 two = _mm256_set1_ps(2.0f);
    __m256 t1 = _mm256_fnmadd_ps(four, d[2], d[4]), t2 = _mm256_fnmadd_ps(four, d[1], d[3]);
    __m256 t3 = _mm256_sub_ps(d[4], d[2]), t4 = _mm256_mul_ps(two, _mm256_sub_ps(d[3], d[1]));
    r[0] = _mm256_fnmadd_ps(five, d[2], _mm256_fmadd_ps(four, d[0], d[4]));
    r[1] = _mm256_add_ps(t1, t2);
    r[2] = _mm256_sub_ps(t1, t2);
    r[3] = _mm256_add_ps(t3, t4);
    r[4] = _mm256_sub_ps(t3, t4);
    r[5] = _mm256_fnmadd_ps(five, d[3], _mm256_fmadd_ps(four, d[1], d[5]));
  }
}

template <int M>
__attribute__((target("avx2,fma"), always_inline)) inline void out_1d(const __m256* m, __m256* o) {
  if constexpr (M == 2) {
    o[0] = _mm256_add_ps(_mm256_add_ps(m[0], m[1]), m[2]);
    o[1] = _mm256_sub_ps(_mm256_sub_ps(m[1], m[2]), m[3]);
  } else {
    __m256 a = _mm256_add_ps(m[1], m[2]), b = _mm256_sub_ps(m[1], m[2]);
    __m256 c = _mm256_add_ps(m[3], m[4]), d = _mm256_sub_ps(m[3], m[4]);
    o[0] = _mm256_add_ps(_mm256_add_ps(m[0], a), c);
    o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), d, b);
    o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), c, a);
    o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), d, b), m[5]);
  }
}

// One tile's input transform for one block of 8 channels: d (alpha x alpha, zero outside the
// image) to V = B^T d B, stored at v + xi * xi_stride for xi = alpha * i + j.
template <int M>
__attribute__((target("avx2,fma"))) void input_tile(const float* base, int64_t h, int64_t w,
                                                    int64_t y0, int64_t x0, float* v,
                                                    int64_t xi_stride) {
  constexpr int A = M + 2;
  __m256 d[A][A], t[A][A];
  const __m256 zero = _mm256_setzero_ps();
  bool inside = y0 >= 0 && x0 >= 0 && y0 + A <= h && x0 + A <= w;
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) {
      int64_t y = y0 + i, x = x0 + j;
      d[j][i] = inside || (y >= 0 && y < h && x >= 0 && x < w)
                    ? _mm256_loadu_ps(base + (y * w + x) * 8)
                    : zero;
    }
  for (int j = 0; j < A; ++j) {  // B^T d, column by column (d is stored transposed)
    __m256 col[A];
    in_1d<M>(d[j], col);
    for (int i = 0; i < A; ++i) t[i][j] = col[i];
  }
  for (int i = 0; i < A; ++i) {  // (B^T d) B, row by row
    __m256 row[A];
    in_1d<M>(t[i], row);
    for (int j = 0; j < A; ++j) _mm256_storeu_ps(v + (A * i + j) * xi_stride, row[j]);
  }
}

__attribute__((target("avx2,fma"))) inline __m256 apply_post(
    __m256 y, const float* old, const std::vector<WinogradPostOp>& post) {
  for (const auto& p : post) {
    switch (p.kind) {
      case WinogradPostOp::Kind::kSum:
        y = _mm256_add_ps(y, _mm256_loadu_ps(old));
        break;
      case WinogradPostOp::Kind::kRelu: {
        __m256 zero = _mm256_setzero_ps();
        __m256 pos = _mm256_max_ps(y, zero);
        y = p.alpha == 0.0f ? pos
                            : _mm256_fmadd_ps(_mm256_set1_ps(p.alpha), _mm256_min_ps(y, zero), pos);
        break;
      }
      case WinogradPostOp::Kind::kClip:
        y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(p.alpha)), _mm256_set1_ps(p.beta));
        break;
    }
  }
  return y;
}

// One tile's output transform for 8 channels: m (alpha^2 vectors, xi_stride apart) to the
// M x M outputs Y = A^T m A, plus bias and post-ops, stored where they fall inside the image.
template <int M>
__attribute__((target("avx2,fma"))) void output_tile(const float* m, int64_t xi_stride, __m256 bias,
                                                     float* base, int64_t h, int64_t w, int64_t y0,
                                                     int64_t x0,
                                                     const std::vector<WinogradPostOp>& post) {
  constexpr int A = M + 2;
  __m256 s[M][A];  // s = A^T m, computed column by column
  for (int j = 0; j < A; ++j) {
    __m256 col[A], o[M];
    for (int i = 0; i < A; ++i) col[i] = _mm256_loadu_ps(m + (A * i + j) * xi_stride);
    out_1d<M>(col, o);
    for (int i = 0; i < M; ++i) s[i][j] = o[i];
  }
  for (int i = 0; i < M; ++i) {  // (A^T m) A, row by row
    int64_t yy = y0 + i;
    if (yy >= h) break;
    __m256 y[M];
    out_1d<M>(s[i], y);
    for (int j = 0; j < M; ++j) {
      int64_t xx = x0 + j;
      if (xx >= w) break;
      float* p = base + (yy * w + xx) * 8;
      _mm256_storeu_ps(p, apply_post(_mm256_add_ps(y[j], bias), p, post));
    }
  }
}

}  // namespace

bool WinogradConv::cpu_supported() { return runtime::kernels::cpu_has_avx2_fma(); }

bool WinogradConv::shape_supported(int64_t cin, int64_t cout) {
  return cin > 0 && cout > 0 && cin % 8 == 0 && cout % 8 == 0;
}

int WinogradConv::preferred_tile(int64_t h, int64_t w, int64_t cin, int64_t cout) {
  // Measured with bench_winograd (N = 1, C -> C, bias + ReLU, 2 threads, 40 interleaved runs,
  // 3 rounds, 2026-11-29 ~16:56 UTC, a shared machine): Winograd / oneDNN, best-time ratio,
  // range over the rounds, F(2x2) | F(4x4):
  //   56x56x64  0.74-0.80 | 0.58-0.63     28x28x128  0.64-0.74 | 0.52-0.58
  //   28x28x64  0.62-0.66 | 0.43-0.46     14x14x256  0.66-0.69 | 0.68-0.71
  //   14x14x128 0.55-0.63 | 0.53-0.70     7x7x512    0.85-0.86 | 0.88-1.11
  //   7x7x256   0.76-0.89 | 0.92-1.12     7x7x128    0.66-0.67 | 0.46-0.52
  //   (earlier, F(2x2) only: 7x7x64 0.92-1.01, 5x9x64 about 1.0, 4x4x512 1.19).
  // With few pixels most of each input tile is padding: no Winograd below 7 a side. F(4x4)'s
  // transformed weights are 36 / 9 = 4x the direct ones and are streamed once per call: it
  // wins while they are small (up to 128 x 128 channels), F(2x2) (16 / 9) beyond.
  if (h < 7 || w < 7) return 0;
  return cin * cout <= 128 * 128 ? 4 : 2;
}

WinogradConv::WinogradConv(int tile, int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout,
                           const float* weights, std::vector<WinogradPostOp> post, int num_threads)
    : tile_(tile == 4 ? 4 : 2),
      n_(n),
      cin_(cin),
      h_(h),
      w_(w),
      cout_(cout),
      post_(std::move(post)) {
  const int64_t m = tile_, alpha = m + 2;
  positions_ = alpha * alpha;
  num_threads_ = num_threads > 0 ? num_threads : omp_get_max_threads();
  tiles_h_ = (h + m - 1) / m;
  tiles_w_ = (w + m - 1) / m;
  tiles_ = n * tiles_h_ * tiles_w_;
  // Tasks: (block of tiles, range of output channels), chunk-major so that each thread keeps
  // one range of channels. One position's [tiles x cin] slice of a block is about 32 KiB, so
  // it stays in L1/L2 while the 16-column weight panels stream past it; every block streams
  // its range's transformed weights once. Weights outweigh activations (cout >= tiles, small
  // images of many channels): split output channels over threads, each thread streaming only
  // its share of the weights, with slices up to 64 KiB. Otherwise: enough tiles, split tiles
  // into a multiple of the thread count; few tiles: one block, output channels split.
  const int64_t nt = num_threads_;
  auto split_channels = [&] {
    chunk_ = ((cout + nt - 1) / nt + 15) / 16 * 16;
    chunks_ = (cout + chunk_ - 1) / chunk_;
  };
  int64_t target = std::max<int64_t>(kRows, 8192 * 16 / positions_ / cin);
  if (cout >= tiles_ && cout >= 16 * nt) {
    blocks_ = (tiles_ + 2 * target - 1) / (2 * target);
    block_tiles_ = (tiles_ + blocks_ - 1) / blocks_;
    blocks_ = (tiles_ + block_tiles_ - 1) / block_tiles_;
    split_channels();
  } else if (tiles_ >= nt * 2 * kRows) {
    blocks_ = (tiles_ + target - 1) / target;
    blocks_ = (blocks_ + nt - 1) / nt * nt;
    block_tiles_ = (tiles_ + blocks_ - 1) / blocks_;
    blocks_ = (tiles_ + block_tiles_ - 1) / block_tiles_;
    chunks_ = 1;
    chunk_ = (cout + 15) / 16 * 16;
  } else {
    blocks_ = 1;
    block_tiles_ = tiles_;
    split_channels();
  }
  // U = G g G^T (in double), packed per position into panels of 16 output channels (the
  // last may be 8).
  static const double g2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static const double g4[6][3] = {{1.0 / 4, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
  auto gm = [&](int64_t i, int k) { return m == 2 ? g2[i][k] : g4[i][k]; };
  u_.assign(size_t(positions_ * cin * cout), 0.0f);
  for (int64_t co = 0; co < cout; ++co) {
    int64_t n0 = co / 16 * 16, pw = std::min<int64_t>(16, cout - n0);
    for (int64_t ci = 0; ci < cin; ++ci) {
      const float* g = weights + (co * cin + ci) * 9;
      double gg[6][3] = {};  // G g
      for (int64_t i = 0; i < alpha; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 3; ++k) gg[i][j] += gm(i, k) * g[k * 3 + j];
      for (int64_t i = 0; i < alpha; ++i)
        for (int64_t j = 0; j < alpha; ++j) {
          double r = 0;  // (G g G^T)[i][j]
          for (int k = 0; k < 3; ++k) r += gg[i][k] * gm(j, k);
          u_[size_t((alpha * i + j) * cin * cout + n0 * cin + ci * pw + (co - n0))] = float(r);
        }
    }
  }
  work_per_thread_ =
      (positions_ * block_tiles_ * (cin + chunk_) + 15) / 16 * 16;  // 64-byte multiples
}

void WinogradConv::run(const float* src, const float* bias, float* dst, float* work) const {
  const int64_t tasks = blocks_ * chunks_;
#pragma omp parallel for num_threads(num_threads_) schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    float* v = work + work_per_thread_ * omp_get_thread_num();
    float* m = v + positions_ * block_tiles_ * cin_;
    if (tile_ == 4)
      run_task<4>(task % blocks_, task / blocks_, src, bias, dst, v, m);
    else
      run_task<2>(task % blocks_, task / blocks_, src, bias, dst, v, m);
  }
}

template <int M>
__attribute__((target("avx2,fma"))) void WinogradConv::run_task(int64_t block, int64_t chunk,
                                                                const float* src, const float* bias,
                                                                float* dst, float* v,
                                                                float* m) const {
  constexpr int64_t P = (M + 2) * (M + 2);
  const int64_t t0 = block * block_tiles_, nt = std::min(block_tiles_, tiles_ - t0);
  const int64_t c0 = chunk * chunk_, nc = std::min(chunk_, cout_ - c0);
  const int64_t per_image = tiles_h_ * tiles_w_;
  const int64_t v_stride = block_tiles_ * cin_, m_stride = block_tiles_ * chunk_;
  // Input transform: V[xi][tile][cin].
  for (int64_t t = 0; t < nt; ++t) {
    int64_t g = t0 + t, img = g / per_image, r = g % per_image;
    int64_t y0 = (r / tiles_w_) * M - 1, x0 = (r % tiles_w_) * M - 1;
    for (int64_t cb = 0; cb < cin_ / 8; ++cb) {
      const float* base = src + ((img * (cin_ / 8) + cb) * h_) * w_ * 8;
      input_tile<M>(base, h_, w_, y0, x0, v + t * cin_ + cb * 8, v_stride);
    }
  }
  // M[xi][tile][chunk] = V[xi] . U[xi] for this chunk's output channels.
  for (int64_t xi = 0; xi < P; ++xi) {
    const float* a = v + xi * v_stride;
    const float* u = u_.data() + xi * cin_ * cout_;
    for (int64_t n0 = c0; n0 < c0 + nc; n0 += 16) {
      int nv = cout_ - n0 >= 16 ? 2 : 1;
      const float* b = u + n0 * cin_;
      runtime::kernels::panel_product(a, cin_, nt, b, nv, cin_, 8 * nv, m + xi * m_stride + (n0 - c0), chunk_);
    }
  }
  // Output transform, bias and post-ops, into dst.
  for (int64_t t = 0; t < nt; ++t) {
    int64_t g = t0 + t, img = g / per_image, r = g % per_image;
    int64_t y0 = (r / tiles_w_) * M, x0 = (r % tiles_w_) * M;
    for (int64_t c = c0; c < c0 + nc; c += 8) {
      __m256 bv = bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps();
      float* base = dst + ((img * (cout_ / 8) + c / 8) * h_) * w_ * 8;
      output_tile<M>(m + t * chunk_ + (c - c0), m_stride, bv, base, h_, w_, y0, x0, post_);
    }
  }
}

}  // namespace partita::backend::dnnl
