// plan_arena: buffers alive at the same time never overlap; dead ones are reused.
#include <gtest/gtest.h>

#include <random>

#include "partita/runtime/memory_plan.h"

namespace partita::runtime {
namespace {

bool clash(const std::vector<BufferLifetime>& b, const ArenaPlan& p, size_t i, size_t j) {
  bool in_time = b[i].first <= b[j].last && b[j].first <= b[i].last;
  bool in_space = p.offsets[i] < p.offsets[j] + b[j].bytes && p.offsets[j] < p.offsets[i] + b[i].bytes;
  return in_time && in_space && b[i].bytes && b[j].bytes;
}

TEST(MemoryPlan, ChainReusesTwoBuffers) {
  // step k reads buffer k-1 and writes buffer k: a chain needs two buffers' worth of memory.
  std::vector<BufferLifetime> chain;
  for (int64_t k = 0; k < 10; ++k) chain.push_back({1000, k, k + 1});
  ArenaPlan p = plan_arena(chain);
  EXPECT_EQ(p.total, 2 * 1024u);  // 1000 bytes aligned to 64
  for (size_t i = 0; i < chain.size(); ++i)
    for (size_t j = i + 1; j < chain.size(); ++j) EXPECT_FALSE(clash(chain, p, i, j)) << i << " " << j;
}

TEST(MemoryPlan, RandomLifetimesNeverClashAndAreAligned) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> bs(1 + rng() % 40);
    size_t sum = 0;
    for (auto& b : bs) {
      b.bytes = rng() % 5000;
      b.first = rng() % 30;
      b.last = b.first + rng() % 10;
      sum += (b.bytes + 63) / 64 * 64;
    }
    ArenaPlan p = plan_arena(bs);
    EXPECT_LE(p.total, sum);
    for (size_t i = 0; i < bs.size(); ++i) {
      EXPECT_EQ(p.offsets[i] % 64, 0u);
      EXPECT_LE(p.offsets[i] + bs[i].bytes, p.total);
      for (size_t j = i + 1; j < bs.size(); ++j) ASSERT_FALSE(clash(bs, p, i, j)) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace partita::runtime
