// One GEMM step of a cublas module on cuBLASLt: its matmul descriptor, matrix layouts and
// algorithm are made once per shape (and pointer alignment) and cached, so a call with a shape
// seen before only sets the bias pointer and enqueues cublasLtMatmul (TVM's runtime makes all of
// them and asks the heuristic again on every call). Row-major tensors run as the column-major
// product D^T = op(B)^T A^T: the operands are swapped, no data moves.
#pragma once

#include <cublasLt.h>

#include <map>
#include <memory>
#include <tuple>

#include "../gemm_program.h"
#include "lt_context.h"

namespace partita::backend::cublas {

/// The sizes of one call: `batch` products of (m x k) by (k x n); alignments are those of the
/// pointers (bytes, powers of two up to 256), which the heuristic must know.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int align_a = 256, align_b = 256, align_c = 256, align_d = 256, align_bias = 256;
  int device = 0;
  auto key() const { return std::tie(m, n, k, batch, align_a, align_b, align_c, align_d, align_bias, device); }
  bool operator<(const GemmShape& o) const { return key() < o.key(); }
};

/// Device pointers of one call.
struct GemmPointers {
  const void* a = nullptr;     // the (.., m, k) left-hand side
  const void* b = nullptr;     // the (.., k, n) or, transposed, (.., n, k) right-hand side
  const void* bias = nullptr;  // vector (n) or matrix (like d), or null
  const void* scale_a = nullptr;
  const void* scale_b = nullptr;
  void* d = nullptr;
};

struct GemmTypes {
  DataType a, b, out, scale;  // scale: of scale_a / scale_b, when the GEMM is scaled
};

class GemmRunner {
 public:
  GemmRunner(const GemmStep& step, GemmTypes types, bool allow_tf32, int64_t autotune_top_k);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  /// Enqueues the product on `stream` (the plan for `shape` made on first use).
  void run(LtContext& ctx, cudaStream_t stream, const GemmShape& shape, const GemmPointers& p);
  /// How many plans are cached (tests: a repeated shape makes none).
  size_t plans() const { return plans_.size(); }
  /// How many times the heuristic was asked (tests).
  size_t heuristic_queries() const { return heuristic_queries_; }

  struct Plan;

 private:
  Plan& plan_for(LtContext& ctx, cudaStream_t stream, const GemmShape& shape, const GemmPointers& p);
  Plan& scale_plan(LtContext& ctx, int device);

  GemmStep step_;
  GemmTypes types_;
  bool allow_tf32_;
  int64_t top_k_;
  std::map<GemmShape, std::unique_ptr<Plan>> plans_;
  std::map<int, std::unique_ptr<Plan>> scale_plans_;  // per device: the 1 x 1 product scale_a * scale_b
  size_t heuristic_queries_ = 0;
};

/// The cudaDataType of a tensor dtype the backend takes (Error otherwise).
cudaDataType_t cuda_data_type(DataType t);
/// The largest power of two (up to 256) dividing the address.
int pointer_alignment(const void* p);

}  // namespace partita::backend::cublas
