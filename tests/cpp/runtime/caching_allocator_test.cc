// The caching allocator's rules with a fake raw allocator of limited capacity: size classes,
// reuse only within a stream and class, one retry after giving the pool back when the device
// is full, and the statistics the GPU tests and Python report.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "partita/runtime/caching_allocator.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

struct FakeRaw {
  size_t capacity = size_t(1) << 20;
  size_t used = 0;
  int allocs = 0, frees = 0;
  std::map<void*, size_t> sizes;
  CachingAllocator make() {
    return CachingAllocator(
        [this](size_t n) -> void* {
          if (used + n > capacity) return nullptr;
          used += n;
          ++allocs;
          void* p = std::malloc(n);
          sizes[p] = n;
          return p;
        },
        [this](void* p) {
          used -= sizes.at(p);
          sizes.erase(p);
          ++frees;
          std::free(p);
        },
        "fake:0");
  }
};

StreamHandle stream(uintptr_t s) { return reinterpret_cast<StreamHandle>(s); }

}  // namespace

TEST(CachingAllocator, SizeClassesWasteAtMostAQuarter) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512u);
  EXPECT_EQ(CachingAllocator::size_class(512), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(4096), 4096u);
  EXPECT_EQ(CachingAllocator::size_class(4097), 5120u);
  EXPECT_EQ(CachingAllocator::size_class(size_t(1) << 30), size_t(1) << 30);
  size_t previous = 0;
  for (size_t n = 1; n < (size_t(1) << 24); n = n * 3 / 2 + 7) {
    size_t c = CachingAllocator::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, std::max<size_t>(512, n + n / 4 + 512)) << n;
    EXPECT_EQ(c % 512, 0u) << n;
    EXPECT_GE(c, previous);
    EXPECT_EQ(CachingAllocator::size_class(c), c) << "a class is its own class";
    previous = c;
  }
}

TEST(CachingAllocator, ReusesFreedBlocksOfTheSameClassAndStream) {
  FakeRaw raw;
  CachingAllocator a = raw.make();
  void* p = a.alloc(1000, nullptr);
  a.free(p);
  void* q = a.alloc(900, nullptr);  // same class (1024)
  EXPECT_EQ(q, p);
  EXPECT_EQ(raw.allocs, 1);
  void* other_stream = a.alloc(1000, stream(0x10));  // never another stream's block
  EXPECT_NE(other_stream, q);
  void* other_class = a.alloc(5000, nullptr);
  EXPECT_EQ(raw.allocs, 3);
  a.free(q);
  a.free(other_stream);
  a.free(other_class);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.alloc_calls, 4);
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.device_allocs, 3);
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_cached, int64_t(1024 + 1024 + 5120));
  EXPECT_EQ(s.peak_bytes_in_use, int64_t(1024 + 1024 + 5120));
  // The other stream's block now serves that stream.
  EXPECT_EQ(a.alloc(1024, stream(0x10)), other_stream);
  a.empty_cache();
  EXPECT_EQ(raw.frees, 2);
  EXPECT_EQ(a.stats().bytes_cached, 0);
  EXPECT_EQ(a.stats().device_frees, 2);
  a.free(other_stream);  // handed back, so nothing leaks (LeakSanitizer in scripts/sanitize.sh)
  a.empty_cache();
  EXPECT_EQ(raw.frees, 3);
}

TEST(CachingAllocator, FullDeviceGivesThePoolBackAndRetriesOnce) {
  FakeRaw raw;
  raw.capacity = 64 * 1024;
  CachingAllocator a = raw.make();
  void* small = a.alloc(40 * 1024, nullptr);
  a.free(small);  // 40 KiB idle in the pool
  void* big = a.alloc(48 * 1024, nullptr);  // needs the idle block's room
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(a.stats().bytes_cached, 0);
  try {
    a.alloc(60 * 1024, nullptr);
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "MemoryError");
    EXPECT_NE(std::string(e.message()).find("out of memory on fake:0"), std::string::npos) << e.message();
    EXPECT_NE(std::string(e.message()).find("61440 bytes"), std::string::npos) << e.message();
  }
  a.free(big);
  int x;
  try {
    a.free(&x);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
  }
}

TEST(CachingAllocator, DestructionGivesIdleBlocksBack) {
  FakeRaw raw;
  {
    CachingAllocator a = raw.make();
    std::set<void*> blocks;
    for (int i = 0; i < 5; ++i) blocks.insert(a.alloc(size_t(700 * (i + 1)), nullptr));
    for (void* p : blocks) a.free(p);
  }
  EXPECT_EQ(raw.allocs, 5);
  EXPECT_EQ(raw.frees, 5);
  EXPECT_EQ(raw.used, 0u);
}
