// The oneDNN backend's compiler half: the `dnnl.*` patterns and the codegen that turns each
// offloaded function (a whole merged partition) into a serialized graph of oneDNN primitives
// (module_format.h), which the runtime plug-in builds once and runs. See README.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::dnnl {

/// The `dnnl.*` fusion patterns, general ones first.
std::vector<transform::FusionPattern> dnnl_patterns();

/// Why `call` cannot be lowered (empty when it can); the patterns' checks use it, so the
/// backend never accepts what its codegen cannot lower.
std::string unsupported_reason(const CallNode& call);

/// The serialized graph (JSON) of `functions`; constants named through `namer`.
std::string serialize_graph(const std::vector<codegen::CodegenFunction>& functions, codegen::ConstantNamer& namer,
                            int64_t num_threads, std::vector<std::string>& const_names, int64_t winograd = 1);

/// The codegen registered for "dnnl".
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::dnnl
