#include "partita/runtime/tensor.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>

#include "partita/runtime/device_api.h"
#include "partita/support/error.h"
#include "host_allocation.h"

namespace partita {

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

Tensor Tensor::empty(std::vector<int64_t> shape, DataType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) throw_error("ValueError", "tensor dimension must be non-negative, got " + std::to_string(d));
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  size_t bytes = t.nbytes();
  if (device.is_cpu()) {
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded == 0) rounded = 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw_error("MemoryError", "cannot allocate " + std::to_string(bytes) + " bytes");
    auto* base = static_cast<uint8_t*>(p);
    t.buffer_ = std::shared_ptr<uint8_t>(base, runtime::HostAllocation{base, rounded});
    return t;
  }
  runtime::DeviceAPI* api = runtime::device_api(device);
  void* p = api->alloc(device.id, bytes);
  // Device APIs live as long as the process, so the deleter may hold the pointer.
  t.buffer_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [api, id = device.id](uint8_t* q) { api->free(id, q); });
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
  if (device_.is_cpu()) return from_bytes(shape_, dtype_, data(), nbytes());
  Tensor out = empty(shape_, dtype_, device_);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(Device device) const {
  if (!defined() || device == device_) return *this;
  Tensor out = empty(shape_, dtype_, device);
  out.copy_from(*this);
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  if (!defined() || !src.defined()) throw_error("ValueError", "copy_from: both tensors must be defined");
  if (!(dtype_ == src.dtype_) || numel() != src.numel())
    throw_error("ValueError", "copy_from: cannot copy a " + src.dtype_.str() + " tensor of " + std::to_string(src.numel()) +
                                  " elements into a " + dtype_.str() + " tensor of " + std::to_string(numel()));
  if (data() == src.data() && device_ == src.device_) return;
  runtime::copy_bytes(src.data(), src.device_, data(), device_, nbytes());
}

bool Tensor::content_equal(const Tensor& o) const {
  if (!defined() || !o.defined()) return defined() == o.defined();
  if (!(shape_ == o.shape_ && dtype_ == o.dtype_ && device_ == o.device_)) return false;
  if (same_buffer(o)) return true;
  if (!device_.is_host_accessible()) return to(Device::cpu()).content_equal(o.to(Device::cpu()));
  return std::memcmp(data(), o.data(), nbytes()) == 0;
}

size_t Tensor::content_hash() const {
  size_t h = std::hash<DataType>()(dtype_);
  for (int64_t d : shape_) h = h * 31 + size_t(d);
  h = h * 31 + size_t(device_.kind) * 1009 + size_t(device_.id);
  if (!defined()) return h;
  if (!device_.is_host_accessible()) return to(Device::cpu()).content_hash() ^ h;
  const char* bytes = static_cast<const char*>(data());
  constexpr size_t kChunk = 64, kChunks = 256;
  size_t n = nbytes();
  std::string sample;
  if (n > kChunk * kChunks) {
    sample.reserve(kChunk * kChunks);
    size_t stride = (n - kChunk) / (kChunks - 1);  // the first and the last chunk are included
    for (size_t i = 0; i < kChunks; ++i) sample.append(bytes + i * stride, kChunk);
  }
  std::string_view hashed = sample.empty() ? std::string_view(bytes, n) : std::string_view(sample);
  return h ^ (std::hash<std::string_view>()(hashed) + 0x9e3779b9 + (h << 6) + (h >> 2));
}

}  // namespace partita
