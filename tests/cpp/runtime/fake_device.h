// A device API for tests without a GPU: "vulkan:0" memory that is really host memory, but that
// the runtime must treat as device memory (Device::is_host_accessible() is false), reached only
// through the API. It counts what is asked of it, so tests see every allocation, copy and
// stream operation the runtime and the VM make. Graph capture is emulated the way CUDA does
// it: while capturing, device-to-device copies are recorded instead of run, a copy touching
// host memory or a synchronization fails and spoils the capture, and a launch replays the
// recorded copies.
#pragma once

#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "partita/runtime/device_api.h"
#include "partita/support/error.h"

namespace partita::testing {

class FakeDeviceAPI final : public runtime::DeviceAPI {
 public:
  static constexpr DeviceKind kKind = DeviceKind::kVulkan;
  static Device device() { return Device{kKind, 0}; }
  /// The one instance, registered on first use.
  static FakeDeviceAPI& get() {
    static FakeDeviceAPI* api = [] {
      auto* a = new FakeDeviceAPI;
      runtime::register_device_api(a);
      return a;
    }();
    return *api;
  }

  DeviceKind kind() const override { return kKind; }
  int device_count() override { return 1; }
  void set_device(int id) override { current_device = id; }
  void* alloc(int, size_t nbytes) override {
    ++allocs;
    void* p = std::aligned_alloc(64, (nbytes + 64) / 64 * 64);
    live.insert(p);
    alloc_streams.push_back(runtime::current_stream(device()));
    return p;
  }
  void free(int, void* ptr) noexcept override {
    ++frees;
    live.erase(ptr);
    std::free(ptr);
  }
  void copy(const void* src, Device src_dev, void* dst, Device dst_dev, size_t nbytes,
            runtime::StreamHandle stream) override {
    if (capturing && stream == capture_on) {
      if (src_dev.is_host_accessible() || dst_dev.is_host_accessible()) {
        capture_failed = true;
        throw_error("RuntimeError", "fake device: a host copy cannot be captured");
      }
      recording.push_back({src, dst, nbytes});
      return;
    }
    copies.push_back({src_dev, dst_dev});
    copy_streams.push_back(stream);
    std::memcpy(dst, src, nbytes);
  }
  runtime::StreamHandle create_stream(int) override { return reinterpret_cast<runtime::StreamHandle>(++streams); }
  void free_stream(int, runtime::StreamHandle) override {}
  void sync_stream(int, runtime::StreamHandle s) override {
    if (capturing && s == capture_on) {
      capture_failed = true;
      throw_error("RuntimeError", "fake device: cannot synchronize a capturing stream");
    }
    syncs.push_back(s);
  }
  void stream_wait(int, runtime::StreamHandle waiting, runtime::StreamHandle signalling) override {
    waits.emplace_back(waiting, signalling);
  }

  struct Op {
    const void* src;
    void* dst;
    size_t n;
  };
  bool begin_capture(int, runtime::StreamHandle s) override {
    if (!graphs_supported || capturing) return false;
    capturing = true;
    capture_failed = false;
    capture_on = s;
    recording.clear();
    return true;
  }
  void* end_capture(int, runtime::StreamHandle) override {
    capturing = false;
    if (capture_failed) return nullptr;
    return new std::vector<Op>(recording);
  }
  void launch_graph(int, void* graph, runtime::StreamHandle) override {
    ++launches;
    for (const Op& op : *static_cast<std::vector<Op>*>(graph)) std::memcpy(op.dst, op.src, op.n);
  }
  void free_graph(int, void* graph) noexcept override {
    ++graphs_freed;
    delete static_cast<std::vector<Op>*>(graph);
  }

  void reset_counts() {
    allocs = frees = 0;
    copies.clear();
    copy_streams.clear();
    alloc_streams.clear();
    syncs.clear();
    waits.clear();
  }

  int allocs = 0, frees = 0, current_device = -1, launches = 0, graphs_freed = 0;
  bool graphs_supported = true, capturing = false, capture_failed = false;
  runtime::StreamHandle capture_on = nullptr;
  std::vector<Op> recording;
  uintptr_t streams = 0x1000;
  std::set<void*> live;
  std::vector<std::pair<Device, Device>> copies;  // (from, to)
  std::vector<runtime::StreamHandle> copy_streams, alloc_streams, syncs;
  std::vector<std::pair<runtime::StreamHandle, runtime::StreamHandle>> waits;  // (waiting, signalling)
};

}  // namespace partita::testing
