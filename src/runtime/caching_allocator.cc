#include "partita/runtime/caching_allocator.h"

#include <algorithm>
#include <bit>

#include "partita/support/error.h"

namespace partita::runtime {

CachingAllocator::CachingAllocator(RawAlloc raw_alloc, RawFree raw_free, std::string what)
    : raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)), what_(std::move(what)) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_idle_locked();
}

size_t CachingAllocator::size_class(size_t nbytes) {
  constexpr size_t kMin = 512;
  if (nbytes <= kMin) return kMin;
  size_t p = std::bit_floor(nbytes);
  if (p == nbytes) return nbytes;
  size_t step = std::max(p / 4, kMin);
  return (nbytes + step - 1) / step * step;
}

void* CachingAllocator::alloc(size_t nbytes, StreamHandle stream) {
  size_t size = size_class(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.alloc_calls;
  void* ptr = nullptr;
  auto it = idle_.find({stream, size});
  if (it != idle_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    ++stats_.cache_hits;
    stats_.bytes_cached -= int64_t(size);
  } else {
    ptr = raw_alloc_(size);
    if (!ptr && stats_.bytes_cached > 0) {
      release_idle_locked();
      ptr = raw_alloc_(size);
    }
    if (!ptr)
      throw_error("MemoryError", "out of memory on " + what_ + ": cannot allocate " + std::to_string(nbytes) + " bytes (" +
                                     std::to_string(stats_.bytes_in_use) + " bytes in use by live tensors)");
    ++stats_.device_allocs;
  }
  live_.emplace(ptr, Block{size, stream});
  stats_.bytes_in_use += int64_t(size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return ptr;
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) throw_error("ValueError", "free of a pointer that the " + what_ + " allocator did not hand out");
  Block b = it->second;
  live_.erase(it);
  stats_.bytes_in_use -= int64_t(b.size);
  stats_.bytes_cached += int64_t(b.size);
  idle_[{b.stream, b.size}].push_back(ptr);
}

void CachingAllocator::release_idle_locked() {
  for (auto& [key, blocks] : idle_) {
    for (void* p : blocks) {
      raw_free_(p);
      ++stats_.device_frees;
    }
    stats_.bytes_cached -= int64_t(key.second * blocks.size());
  }
  idle_.clear();
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_idle_locked();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace partita::runtime
