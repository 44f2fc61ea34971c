#include "partita/runtime/tensor.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>

#include "partita/support/error.h"

namespace partita {

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

Tensor Tensor::empty(std::vector<int64_t> shape, DataType dtype) {
  for (int64_t d : shape)
    if (d < 0) throw_error("ValueError", "tensor dimension must be non-negative, got " + std::to_string(d));
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  size_t bytes = t.nbytes();
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw_error("MemoryError", "cannot allocate " + std::to_string(bytes) + " bytes");
  t.buffer_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
  return t;
}

Tensor Tensor::from_bytes(std::vector<int64_t> shape, DataType dtype, const void* src, size_t nbytes) {
  Tensor t = empty(std::move(shape), dtype);
  if (nbytes != t.nbytes())
    throw_error("ValueError", "tensor of " + std::to_string(t.nbytes()) + " bytes given " +
                                  std::to_string(nbytes) + " bytes of data");
  if (nbytes) std::memcpy(t.data(), src, nbytes);
  return t;
}

Tensor Tensor::copy() const {
  if (!defined()) return {};
  return from_bytes(shape_, dtype_, data(), nbytes());
}

bool Tensor::content_equal(const Tensor& o) const {
  if (!defined() || !o.defined()) return defined() == o.defined();
  return shape_ == o.shape_ && dtype_ == o.dtype_ &&
         (same_buffer(o) || std::memcmp(data(), o.data(), nbytes()) == 0);
}

size_t Tensor::content_hash() const {
  size_t h = std::hash<DataType>()(dtype_);
  for (int64_t d : shape_) h = h * 31 + size_t(d);
  if (defined())
    h ^= std::hash<std::string_view>()(std::string_view(static_cast<const char*>(data()), nbytes())) + 0x9e3779b9 + (h << 6);
  return h;
}

}  // namespace partita
