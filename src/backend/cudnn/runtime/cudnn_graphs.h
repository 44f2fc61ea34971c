// cuDNN graphs (through the cuDNN frontend) for the nodes of a cudnn program: a convolution
// with its fused epilogue, and scaled dot-product attention. Each plan is built once for its
// shapes (operation graph, heuristics, execution plan, workspace size) and executed many times
// with new pointers. This header hides the frontend, whose headers only cudnn_graphs.cc reads.
#pragma once

#include <cudnn.h>

#include <array>
#include <memory>
#include <string>

#include "partita/runtime/data_type.h"

namespace partita::backend::cudnn {

struct ConvSpec {
  DataType dtype;
  std::array<int64_t, 4> x;  // N, C, H, W (stored NHWC)
  std::array<int64_t, 4> w;  // K, C / groups, R, S (stored KRSC)
  std::array<int64_t, 4> y;  // N, K, P, Q (stored NHWC)
  std::array<int64_t, 2> strides{1, 1}, dilation{1, 1};
  std::array<int64_t, 4> padding{0, 0, 0, 0};  // top, left, bottom, right
  bool bias = false, residual = false;
  std::string activation;  // "", relu, gelu, silu, sigmoid, clip
  double clip_min = 0, clip_max = 0;
  bool allow_tf32 = false;
  bool autotune = false;  // time engines once at build and keep the fastest
  int64_t autotune_top_k = 0;  // with autotune: the heuristic's first K engines (0: every engine)
};

struct AttentionSpec {
  DataType dtype;
  int64_t b = 0, h = 0, sq = 0, skv = 0, d = 0;
  double scale = 1;
  std::string causal;  // "", TopLeft, BottomRight
  bool bias = false;
  std::array<int64_t, 4> bias_dims{1, 1, 1, 1};  // (B|1, N|1, Sq, Skv): Sq already expanded
};

/// A built convolution. `fused()` says whether cuDNN runs the epilogue in the convolution's
/// graph; otherwise the convolution runs alone and the epilogue as cuDNN tensor operations.
class ConvPlan {
 public:
  /// Builds the plan on `handle`'s device; Error("RuntimeError") naming the shapes and cuDNN's
  /// reason when no engine runs it.
  static std::unique_ptr<ConvPlan> build(cudnnHandle_t handle, const ConvSpec& spec);
  virtual ~ConvPlan() = default;
  virtual int64_t workspace_size() const = 0;
  virtual bool fused() const = 0;
  /// Enqueues the convolution on `handle`'s stream. `bias` / `residual` may be null when absent.
  virtual void run(cudnnHandle_t handle, const void* x, const void* w, const void* bias, const void* residual,
                   void* y, void* workspace) const = 0;
};

class AttentionPlan {
 public:
  static std::unique_ptr<AttentionPlan> build(cudnnHandle_t handle, const AttentionSpec& spec);
  virtual ~AttentionPlan() = default;
  virtual int64_t workspace_size() const = 0;
  virtual void run(cudnnHandle_t handle, const void* q, const void* k, const void* v, const void* bias, void* o,
                   void* workspace) const = 0;
};

/// "float16" etc. → cudnnDataType_t; Error("TypeError") for others.
cudnnDataType_t cudnn_dtype(DataType dt);

}  // namespace partita::backend::cudnn
