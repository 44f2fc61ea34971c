// Little-endian binary writing and bounds-checked reading, for artifacts and module blobs.
// A Reader never reads past its end: a short or malformed input throws Error("ValueError")
// naming `what` was being read, so corrupted files give clean errors.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "partita/runtime/tensor.h"
#include "partita/support/error.h"

namespace partita::runtime {

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <class T>
    requires std::is_arithmetic_v<T>
  void pod(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void u8(uint8_t v) { pod(v); }
  void u32(uint32_t v) { pod(v); }
  void i64(int64_t v) { pod(v); }
  void u64(uint64_t v) { pod(v); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void i64s(const std::vector<int64_t>& v) {
    u64(v.size());
    for (int64_t x : v) i64(x);
  }
  void tensor(const Tensor& t);
  std::string& out() { return out_; }

 private:
  std::string& out_;
};

class Reader {
 public:
  Reader(std::string_view data, std::string context) : data_(data), context_(std::move(context)) {}
  template <class T>
    requires std::is_arithmetic_v<T>
  T pod(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  uint8_t u8(const char* what) { return pod<uint8_t>(what); }
  uint32_t u32(const char* what) { return pod<uint32_t>(what); }
  int64_t i64(const char* what) { return pod<int64_t>(what); }
  uint64_t u64(const char* what) { return pod<uint64_t>(what); }
  /// A count of items each at least `min_item_bytes` long; checked against the bytes left.
  uint64_t count(const char* what, size_t min_item_bytes = 1);
  std::string str(const char* what);
  std::string_view bytes(size_t n, const char* what) {
    need(n, what);
    std::string_view v = data_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::vector<int64_t> i64s(const char* what);
  Tensor tensor(const char* what);
  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }
  [[noreturn]] void fail(const std::string& message) const;

 private:
  void need(size_t n, const char* what) const {
    if (n > data_.size() - pos_)
      fail(std::string("unexpected end of data while reading ") + what + " (need " + std::to_string(n) +
           " bytes, " + std::to_string(data_.size() - pos_) + " left)");
  }
  std::string_view data_;
  size_t pos_ = 0;
  std::string context_;
};

/// FNV-1a 64-bit, the artifact checksum.
uint64_t fnv1a64(std::string_view data);

}  // namespace partita::runtime
