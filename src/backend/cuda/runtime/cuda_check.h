// CUDA runtime errors as partita::Error: the call, the error's name and its description.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "partita/support/error.h"

namespace partita::runtime::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call) {
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw_error(err == cudaErrorMemoryAllocation ? "MemoryError" : "RuntimeError",
              std::string("CUDA error in ") + call + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace partita::runtime::cuda

#define PARTITA_CUDA_CALL(expr)                                                   \
  do {                                                                            \
    cudaError_t partita_cuda_err_ = (expr);                                       \
    if (partita_cuda_err_ != cudaSuccess)                                         \
      ::partita::runtime::cuda::throw_cuda_error(partita_cuda_err_, #expr);       \
  } while (0)
