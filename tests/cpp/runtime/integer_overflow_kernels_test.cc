// Integer add, subtract and multiply wrap around (numpy's and TVM's behaviour) without signed
// overflow, which is undefined behaviour (found by the vm_inputs fuzzer under UBSan: int64 add).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "partita/runtime/kernel.h"
#include "partita/runtime/tensor.h"

using namespace partita;
using namespace partita::runtime;

namespace {

template <class T>
T run(const char* op, T a, T b, DataType dtype) {
  Tensor x = Tensor::empty({1}, dtype), y = Tensor::empty({1}, dtype), out = Tensor::empty({1}, dtype);
  *x.data_as<T>() = a;
  *y.data_as<T>() = b;
  KernelAttrs attrs;
  Tensor ins[] = {x, y};
  find_kernel(op)(std::span<const Tensor>(ins, 2), attrs, std::span<Tensor>(&out, 1));
  return *out.data_as<T>();
}

}  // namespace

TEST(IntegerOverflowKernels, WrapAroundLikeNumpy) {
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(run<int64_t>("relax.add", kMax64, 1, DataType::Int(64)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(run<int64_t>("relax.subtract", std::numeric_limits<int64_t>::min(), 1, DataType::Int(64)), kMax64);
  EXPECT_EQ(run<int64_t>("relax.multiply", int64_t(1) << 62, 4, DataType::Int(64)), 0);
  EXPECT_EQ(run<int32_t>("relax.add", std::numeric_limits<int32_t>::max(), 1, DataType::Int(32)),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(run<int8_t>("relax.add", 127, 1, DataType::Int(8)), -128);
  EXPECT_EQ(run<uint16_t>("relax.multiply", 65535, 65535, DataType::UInt(16)), 1);  // 65535^2 mod 2^16
  EXPECT_EQ(run<int64_t>("relax.add", 2, 3, DataType::Int(64)), 5);
}
