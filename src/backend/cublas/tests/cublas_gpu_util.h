// Running modules for the GPU tests: the float32 reference on the host VM, builds for the cuda
// target (cuBLAS partitions + generated CUDA for the rest), and a VM on cuda:0.
#pragma once

#include <string>
#include <vector>

#include "../cublas.h"
#include "cublas_test_util.h"
#include "partita/codegen/build.h"
#include "partita/runtime/vm.h"

namespace partita::backend::cublas::test {

using ::partita::testing::cuda_target;
using ::partita::testing::replace_all;
using ::partita::testing::run_host;

inline std::vector<Tensor> run_gpu(runtime::VirtualMachine& vm, const std::vector<Tensor>& in) {
  std::vector<Tensor> dev;
  for (const auto& t : in) dev.push_back(t.to(Device::cuda(0)));
  std::vector<Tensor> out;
  for (const auto& t : vm.invoke("main", dev)) out.push_back(t.to(Device::cpu()));
  return out;
}

inline bool gpu_here() {
  std::string why;
  return device_available(&why);
}

inline size_t count_modules(const runtime::Executable& ex, const std::string& type_key) {
  size_t n = 0;
  for (const auto& m : ex.external_modules) n += m->type_key() == type_key;
  return n;
}

}  // namespace partita::backend::cublas::test
