// Running modules for the GPU tests: the float32 reference on the host VM, builds for the cuda
// target (cuBLAS partitions + generated CUDA for the rest), and a VM on cuda:0.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "../cublas.h"
#include "cublas_test_util.h"
#include "partita/codegen/build.h"
#include "partita/runtime/vm.h"

namespace partita::backend::cublas::test {

/// The cuda target with a kernel cache in the build tree (PARTITA_TEST_CUDA_CACHE overrides it:
/// the GPU machine gets the kernels compiled here).
inline codegen::Target cuda_target() {
  const char* dir = std::getenv("PARTITA_TEST_CUDA_CACHE");
  std::string cache = dir && *dir ? dir : std::string(PARTITA_BINARY_DIR) + "/cuda_kernel_cache";
  return codegen::Target("cuda", {{"cache_dir", cache}});
}

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

inline std::vector<Tensor> run_host(const IRModule& mod, const std::vector<Tensor>& in) {
  return runtime::VirtualMachine(codegen::build(mod)).invoke("main", in);
}

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
