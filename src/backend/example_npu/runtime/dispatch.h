// The dispatch decisions TVM's example NPU runtime logs for each composite (its
// example_npu_runtime.cc): the execution engine chosen by the pattern's name, whether the node
// is a fused one, and the memory tier its output fits in, with the tiling TVM's
// NPUTilingEngine::CalculateTiling computes when it does not fit the 256 KiB L1 SRAM. Here they
// are decided once, when the module is loaded, and are only reported (the computation runs on
// the host kernels whatever they say).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::backend::example_npu {

struct Tiling {
  int64_t tile_h = 32, tile_w = 32;
  int64_t tiles_h = 1, tiles_w = 1;
};

struct Dispatch {
  std::string
      engine;  // MATRIX_ENGINE, VECTOR_ENGINE, CONV_ENGINE, POOLING_ENGINE, ACTIVATION_ENGINE
  bool fused = false;  // the pattern's name says "fused": its intermediate never leaves the chip
  int64_t output_bytes = 0;
  std::string memory_tier;  // "L1 SRAM", "L2 CMX" or "L3 DRAM"
  bool tiled = false;       // the output does not fit the L1 SRAM
  Tiling tiling;
};

inline constexpr int64_t kL1SramBytes = 256 * 1024;
inline constexpr int64_t kL2CmxBytes = 512 * 1024;

/// TVM's SelectExecutionEngine: conv first, then matmul/dense, pool, relu/sigmoid, else vector.
std::string select_engine(const std::string& pattern_name);
/// TVM's CalculateTiling for a float32 tensor of `shape` and `sram_bytes` of on-chip memory.
Tiling calculate_tiling(const std::vector<int64_t>& shape, int64_t sram_bytes);
/// The decisions for a node named `pattern_name` whose first output has `output_shape`.
Dispatch plan_dispatch(const std::string& pattern_name, const std::vector<int64_t>& output_shape);
/// One line of the dispatch log: "example_npu.conv2d_relu_fused -> CONV_ENGINE, fused, ...".
std::string describe(const std::string& pattern_name, const Dispatch& d);

}  // namespace partita::backend::example_npu
