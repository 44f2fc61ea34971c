// Per device and thread cuBLASLt state (lt_context.h).
#include "lt_context.h"

#include <cuda_runtime_api.h>

#include <map>

#include "lt_check.h"

namespace partita::backend::cublas {
namespace {

struct ThreadContexts {
  std::map<int, LtContext> by_device;
  // Thread-local objects of the main thread are destroyed before the CUDA runtime's own
  // teardown, so freeing here is safe; errors at exit are ignored.
  ~ThreadContexts() {
    for (auto& [device, c] : by_device) {
      cudaSetDevice(device);
      if (c.workspace) cudaFree(c.workspace);
      if (c.scalars) cudaFree(c.scalars);
      if (c.handle) cublasLtDestroy(c.handle);
    }
  }
};

bool capturing(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

LtContext& lt_context(int device, size_t workspace_bytes, void* stream) {
  static thread_local ThreadContexts contexts;
  LtContext& c = contexts.by_device[device];
  if (!c.handle) {
    lt_check(cublasLtCreate(&c.handle), "creating the cuBLASLt handle of cuda:" + std::to_string(device));
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&c.scalars), 4 * sizeof(float)), "allocating device scalars");
    cuda_check(cudaMemset(c.scalars, 0, 4 * sizeof(float)), "clearing device scalars");
  }
  if (c.workspace_bytes < workspace_bytes && !capturing(stream)) {
    // The old workspace may still be in use by queued work on this thread's streams.
    if (c.workspace) {
      cuda_check(cudaDeviceSynchronize(), "waiting before growing the cuBLASLt workspace");
      cudaFree(c.workspace);
      c.workspace = nullptr;
      c.workspace_bytes = 0;
    }
    cuda_check(cudaMalloc(&c.workspace, workspace_bytes), "allocating a cuBLASLt workspace of " +
                                                               std::to_string(workspace_bytes) + " bytes");
    c.workspace_bytes = workspace_bytes;
  }
  return c;
}

}  // namespace partita::backend::cublas
