// Where a tensor's memory lives. Device kinds are DLPack's device types (the values of
// DLDeviceType in dlpack.h, checked in dlpack.cc), so a Device converts to and from a DLDevice
// without a table, and the numbers users see from PyTorch's __dlpack_device__ are ours.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace partita {

enum class DeviceKind : int32_t {
  kCPU = 1,
  kCUDA = 2,
  kCUDAHost = 3,  // page-locked host memory registered with CUDA (readable by host code)
  kOpenCL = 4,
  kVulkan = 7,
  kMetal = 8,
  kVPI = 9,
  kROCM = 10,
  kROCMHost = 11,
  kExtDev = 12,
  kCUDAManaged = 13,
};

/// A device: a kind and an index among the devices of that kind ("cuda:1").
struct Device {
  DeviceKind kind = DeviceKind::kCPU;
  int32_t id = 0;

  static Device cpu(int32_t id = 0) { return {DeviceKind::kCPU, id}; }
  static Device cuda(int32_t id = 0) { return {DeviceKind::kCUDA, id}; }

  bool operator==(const Device& o) const = default;
  /// Host code may read and write this memory directly (the CPU, pinned host memory).
  bool is_host_accessible() const {
    return kind == DeviceKind::kCPU || kind == DeviceKind::kCUDAHost || kind == DeviceKind::kROCMHost;
  }
  bool is_cpu() const { return kind == DeviceKind::kCPU; }
  /// "cpu:0", "cuda:1" (the spelling of TVM's vdevice strings).
  std::string str() const;
  /// Parses "cuda", "cuda:1", "cpu" (a kind name, optionally ":index"). Error("ValueError")
  /// naming the text and the known kinds otherwise.
  static Device parse(std::string_view text);
};

/// "cpu", "cuda", "cuda_host", ... (TVM's names); "device_type_<n>" for values without one.
std::string device_kind_name(DeviceKind kind);
/// True for the values above (those DLPack 0.6 defines).
bool is_known_device_kind(int32_t value);

}  // namespace partita

template <>
struct std::hash<partita::Device> {
  size_t operator()(const partita::Device& d) const noexcept {
    return std::hash<int64_t>()((int64_t(d.kind) << 32) | uint32_t(d.id));
  }
};
