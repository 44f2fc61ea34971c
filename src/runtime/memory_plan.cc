#include "partita/runtime/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace partita::runtime {

ArenaPlan plan_arena(const std::vector<BufferLifetime>& buffers, size_t alignment) {
  auto aligned = [alignment](size_t n) { return (n + alignment - 1) / alignment * alignment; };
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // address ranges of placed, overlapping buffers
  for (size_t i : order) {
    const BufferLifetime& b = buffers[i];
    busy.clear();
    for (size_t j : placed)
      if (buffers[j].first <= b.last && b.first <= buffers[j].last)
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + aligned(buffers[j].bytes));
    std::sort(busy.begin(), busy.end());
    size_t size = aligned(b.bytes), offset = 0;
    for (const auto& [start, end] : busy) {
      if (offset + size <= start) break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, offset + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace partita::runtime
