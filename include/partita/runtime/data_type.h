// Element types of tensors and scalars, spelled as TVM spells them ("float32", "int64", "bool").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace partita {

class DataType {
 public:
  // Codes follow DLPack so tensors can be exchanged without translation.
  enum class Code : uint8_t { Int = 0, UInt = 1, Float = 2, Handle = 3, BFloat = 4, Void = 255 };

  constexpr DataType() = default;  // void: "no dtype", printed as None
  constexpr DataType(Code code, uint8_t bits, uint16_t lanes = 1)
      : code_(code), bits_(bits), lanes_(lanes) {}

  static constexpr DataType Void() { return {}; }
  static constexpr DataType Float(int bits) { return {Code::Float, uint8_t(bits)}; }
  static constexpr DataType Int(int bits) { return {Code::Int, uint8_t(bits)}; }
  static constexpr DataType UInt(int bits) { return {Code::UInt, uint8_t(bits)}; }
  static constexpr DataType BFloat16() { return {Code::BFloat, 16}; }
  static constexpr DataType Bool() { return {Code::UInt, 1}; }

  /// Parses "float32", "int64", "bool", "bfloat16", "" (void). Throws Error("TypeError") otherwise.
  static DataType parse(std::string_view text);
  /// True if `text` names a supported dtype.
  static bool is_valid(std::string_view text);

  constexpr Code code() const { return code_; }
  constexpr int bits() const { return bits_; }
  constexpr int lanes() const { return lanes_; }
  constexpr bool is_void() const { return code_ == Code::Void; }
  constexpr bool is_float() const { return code_ == Code::Float || code_ == Code::BFloat; }
  constexpr bool is_int() const { return code_ == Code::Int; }
  constexpr bool is_uint() const { return code_ == Code::UInt && bits_ != 1; }
  constexpr bool is_bool() const { return code_ == Code::UInt && bits_ == 1; }
  /// Storage size of one element in bytes (bool takes one byte).
  constexpr int bytes() const { return bits_ == 1 ? 1 : (bits_ + 7) / 8; }

  std::string str() const;  // "" for void

  friend constexpr bool operator==(DataType a, DataType b) {
    return a.code_ == b.code_ && a.bits_ == b.bits_ && a.lanes_ == b.lanes_;
  }

 private:
  Code code_ = Code::Void;
  uint8_t bits_ = 0;
  uint16_t lanes_ = 0;
};

}  // namespace partita

template <>
struct std::hash<partita::DataType> {
  size_t operator()(partita::DataType t) const {
    return (size_t(t.code()) << 24) ^ (size_t(t.bits()) << 16) ^ size_t(t.lanes());
  }
};
