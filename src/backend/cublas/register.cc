// The "cublas" backend's record.
#include "cublas.h"
#include "partita/backend/registry.h"

namespace partita::backend::cublas {

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "cublas";
  b.description = "cuBLASLt GEMMs: matmul (transposed, batched) with bias / relu / gelu epilogues";
  b.colour = "#76b900";
  b.target_options = {
      {"allow_tf32", codegen::TargetOptionType::Bool, false, "float32 products on TF32 tensor cores"},
      {"autotune_top_k", codegen::TargetOptionType::Int, int64_t(0),
       "time the heuristic's best k algorithms once per shape and keep the fastest (0: its first)"},
      {"workspace_mib", codegen::TargetOptionType::Int, int64_t(32), "cuBLASLt workspace per device and thread"}};
  b.prepare = prepare_for_cublas;
  b.patterns = cublas_patterns;
  b.codegen = codegen;
  b.runtime_plugin = "cublas";
  return b;
});

}  // namespace partita::backend::cublas
