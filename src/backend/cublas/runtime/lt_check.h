// cuBLASLt and CUDA runtime failures as partita::Error, naming the call and what it was for.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

#include "partita/support/error.h"

namespace partita::backend::cublas {

inline void lt_check(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw_error(status == CUBLAS_STATUS_ALLOC_FAILED ? "MemoryError" : "RuntimeError",
              "cublas: " + what + ": " + cublasLtGetStatusName(status) + " (" + cublasLtGetStatusString(status) + ")");
}

inline void cuda_check(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw_error(err == cudaErrorMemoryAllocation ? "MemoryError" : "RuntimeError",
              "cublas: " + what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace partita::backend::cublas
