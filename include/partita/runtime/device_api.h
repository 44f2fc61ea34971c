// The device-API registry: one DeviceAPI per device kind does allocation, copies and streams
// for every device of that kind. The CPU's is built into the runtime library; others come from
// plug-in libraries (runtime/plugin.h) that register theirs when loaded: the CUDA one lives in
// libpartita_runtime_cuda.so (src/backend/cuda/runtime/), which the CPU-only build leaves out
// and which `device_api()` loads on the first use of a CUDA device.
//
// Streams. Each device has, per thread, a *current stream* (nullptr, the device's default
// stream, until set). Whoever enqueues device work (the VM's copies, external modules,
// generated kernels) enqueues it on the current stream of the device it runs on; the VM sets
// it for the duration of a call (see runtime/module.h for the contract with backends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "partita/runtime/device.h"

namespace partita::runtime {

/// A device's stream (a cudaStream_t for CUDA); nullptr is the device's default stream.
using StreamHandle = void*;

/// What a device's allocator did (the caching allocator's pool; zeros where there is none).
struct AllocatorStats {
  int64_t alloc_calls = 0;        // allocations asked for
  int64_t cache_hits = 0;         // ... served from the pool
  int64_t device_allocs = 0;      // ... that went to the driver (cudaMalloc)
  int64_t device_frees = 0;       // blocks given back to the driver (empty_cache, out of memory)
  int64_t bytes_in_use = 0;       // held by live tensors (size-class rounded)
  int64_t bytes_cached = 0;       // idle in the pool
  int64_t peak_bytes_in_use = 0;
};

class DeviceAPI {
 public:
  virtual ~DeviceAPI() = default;
  virtual DeviceKind kind() const = 0;
  /// How many devices of this kind there are (0 when the driver finds none; never throws).
  virtual int device_count() = 0;
  /// Why `device_count()` is 0, when it is ("no CUDA driver: ..."); empty otherwise.
  virtual std::string unavailable_reason() { return {}; }
  /// Makes device `id` the calling thread's current device (cudaSetDevice).
  virtual void set_device(int id) = 0;

  /// `nbytes` (0 allowed) of memory on device `id`, aligned to at least 64 bytes.
  /// Error("MemoryError") when the device has no room.
  virtual void* alloc(int id, size_t nbytes) = 0;
  /// Frees memory from `alloc`. Memory still in use by queued work on the current stream of
  /// the thread that allocated it may be handed out again to work on that stream only.
  virtual void free(int id, void* ptr) noexcept = 0;

  /// Copies `nbytes` from `src` (on `src_dev`) to `dst` (on `dst_dev`); each is host-accessible
  /// memory or a device of this API's kind. Ordered on `stream` (of the non-host side; of
  /// `dst_dev` between two devices). Returns once host memory involved may be reused or read:
  /// copies from or to host memory are synchronous; device-to-device copies are asynchronous.
  virtual void copy(const void* src, Device src_dev, void* dst, Device dst_dev, size_t nbytes,
                    StreamHandle stream) = 0;

  virtual StreamHandle create_stream(int id) = 0;
  virtual void free_stream(int id, StreamHandle stream) = 0;
  /// Blocks until all work queued on `stream` of device `id` is done.
  virtual void sync_stream(int id, StreamHandle stream) = 0;
  /// Makes later work on `waiting` wait for the work queued on `signalling` so far, without
  /// blocking the host (an event recorded on one and waited for on the other).
  virtual void stream_wait(int id, StreamHandle waiting, StreamHandle signalling) = 0;

  /// Graph capture (CUDA Graphs): work queued on `stream` between begin and end is recorded,
  /// not run, into a graph that `launch_graph` replays. `begin_capture` returns false where the
  /// device has no graphs; `end_capture` returns nullptr when the capture failed (something
  /// queued could not be captured, e.g. a synchronization), leaving the stream usable.
  virtual bool begin_capture(int id, StreamHandle stream) { return false; }
  virtual void* end_capture(int id, StreamHandle stream) { return nullptr; }
  virtual void launch_graph(int id, void* graph, StreamHandle stream) {}
  virtual void free_graph(int id, void* graph) noexcept {}

  virtual AllocatorStats allocator_stats(int id) { return {}; }
  /// Gives idle pooled memory of device `id` back to the driver.
  virtual void empty_cache(int id) {}
};

/// Registers `api` for its kind (a later registration replaces it). The registry does not own
/// it: plug-ins register objects that live as long as the process.
void register_device_api(DeviceAPI* api);
/// The API registered for `kind`, or nullptr; loads nothing.
DeviceAPI* find_device_api(DeviceKind kind);
/// The API for `device`, loading the plug-in that provides it on first use ("cuda" for CUDA
/// and CUDA host memory). Error("RuntimeError") naming the device when there is no plug-in for
/// its kind, the plug-in cannot be loaded (the message names the library and the loader's
/// reason), or the device index is out of range ("no CUDA device: ...").
DeviceAPI* device_api(Device device);
/// True when `device_api(device)` would succeed.
bool device_exists(Device device);
/// The plug-in name providing the API of `kind` ("cuda"), or "" for the CPU and unknown kinds.
std::string device_plugin_name(DeviceKind kind);

/// The calling thread's current stream of `device` (nullptr until set).
StreamHandle current_stream(Device device);
void set_current_stream(Device device, StreamHandle stream);

/// Sets the current stream of a device for a scope and restores the previous one.
class StreamGuard {
 public:
  StreamGuard(Device device, StreamHandle stream)
      : device_(device), previous_(current_stream(device)) {
    set_current_stream(device, stream);
  }
  ~StreamGuard() { set_current_stream(device_, previous_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Device device_;
  StreamHandle previous_;
};

/// Blocks until the work queued on the current stream of `device` is done (no-op on the CPU).
void synchronize(Device device);

/// Copies `nbytes` between any two devices through their APIs (staging through host memory
/// between two different non-host kinds), on the current stream; same rules as DeviceAPI::copy.
void copy_bytes(const void* src, Device src_dev, void* dst, Device dst_dev, size_t nbytes);

}  // namespace partita::runtime
