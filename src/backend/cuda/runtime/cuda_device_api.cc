// The CUDA device APIs (device memory, kCUDA; pinned host memory, kCUDAHost), registered when
// this plug-in (libpartita_runtime_cuda.so) is loaded. Memory comes from a caching allocator
// per device (runtime/caching_allocator.h), so steady-state runs call cudaMalloc never.
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <mutex>
#include <vector>

#include "cuda_check.h"
#include "partita/runtime/caching_allocator.h"
#include "partita/runtime/device_api.h"

namespace partita::runtime::cuda {

namespace {

/// Makes `id` the current device for a scope (CUDA's current device is per thread).
class DeviceScope {
 public:
  explicit DeviceScope(int id) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != id) PARTITA_CUDA_CALL(cudaSetDevice(id));
    else previous_ = -1;  // nothing to restore
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

/// nullptr and cudaStreamLegacy name the same stream (this library is not built with
/// per-thread default streams).
cudaStream_t as_stream(StreamHandle s) {
  auto c = static_cast<cudaStream_t>(s);
  return c == cudaStreamLegacy ? nullptr : c;
}

/// Device count, probed once: a machine without a driver or a GPU has 0, with the reason kept
/// for error messages.
struct Probe {
  int count = 0;
  std::string reason;
  Probe() {
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      count = 0;
      reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
      cudaGetLastError();
    } else if (count == 0) {
      reason = "the CUDA driver reports no device";
    }
  }
};
const Probe& probe() {
  static Probe p;
  return p;
}

/// One caching allocator per device, made on first use.
class AllocatorTable {
 public:
  using Factory = std::function<std::unique_ptr<CachingAllocator>(int id)>;
  explicit AllocatorTable(Factory make) : make_(std::move(make)) {}
  CachingAllocator& get(int id) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (size_t(id) >= table_.size()) table_.resize(size_t(id) + 1);
    if (!table_[size_t(id)]) table_[size_t(id)] = make_(id);
    return *table_[size_t(id)];
  }

 private:
  Factory make_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<CachingAllocator>> table_;
};

class CUDADeviceAPI final : public DeviceAPI {
 public:
  CUDADeviceAPI()
      : allocators_([](int id) {
          auto raw_alloc = [id](size_t n) -> void* {
            DeviceScope scope(id);
            void* p = nullptr;
            cudaError_t err = cudaMalloc(&p, n);
            if (err == cudaErrorMemoryAllocation) {
              cudaGetLastError();
              return nullptr;  // the allocator frees its pool and tries once more
            }
            if (err != cudaSuccess) throw_cuda_error(err, "cudaMalloc");
            return p;
          };
          auto raw_free = [id](void* p) {
            // Errors are ignored: at process exit the CUDA runtime may already be unloading.
            int previous = -1;
            cudaGetDevice(&previous);
            cudaSetDevice(id);
            cudaFree(p);
            if (previous >= 0 && previous != id) cudaSetDevice(previous);
            cudaGetLastError();
          };
          return std::make_unique<CachingAllocator>(raw_alloc, raw_free, Device::cuda(id).str());
        }) {}

  DeviceKind kind() const override { return DeviceKind::kCUDA; }
  int device_count() override { return probe().count; }
  std::string unavailable_reason() override { return probe().reason; }
  void set_device(int id) override { PARTITA_CUDA_CALL(cudaSetDevice(id)); }

  void* alloc(int id, size_t nbytes) override {
    return allocators_.get(id).alloc(nbytes, current_stream(Device::cuda(id)));
  }
  void free(int id, void* ptr) noexcept override {
    try {
      allocators_.get(id).free(ptr);
    } catch (...) {
      // A pointer we did not allocate: nothing sensible to do in a deleter.
    }
  }

  void copy(const void* src, Device src_dev, void* dst, Device dst_dev, size_t nbytes, StreamHandle stream) override {
    if (nbytes == 0) return;
    bool src_host = src_dev.is_host_accessible(), dst_host = dst_dev.is_host_accessible();
    cudaStream_t s = as_stream(stream);
    if (src_host || dst_host) {
      DeviceScope scope(src_host ? dst_dev.id : src_dev.id);
      PARTITA_CUDA_CALL(cudaMemcpyAsync(dst, src, nbytes, src_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s));
      PARTITA_CUDA_CALL(cudaStreamSynchronize(s));  // host memory is complete on return
      return;
    }
    DeviceScope scope(dst_dev.id);
    if (src_dev.id == dst_dev.id)
      PARTITA_CUDA_CALL(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, s));
    else
      PARTITA_CUDA_CALL(cudaMemcpyPeerAsync(dst, dst_dev.id, src, src_dev.id, nbytes, s));
  }

  StreamHandle create_stream(int id) override {
    DeviceScope scope(id);
    cudaStream_t s = nullptr;
    PARTITA_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  void free_stream(int id, StreamHandle stream) override {
    if (!as_stream(stream) || stream == cudaStreamPerThread) return;
    DeviceScope scope(id);
    PARTITA_CUDA_CALL(cudaStreamDestroy(as_stream(stream)));
  }
  void sync_stream(int id, StreamHandle stream) override {
    DeviceScope scope(id);
    PARTITA_CUDA_CALL(cudaStreamSynchronize(as_stream(stream)));
  }
  void stream_wait(int id, StreamHandle waiting, StreamHandle signalling) override {
    cudaStream_t w = as_stream(waiting), s = as_stream(signalling);
    if (w == s) return;  // one stream is already ordered
    DeviceScope scope(id);
    cudaEvent_t ev = nullptr;
    PARTITA_CUDA_CALL(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaError_t err = cudaEventRecord(ev, s);
    if (err == cudaSuccess) err = cudaStreamWaitEvent(w, ev, 0);
    cudaEventDestroy(ev);  // released once the wait is satisfied
    if (err != cudaSuccess) throw_cuda_error(err, "cudaEventRecord/cudaStreamWaitEvent");
  }

  bool begin_capture(int id, StreamHandle stream) override {
    DeviceScope scope(id);
    // Relaxed: the caching allocator may call cudaMalloc while a run is being captured.
    if (cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeRelaxed) == cudaSuccess) return true;
    cudaGetLastError();
    return false;
  }
  void* end_capture(int id, StreamHandle stream) override {
    DeviceScope scope(id);
    cudaGraph_t graph = nullptr;
    cudaError_t err = cudaStreamEndCapture(as_stream(stream), &graph);
    if (err != cudaSuccess || !graph) {
      cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
      return nullptr;
    }
    cudaGraphExec_t exec = nullptr;
    err = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return exec;
  }
  void launch_graph(int id, void* graph, StreamHandle stream) override {
    DeviceScope scope(id);
    PARTITA_CUDA_CALL(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), as_stream(stream)));
  }
  void free_graph(int id, void* graph) noexcept override {
    cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
    cudaGetLastError();
  }

  AllocatorStats allocator_stats(int id) override { return allocators_.get(id).stats(); }
  void empty_cache(int id) override { allocators_.get(id).empty_cache(); }

 private:
  AllocatorTable allocators_;
};

/// Page-locked host memory (one "device", id 0): host code reads it directly and copies
/// between it and a GPU run at full PCIe/NVLink speed. Pooled too: cudaHostAlloc is slow.
class CUDAHostDeviceAPI final : public DeviceAPI {
 public:
  CUDAHostDeviceAPI()
      : allocator_(
            [](size_t n) -> void* {
              void* p = nullptr;
              cudaError_t err = cudaHostAlloc(&p, n, cudaHostAllocPortable);
              if (err == cudaErrorMemoryAllocation) {
                cudaGetLastError();
                return nullptr;
              }
              if (err != cudaSuccess) throw_cuda_error(err, "cudaHostAlloc");
              return p;
            },
            [](void* p) {
              cudaFreeHost(p);
              cudaGetLastError();
            },
            "cuda_host:0") {}

  DeviceKind kind() const override { return DeviceKind::kCUDAHost; }
  int device_count() override { return probe().count > 0 ? 1 : 0; }
  std::string unavailable_reason() override { return probe().reason; }
  void set_device(int) override {}
  void* alloc(int, size_t nbytes) override { return allocator_.alloc(nbytes, nullptr); }
  void free(int, void* ptr) noexcept override {
    try {
      allocator_.free(ptr);
    } catch (...) {
    }
  }
  void copy(const void* src, Device, void* dst, Device, size_t nbytes, StreamHandle) override {
    PARTITA_CUDA_CALL(cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToHost));
  }
  StreamHandle create_stream(int) override { return nullptr; }
  void free_stream(int, StreamHandle) override {}
  void sync_stream(int, StreamHandle) override {}
  void stream_wait(int, StreamHandle, StreamHandle) override {}
  AllocatorStats allocator_stats(int) override { return allocator_.stats(); }
  void empty_cache(int) override { allocator_.empty_cache(); }

 private:
  CachingAllocator allocator_;
};

struct Registrar {
  Registrar() {
    // Never destroyed: tensors released during static destruction still reach their API.
    register_device_api(new CUDADeviceAPI);
    register_device_api(new CUDAHostDeviceAPI);
  }
};
Registrar registrar;

}  // namespace

}  // namespace partita::runtime::cuda
