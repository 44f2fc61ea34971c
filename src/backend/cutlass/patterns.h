// The cutlass backend's pattern table (patterns.cc).
#pragma once

#include <vector>

#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::cutlass {

std::vector<transform::FusionPattern> cutlass_patterns();

}  // namespace partita::backend::cutlass
