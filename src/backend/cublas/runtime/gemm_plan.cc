// GEMM plans on cuBLASLt (gemm_plan.h).
#include "gemm_plan.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "lt_check.h"

namespace partita::backend::cublas {

cudaDataType_t cuda_data_type(DataType t) {
  if (t == DataType::Float(32)) return CUDA_R_32F;
  if (t == DataType::Float(16)) return CUDA_R_16F;
  if (t == DataType::BFloat16()) return CUDA_R_16BF;
  if (t == DataType::Int(8)) return CUDA_R_8I;
  if (t == DataType::Int(32)) return CUDA_R_32I;
  throw_error("TypeError", "cublas: no cuBLASLt type for dtype " + t.str());
}

int pointer_alignment(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  int a = 1;
  while (a < 256 && v % uintptr_t(a * 2) == 0) a *= 2;
  return v == 0 ? 256 : a;
}

struct GemmRunner::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  ~Plan() {
    for (auto* l : {a, b, c, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

namespace {

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, T value, const char* what) {
  lt_check(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value), std::string("setting ") + what);
}

cublasLtMatrixLayout_t layout(DataType t, int64_t rows, int64_t cols, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  lt_check(cublasLtMatrixLayoutCreate(&l, cuda_data_type(t), uint64_t(rows), uint64_t(cols), rows), "creating a layout");
  if (batch > 1) {
    auto count = int32_t(batch);
    lt_check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
             "setting a batch count");
    lt_check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
             "setting a batch stride");
  }
  return l;
}

std::string shape_text(const GemmShape& s) {
  return "batch " + std::to_string(s.batch) + " of (" + std::to_string(s.m) + " x " + std::to_string(s.k) + ") by (" +
         std::to_string(s.k) + " x " + std::to_string(s.n) + ")";
}

}  // namespace

GemmRunner::GemmRunner(const GemmStep& step, GemmTypes types, bool allow_tf32, int64_t autotune_top_k)
    : step_(step), types_(types), allow_tf32_(allow_tf32), top_k_(autotune_top_k) {}

GemmRunner::~GemmRunner() = default;

GemmRunner::Plan& GemmRunner::scale_plan(LtContext& ctx, int device) {
  auto& slot = scale_plans_[device];
  if (slot) return *slot;
  auto plan = std::make_unique<Plan>();
  lt_check(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "creating the scale product's descriptor");
  plan->a = layout(types_.scale, 1, 1, 1, 0);
  plan->b = layout(types_.scale, 1, 1, 1, 0);
  plan->d = layout(DataType::Float(32), 1, 1, 1, 0);
  plan->c = layout(DataType::Float(32), 1, 1, 1, 0);
  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&pref), "creating a preference");
  size_t ws = 0;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx.handle, plan->desc, plan->a, plan->b, plan->c, plan->d, pref, 1,
                                                     &result, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  lt_check(st, "choosing the scale product's algorithm");
  if (returned == 0) throw_error("RuntimeError", "cublas: no cuBLASLt algorithm multiplies two " + types_.scale.str() + " scales");
  plan->algo = result.algo;
  slot = std::move(plan);
  return *slot;
}

GemmRunner::Plan& GemmRunner::plan_for(LtContext& ctx, cudaStream_t stream, const GemmShape& s, const GemmPointers& p) {
  auto it = plans_.find(s);
  if (it != plans_.end()) return *it->second;
  bool ints = types_.a == DataType::Int(8);
  cublasComputeType_t compute = ints ? CUBLAS_COMPUTE_32I
                                : (types_.a == DataType::Float(32) && allow_tf32_) ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                   : CUBLAS_COMPUTE_32F;
  auto plan = std::make_unique<Plan>();
  lt_check(cublasLtMatmulDescCreate(&plan->desc, compute, ints ? CUDA_R_32I : CUDA_R_32F), "creating a matmul descriptor");
  // Column-major view: D^T (n x m) = op(B)^T (n x k) * A^T (k x m).
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, int32_t(step_.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N), "TRANSA");
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, int32_t(CUBLAS_OP_N), "TRANSB");
  bool vector_bias = step_.bias_kind == BiasKind::kVector;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (step_.epilogue == Epilogue::kRelu) epilogue = vector_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (step_.epilogue == Epilogue::kGelu) epilogue = vector_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (vector_bias) epilogue = CUBLASLT_EPILOGUE_BIAS;
  set_desc(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "the epilogue");
  if (vector_bias) {
    set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(cuda_data_type(types_.out)), "the bias type");
    if (s.batch > 1) set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, int64_t(0), "the bias batch stride");
  }
  if (step_.scale_a >= 0) set_desc(plan->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE, "the pointer mode");
  int64_t rows_b = step_.transpose_b ? s.k : s.n, cols_b = step_.transpose_b ? s.n : s.k;
  plan->a = layout(types_.b, rows_b, cols_b, s.batch, s.k * s.n);
  plan->b = layout(types_.a, s.k, s.m, s.batch, s.m * s.k);
  plan->c = layout(types_.out, s.n, s.m, s.batch, s.m * s.n);
  plan->d = layout(types_.out, s.n, s.m, s.batch, s.m * s.n);

  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&pref), "creating a preference");
  auto pref_set = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value), "setting a preference");
  };
  pref_set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(ctx.workspace_bytes));
  // Operand swap: cuBLASLt's A is our b, its B our a.
  pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(s.align_b));
  pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(s.align_a));
  pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(s.align_c));
  pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(s.align_d));
  int requested = int(std::max<int64_t>(1, top_k_));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(requested));
  int returned = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx.handle, plan->desc, plan->a, plan->b, plan->c, plan->d, pref,
                                                     requested, results.data(), &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  ++heuristic_queries_;
  lt_check(st, "choosing an algorithm for " + step_.from + " (" + shape_text(s) + ")");
  if (returned == 0)
    throw_error("RuntimeError", "cublas: cuBLASLt has no algorithm for " + step_.from + " (" + shape_text(s) + ", " +
                                    types_.a.str() + " -> " + types_.out.str() + ")");
  plan->algo = results[0].algo;
  plan->workspace = results[0].workspaceSize;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &capture);
  if (returned > 1 && capture == cudaStreamCaptureStatusNone && p.d) {
    // Time each candidate once (three runs after one warm-up) and keep the fastest. The result
    // is overwritten by the real call that follows.
    cudaEvent_t start = nullptr, stop = nullptr;
    cuda_check(cudaEventCreate(&start), "creating an event");
    cuda_check(cudaEventCreate(&stop), "creating an event");
    float best = -1;
    for (int i = 0; i < returned; ++i) {
      float zero = 0, one = 1;
      int32_t izero = 0, ione = 1;
      const void* alpha = ints ? static_cast<const void*>(&ione) : &one;
      const void* beta = step_.bias_kind == BiasKind::kMatrix ? alpha : ints ? static_cast<const void*>(&izero) : &zero;
      if (step_.scale_a >= 0) alpha = ctx.scalars + 1, beta = ctx.scalars;
      if (vector_bias) set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias, "the bias pointer");
      const void* c = step_.bias_kind == BiasKind::kMatrix ? p.bias : p.d;
      auto once = [&] {
        return cublasLtMatmul(ctx.handle, plan->desc, alpha, p.b, plan->a, p.a, plan->b, beta, c, plan->c, p.d, plan->d,
                              &results[size_t(i)].algo, ctx.workspace, results[size_t(i)].workspaceSize, stream);
      };
      if (once() != CUBLAS_STATUS_SUCCESS) continue;
      cudaEventRecord(start, stream);
      for (int r = 0; r < 3; ++r) once();
      cudaEventRecord(stop, stream);
      cuda_check(cudaEventSynchronize(stop), "timing a cuBLASLt algorithm");
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (best < 0 || ms < best) {
        best = ms;
        plan->algo = results[size_t(i)].algo;
        plan->workspace = results[size_t(i)].workspaceSize;
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  auto& slot = plans_[s];
  slot = std::move(plan);
  return *slot;
}

void GemmRunner::run(LtContext& ctx, cudaStream_t stream, const GemmShape& s, const GemmPointers& p) {
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  bool ints = types_.a == DataType::Int(8);
  float zero = 0, one = 1;
  int32_t izero = 0, ione = 1;
  const void* alpha = ints ? static_cast<const void*>(&ione) : &one;
  // A matrix bias is cuBLASLt's C with beta = 1.
  const void* beta = step_.bias_kind == BiasKind::kMatrix ? alpha : ints ? static_cast<const void*>(&izero) : &zero;
  if (step_.scale_a >= 0) {
    // alpha = scale_a * scale_b, computed on the device as a 1 x 1 product (stays in stream
    // order, so it can be captured); then the GEMM reads alpha and beta (0) from the device.
    Plan& sp = scale_plan(ctx, s.device);
    lt_check(cublasLtMatmul(ctx.handle, sp.desc, &one, p.scale_b, sp.a, p.scale_a, sp.b, &zero, ctx.scalars + 1, sp.c,
                            ctx.scalars + 1, sp.d, &sp.algo, nullptr, 0, stream),
             "multiplying the scales of " + step_.from);
    alpha = ctx.scalars + 1;
    beta = ctx.scalars;
  }
  Plan& plan = plan_for(ctx, stream, s, p);
  if (step_.bias_kind == BiasKind::kVector)
    set_desc(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias, "the bias pointer");
  const void* c = step_.bias_kind == BiasKind::kMatrix ? p.bias : p.d;
  lt_check(cublasLtMatmul(ctx.handle, plan.desc, alpha, p.b, plan.a, p.a, plan.b, beta, c, plan.c, p.d, plan.d,
                          &plan.algo, ctx.workspace, plan.workspace, stream),
           "running " + step_.from + " (" + shape_text(s) + ")");
}

}  // namespace partita::backend::cublas
