// Runtime half of the `cuda` target's generated kernels (runtime library; no compiler headers):
// a module holding the generated CUDA C++ source, the cubin NVRTC compiled from it, and for
// each function the launch of its kernel. Saved as type key "cuda".
//
// A function's kernel takes, in order: a device pointer per input, per named constant (uploaded
// once, at the first call), per output, then one `long long` per symbolic dimension. Symbolic
// dimensions are read from the inputs' (else the outputs') shapes; every input and output shape
// is checked against its expected shape before the launch, and the grid is evaluated from the
// same programs. Tensors whose memory is not on the GPU are staged through device memory (until
// tensors carry a device), so the module also runs under today's host VM.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "partita/runtime/executable.h"
#include "partita/runtime/module.h"

namespace partita::backend::cuda {

/// Where a symbolic dimension's value is read at run time.
struct DimSource {
  bool output = false;
  int32_t tensor = 0;
  int32_t dim = 0;
};

/// An expected tensor: dtype and one program per dimension over the symbolic slots.
struct TensorSignature {
  DataType dtype;
  std::vector<runtime::DimProgram> shape;
};

struct KernelFunction {
  std::string symbol;  // the function's global symbol, called by the VM
  std::string kernel;  // the __global__ function's name in the cubin
  std::vector<TensorSignature> inputs, outputs;
  std::vector<std::string> constants;   // named constants passed after the inputs
  std::vector<DimSource> sym_sources;   // one per symbolic slot, in kernel-argument order
  std::array<runtime::DimProgram, 3> grid;  // blocks per dimension (clamped to the device limits)
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
};

runtime::ModulePtr make_cuda_kernel_module(std::string source, std::string cubin, std::vector<KernelFunction> functions);

/// The CUDA source of a "cuda" module (empty for another kind of module).
std::string cuda_module_source(const runtime::RuntimeModule& module);
/// The cubin of a "cuda" module (empty for another kind of module).
std::string cuda_module_cubin(const runtime::RuntimeModule& module);

/// Whether a CUDA device can be used here (false, with the reason in `why`, without one).
bool cuda_device_available(std::string* why = nullptr);

}  // namespace partita::backend::cuda
