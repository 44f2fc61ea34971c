// Which operator calls the cuda codegen compiles: the one check shared by partition_for_cuda
// (FuseOpsByKind's `accepts`) and the codegen itself, so partitioning never hands the codegen a
// call it refuses.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partita/ir/expr.h"

namespace partita::backend::cuda {

/// Why the codegen cannot compile `call`, or nullopt when it can.
std::optional<std::string> unsupported_reason(const CallNode& call);
/// Operators whose R.prim_value arguments are scalar operands (as 0-d tensors).
bool op_takes_scalar_operands(const std::string& op_name);
/// Every operator the codegen compiles (for some dtypes and attributes), sorted.
std::vector<std::string> supported_ops();

}  // namespace partita::backend::cuda
