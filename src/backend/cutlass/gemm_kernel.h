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
#include <utility>
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
  /// Cooperative with CUTLASS's stream-K tile scheduler, else the persistent one. With `splits`
  /// 1 it decomposes heuristically (few output tiles are split along K over all SMs, many run
  /// data-parallel); with more, every output tile is split into that many K ranges (split-K),
  /// each a CTA, reduced in the kernel. The split count is a launch argument (PtGemmArgs), so
  /// every count runs on one compiled unit.
  bool stream_k = false;
  int splits = 1;
  /// e.g. "128x128x64_1x1_coop", "..._pp", "..._sk" (stream-K), "..._sk4" (split-K, 4 splits)
  std::string id() const;
  /// The compiled unit's part of the id: the split count dropped ("..._sk").
  std::string unit_id() const;
  static GemmConfig parse(const std::string& id);  // throws Error("ValueError")
};

/// The kernel a class uses without measurement (no GPU at build time, symbolic shapes).
GemmConfig default_config(const GemmClass& c, int sm);
/// The configurations the profiler times for a class (the default first). Few on purpose: each
/// is a compilation of ~1 minute, per epilogue kind.
std::vector<GemmConfig> candidate_configs(const GemmClass& c, int sm);

/// The C symbol of a unit's entry point: `pt_gemm_<class>_<config's unit id>` (its workspace
/// query adds `_workspace`).
std::string gemm_symbol(const GemmClass& c, const GemmConfig& k);
/// The whole source of the unit for this class and config.
std::string gemm_unit_source(const GemmClass& c, const GemmConfig& k);
/// The distinct units (symbol, source) that run these configurations, in their order.
std::vector<std::pair<std::string, std::string>> gemm_units(const GemmClass& c, const std::vector<GemmConfig>& ks);

/// The epilogues' exact (erf) GELU, x·Φ(x), as the units compute it: Φ(-t) for t = |x| is
/// 2^(-t²/(2 ln 2) + q(min(t, 6))), q a degree-7 polynomial fitted to log2 Φ(-t) + t²/(2 ln 2)
/// on [0, 6] (max error 4e-6 relative; beyond 6, Φ(-t) < 1e-9). One exp2 and ~12 FMAs per
/// element, branch-free, against erff's two polynomials evaluated side by side: the erf GELU
/// cost BERT's FFN1 epilogue ~10 us of a 44 us kernel (docs/benchmarks.md).
/// The device function's source (`pt_gelu_erf`, exp2 by the ex2.approx instruction):
std::string gelu_erf_device_source();
/// The same formula on the host, with std::exp2 (what the tests check the fit with).
float gelu_erf_approx(float x);

/// The CUTLASS element type of a dtype ("cutlass::half_t", ...), "" when there is none.
std::string cutlass_element(DataType t);
/// A short tag of a dtype for names ("f16", "bf16", "f32", "i8", "i32").
std::string dtype_tag(DataType t);

}  // namespace partita::backend::cutlass
