// Helpers of the cudnn backend's tests: modules from TVMScript, typed random inputs, the host
// reference (the same graph in float32 on the host VM), GPU runs, tolerances per dtype.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../cudnn.h"
#include "partita/codegen/build.h"
#include "partita/ir/analysis.h"
#include "partita/runtime/half.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

namespace partita::backend::cudnn::testing {

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

#define PARTITA_REQUIRE_CUDA_DEVICE()                                                            \
  do {                                                                                          \
    std::string why_;                                                                           \
    if (!::partita::backend::cudnn::testing::device_available(&why_))                           \
      GTEST_SKIP() << "no CUDA device: " << why_;                                               \
  } while (0)

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

inline double element(const Tensor& t, int64_t i) {
  const DataType dt = t.dtype();
  if (dt == DataType::Float(16)) return t.data_as<runtime::Half>()[i].to_float();
  if (dt == DataType::BFloat16()) return t.data_as<runtime::BFloat16>()[i].to_float();
  if (dt == DataType::Float(64)) return t.data_as<double>()[i];
  return t.data_as<float>()[i];
}

/// Random values in [-scale, scale] stored in `dt`.
inline Tensor random_tensor(const std::vector<int64_t>& shape, DataType dt, uint32_t seed, double scale = 1.0) {
  Tensor t = Tensor::empty(shape, dt);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-float(scale), float(scale));
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(rng);
    if (dt == DataType::Float(16)) t.data_as<runtime::Half>()[i] = runtime::Half::from(v);
    else if (dt == DataType::BFloat16()) t.data_as<runtime::BFloat16>()[i] = runtime::BFloat16::from(v);
    else t.data_as<float>()[i] = v;
  }
  return t;
}

/// `t` in float32 (the host reference computes there).
inline Tensor to_f32(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) out.data_as<float>()[i] = float(element(t, i));
  return out;
}

/// Relative tolerance of a result computed in `dt` with float accumulation.
inline double tolerance(DataType dt) {
  if (dt == DataType::BFloat16()) return 3e-2;
  if (dt == DataType::Float(16)) return 5e-3;
  return 2e-4;
}

/// Max |got - want| / (1 + max |want|) over the tensors.
inline double relative_error(const Tensor& got, const Tensor& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(element(want, i)));
  for (int64_t i = 0; i < want.numel(); ++i) err = std::max(err, std::abs(element(got, i) - element(want, i)));
  return err / (1.0 + scale);
}

}  // namespace partita::backend::cudnn::testing
