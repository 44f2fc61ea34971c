// GEMM kernels of the cutlass backend: a kernel *class* is everything compiled into a kernel
// (operand and result dtypes, the weight's layout, the fused epilogue); a *config* is how a
// kernel of that class tiles the problem (CTA tile, cluster, schedule). One class and config
// make one compilation unit (a CUTLASS 3 sm90a kernel, device_code.h), shared by every module
// that uses it and cached by its source hash, so each is compiled once.
//
// The epilogue is fixed at compile time, one kernel per epilogue kind a model needs (as TVM's
// generator instantiates them): a kernel whose epilogue chose its activation and residual at run
// time inlined every activation at every element, ~215 KB of SASS against ~20 KB, and ran at
// 9-55 % of cuBLAS's speed (docs/benchmarks.md, "CUTLASS GEMMs with epilogues").
#pragma once

#include <string>
#include <vector>

#include "partita/runtime/data_type.h"

namespace partita::backend::cutlass {

/// D = post(res(act(acc + bias), C)): the codes of fused_op.h (Activation, ResidualMode),
/// shared with the device code (PT_ACT_*, PT_C_*).
struct GemmEpilogue {
  bool bias = false;  // + a vector of N elements
  int act = 0, residual_mode = 0, post_act = 0;
  /// e.g. "plain", "bias_gelu", "bias_relu_add_postrelu"; throws Error("ValueError") for codes
  /// out of range.
  std::string id() const;
};

struct GemmClass {
  DataType in, out;        // A and B; C and D
  bool b_k_major = false;  // B stored (N, K): a transposed weight, a conv2d kernel, tf32 / int8
  GemmEpilogue epilogue;
  bool has_c() const { return epilogue.residual_mode != 0; }  // reads a residual C of D's shape
  std::string id() const;  // e.g. "f16_bk_c_f16_bias_relu_add"
  bool operator<(const GemmClass& o) const { return id() < o.id(); }
};

struct GemmConfig {
  int tile_m = 128, tile_n = 128, tile_k = 64;
  int cluster_m = 1, cluster_n = 1;
  bool pingpong = false;  // KernelTmaWarpSpecializedPingpong, else ...Cooperative
  /// Cooperative with CUTLASS's stream-K tile scheduler (heuristic decomposition: few output
  /// tiles are split along K over all SMs, many run data-parallel), else the persistent one.
  bool stream_k = false;
  std::string id() const;                          // e.g. "128x128x64_1x1_coop", "..._sk" (stream-K)
  static GemmConfig parse(const std::string& id);  // throws Error("ValueError")
};

/// The kernel a class uses without measurement (no GPU at build time, symbolic shapes).
GemmConfig default_config(const GemmClass& c, int sm);
/// The configurations the profiler times for a class (the default first). Few on purpose: each
/// is a compilation of ~1 minute, per epilogue kind.
std::vector<GemmConfig> candidate_configs(const GemmClass& c, int sm);

/// The C symbol of a unit's entry point: `pt_gemm_<class>_<config>` (its workspace query adds
/// `_workspace`).
std::string gemm_symbol(const GemmClass& c, const GemmConfig& k);
/// The whole source of the unit for this class and config.
std::string gemm_unit_source(const GemmClass& c, const GemmConfig& k);

/// The CUTLASS element type of a dtype ("cutlass::half_t", ...), "" when there is none.
std::string cutlass_element(DataType t);
/// A short tag of a dtype for names ("f16", "bf16", "f32", "i8", "i32").
std::string dtype_tag(DataType t);

}  // namespace partita::backend::cutlass
