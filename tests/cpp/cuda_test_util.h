// What the GPU backends' tests (cuda, cublas, cudnn) share: whether a CUDA device is here (and
// skipping a test when none is), the cuda target with a test kernel cache, element access of
// any dtype, text substitution for module templates, and the host VM as the reference.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "partita/codegen/build.h"
#include "partita/codegen/target.h"
#include "partita/runtime/half.h"
#include "partita/runtime/tensor.h"
#include "partita/runtime/vm.h"

namespace partita::testing {

/// Whether a CUDA device can be used here (the reason in `why` when not).
inline bool device_available(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
    cudaGetLastError();
    return false;
  }
  if (count == 0) *why = "the CUDA runtime reports no devices";
  return count > 0;
}

/// Skips the current test when no CUDA device can be used here.
#define PARTITA_REQUIRE_CUDA_DEVICE()                              \
  do {                                                             \
    std::string why_;                                              \
    if (!::partita::testing::device_available(&why_))              \
      GTEST_SKIP() << "no CUDA device: " << why_;                  \
  } while (0)

/// The cuda target with a kernel cache in the build tree (tests never write into the user's
/// cache); PARTITA_TEST_CUDA_CACHE overrides it (the GPU machine is handed kernels compiled here).
inline codegen::Target cuda_target() {
  const char* dir = std::getenv("PARTITA_TEST_CUDA_CACHE");
  std::string cache = dir && *dir ? dir : std::string(PARTITA_BINARY_DIR) + "/cuda_kernel_cache";
  return codegen::Target("cuda", {{"cache_dir", cache}});
}

/// `s` with every `from` replaced by `to` (module templates).
inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

/// Element `i` of `t` as a double (any dtype).
inline double element(const Tensor& t, int64_t i) {
  DataType d = t.dtype();
  switch (d.code()) {
    case DataType::Code::Float:
      if (d.bits() == 32) return t.data_as<float>()[i];
      if (d.bits() == 64) return t.data_as<double>()[i];
      return runtime::half_bits_to_float(t.data_as<uint16_t>()[i]);
    case DataType::Code::BFloat: return runtime::bfloat16_bits_to_float(t.data_as<uint16_t>()[i]);
    case DataType::Code::Int:
      if (d.bits() == 8) return t.data_as<int8_t>()[i];
      if (d.bits() == 16) return t.data_as<int16_t>()[i];
      if (d.bits() == 32) return t.data_as<int32_t>()[i];
      return double(t.data_as<int64_t>()[i]);
    default:
      if (d.bits() <= 8) return t.data_as<uint8_t>()[i];
      if (d.bits() == 16) return t.data_as<uint16_t>()[i];
      if (d.bits() == 32) return t.data_as<uint32_t>()[i];
      return double(t.data_as<uint64_t>()[i]);
  }
}

/// Sets element `i` of `t` to `v` converted to its dtype.
inline void set_element(Tensor& t, int64_t i, double v) {
  DataType d = t.dtype();
  switch (d.code()) {
    case DataType::Code::Float:
      if (d.bits() == 32) t.data_as<float>()[i] = float(v);
      else if (d.bits() == 64) t.data_as<double>()[i] = v;
      else t.data_as<uint16_t>()[i] = runtime::float_to_half_bits(float(v));
      return;
    case DataType::Code::BFloat:
      t.data_as<uint16_t>()[i] = runtime::float_to_bfloat16_bits(float(v));
      return;
    case DataType::Code::Int:
      if (d.bits() == 8) t.data_as<int8_t>()[i] = int8_t(v);
      else if (d.bits() == 16) t.data_as<int16_t>()[i] = int16_t(v);
      else if (d.bits() == 32) t.data_as<int32_t>()[i] = int32_t(v);
      else t.data_as<int64_t>()[i] = int64_t(v);
      return;
    default:
      if (d.bits() <= 8) t.data_as<uint8_t>()[i] = uint8_t(v);
      else if (d.bits() == 16) t.data_as<uint16_t>()[i] = uint16_t(v);
      else if (d.bits() == 32) t.data_as<uint32_t>()[i] = uint32_t(v);
      else t.data_as<uint64_t>()[i] = uint64_t(v);
  }
}

/// `t` converted element by element to `dtype` (exact for float16/bfloat16 -> float32).
inline Tensor converted(const Tensor& t, DataType dtype) {
  Tensor out = Tensor::empty(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) set_element(out, i, element(t, i));
  return out;
}

/// The largest |got - want| and the largest |want| over the elements: relative errors are the
/// first over (a function of) the second, since elementwise ones mean little near zero.
struct ErrorAndScale {
  double error = 0, scale = 0;
};
inline ErrorAndScale error_and_scale(const Tensor& got, const Tensor& want) {
  ErrorAndScale r;
  for (int64_t i = 0; i < want.numel(); ++i) {
    r.error = std::max(r.error, std::fabs(element(got, i) - element(want, i)));
    r.scale = std::max(r.scale, std::fabs(element(want, i)));
  }
  return r;
}

/// Runs `mod`'s main on the host VM (the reference).
inline std::vector<Tensor> run_host(const IRModule& mod, const std::vector<Tensor>& inputs) {
  return runtime::VirtualMachine(codegen::build(mod)).invoke("main", inputs);
}

}  // namespace partita::testing
