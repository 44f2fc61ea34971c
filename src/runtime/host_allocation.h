// The deleter of the host buffers Tensor::empty allocates. It remembers where the allocation
// starts and how many bytes it holds, so that the VM's buffer pool can take a buffer back
// through any view of it (a slice's data() is inside the buffer, and holds fewer bytes) and
// never pools memory it did not allocate (numpy's, DLPack's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace partita::runtime {

struct HostAllocation {
  uint8_t* base;
  size_t bytes;
  void operator()(uint8_t*) const noexcept { std::free(base); }
};

}  // namespace partita::runtime
