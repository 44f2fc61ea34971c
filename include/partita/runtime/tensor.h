// A dense tensor: shape, dtype, device and a reference-counted byte buffer on that device
// (CPU unless asked otherwise), 64-byte aligned when allocated here; buffers shared from
// numpy/DLPack (runtime/dlpack.h) are element-aligned. Copies share the buffer (like NDArray);
// `copy()` makes a deep copy, `to(device)` a copy on another device.
//
// `data()` of a tensor on a device host code cannot read (CUDA) is a device pointer: only that
// device's API and kernels may dereference it. Copies between devices go through the device
// API (runtime/device_api.h): they return when host memory involved is complete; device to
// device copies are queued on the current stream of the destination device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "partita/runtime/data_type.h"
#include "partita/runtime/device.h"

namespace partita {

class Tensor {
 public:
  Tensor() = default;
  /// Allocates an uninitialised tensor on `device` (through its device API, which loads the
  /// device's plug-in on first use; Error("RuntimeError") when the device is missing).
  static Tensor empty(std::vector<int64_t> shape, DataType dtype, Device device = {});
  /// Allocates and copies `nbytes` from `src` (which must hold exactly numel * element bytes).
  static Tensor from_bytes(std::vector<int64_t> shape, DataType dtype, const void* src, size_t nbytes);

  bool defined() const { return buffer_ != nullptr; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return int(shape_.size()); }
  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t numel() const;
  size_t nbytes() const { return size_t(numel()) * size_t(dtype_.bytes()); }
  void* data() const { return buffer_.get(); }
  template <class T>
  T* data_as() const { return static_cast<T*>(data()); }

  /// A deep copy on the same device.
  Tensor copy() const;
  /// This tensor on `device`: itself when it is already there, a copy otherwise.
  Tensor to(Device device) const;
  /// Overwrites this tensor's bytes with `src`'s (any devices). Error("ValueError") unless
  /// both have the same dtype and number of elements.
  void copy_from(const Tensor& src);
  /// Same bytes, shape, dtype and device (bytes on a device are compared through host copies).
  bool content_equal(const Tensor& other) const;
  /// A hash of shape, dtype and bytes. Large tensors hash an evenly spaced sample of their
  /// bytes (at most 16 KiB), so deduplicating ~100 MB of weights costs microseconds; equal
  /// hashes are always confirmed with content_equal, which compares every byte.
  size_t content_hash() const;
  /// True when two handles share one buffer.
  bool same_buffer(const Tensor& other) const { return buffer_ == other.buffer_; }

  /// A tensor over an existing buffer on `device` (a view or a recycled allocation); the buffer
  /// must hold at least numel * element bytes.
  static Tensor from_buffer(std::vector<int64_t> shape, DataType dtype, std::shared_ptr<uint8_t> buffer,
                            Device device = {}) {
    Tensor t;
    t.shape_ = std::move(shape);
    t.dtype_ = dtype;
    t.buffer_ = std::move(buffer);
    t.device_ = device;
    return t;
  }
  /// The same buffer, device and dtype under another shape (no check of the element count).
  Tensor view(std::vector<int64_t> shape) const { return from_buffer(std::move(shape), dtype_, buffer_, device_); }
  /// The bytes from `byte_offset` on under `shape` (a contiguous slice; the caller checks the
  /// size). The view keeps the whole buffer alive; its data() is the buffer's plus the offset.
  Tensor view(std::vector<int64_t> shape, size_t byte_offset) const {
    return from_buffer(std::move(shape), dtype_, std::shared_ptr<uint8_t>(buffer_, buffer_.get() + byte_offset), device_);
  }
  const std::shared_ptr<uint8_t>& buffer() const { return buffer_; }

 private:
  std::vector<int64_t> shape_;
  DataType dtype_;
  std::shared_ptr<uint8_t> buffer_;
  Device device_;
};

}  // namespace partita
