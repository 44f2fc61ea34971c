// The "cudnn" backend's record.
#include "cudnn.h"
#include "partita/backend/registry.h"

namespace partita::backend::cudnn {

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "cudnn";
  b.description = "cuDNN 9 graphs: convolutions with fused bias / residual / activation (NHWC), fused flash attention";
  b.colour = "#4c9a2a";
  b.target_options = {{"allow_tf32", codegen::TargetOptionType::Int, int64_t(0),
                       "float32 convolutions may use TF32 tensor cores (1) or not (0, exact float32)"},
                      {"autotune", codegen::TargetOptionType::Int, int64_t(0),
                       "build and time every engine cuDNN offers for each convolution once, when the module loads, "
                       "and keep the fastest (1, as PyTorch's cudnn.benchmark; loads take longer); or take the "
                       "heuristic's first choice (0)"},
                      {"autotune_top_k", codegen::TargetOptionType::Int, int64_t(0),
                       "with autotune=1, build and time only the heuristic's first K engines of each convolution "
                       "(0: every engine; a small K keeps loads fast)"}};
  b.prepare = prepare_for_cudnn;
  b.patterns = cudnn_patterns;
  b.codegen = codegen;
  b.runtime_plugin = "cudnn";
  return b;
});

}  // namespace partita::backend::cudnn
