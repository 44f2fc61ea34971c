// Epilogue micro-benchmark of the cutlass backend (issue 16): which part of the backend's CUTLASS
// 3 GEMM costs ~15.6 us per million outputs? Times each kernel variant (variant.cuh) on the
// zoo / BERT shapes against cuBLASLt with the same epilogue, three ways: back-to-back launches
// between two events (the kernel), back-to-back calls of the backend's per-call path
// (can_implement + initialize + run), and the profiler's way (events around one call, a
// synchronization after each, the median). Build and run: run.sh.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_abi.h"

#define VARIANT(n)                                       \
  extern "C" int n##_init(const BenchGemm*, void**);     \
  extern "C" int n##_launch(void*);                      \
  extern "C" int n##_full(const BenchGemm*, void*);
VARIANT(rt_bn)
VARIANT(rt_hoist_bn)
VARIANT(ct_relu_bn)
VARIANT(ct_gelu_bn)
VARIANT(cutlass_relu_bn)
VARIANT(none_bn)
VARIANT(none_bk)

struct Variant {
  const char* name;
  int (*init)(const BenchGemm*, void**);
  int (*launch)(void*);
  int (*full)(const BenchGemm*, void*);
  int act;  // what it computes: 0 bias-free identity (none), 1 relu(acc+bias), 2 gelu(acc+bias)
  bool k_major;
  bool has_bias;
  bool runtime;  // takes its activation code at run time
};
#define V(n, act, km, bias) {#n, n##_init, n##_launch, n##_full, act, km, bias, std::string(#n).rfind("rt_", 0) == 0}

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1); } \
  } while (0)
#define CL(x)                                                                            \
  do {                                                                                   \
    cublasStatus_t s_ = (x);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS) { std::printf("cuBLASLt %s at %d: %d\n", #x, __LINE__, int(s_)); std::exit(1); } \
  } while (0)

__global__ void fill(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = __float2half((float(h & 0xffff) / 32768.f - 1.f));
  }
}

struct Lt {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo;
  void* ws;
  size_t ws_size = 32 << 20;
};

// D (M x N row-major) = epi(A (M x K row-major) B (K x N row-major) + bias): in column-major
// terms D^T (N x M) = B^T (N x K) A^T (K x M), the bias a column of D^T.
void lt_setup(Lt& lt, int64_t m, int64_t n, int64_t k, int act, bool bias, const void* bias_ptr) {
  CL(cublasLtMatmulDescCreate(&lt.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtEpilogue_t epi = !bias ? CUBLASLT_EPILOGUE_DEFAULT
                           : act == 1 ? CUBLASLT_EPILOGUE_RELU_BIAS
                           : act == 2 ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  CL(cublasLtMatmulDescSetAttribute(lt.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (bias) CL(cublasLtMatmulDescSetAttribute(lt.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr));
  CL(cublasLtMatrixLayoutCreate(&lt.la, CUDA_R_16F, n, k, n));  // B^T
  CL(cublasLtMatrixLayoutCreate(&lt.lb, CUDA_R_16F, k, m, k));  // A^T
  CL(cublasLtMatrixLayoutCreate(&lt.ld, CUDA_R_16F, n, m, n));
  cublasLtMatmulPreference_t pref;
  CL(cublasLtMatmulPreferenceCreate(&pref));
  CL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt.ws_size,
                                          sizeof lt.ws_size));
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  CL(cublasLtMatmulAlgoGetHeuristic(lt.h, lt.op, lt.la, lt.lb, lt.ld, lt.ld, pref, 1, &r, &found));
  if (!found) { std::printf("cuBLASLt: no algorithm\n"); std::exit(1); }
  lt.algo = r.algo;
  cublasLtMatmulPreferenceDestroy(pref);
}
void lt_run(Lt& lt, const void* a, const void* b, void* d, cudaStream_t s, const void* c = nullptr) {
  float one = 1.f, zero = 0.f;
  CL(cublasLtMatmul(lt.h, lt.op, &one, b, lt.la, a, lt.lb, c ? &one : &zero, c ? c : d, lt.ld, d, lt.ld, &lt.algo,
                    lt.ws, lt.ws_size, s));
}

template <class F>
float time_b2b(F f, cudaStream_t s, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = 0; i < 10; ++i) f();
  CK(cudaEventRecord(e0, s));
  for (int i = 0; i < reps; ++i) f();
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return ms * 1000.f / reps;
}
template <class F>
float time_profiler_style(F f, cudaStream_t s) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int i = 0; i < 30; ++i) {
    CK(cudaEventRecord(e0, s));
    f();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

float max_diff(const __half* x, const __half* y, size_t n, double* ref_max) {
  std::vector<__half> a(n), b(n);
  CK(cudaMemcpy(a.data(), x, n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), y, n * 2, cudaMemcpyDeviceToHost));
  double m = 0, r = 0;
  for (size_t i = 0; i < n; ++i) {
    double u = __half2float(a[i]), v = __half2float(b[i]);
    if (std::isnan(u) || std::isnan(v)) return INFINITY;
    m = std::max(m, std::fabs(u - v));
    r = std::max(r, std::fabs(v));
  }
  *ref_max = r;
  return float(m);
}

int main() {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  int dev = 0, sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  std::vector<Variant> vs = {V(rt_bn, 1, false, true), V(rt_hoist_bn, 1, false, true),     V(ct_relu_bn, 1, false, true), V(ct_gelu_bn, 2, false, true),
                             V(cutlass_relu_bn, 1, false, true), V(none_bn, 0, false, false), V(none_bk, 0, true, false)};
  struct S { const char* name; int64_t m, n, k; };
  std::vector<S> shapes = {{"bert_qkv", 4096, 2304, 768},   {"bert_ffn1", 4096, 3072, 768},
                           {"bert_ffn2", 4096, 768, 3072},  {"resnet_64to256", 100352, 256, 64},
                           {"resnet_128to512", 25088, 512, 128}};
  Lt lt;
  CL(cublasLtCreate(&lt.h));
  CK(cudaMalloc(&lt.ws, lt.ws_size));
  std::printf("%-16s %-16s %9s %9s %9s %8s %10s %s\n", "shape", "kernel", "b2b_us", "full_us", "prof_us", "TFLOP/s",
              "vs_cublasLt", "check (max |diff| / max |ref|)");
  for (const S& sh : shapes) {
    size_t na = sh.m * sh.k, nb = sh.k * sh.n, nd = sh.m * sh.n;
    __half *a, *b, *bias, *d, *ref;
    CK(cudaMalloc(&a, na * 2)); CK(cudaMalloc(&b, nb * 2)); CK(cudaMalloc(&bias, sh.n * 2));
    CK(cudaMalloc(&d, nd * 2)); CK(cudaMalloc(&ref, nd * 2));
    fill<<<1024, 256>>>(a, na, 1); fill<<<1024, 256>>>(b, nb, 2); fill<<<64, 256>>>(bias, sh.n, 3);
    CK(cudaDeviceSynchronize());
    double flop = 2.0 * sh.m * sh.n * sh.k;
    // cuBLASLt for each epilogue: none, bias+relu, bias+gelu, bias.
    float lt_us[4];
    const char* lt_names[4] = {"cublasLt", "cublasLt+b+relu", "cublasLt+b+gelu", "cublasLt+bias"};
    for (int e = 0; e < 4; ++e) {
      Lt l = lt;
      lt_setup(l, sh.m, sh.n, sh.k, e == 1 ? 1 : e == 2 ? 2 : 0, e != 0, bias);
      lt_us[e] = time_b2b([&] { lt_run(l, a, b, d, s); }, s, 100);
      float prof = time_profiler_style([&] { lt_run(l, a, b, d, s); }, s);
      std::printf("%-16s %-16s %9.1f %9s %9.1f %8.0f\n", sh.name, lt_names[e], lt_us[e], "-", prof,
                  flop / lt_us[e] * 1e-6);
      cublasLtMatmulDescDestroy(l.op); cublasLtMatrixLayoutDestroy(l.la); cublasLtMatrixLayoutDestroy(l.lb);
      cublasLtMatrixLayoutDestroy(l.ld);
    }
    for (const Variant& v : vs) {
      for (int act : {1, 2}) {
        if (act == 2 && !v.runtime) continue;  // the run-time kernel also as gelu
        BenchGemm g{sh.m, sh.n, sh.k, a, b, v.has_bias ? bias : nullptr, d, act, sms, s};
        void* ws = nullptr;
        CK(cudaMemsetAsync(d, 0xff, nd * 2, s));  // NaN: every element must be written
        if (int rc = v.init(&g, &ws)) { std::printf("%s: init failed %d\n", v.name, rc); continue; }
        if (v.launch(s)) { std::printf("%s: launch failed\n", v.name); continue; }
        CK(cudaStreamSynchronize(s));
        CK(cudaGetLastError());
        int computes = v.runtime ? act : v.act;
        std::string check = "-";
        if (!v.k_major) {
          Lt l = lt;
          lt_setup(l, sh.m, sh.n, sh.k, computes, v.has_bias, bias);
          lt_run(l, a, b, ref, s);
          CK(cudaStreamSynchronize(s));
          double rmax = 0;
          float md = max_diff(d, ref, nd, &rmax);
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.3g / %.3g", md, rmax);
          check = buf;
          cublasLtMatmulDescDestroy(l.op); cublasLtMatrixLayoutDestroy(l.la); cublasLtMatrixLayoutDestroy(l.lb);
          cublasLtMatrixLayoutDestroy(l.ld);
        }
        float b2b = time_b2b([&] { v.launch(s); }, s, 100);
        float full = time_b2b([&] { v.full(&g, ws); }, s, 100);
        float prof = time_profiler_style([&] { v.full(&g, ws); }, s);
        CK(cudaGetLastError());
        float base = lt_us[!v.has_bias ? 0 : computes == 1 ? 1 : 2];
        std::string name = std::string(v.name) + (v.runtime ? (act == 1 ? "(relu)" : "(gelu)") : "");
        std::printf("%-16s %-16s %9.1f %9.1f %9.1f %8.0f %10.2f %s\n", sh.name, name.c_str(), b2b, full, prof,
                    flop / b2b * 1e-6, base / b2b, check.c_str());
        if (ws) cudaFree(ws);
      }
    }
    std::fflush(stdout);
    cudaFree(a); cudaFree(b); cudaFree(bias); cudaFree(d); cudaFree(ref);
  }
  // The benchmark's GEMMs (bench_shapes.h) through cuBLASLt with as much of each epilogue fused
  // as it can: D = act(A B + bias + beta C), beta = 1 with the residual as C.
  struct Z { const char* name; int64_t m, n, k; int act; bool res; };
  std::vector<Z> zoo = {{"bert_qkv", 4096, 2304, 768, 0, false},          {"bert_attn_out+res", 4096, 768, 768, 0, true},
                        {"bert_ffn1+gelu", 4096, 3072, 768, 2, false},     {"bert_ffn2+res", 4096, 768, 3072, 0, true},
                        {"resnet_1x1_64to256+relu", 100352, 256, 64, 1, false},
                        {"resnet_1x1_128to512+res+relu", 25088, 512, 128, 1, true}};
  std::printf("\n%-30s %10s  (cuBLASLt, bias / activation / residual fused: the bar for the zoo table)\n", "zoo shape",
              "lt_us");
  for (const Z& z : zoo) {
    size_t na = z.m * z.k, nb = z.k * z.n, nd = z.m * z.n;
    __half *a, *b, *bias, *d, *c;
    CK(cudaMalloc(&a, na * 2)); CK(cudaMalloc(&b, nb * 2)); CK(cudaMalloc(&bias, z.n * 2));
    CK(cudaMalloc(&d, nd * 2)); CK(cudaMalloc(&c, nd * 2));
    fill<<<1024, 256>>>(a, na, 1); fill<<<1024, 256>>>(b, nb, 2); fill<<<64, 256>>>(bias, z.n, 3);
    fill<<<1024, 256>>>(c, nd, 4);
    CK(cudaDeviceSynchronize());
    Lt l = lt;
    lt_setup(l, z.m, z.n, z.k, z.act, true, bias);
    float us = time_b2b([&] { lt_run(l, a, b, d, s, z.res ? c : nullptr); }, s, 100);
    std::printf("%-30s %10.1f\n", z.name, us);
    cublasLtMatmulDescDestroy(l.op); cublasLtMatrixLayoutDestroy(l.la); cublasLtMatrixLayoutDestroy(l.lb);
    cublasLtMatrixLayoutDestroy(l.ld);
    cudaFree(a); cudaFree(b); cudaFree(bias); cudaFree(d); cudaFree(c);
  }
  return 0;
}
