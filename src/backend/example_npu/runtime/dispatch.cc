// The example NPU's dispatch decisions (dispatch.h), as TVM's example runtime makes them.
#include "dispatch.h"

#include <algorithm>

namespace partita::backend::example_npu {
namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

std::string select_engine(const std::string& name) {
  if (has(name, "conv")) return "CONV_ENGINE";
  if (has(name, "matmul") || has(name, "dense")) return "MATRIX_ENGINE";
  if (has(name, "pool")) return "POOLING_ENGINE";
  if (has(name, "relu") || has(name, "sigmoid")) return "ACTIVATION_ENGINE";
  return "VECTOR_ENGINE";
}

Tiling calculate_tiling(const std::vector<int64_t>& shape, int64_t sram_bytes) {
  Tiling t;
  if (shape.size() < 2) return t;
  int64_t batch_channels = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) batch_channels *= shape[i];
  auto tile_bytes = [&] { return t.tile_h * t.tile_w * batch_channels * 4; };
  while (tile_bytes() > sram_bytes && (t.tile_h > 8 || t.tile_w > 8)) {
    t.tile_h = std::max<int64_t>(8, t.tile_h / 2);
    t.tile_w = std::max<int64_t>(8, t.tile_w / 2);
  }
  const int64_t height = shape[shape.size() - 2], width = shape[shape.size() - 1];
  t.tiles_h = (height + t.tile_h - 1) / t.tile_h;
  t.tiles_w = (width + t.tile_w - 1) / t.tile_w;
  return t;
}

Dispatch plan_dispatch(const std::string& name, const std::vector<int64_t>& output_shape) {
  Dispatch d;
  d.engine = select_engine(name);
  d.fused = has(name, "fused");
  d.output_bytes = 4;
  for (int64_t dim : output_shape) d.output_bytes *= dim;
  d.memory_tier = d.output_bytes <= kL1SramBytes  ? "L1 SRAM"
                  : d.output_bytes <= kL2CmxBytes ? "L2 CMX"
                                                  : "L3 DRAM";
  d.tiled = d.output_bytes > kL1SramBytes;
  if (d.tiled) d.tiling = calculate_tiling(output_shape, kL1SramBytes);
  return d;
}

std::string describe(const std::string& name, const Dispatch& d) {
  std::string s = name + " -> " + d.engine;
  if (d.fused) s += ", fused (the intermediate stays on chip)";
  s += ", output " + std::to_string(d.output_bytes) + " bytes in " + d.memory_tier;
  if (d.tiled)
    s += ", tiled " + std::to_string(d.tiling.tiles_h) + "x" + std::to_string(d.tiling.tiles_w) +
         " tiles of " + std::to_string(d.tiling.tile_h) + "x" + std::to_string(d.tiling.tile_w);
  else
    s += ", single pass";
  return s;
}

}  // namespace partita::backend::example_npu
