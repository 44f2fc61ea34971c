// The BLAS backend's compiler half: the `cblas.*` patterns and the codegen that writes each
// offloaded function as a JSON graph of products for the runtime plug-in (README.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::cblas {

std::vector<transform::FusionPattern> cblas_patterns();
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::cblas
