// How a binary op's broadcast operand lies against its result, shared by both halves: the
// check (codegen.cc) offloads only the broadcasts oneDNN runs with its fast (jit) kernel, and
// the runtime (runtime/dnnl_module.cc) runs them on views of the operands with those few dims.
//
// On a tensor's own dims, oneDNN 2.6 runs many broadcasts on its reference kernel
// (DNNL_VERBOSE: `ref:any`, 20-50x slower than its jit one), e.g. (1, C, H, 1) or (1, 1, H, 1)
// against (N, C, H, W). Merged into runs of kept and broadcast dims, the same broadcasts become
// (N, C*H, W) by (1, C*H, 1) and (N*C, H, W) by (1, H, 1), which its jit kernel runs; so do all
// patterns of up to three runs (checked with DNNL_VERBOSE by the backend's tests). Longer ones
// stay on the host. A per-channel operand against a blocked activation (nChw8c, which oneDNN
// picks for grouped convolutions) runs on the reference kernel whatever the operand's layout;
// the runtime handles that case itself (build_binary).
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
