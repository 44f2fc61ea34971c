#include "partita/runtime/serialize.h"

namespace partita::runtime {

void Writer::tensor(const Tensor& device_tensor) {
  // Artifacts hold bytes, not device memory: a tensor on a device is written from a host copy.
  const Tensor t = device_tensor.defined() ? device_tensor.to(Device::cpu()) : device_tensor;
  u8(uint8_t(t.dtype().code()));
  u8(uint8_t(t.dtype().bits()));
  pod<uint16_t>(uint16_t(t.dtype().lanes()));
  i64s(t.shape());
  u64(t.nbytes());
  if (t.nbytes()) out_.append(static_cast<const char*>(t.data()), t.nbytes());
}

void Reader::fail(const std::string& message) const {
  throw_error("ValueError", context_ + ": " + message + " at byte " + std::to_string(pos_));
}

uint64_t Reader::count(const char* what, size_t min_item_bytes) {
  uint64_t n = u64(what);
  if (min_item_bytes && n > remaining() / min_item_bytes)
    fail(std::string("count of ") + what + " (" + std::to_string(n) + ") exceeds the data left");
  return n;
}

std::string Reader::str(const char* what) {
  uint64_t n = count(what);
  return std::string(bytes(n, what));
}

std::vector<int64_t> Reader::i64s(const char* what) {
  uint64_t n = count(what, 8);
  std::vector<int64_t> v(n);
  for (auto& x : v) x = i64(what);
  return v;
}

Tensor Reader::tensor(const char* what) {
  uint8_t code = u8(what), bits = u8(what);
  uint16_t lanes = pod<uint16_t>(what);
  DataType dtype(DataType::Code(code), bits, lanes);
  if (!(code <= 4) || lanes != 1 || !(bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64))
    fail(std::string("bad dtype in ") + what);
  std::vector<int64_t> shape = i64s(what);
  uint64_t expect = uint64_t(dtype.bytes());
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && expect > (uint64_t(1) << 62) / uint64_t(d)))
      fail(std::string("bad shape in ") + what);
    expect *= uint64_t(d);
  }
  uint64_t n = u64(what);
  if (n != expect) fail(std::string("byte count of ") + what + " does not match its shape");
  std::string_view b = bytes(n, what);
  return Tensor::from_bytes(std::move(shape), dtype, b.data(), b.size());
}

uint64_t fnv1a64(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace partita::runtime
