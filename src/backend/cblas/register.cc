// The "cblas" backend's record.
#include "cblas.h"
#include "partita/backend/registry.h"

namespace partita::backend::cblas {

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "cblas";
  b.description = "OpenBLAS products: matmul / dense with bias and activation epilogues";
  b.colour = "#f2b36b";
  b.target_options = {{"num_threads", codegen::TargetOptionType::Int, int64_t(0), "threads (0 = OpenMP's default)"}};
  b.patterns = cblas_patterns;
  b.codegen = codegen;
  b.runtime_plugin = "cblas";
  return b;
});

}  // namespace partita::backend::cblas
