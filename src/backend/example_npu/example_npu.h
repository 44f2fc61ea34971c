// The example NPU's compiler half: its pattern table (TVM v0.26's example_npu names and order),
// the rule shared by the checks and the codegen, and the codegen. Internal to this folder.
#pragma once

#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::example_npu {

/// The `example_npu.*` patterns, general first (later ones have priority, as in TVM).
std::vector<transform::FusionPattern> patterns();

/// Why the runtime cannot run `call` (empty when it can): it runs an operator on the runtime's
/// host kernel of that name, so the call must have one, and every argument and the result (a
/// tensor or a tuple of tensors) must be a float32 tensor of static shape (the module's values
/// are float32 buffers of sizes fixed at build time); attributes must be plain values.
std::string unsupported_call(const CallNode& call);

/// The codegen: one JSON graph (module_format.h) for all the functions given.
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::example_npu
