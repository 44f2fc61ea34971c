// The cutlass backend's pattern table (patterns.cc).
#pragma once

#include <vector>

#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::cutlass {

std::vector<transform::FusionPattern> cutlass_patterns();

/// The backend's prepare step (BackendInfo::prepare): constants folded, scaled dot-product
/// chains rewritten to relax.nn.attention, and the attention calls the kernel cannot run
/// decomposed again.
IRModule prepare_for_cutlass(IRModule mod);

}  // namespace partita::backend::cutlass
