// Static memory planning: places buffers with known lifetimes in one arena so that buffers
// whose lifetimes overlap never share bytes, and others do. Backends that build a whole
// partition ahead of time use it so that intermediates reuse a small, cache-warm
// working set instead of each owning fresh memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace partita::runtime {

struct BufferLifetime {
  size_t bytes = 0;
  int64_t first = 0;  // first step that touches the buffer
  int64_t last = 0;   // last step that touches it (inclusive)
};

struct ArenaPlan {
  std::vector<size_t> offsets;  // per buffer, aligned
  size_t total = 0;             // arena size
};

/// Greedy placement, largest buffer first, each at the lowest aligned offset clear of every
/// placed buffer that is alive at the same time (TVM's and ONNX Runtime's planners do alike).
ArenaPlan plan_arena(const std::vector<BufferLifetime>& buffers, size_t alignment = 64);

}  // namespace partita::runtime
