// The "dnnl" backend's record.
#include "dnnl.h"
#include "partita/backend/registry.h"

namespace partita::backend::dnnl {

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "dnnl";
  b.description = "oneDNN primitives: convolutions, products, pooling, normalization, element-wise ops";
  b.colour = "#7fb3e6";
  b.target_options = {
      {"num_threads", codegen::TargetOptionType::Int, int64_t(0), "threads for oneDNN (0 = every core)"},
      {"winograd", codegen::TargetOptionType::Int, int64_t(1),
       "Winograd 3x3 convolutions: 0 off, 1 where faster than oneDNN's direct ones (measured), 2 / 4 our F(2x2) / "
       "F(4x4) (AVX2 CPUs) or 3 oneDNN's (AVX-512 CPUs) wherever supported"}};
  b.patterns = dnnl_patterns;
  b.codegen = codegen;
  b.runtime_plugin = "dnnl";
  return b;
});

}  // namespace partita::backend::dnnl
