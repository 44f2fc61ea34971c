// The epilogue micro-benchmark's calling convention (bench.cu and every variant).
#pragma once
#include <cstdint>
struct BenchGemm {
  int64_t m, n, k;
  const void* a;     // (M, K) row-major
  const void* b;     // (K, N) row-major, or (N, K) row-major for a K-major variant
  const void* bias;  // N
  void* d;           // (M, N) row-major
  int act;           // run-time code for kind 0 (1 relu, 2 gelu)
  int sm_count;
  void* stream;
};
