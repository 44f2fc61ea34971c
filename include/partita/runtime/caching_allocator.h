// A caching allocator over a device's raw allocation calls (cudaMalloc/cudaFree): freed
// blocks stay in a pool keyed by stream and size class and serve later allocations of the
// same class on the same stream, so steady-state runs make no driver calls (cudaMalloc costs
// tens of microseconds and synchronizes; a pool hit costs a map lookup).
//
// Stream rule (as PyTorch's CUDA allocator): a block freed while queued work may still use it
// goes back to the pool of the stream it was allocated on, and only allocations on that stream
// reuse it, so stream order keeps the reuse safe without events.
//
// Device-agnostic on purpose: the CUDA plug-in wraps one per device, and the CPU tests check
// the pool's rules with a fake raw allocator.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "partita/runtime/device_api.h"

namespace partita::runtime {

class CachingAllocator {
 public:
  /// Returns nullptr when the device is out of memory (other failures throw Error).
  using RawAlloc = std::function<void*(size_t nbytes)>;
  using RawFree = std::function<void(void* ptr)>;

  /// `what` names the device in error messages ("cuda:0").
  CachingAllocator(RawAlloc raw_alloc, RawFree raw_free, std::string what);
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  /// Gives idle blocks back. Blocks still in use are left alone (their tensors free them).
  ~CachingAllocator();

  /// A block of at least `nbytes` for work on `stream`. On a miss the raw allocator is called;
  /// when it reports out of memory, the idle pool is given back and it is called once more.
  /// Error("MemoryError") naming the device, the size and the pool's state when that fails too.
  void* alloc(size_t nbytes, StreamHandle stream);
  /// Returns a block from `alloc` to its stream's pool. Error("ValueError") for a pointer
  /// this allocator did not hand out.
  void free(void* ptr);
  /// Gives every idle block back to the raw allocator.
  void empty_cache();
  AllocatorStats stats() const;

  /// The size class of a request: 512 bytes at least, then four classes per power of two, so
  /// rounding wastes at most a quarter of a block.
  static size_t size_class(size_t nbytes);

 private:
  struct Block {
    size_t size;
    StreamHandle stream;
  };
  void release_idle_locked();

  RawAlloc raw_alloc_;
  RawFree raw_free_;
  std::string what_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::map<std::pair<StreamHandle, size_t>, std::vector<void*>> idle_;
  AllocatorStats stats_;
};

}  // namespace partita::runtime
