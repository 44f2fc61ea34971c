// Test inputs: a float32 tensor of values uniform in [-scale, scale], the same for a seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "partita/runtime/tensor.h"

namespace partita::testing {

inline Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float(32));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

}  // namespace partita::testing
