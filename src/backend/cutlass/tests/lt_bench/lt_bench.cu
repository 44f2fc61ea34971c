// The cuBLASLt side of the CUTLASS GEMM benchmark (benchmarks/gpu/bench_cutlass.py): each shape
// of the shapes file (CutlassBench.ShapesFile: "shape M N K act residual post_relu") as one
// cublasLtMatmul with as much of its epilogue fused as cuBLASLt can, which is all of it here:
// D = act(A B + beta C + bias) with the bias and activation epilogue (BIAS, RELU_BIAS,
// GELU_BIAS) and the residual as C with beta = 1 (a residual added after a relu is the
// RELU_BIAS epilogue over A B + C). GELU_BIAS is GELU's tanh form (PyTorch's tests compare
// it with gelu(approximate="tanh")); cuBLASLt has no erf GELU, so the "gelu" rows time that
// cheaper function too. Times the heuristic's first algorithm (what a caller gets by
// default) and the best of up to 8 it returns, each as a CUDA graph of 20 calls (the kernel
// alone, as the CUTLASS profiler times its candidates), the median of 5 launches. Not built by
// CMake: build.sh; run on the GPU machine: `lt_bench shapes.tsv > lt.tsv`.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_));        \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
#define CL(x)                                                                                   \
  do {                                                                                          \
    cublasStatus_t s_ = (x);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
      std::fprintf(stderr, "cuBLASLt %s at %d: %d\n", #x, __LINE__, int(s_));                   \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

__global__ void fill(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2half(float(h & 0xffff) / 32768.f - 1.f);
  }
}

struct Shape {
  std::string name;
  long long m, n, k;
  std::string act;
  int residual, post_relu;
};

// Microseconds per call: a graph of `reps` calls on `s`, median of 5 launches after one.
template <class F>
float graph_us(F call, cudaStream_t s, int reps) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; ++i) call();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&exec, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaGraphLaunch(exec, s));
  std::vector<float> t;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.f / reps);
  }
  std::sort(t.begin(), t.end());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  return t[2];
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: lt_bench <shapes.tsv>\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::vector<Shape> shapes;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream l(line);
    Shape s;
    if (l >> s.name >> s.m >> s.n >> s.k >> s.act >> s.residual >> s.post_relu) shapes.push_back(s);
  }
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasLtHandle_t h;
  CL(cublasLtCreate(&h));
  size_t ws_size = 32 << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_size));
  std::printf("shape\tlt_default_us\tlt_best_us\talgorithms\n");
  for (const Shape& s : shapes) {
    size_t na = size_t(s.m * s.k), nb = size_t(s.k * s.n), nd = size_t(s.m * s.n);
    __half *a, *b, *bias, *c, *d;
    CK(cudaMalloc(&a, na * 2));
    CK(cudaMalloc(&b, nb * 2));
    CK(cudaMalloc(&bias, size_t(s.n) * 2));
    CK(cudaMalloc(&c, nd * 2));
    CK(cudaMalloc(&d, nd * 2));
    fill<<<1024, 256>>>(a, na, 1);
    fill<<<1024, 256>>>(b, nb, 2);
    fill<<<64, 256>>>(bias, size_t(s.n), 3);
    fill<<<1024, 256>>>(c, nd, 4);
    CK(cudaDeviceSynchronize());
    // Row-major D (M x N) = A (M x K) B (K x N) is column-major D^T = B^T A^T: the bias is a
    // column vector of D^T.
    cublasLtMatmulDesc_t op;
    CL(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    bool relu = s.act == "relu" || s.post_relu;
    cublasLtEpilogue_t epi = relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                             : s.act == "gelu" || s.act == "gelu_tanh" ? CUBLASLT_EPILOGUE_GELU_BIAS
                                               : CUBLASLT_EPILOGUE_BIAS;
    CL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    const void* bias_ptr = bias;
    CL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr));
    cublasLtMatrixLayout_t la, lb, ld;
    CL(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, s.n, s.k, s.n));
    CL(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, s.k, s.m, s.k));
    CL(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16F, s.n, s.m, s.n));
    cublasLtMatmulPreference_t pref;
    CL(cublasLtMatmulPreferenceCreate(&pref));
    CL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_size, sizeof ws_size));
    cublasLtMatmulHeuristicResult_t results[8];
    int found = 0;
    CL(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 8, results, &found));
    float one = 1.f, zero = 0.f;
    const float* beta = s.residual ? &one : &zero;
    const void* cin = s.residual ? static_cast<const void*>(c) : static_cast<const void*>(d);
    float first = -1, best = -1;
    for (int i = 0; i < found; ++i) {
      auto call = [&] {
        CL(cublasLtMatmul(h, op, &one, b, la, a, lb, beta, cin, ld, d, ld, &results[i].algo, ws, ws_size, stream));
      };
      call();  // the algorithm runs at all
      if (cudaStreamSynchronize(stream) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      float us = graph_us(call, stream, 20);
      if (i == 0) first = us;
      if (best < 0 || us < best) best = us;
    }
    std::printf("%s\t%.2f\t%.2f\t%d\n", s.name.c_str(), first, best, found);
    std::fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
    cudaFree(a);
    cudaFree(b);
    cudaFree(bias);
    cudaFree(c);
    cudaFree(d);
  }
  return 0;
}
