// A dense CPU tensor: shape, dtype and a reference-counted byte buffer, 64-byte aligned when
// allocated here; buffers shared from numpy/DLPack (runtime/dlpack.h) are element-aligned.
// Copies share the buffer (like NDArray); `copy()` makes a deep copy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "partita/runtime/data_type.h"

namespace partita {

class Tensor {
 public:
  Tensor() = default;
  /// Allocates an uninitialised tensor.
  static Tensor empty(std::vector<int64_t> shape, DataType dtype);
  /// Allocates and copies `nbytes` from `src` (which must hold exactly numel * element bytes).
  static Tensor from_bytes(std::vector<int64_t> shape, DataType dtype, const void* src, size_t nbytes);

  bool defined() const { return buffer_ != nullptr; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return int(shape_.size()); }
  DataType dtype() const { return dtype_; }
  int64_t numel() const;
  size_t nbytes() const { return size_t(numel()) * size_t(dtype_.bytes()); }
  void* data() const { return buffer_.get(); }
  template <class T>
  T* data_as() const { return static_cast<T*>(data()); }

  Tensor copy() const;
  /// Same bytes, shape and dtype.
  bool content_equal(const Tensor& other) const;
  /// A hash of shape, dtype and bytes. Large tensors hash an evenly spaced sample of their
  /// bytes (at most 16 KiB), so deduplicating ~100 MB of weights costs microseconds; equal
  /// hashes are always confirmed with content_equal, which compares every byte.
  size_t content_hash() const;
  /// True when two handles share one buffer.
  bool same_buffer(const Tensor& other) const { return buffer_ == other.buffer_; }

  /// A tensor over an existing buffer (a view or a recycled allocation); the buffer must hold
  /// at least numel * element bytes.
  static Tensor from_buffer(std::vector<int64_t> shape, DataType dtype, std::shared_ptr<uint8_t> buffer) {
    Tensor t;
    t.shape_ = std::move(shape);
    t.dtype_ = dtype;
    t.buffer_ = std::move(buffer);
    return t;
  }
  const std::shared_ptr<uint8_t>& buffer() const { return buffer_; }

 private:
  std::vector<int64_t> shape_;
  DataType dtype_;
  std::shared_ptr<uint8_t> buffer_;
};

}  // namespace partita
