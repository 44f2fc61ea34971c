// Helpers of the cudnn backend's tests: modules from TVMScript, typed random inputs, the host
// reference (the same graph in float32 on the host VM), GPU runs, tolerances per dtype.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../cudnn.h"
#include "cuda_test_util.h"
#include "partita/codegen/build.h"
#include "partita/ir/analysis.h"
#include "partita/runtime/half.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

namespace partita::backend::cudnn::testing {

using ::partita::testing::converted;
using ::partita::testing::device_available;
using ::partita::testing::element;
using ::partita::testing::replace_all;

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
inline Tensor to_f32(const Tensor& t) { return converted(t, DataType::Float(32)); }

/// Relative tolerance of a result computed in `dt` with float accumulation.
inline double tolerance(DataType dt) {
  if (dt == DataType::BFloat16()) return 3e-2;
  if (dt == DataType::Float(16)) return 5e-3;
  return 2e-4;
}

/// Max |got - want| / (1 + max |want|) over the tensors.
inline double relative_error(const Tensor& got, const Tensor& want) {
  auto [err, scale] = ::partita::testing::error_and_scale(got, want);
  return err / (1.0 + scale);
}

}  // namespace partita::backend::cudnn::testing
