// The cuBLAS backend's compiler half: the `cublas.*` pattern table with TVM's check (patterns.cc),
// the rules it shares with the codegen (gemm_rules.h), the codegen writing each offloaded function
// as a GEMM program (codegen.cc) and partition_for_cublas (README.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/ir/module.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::cublas {

/// TVM's table, in its order (later entries have priority).
std::vector<transform::FusionPattern> cublas_patterns();

/// TVM's partition_for_cublas: FuseOpsByPattern with the table, annotate_codegen=True (one
/// "Codegen": "cublas" function per match), after FoldForInference like every partition_for.
IRModule partition_for_cublas(IRModule mod, bool bind_constants = false);

/// The backend's prepare step (BackendInfo::prepare): FoldForInference, then PatchConvToMatmul,
/// so that a convolution whose kernel tiles its input (ViT's patch embedding) is a product here.
IRModule prepare_for_cublas(IRModule mod);

codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::cublas
