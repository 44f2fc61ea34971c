// Host kernels on float16, bfloat16 and uint16: astype between them and the other dtypes,
// maximum/minimum (with broadcasting), and the "not supported on the host" error for kernels
// that do not take the 16-bit floating-point types.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "partita/runtime/half.h"
#include "partita/runtime/kernel.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

const DataType f16 = DataType::Float(16), bf16 = DataType::BFloat16(), f32 = DataType::Float(32),
               f64 = DataType::Float(64), i32 = DataType::Int(32), u16 = DataType::UInt(16),
               boolean = DataType::Bool();

template <class T>
Tensor tensor_of(std::vector<int64_t> shape, DataType dt, const std::vector<T>& values) {
  return Tensor::from_bytes(std::move(shape), dt, values.data(), values.size() * sizeof(T));
}
template <class T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data_as<T>(), t.data_as<T>() + t.numel());
}
Tensor run(const std::string& op, std::vector<Tensor> in, std::vector<int64_t> shape, DataType dt) {
  std::vector<Tensor> out = {Tensor::empty(std::move(shape), dt)};
  run_kernel(op, in, KernelAttrs{}, out);
  return out[0];
}
std::vector<uint16_t> bits_of(const std::vector<Half>& v) {
  std::vector<uint16_t> b;
  for (Half h : v) b.push_back(h.bits);
  return b;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN(),
            kInf = std::numeric_limits<float>::infinity();

TEST(Float16Kernels, AstypeFloatToFloat16AndBack) {
  const std::vector<float> x = {1.0f,         -2.5f, 0.1f,         65504.0f,        65520.0f,
                                1e10f,        -kInf, kNaN,         0x1p-24f,        0x1p-25f,
                                3 * 0x1p-25f, -0.0f, 1 + 0x1p-11f, 1 + 3 * 0x1p-11f};
  // binary16 bits worked out by hand: ties (65520, 2^-25, 3 * 2^-25, 1 + 2^-11, 1 + 3 * 2^-11)
  // go to the even neighbour.
  const std::vector<uint16_t> want = {0x3c00, 0xc100, 0x2e66, 0x7bff, 0x7c00, 0x7c00, 0xfc00,
                                      0x7e00, 0x0001, 0x0000, 0x0002, 0x8000, 0x3c00, 0x3c02};
  Tensor h = run("relax.astype", {tensor_of<float>({2, 7}, f32, x)}, {2, 7}, f16);
  EXPECT_EQ(h.dtype(), f16);
  EXPECT_EQ(values_of<uint16_t>(h), want);

  Tensor back = run("relax.astype", {h}, {2, 7}, f32);
  std::vector<float> got = values_of<float>(back);
  for (size_t i = 0; i < want.size(); ++i) {
    float expect = half_bits_to_float(want[i]);
    if (std::isnan(expect))
      EXPECT_TRUE(std::isnan(got[i])) << i;
    else
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(expect)) << i;
  }
}

TEST(Float16Kernels, AstypeAgreesWithTheConversionsOnRandomData) {
  std::mt19937 gen(11);
  std::vector<float> x(4096);
  for (float& v : x) v = std::bit_cast<float>(uint32_t(gen()));
  Tensor in = tensor_of<float>({64, 64}, f32, x);
  std::vector<uint16_t> h = values_of<uint16_t>(run("relax.astype", {in}, {64, 64}, f16));
  std::vector<uint16_t> b = values_of<uint16_t>(run("relax.astype", {in}, {64, 64}, bf16));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(h[i], float_to_half_bits(x[i])) << i;
    ASSERT_EQ(b[i], float_to_bfloat16_bits(x[i])) << i;
  }
}

TEST(Float16Kernels, AstypeDoubleRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the binary16 tie 1 + 2^-11; via float it would be the tie.
  const std::vector<double> x = {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 1 + 0x1p-8 + 0x1p-40, 1e300};
  Tensor in = tensor_of<double>({4}, f64, x);
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {in}, {4}, f16)),
            (std::vector<uint16_t>{0x3c01, 0x3c00, 0x3c04, 0x7c00}));
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {in}, {4}, bf16)),
            (std::vector<uint16_t>{0x3f80, 0x3f80, 0x3f81, 0x7f80}));
  // And back to double, exactly.
  Tensor h = tensor_of<uint16_t>({3}, f16, {0x3c01, 0x0001, 0xfc00});
  EXPECT_EQ(values_of<double>(run("relax.astype", {h}, {3}, f64)),
            (std::vector<double>{1 + 0x1p-10, 0x1p-24, -std::numeric_limits<double>::infinity()}));
}

TEST(Float16Kernels, AstypeIntegersBoolAndBetween16BitFormats) {
  Tensor ints = tensor_of<int32_t>({5}, i32, {0, -3, 2049, 70000, 257});
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {ints}, {5}, f16)),
            (std::vector<uint16_t>{0x0000, 0xc200, 0x6800, 0x7c00, 0x5c04}));
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {ints}, {5}, bf16)),
            (std::vector<uint16_t>{0x0000, 0xc040, 0x4500, 0x4789, 0x4380}));
  Tensor u = tensor_of<uint16_t>({3}, u16, {65535, 40000, 7});
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {u}, {3}, f16)),
            (std::vector<uint16_t>{0x7c00, 0x78e2, 0x4700}));

  // To integers: truncation toward zero, as from float.
  Tensor h = tensor_of<uint16_t>({4}, f16, {0x4100 /*2.5*/, 0xc100 /*-2.5*/, 0x7bff, 0x3c00});
  EXPECT_EQ(values_of<int32_t>(run("relax.astype", {h}, {4}, i32)),
            (std::vector<int32_t>{2, -2, 65504, 1}));
  // To bool: zero of either sign is false, NaN is true.
  Tensor z = tensor_of<uint16_t>({4}, bf16, {0x0000, 0x8000, 0x7fc0, 0x0001});
  EXPECT_EQ(values_of<uint8_t>(run("relax.astype", {z}, {4}, boolean)),
            (std::vector<uint8_t>{0, 0, 1, 1}));
  Tensor b = tensor_of<uint8_t>({2}, boolean, {1, 0});
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {b}, {2}, f16)),
            (std::vector<uint16_t>{0x3c00, 0x0000}));

  // float16 <-> bfloat16: 1 + 2^-10 is below bfloat16's precision; 2^-24 is a normal bfloat16;
  // 1e38 (bfloat16) overflows float16.
  Tensor hv = tensor_of<uint16_t>({3}, f16, {0x3c01, 0x0001, 0x7c00});
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {hv}, {3}, bf16)),
            (std::vector<uint16_t>{0x3f80, 0x3380, 0x7f80}));
  Tensor bv = tensor_of<uint16_t>({2}, bf16, {0x7e96, 0x3f81});
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {bv}, {2}, f16)),
            (std::vector<uint16_t>{0x7c00, 0x3c08}));
  // Same dtype: the bits, NaN payload included.
  Tensor nan = tensor_of<uint16_t>({1}, f16, {0x7c01});
  EXPECT_EQ(values_of<uint16_t>(run("relax.astype", {nan}, {1}, f16)),
            (std::vector<uint16_t>{0x7c01}));
}

std::vector<Half> halves(const std::vector<float>& v) {
  std::vector<Half> out;
  for (float f : v) out.push_back(Half::from(f));
  return out;
}

TEST(Float16Kernels, MaximumMinimumMatchFloat32) {
  // (2, 3) against (3,): broadcasting; NaN, signed zeros, infinities, subnormals.
  const std::vector<float> a = {1.5f, -kInf, kNaN, 0.0f, 0x1p-24f, -7.0f};
  const std::vector<float> b = {-0.0f, 3.25f, 2.0f};
  for (const char* op : {"relax.maximum", "relax.minimum"}) {
    Tensor ref =
        run(op, {tensor_of<float>({2, 3}, f32, a), tensor_of<float>({3}, f32, b)}, {2, 3}, f32);
    std::vector<uint16_t> want = bits_of(halves(values_of<float>(ref)));

    Tensor got =
        run(op, {tensor_of<Half>({2, 3}, f16, halves(a)), tensor_of<Half>({3}, f16, halves(b))},
            {2, 3}, f16);
    EXPECT_EQ(values_of<uint16_t>(got), want) << op;

    std::vector<BFloat16> ab, bb;
    for (float f : a) ab.push_back(BFloat16::from(f));
    for (float f : b) bb.push_back(BFloat16::from(f));
    Tensor gotb =
        run(op, {tensor_of<BFloat16>({2, 3}, bf16, ab), tensor_of<BFloat16>({3}, bf16, bb)}, {2, 3},
            bf16);
    std::vector<float> fb = values_of<float>(ref);
    for (size_t i = 0; i < fb.size(); ++i)
      EXPECT_EQ(gotb.data_as<BFloat16>()[i].bits, float_to_bfloat16_bits(fb[i])) << op << " " << i;
  }
  // Spelled out: maximum of 1.5 and -0.0 is 1.5, minimum of 2^-24 and 3.25 is 2^-24.
  Tensor mx =
      run("relax.maximum",
          {tensor_of<Half>({1}, f16, halves({1.5f})), tensor_of<Half>({1}, f16, halves({-0.0f}))},
          {1}, f16);
  EXPECT_EQ(values_of<uint16_t>(mx), (std::vector<uint16_t>{0x3e00}));
  Tensor mn = run(
      "relax.minimum",
      {tensor_of<Half>({1}, f16, halves({0x1p-24f})), tensor_of<Half>({1}, f16, halves({3.25f}))},
      {1}, f16);
  EXPECT_EQ(values_of<uint16_t>(mn), (std::vector<uint16_t>{0x0001}));
}

TEST(Float16Kernels, MaximumMinimumUInt16) {
  // Values above 32767 would compare wrongly as int16.
  Tensor a = tensor_of<uint16_t>({4}, u16, {40000, 1, 65535, 0});
  Tensor b = tensor_of<uint16_t>({4}, u16, {1000, 2, 32768, 65535});
  EXPECT_EQ(values_of<uint16_t>(run("relax.maximum", {a, b}, {4}, u16)),
            (std::vector<uint16_t>{40000, 2, 65535, 65535}));
  EXPECT_EQ(values_of<uint16_t>(run("relax.minimum", {a, b}, {4}, u16)),
            (std::vector<uint16_t>{1000, 1, 32768, 0}));
}

TEST(Float16Kernels, OtherKernelsStillRejectFloat16) {
  Tensor h = tensor_of<uint16_t>({2}, f16, {0x3c00, 0x4000});
  try {
    run("relax.add", {h, h}, {2}, f16);
    FAIL() << "expected a TypeError";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dtype float16 is not supported on the host"),
              std::string::npos)
        << e.what();
  }
  Tensor b = tensor_of<uint16_t>({2}, bf16, {0x3f80, 0x4000});
  try {
    run("relax.exp", {b}, {2}, bf16);
    FAIL() << "expected a TypeError";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dtype bfloat16 is not supported on the host"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
