// 16-bit floating-point element types: IEEE 754 binary16 ("float16") and bfloat16 (float32's
// exponent with a 7-bit mantissa), stored as their bit patterns.
//
// Conversions follow IEEE 754: to a 16-bit format they round to nearest, ties to even; values
// beyond the largest finite number become +-inf; subnormals are produced and read exactly; a NaN
// stays a NaN of the same sign, keeping the leading payload bits (the quiet bit is set when the
// kept payload would be empty, so a NaN never turns into an infinity). Widening to float is exact.
// Narrowing from double or a 64-bit integer rounds once, never float first and then again (see
// round_to_odd_float).
#pragma once

#include <bit>
#include <cfloat>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>

namespace partita::runtime {

/// float -> binary16 bits, round to nearest even.
constexpr uint16_t float_to_half_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t exp = (x >> 23) & 0xffu;
  const uint32_t man = x & 0x7fffffu;
  if (exp == 0xffu) {
    if (man == 0) return sign | 0x7c00u;  // inf
    const uint16_t payload = uint16_t(man >> 13);
    return uint16_t(sign | 0x7c00u | (payload ? payload : 0x200u));
  }
  const int e = int(exp) - 127 + 15;  // the exponent rebiased for binary16
  if (e >= 31) return sign | 0x7c00u;
  if (e >= 1) {
    // Normal: drop 13 mantissa bits. A carry out of the mantissa moves into the exponent,
    // which is the right result (including 65520 and up becoming inf).
    uint32_t h = (uint32_t(e) << 10) | (man >> 13);
    const uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  // Subnormal or zero: the value is sig * 2^(exp - 150); in units of 2^-24 that is sig >> shift.
  // float subnormals (exp == 0) lie far below half the smallest binary16 subnormal.
  const int shift = 14 - e;
  if (exp == 0 || shift > 24) return sign;
  const uint32_t sig = man | 0x800000u;
  uint32_t h = sig >> shift;
  const uint32_t rest = sig & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // may carry into the smallest normal
  return uint16_t(sign | h);
}

/// binary16 bits -> float, exact.
constexpr float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in float.
  const float v = float(man) * 0x1p-24f;
  return sign ? -v : v;
}

/// float -> bfloat16 bits, round to nearest even.
constexpr uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: truncate the payload, keep it a NaN
    const uint16_t b = uint16_t(x >> 16);
    return (b & 0x7fu) ? b : uint16_t(b | 0x40u);
  }
  // Adding just under half a unit of the kept part, plus its lowest bit, rounds ties to even;
  // a carry runs into the exponent (the largest finite values round up to inf).
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// bfloat16 bits -> float, exact.
constexpr float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}

/// Rounds `d` to float "to odd": truncate toward zero, and if anything was dropped set the
/// lowest mantissa bit. Rounding that result to nearest even into any format with at least two
/// fewer significant bits than float (binary16, bfloat16) gives exactly the correctly rounded
/// value of `d`, which rounding to nearest float first would not (ties would be made twice).
inline float round_to_odd_float(double d) {
  if (!std::isfinite(d)) return static_cast<float>(d);  // inf and NaN carry over
  // Beyond FLT_MAX: FLT_MAX (odd) still rounds to inf in every narrower format.
  if (std::fabs(d) > double(FLT_MAX)) return std::signbit(d) ? -FLT_MAX : FLT_MAX;
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

/// Integers to float rounded to odd (see above); exact when the magnitude is below 2^24.
template <std::integral I>
float round_to_odd_float(I v) {
  bool negative = false;
  if constexpr (std::is_signed_v<I>) negative = v < 0;
  const uint64_t m = negative ? uint64_t(0) - uint64_t(int64_t(v)) : uint64_t(v);
  const int width = std::bit_width(m);
  float f;
  if (width <= 24) {
    f = float(m);
  } else {
    const int drop = width - 24;
    uint64_t kept = m >> drop;
    if (m & ((uint64_t(1) << drop) - 1)) kept |= 1;
    f = std::ldexp(float(kept), drop);  // kept < 2^24: both steps exact
  }
  return negative ? -f : f;
}

namespace half_detail {
/// Any arithmetic value narrowed to float so that a following round to nearest even into a
/// 16-bit format rounds only once.
template <class T>
float narrowing_source(T v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return round_to_odd_float(v);
}
}  // namespace half_detail

/// A binary16 element ("float16"). Deliberately no arithmetic: code computes in float.
struct Half {
  uint16_t bits = 0;

  static constexpr Half from_bits(uint16_t b) { return Half{b}; }
  /// Correctly rounded (to nearest even) from float, double or an integer.
  template <class T>
    requires std::is_arithmetic_v<T>
  static Half from(T v) {
    return Half{float_to_half_bits(half_detail::narrowing_source(v))};
  }
  constexpr float to_float() const { return half_bits_to_float(bits); }
};

/// A bfloat16 element. Deliberately no arithmetic: code computes in float.
struct BFloat16 {
  uint16_t bits = 0;

  static constexpr BFloat16 from_bits(uint16_t b) { return BFloat16{b}; }
  /// Correctly rounded (to nearest even) from float, double or an integer.
  template <class T>
    requires std::is_arithmetic_v<T>
  static BFloat16 from(T v) {
    return BFloat16{float_to_bfloat16_bits(half_detail::narrowing_source(v))};
  }
  constexpr float to_float() const { return bfloat16_bits_to_float(bits); }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "stored as their 16-bit patterns");

/// True for the 16-bit floating-point storage types above.
template <class T>
inline constexpr bool is_float16_storage_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

}  // namespace partita::runtime
