// What every cuBLASLt call of a thread on one device shares: the handle, the workspace and a few
// device scalars (a zero, and the alpha a scaled GEMM computes on the device). One per device and
// thread (cuBLAS handles are not to be shared between threads that run concurrently), made on
// the first GEMM of that thread on that device and freed when the thread ends.
#pragma once

#include <cublasLt.h>

#include <cstddef>

namespace partita::backend::cublas {

struct LtContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  float* scalars = nullptr;  // device: [0] = 0 (beta), [1] = alpha of a scaled GEMM
};

/// The calling thread's context on CUDA device `device` (the current device), with a workspace
/// of at least `workspace_bytes`. Grows the workspace when a module asks for more, except while
/// `stream` is being captured into a CUDA Graph (allocation is not allowed then).
LtContext& lt_context(int device, size_t workspace_bytes, void* stream);

}  // namespace partita::backend::cublas
