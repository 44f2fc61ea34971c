// The device-API registry, the CPU's API, per-thread current streams and cross-device copies.
#include "partita/runtime/device_api.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "partita/runtime/plugin.h"
#include "partita/support/error.h"

namespace partita::runtime {

namespace {

/// Host memory: 64-byte aligned (what Tensor::empty always gave), no streams (work is done
/// when a call returns), copies are memcpy.
class CPUDeviceAPI final : public DeviceAPI {
 public:
  DeviceKind kind() const override { return DeviceKind::kCPU; }
  int device_count() override { return 1; }
  void set_device(int) override {}
  void* alloc(int, size_t nbytes) override {
    size_t rounded = nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw_error("MemoryError", "cannot allocate " + std::to_string(nbytes) + " bytes of host memory");
    return p;
  }
  void free(int, void* ptr) noexcept override { std::free(ptr); }
  void copy(const void* src, Device, void* dst, Device, size_t nbytes, StreamHandle) override {
    if (nbytes) std::memcpy(dst, src, nbytes);
  }
  StreamHandle create_stream(int) override { return nullptr; }
  void free_stream(int, StreamHandle) override {}
  void sync_stream(int, StreamHandle) override {}
  void stream_wait(int, StreamHandle, StreamHandle) override {}
};

struct Registry {
  std::mutex mutex;
  std::map<DeviceKind, DeviceAPI*> apis;
  Registry() {
    static CPUDeviceAPI cpu;
    apis[DeviceKind::kCPU] = &cpu;
  }
};

Registry& registry() {
  // Never destroyed: tensors released during static destruction still find their API.
  static Registry* r = new Registry;
  return *r;
}

// Few devices per thread: a flat list beats a map.
thread_local std::vector<std::pair<Device, StreamHandle>> t_current_streams;

std::string no_device_message(Device device, DeviceAPI* api) {
  int count = api->device_count();
  std::string why = api->unavailable_reason();
  std::string head = device.kind == DeviceKind::kCUDA || device.kind == DeviceKind::kCUDAHost ? "no CUDA device: " : "no such device: ";
  return head + device.str() + " was asked for, but " + std::to_string(count) + " " + device_kind_name(api->kind()) +
         " device" + (count == 1 ? " is" : "s are") + " present" + (why.empty() ? "" : " (" + why + ")");
}

}  // namespace

void register_device_api(DeviceAPI* api) {
  PARTITA_ICHECK(api != nullptr);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.apis[api->kind()] = api;
}

DeviceAPI* find_device_api(DeviceKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.apis.find(kind);
  return it == r.apis.end() ? nullptr : it->second;
}

std::string device_plugin_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCUDA:
    case DeviceKind::kCUDAHost: return "cuda";
    default: return "";
  }
}

DeviceAPI* device_api(Device device) {
  DeviceAPI* api = find_device_api(device.kind);
  if (!api) {
    std::string plugin = device_plugin_name(device.kind);
    if (plugin.empty())
      throw_error("RuntimeError", "device " + device.str() + ": the runtime has no device API for " +
                                      device_kind_name(device.kind) + " (supported: cpu, cuda, cuda_host)");
    try {
      load_plugin(plugin);
    } catch (const Error& e) {
      throw_error("RuntimeError", "device " + device.str() + " needs the " + plugin + " runtime plug-in: " + e.message());
    }
    api = find_device_api(device.kind);
    if (!api)
      throw_error("RuntimeError", "device " + device.str() + ": the '" + plugin + "' plug-in was loaded but registered no " +
                                      device_kind_name(device.kind) + " device API");
  }
  if (device.id < 0 || device.id >= api->device_count()) throw_error("RuntimeError", no_device_message(device, api));
  return api;
}

bool device_exists(Device device) {
  try {
    device_api(device);
    return true;
  } catch (const Error&) {
    return false;
  }
}

StreamHandle current_stream(Device device) {
  for (auto& [d, s] : t_current_streams)
    if (d == device) return s;
  return nullptr;
}

void set_current_stream(Device device, StreamHandle stream) {
  for (auto& [d, s] : t_current_streams)
    if (d == device) {
      s = stream;
      return;
    }
  t_current_streams.emplace_back(device, stream);
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  device_api(device)->sync_stream(device.id, current_stream(device));
}

void copy_bytes(const void* src, Device src_dev, void* dst, Device dst_dev, size_t nbytes) {
  if (nbytes == 0) return;
  bool src_host = src_dev.is_host_accessible(), dst_host = dst_dev.is_host_accessible();
  if (src_host && dst_host) {
    // Pinned host memory may still be the target of an asynchronous copy only through
    // DeviceAPI::copy, which is synchronous for host memory; so plain memcpy is safe here.
    std::memcpy(dst, src, nbytes);
    return;
  }
  if (!src_host && !dst_host && src_dev.kind != dst_dev.kind) {
    // Two different kinds of accelerator: through host memory.
    std::unique_ptr<uint8_t[]> staging(new uint8_t[nbytes]);
    copy_bytes(src, src_dev, staging.get(), Device::cpu(), nbytes);
    copy_bytes(staging.get(), Device::cpu(), dst, dst_dev, nbytes);
    return;
  }
  Device side = dst_host ? src_dev : dst_dev;
  device_api(side)->copy(src, src_dev, dst, dst_dev, nbytes, current_stream(side));
}

}  // namespace partita::runtime
