// How a binary op's broadcast operand lies against its result, shared by both halves: the
// check (codegen.cc) offloads only the broadcasts oneDNN runs with its fast (jit) kernel, and
// the runtime (runtime/dnnl_module.cc) runs them on views of the operands with those few dims.
//
// oneDNN 2.6's jit binary kernel handles a second source that is the whole tensor, a scalar,
// or broadcast along the leading, the trailing or the outer and inner dims of a plain tensor;
// other broadcasts, e.g. (A, 1, C) against (A, B, C), or a per-channel (1, C, 1, 1) against a
// blocked (nChw8c) activation, run on its reference kernel (DNNL_VERBOSE shows `ref:any`),
// several times slower than the host's loops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::backend::dnnl {

/// The result's dims (size-1 ones dropped) merged into runs that the operand keeps ('K') or
/// broadcasts ('B'), with each run's size in the result and in the operand.
struct BroadcastRuns {
  std::string pattern;  // e.g. "BKB" for (1, C, 1, 1) against (N, C, H, W)
  std::vector<int64_t> result_dims, operand_dims;
};

/// `operand` is right-aligned against `result` (numpy broadcasting); its dims are equal to the
/// result's or 1.
inline BroadcastRuns broadcast_runs(const std::vector<int64_t>& result, const std::vector<int64_t>& operand) {
  BroadcastRuns r;
  const size_t lead = result.size() - operand.size();
  for (size_t k = 0; k < result.size(); ++k) {
    if (result[k] == 1) continue;
    const bool kept = k >= lead && operand[k - lead] != 1;
    const char kind = kept ? 'K' : 'B';
    if (r.pattern.empty() || r.pattern.back() != kind) {
      r.pattern += kind;
      r.result_dims.push_back(1);
      r.operand_dims.push_back(1);
    }
    r.result_dims.back() *= result[k];
    if (kept) r.operand_dims.back() *= result[k];
  }
  return r;
}

/// Whether oneDNN runs this broadcast with its jit kernel once the operands are viewed as the
/// runs (plain memory): the whole tensor, a scalar, (M, N) by (M, 1) or (1, N), (A, C, W) by
/// (1, C, 1) or (A, 1, W). Longer alternations, e.g. (A, B, C, D) by (1, B, 1, D), stay on the
/// host.
inline bool jit_broadcast(const std::string& pattern) {
  return pattern.empty() || pattern == "K" || pattern == "B" || pattern == "KB" || pattern == "BK" ||
         pattern == "BKB" || pattern == "KBK";
}

}  // namespace partita::backend::dnnl
