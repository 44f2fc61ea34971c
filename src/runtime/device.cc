#include "partita/runtime/device.h"

#include <charconv>
#include <utility>

#include "partita/support/error.h"

namespace partita {

namespace {
constexpr std::pair<DeviceKind, const char*> kKindNames[] = {
    {DeviceKind::kCPU, "cpu"},           {DeviceKind::kCUDA, "cuda"},
    {DeviceKind::kCUDAHost, "cuda_host"}, {DeviceKind::kOpenCL, "opencl"},
    {DeviceKind::kVulkan, "vulkan"},     {DeviceKind::kMetal, "metal"},
    {DeviceKind::kVPI, "vpi"},           {DeviceKind::kROCM, "rocm"},
    {DeviceKind::kROCMHost, "rocm_host"}, {DeviceKind::kExtDev, "ext_dev"},
    {DeviceKind::kCUDAManaged, "cuda_managed"},
};
}  // namespace

std::string device_kind_name(DeviceKind kind) {
  for (auto& [k, name] : kKindNames)
    if (k == kind) return name;
  return "device_type_" + std::to_string(int32_t(kind));
}

bool is_known_device_kind(int32_t value) {
  for (auto& [k, name] : kKindNames)
    if (int32_t(k) == value) return true;
  return false;
}

std::string Device::str() const { return device_kind_name(kind) + ":" + std::to_string(id); }

Device Device::parse(std::string_view text) {
  std::string_view name = text, index;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    index = text.substr(colon + 1);
  }
  auto bad = [&](const std::string& why) -> Device {
    std::string known;
    for (auto& [k, n] : kKindNames) known += (known.empty() ? "" : ", ") + std::string(n);
    throw_error("ValueError", "invalid device '" + std::string(text) + "': " + why + " (expected <kind>[:<index>], kinds: " +
                                  known + ")");
  };
  Device d;
  bool found = false;
  for (auto& [k, n] : kKindNames)
    if (name == n) d.kind = k, found = true;
  if (!found) return bad("unknown kind '" + std::string(name) + "'");
  if (!index.empty()) {
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), d.id);
    if (ec != std::errc() || end != index.data() + index.size() || d.id < 0)
      return bad("the index must be a non-negative integer");
  } else if (text.find(':') != std::string_view::npos) {
    return bad("empty index");
  }
  return d;
}

}  // namespace partita
