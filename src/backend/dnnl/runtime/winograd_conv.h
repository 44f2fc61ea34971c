// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution for the dnnl runtime module: 3x3,
// stride 1, dilation 1, padding 1, groups 1, float32, on oneDNN's 8-channel-blocked
// activations (nChw8c, "aBcd8b"). oneDNN 2.6 has Winograd only for AVX-512, and its AVX2 direct
// convolution is slower than ONNX Runtime's on ResNet's 3x3 layers; this kernel replaces it
// where it measured faster (preferred_tile).
//
// Each output MxM tile (M = 2 or 4) comes from an (M+2)x(M+2) input tile: V = B^T d B per
// input channel; then, for each of the (M+2)^2 positions of the transformed tile, a product
// [tiles x Cin] . [Cin x Cout] with the weights transformed (U = G g G^T) and packed once at
// construction; then Y = A^T M A per output channel, with bias and post-ops fused into it.
// Work is split into tasks of (block of tiles, range of output channels) over OpenMP, each
// doing its own three steps in its thread's part of a working area, so no barrier between.
#pragma once

#include <cstdint>
#include <vector>

namespace partita::backend::dnnl {

/// A post-op applied to each output element, in order (oneDNN's semantics): sum adds the
/// value dst held before the convolution; relu is max(v, 0) + alpha * min(v, 0); clip is
/// min(max(v, alpha), beta).
struct WinogradPostOp {
  enum class Kind { kSum, kRelu, kClip };
  Kind kind;
  float alpha = 0.0f;
  float beta = 0.0f;
};

class WinogradConv {
 public:
  /// Whether this CPU can run the kernel (AVX2 and FMA).
  static bool cpu_supported();
  /// Whether the kernel handles these channel counts: multiples of 8 (whole nChw8c blocks; a
  /// padded block would need its padding kept zero, which bias and clip would break).
  static bool shape_supported(int64_t cin, int64_t cout);
  /// The output tile size (2: F(2x2, 3x3), 4: F(4x4, 3x3)) expected to beat oneDNN's direct
  /// convolution for this shape, or 0 where none does (measured with benchmarks/bench_winograd;
  /// see the numbers in winograd_conv.cc).
  static int preferred_tile(int64_t h, int64_t w, int64_t cin, int64_t cout);

  /// `tile`: 2 or 4 (output tile size); `weights`: plain OIHW [cout][cin][3][3], read only here.
  /// num_threads 0: OpenMP's default.
  WinogradConv(int tile, int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout,
               const float* weights, std::vector<WinogradPostOp> post, int num_threads);

  /// Floats of working memory run() needs (per-thread transformed tiles and products).
  int64_t work_size() const { return work_per_thread_ * num_threads_; }

  /// src: [n][cin/8][h][w][8]; dst: [n][cout/8][h][w][8] (holding the residual when a post-op
  /// is sum); bias: cout floats or null; work: work_size() floats, shared by the convolutions
  /// of a program (they run one after another) so that it stays warm in cache.
  void run(const float* src, const float* bias, float* dst, float* work) const;

 private:
  template <int M>
  __attribute__((target("avx2,fma"))) void run_task(int64_t block, int64_t chunk, const float* src,
                                                    const float* bias, float* dst, float* v,
                                                    float* m) const;

  int tile_;           // output tile size M: F(M x M, 3 x 3)
  int64_t positions_;  // (M + 2)^2 products in the transformed domain
  int64_t n_, cin_, h_, w_, cout_;
  int64_t tiles_h_, tiles_w_, tiles_;
  int64_t block_tiles_, blocks_;  // tiles per task, number of tile blocks
  int64_t chunk_, chunks_;        // output channels per task (multiple of 16), their count
  int num_threads_;
  std::vector<WinogradPostOp> post_;
  std::vector<float> u_;         // [positions][cout / 16 panels][cin][16 or 8]: transformed weights
  int64_t work_per_thread_ = 0;  // V [positions][block][cin], M [positions][block][chunk]
};

}  // namespace partita::backend::dnnl
