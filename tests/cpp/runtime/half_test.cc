// float16 / bfloat16 conversions (runtime/half.h) against references built here from exact
// arithmetic: every binary16 bit pattern, every rounding tie between adjacent binary16 values,
// and bfloat16 against a nearest-candidate search.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "partita/runtime/half.h"

using namespace partita::runtime;

namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t b) { return std::bit_cast<float>(b); }

/// The value of a finite binary16 pattern, from the format's definition.
double half_reference_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  const double magnitude =
      exp == 0 ? std::ldexp(double(man), -24) : std::ldexp(double(1024 + man), exp - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

TEST(Half, EveryPatternWidensExactlyAndRoundTrips) {
  int nans = 0;
  for (uint32_t p = 0; p <= 0xffff; ++p) {
    const uint16_t h = uint16_t(p);
    const float f = half_bits_to_float(h);
    const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f && man != 0) {
      ++nans;
      EXPECT_TRUE(std::isnan(f)) << std::hex << p;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << p;
    } else if (exp == 0x1f) {
      EXPECT_TRUE(std::isinf(f)) << std::hex << p;
      EXPECT_EQ(f < 0, (h & 0x8000) != 0) << std::hex << p;
    } else {
      EXPECT_EQ(double(f), half_reference_value(h)) << std::hex << p;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << p;  // -0 stays -0
    }
    // Narrowing gives back the same bits, NaN payloads included.
    ASSERT_EQ(float_to_half_bits(f), h) << std::hex << p;
    EXPECT_EQ(Half::from(f).bits, h) << std::hex << p;
    EXPECT_EQ(bits_of(Half::from_bits(h).to_float()), bits_of(f)) << std::hex << p;
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(Half, EveryTieRoundsToEvenAndEveryNeighbourToNearest) {
  // Between each pair of adjacent non-negative binary16 values (the last pair ends at 65536,
  // where the format would continue; there the upper neighbour is inf).
  for (uint16_t h = 0; h < 0x7c00; ++h) {
    const double lo = half_reference_value(h);
    const double hi = h == 0x7bff ? 65536.0 : half_reference_value(uint16_t(h + 1));
    const float mid = float((lo + hi) / 2);  // needs 12 significant bits: exact in float
    ASSERT_EQ(double(mid), (lo + hi) / 2);
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : h;
    for (float sign : {1.0f, -1.0f}) {
      const uint16_t s = sign < 0 ? 0x8000 : 0;
      ASSERT_EQ(float_to_half_bits(sign * mid), s | even) << std::hex << h;
      ASSERT_EQ(float_to_half_bits(sign * std::nextafter(mid, INFINITY)), s | uint16_t(h + 1))
          << std::hex << h;
      ASSERT_EQ(float_to_half_bits(sign * std::nextafter(mid, 0.0f)), s | h) << std::hex << h;
      // From double, just either side of the tie: one rounding, not float's then binary16's.
      const double above = (lo + hi) / 2 * (1 + 0x1p-40), below = (lo + hi) / 2 * (1 - 0x1p-40);
      ASSERT_EQ(Half::from(sign * above).bits, s | uint16_t(h + 1)) << std::hex << h;
      ASSERT_EQ(Half::from(sign * below).bits, s | h) << std::hex << h;
      ASSERT_EQ(Half::from(double(sign * mid)).bits, s | even) << std::hex << h;
    }
  }
}

TEST(Half, OverflowUnderflowAndSpecialValues) {
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // the tie past the largest finite value
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(FLT_MAX), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-FLT_MAX), 0xfc00);
  EXPECT_EQ(float_to_half_bits(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000);  // half of it: tie to even (zero)
  EXPECT_EQ(float_to_half_bits(-0x1p-25f), 0x8000);
  EXPECT_EQ(float_to_half_bits(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(float_to_half_bits(0x1p-26f), 0x0000);
  EXPECT_EQ(float_to_half_bits(3 * 0x1p-25f), 0x0002);  // tie between 1 and 2 units: even
  EXPECT_EQ(float_to_half_bits(0x1.ff8p-15f), 0x03ff);  // largest subnormal
  EXPECT_EQ(float_to_half_bits(0x1.ffcp-15f), 0x0400);  // + half a unit: tie, carries to normal
  EXPECT_EQ(float_to_half_bits(float_of(0x00000001)), 0x0000);  // float subnormals vanish, signed
  EXPECT_EQ(float_to_half_bits(float_of(0x807fffff)), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2e66);

  // NaN stays NaN with its sign; a payload only in the dropped bits sets the quiet bit.
  EXPECT_EQ(float_to_half_bits(float_of(0x7fc00000)), 0x7e00);
  EXPECT_EQ(float_to_half_bits(float_of(0xffc00000)), 0xfe00);
  EXPECT_EQ(float_to_half_bits(float_of(0x7f800001)), 0x7e00);
  EXPECT_EQ(float_to_half_bits(float_of(0x7f802000)), 0x7c01);  // signalling payload kept
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7c01)));
  EXPECT_TRUE(std::isnan(Half::from(std::numeric_limits<double>::quiet_NaN()).to_float()));

  // From double: beyond float's range, and below binary16's.
  EXPECT_EQ(Half::from(std::numeric_limits<double>::infinity()).bits, 0x7c00);
  EXPECT_EQ(Half::from(-std::numeric_limits<double>::infinity()).bits, 0xfc00);
  EXPECT_EQ(Half::from(1e300).bits, 0x7c00);
  EXPECT_EQ(Half::from(-1e300).bits, 0xfc00);
  EXPECT_EQ(Half::from(1e-300).bits, 0x0000);
  EXPECT_EQ(Half::from(-1e-300).bits, 0x8000);
  EXPECT_EQ(Half::from(65519.999999).bits, 0x7bff);
  EXPECT_EQ(Half::from(65520.0).bits, 0x7c00);
}

TEST(Half, FromIntegers) {
  EXPECT_EQ(Half::from(0).bits, 0x0000);
  EXPECT_EQ(Half::from(-2048).bits, 0xe800);
  EXPECT_EQ(Half::from(2049).to_float(), 2048.0f);  // tie between 2048 and 2050: even
  EXPECT_EQ(Half::from(2051).to_float(), 2052.0f);  // tie: even
  EXPECT_EQ(Half::from(uint16_t(65504)).bits, 0x7bff);
  EXPECT_EQ(Half::from(uint16_t(65519)).bits, 0x7bff);
  EXPECT_EQ(Half::from(uint16_t(65520)).bits, 0x7c00);
  EXPECT_EQ(Half::from(std::numeric_limits<int64_t>::min()).bits, 0xfc00);
  EXPECT_EQ(Half::from(std::numeric_limits<uint64_t>::max()).bits, 0x7c00);
}

/// bfloat16 reference: the nearer of the two candidates around `f` (ties to the even one),
/// measured in double; inf past the largest finite value's rounding boundary.
uint16_t bfloat16_reference(float f) {
  const uint32_t x = bits_of(f);
  const uint16_t lo = uint16_t(x >> 16), hi = uint16_t(lo + 1);
  if ((x & 0xffff) == 0) return lo;
  const double v = std::fabs(double(f));
  const double vlo = std::fabs(double(bfloat16_bits_to_float(lo)));
  // The candidate above the largest finite value is inf; its rounding boundary is 2^128.
  const double vhi =
      (hi & 0x7fff) == 0x7f80 ? 0x1p128 : std::fabs(double(bfloat16_bits_to_float(hi)));
  if (v - vlo < vhi - v) return lo;
  if (v - vlo > vhi - v) return hi;
  return (lo & 1) ? hi : lo;
}

TEST(BFloat16, EveryPatternWidensExactlyAndRoundTrips) {
  for (uint32_t p = 0; p <= 0xffff; ++p) {
    const uint16_t b = uint16_t(p);
    const float f = bfloat16_bits_to_float(b);
    EXPECT_EQ(bits_of(f), p << 16);
    ASSERT_EQ(float_to_bfloat16_bits(f), b) << std::hex << p;
    // (double NaNs are left out: converting float to double already quiets signalling NaNs.)
    if (!std::isnan(f)) {
      EXPECT_EQ(BFloat16::from(double(f)).bits, b) << std::hex << p;
    }
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  std::mt19937 gen(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t x = gen();
    if (i % 4 == 0) x = (x & 0xffff0000u) | 0x8000u;  // many exact ties
    const float f = float_of(x);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16_bits(f), bfloat16_reference(f)) << std::hex << x;
  }
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3f808000)), 0x3f80);  // tie: even stays
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3f818000)), 0x3f82);  // tie: odd rounds up
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3f808001)), 0x3f81);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3f807fff)), 0x3f80);
  // The ONNX Cast test values that truncation and rounding disagree on.
  EXPECT_EQ(float_to_bfloat16_bits(0.48033667f), 0x3ef6);
  EXPECT_EQ(float_to_bfloat16_bits(0.49968487f), 0x3f00);
  EXPECT_EQ(float_to_bfloat16_bits(0.81910545f), 0x3f52);
}

TEST(BFloat16, OverflowUnderflowAndSpecialValues) {
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f7f8000)), 0x7f80);  // tie past the largest: inf
  EXPECT_EQ(float_to_bfloat16_bits(FLT_MAX), 0x7f80);
  EXPECT_EQ(float_to_bfloat16_bits(-FLT_MAX), 0xff80);
  EXPECT_EQ(float_to_bfloat16_bits(INFINITY), 0x7f80);
  EXPECT_EQ(float_to_bfloat16_bits(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bfloat16_bits(-0.0f), 0x8000);
  // Subnormals are kept and rounded like any other value.
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00010000)), 0x0001);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00008000)), 0x0000);  // tie: even
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00018000)), 0x0002);  // tie: even
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x80008001)), 0x8001);
  // The largest float subnormal carries into the smallest normal.
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x007fffff)), 0x0080);
  // NaN: sign and leading payload kept, never turned into inf.
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7fc00000)), 0x7fc0);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0xffc00000)), 0xffc0);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f800001)), 0x7fc0);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7fffffff)), 0x7fff);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f810000)), 0x7f81);
}

TEST(BFloat16, FromDoubleAndIntegersRoundOnce) {
  // 1 + 2^-8 is the tie between 1 and 1 + 2^-7; a hair above it must round up, though rounding
  // to float first would land on the tie and then round to even (down).
  EXPECT_EQ(BFloat16::from(1 + 0x1p-8 + 0x1p-40).bits, 0x3f81);
  EXPECT_EQ(BFloat16::from(1 + 0x1p-8 - 0x1p-40).bits, 0x3f80);
  EXPECT_EQ(BFloat16::from(1 + 0x1p-8).bits, 0x3f80);
  EXPECT_EQ(BFloat16::from(1e300).bits, 0x7f80);
  EXPECT_EQ(BFloat16::from(-1e300).bits, 0xff80);
  EXPECT_EQ(BFloat16::from(1e-300).bits, 0x0000);
  EXPECT_EQ(BFloat16::from(-1e-300).bits, 0x8000);
  EXPECT_EQ(BFloat16::from(0x1p-133).bits, 0x0001);                  // smallest subnormal
  EXPECT_EQ(BFloat16::from(0x1p-134 * (1 + 0x1p-30)).bits, 0x0001);  // just over its half
  EXPECT_EQ(BFloat16::from(0x1p-134).bits, 0x0000);                  // exactly its half: even

  const int64_t p60 = int64_t(1) << 60, p52 = int64_t(1) << 52, p53 = int64_t(1) << 53;
  EXPECT_EQ(BFloat16::from(p60 + p52 + 1).to_float(), float(p60 + p53));  // above the tie
  EXPECT_EQ(BFloat16::from(p60 + p52).to_float(), float(p60));            // the tie: even
  EXPECT_EQ(BFloat16::from(-(p60 + p52 + 1)).to_float(), -float(p60 + p53));
  EXPECT_EQ(BFloat16::from(std::numeric_limits<int64_t>::min()).bits, 0xdf00);   // -2^63, exact
  EXPECT_EQ(BFloat16::from(std::numeric_limits<uint64_t>::max()).bits, 0x5f80);  // 2^64
  EXPECT_EQ(BFloat16::from(int32_t(257)).bits, 0x4380);  // tie between 256 and 258: even
  EXPECT_EQ(BFloat16::from(int32_t(259)).bits, 0x4382);  // tie: even (260)
}

TEST(RoundToOdd, MarksInexactResults) {
  EXPECT_EQ(round_to_odd_float(1.0), 1.0f);
  EXPECT_EQ(bits_of(round_to_odd_float(1 + 0x1p-40)), 0x3f800001u);
  EXPECT_EQ(bits_of(round_to_odd_float(-(1 + 0x1p-40))), 0xbf800001u);
  // Just below 1 + 2^-23 rounds to nearest up to it, but to odd down to 1 and then marked.
  EXPECT_EQ(bits_of(round_to_odd_float(1 + 0x1p-23 - 0x1p-40)), 0x3f800001u);
  // Just below 1 + 2^-22: truncated to 1 + 2^-23 (already odd).
  EXPECT_EQ(bits_of(round_to_odd_float(1 + 0x1p-22 - 0x1p-40)), 0x3f800001u);
  // Just above 1 + 2^-22 (even): marked odd instead of rounding to it.
  EXPECT_EQ(bits_of(round_to_odd_float(1 + 0x1p-22 + 0x1p-40)), 0x3f800003u);
  EXPECT_EQ(round_to_odd_float(1e300), FLT_MAX);
  EXPECT_EQ(bits_of(round_to_odd_float(1e-300)), 0x00000001u);
  EXPECT_EQ(bits_of(round_to_odd_float(-1e-300)), 0x80000001u);
  EXPECT_EQ(round_to_odd_float(std::numeric_limits<double>::infinity()), INFINITY);
  EXPECT_EQ(round_to_odd_float(-std::numeric_limits<double>::infinity()), -INFINITY);
  EXPECT_TRUE(std::isnan(round_to_odd_float(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(round_to_odd_float(int64_t(1) << 40), 0x1p40f);
  EXPECT_EQ(bits_of(round_to_odd_float((int64_t(1) << 40) + 1)), bits_of(0x1p40f) | 1u);
  EXPECT_EQ(round_to_odd_float(int32_t(-16777215)), -16777215.0f);
}

}  // namespace
