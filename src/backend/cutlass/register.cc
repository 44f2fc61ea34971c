// The "cutlass" backend's record: TVM's CUTLASS pattern table (patterns.cc), and — when the
// CUDA toolkit and the CUTLASS headers were found at configure time — the codegen (CUTLASS 3
// sm90a GEMMs with fused epilogues, compiled by nvcc; codegen.cc) and the runtime plug-in.
#include "cutlass_codegen.h"
#include "partita/backend/registry.h"
#include "patterns.h"

#ifndef PARTITA_CUTLASS_NVCC
#define PARTITA_CUTLASS_NVCC "/usr/local/cuda/bin/nvcc"
#endif
#ifndef PARTITA_CUTLASS_DIR
#define PARTITA_CUTLASS_DIR ""
#endif

namespace partita::backend::cutlass {

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "cutlass";
  b.colour = "#c9a0dc";
  b.patterns = cutlass_patterns;
  b.prepare = prepare_for_cutlass;
#if PARTITA_WITH_CUTLASS_CODEGEN
  b.description =
      "CUTLASS 3 sm90a GEMMs / NHWC conv2d with fused bias, activation and residual epilogues, "
      "layer / rms norm, element-wise ops (nvcc, profiled kernel choice)";
  using codegen::TargetOptionType;
  b.target_options = {
      {"sm", TargetOptionType::Int, int64_t(90), "the GPU architecture (GEMMs need 90: sm90a)"},
      {"use_fast_math", TargetOptionType::Bool, false, "nvcc --use_fast_math"},
      {"threads", TargetOptionType::Int, int64_t(0), "parallel nvcc processes (0: one per core)"},
      {"tf32", TargetOptionType::Bool, false,
       "run float32 GEMMs on the tensor cores as TF32 (else they stay elsewhere)"},
      {"nvcc", TargetOptionType::String, std::string(PARTITA_CUTLASS_NVCC), "the CUDA compiler"},
      {"cutlass_dir", TargetOptionType::String, std::string(PARTITA_CUTLASS_DIR),
       "CUTLASS's source folder (with include/ and tools/util/include/)"},
      {"cache_dir", TargetOptionType::String, std::string(),
       "compiled objects and the profile cache (empty: $XDG_CACHE_HOME/partita/cutlass or ~/.cache/partita/cutlass; "
       "\"none\": no cache)"},
      {"profile", TargetOptionType::Bool, true, "time candidate kernels on the GPU for workloads the cache lacks"},
      {"attention_kernel", TargetOptionType::String, std::string("auto"),
       "auto: CUTLASS's Hopper FMHA where it applies on sm90, example 41's kernel elsewhere; sm80: example 41's kernel "
       "always"},
      {"attention_tile", TargetOptionType::String, std::string(),
       "the attention kernel's block tile, <queries>x<keys> (empty: the default; example 41's kernel: 64x64 up to "
       "head dimension 64, 32x128 above; the Hopper kernel: 128x64 or 128x128)"},
      {"attention_schedule", TargetOptionType::String, std::string(),
       "the Hopper attention kernel's schedule: cooperative (empty), persistent or pingpong"},
      {"profile_cache", TargetOptionType::String, std::string(),
       "the profile cache file (empty: <cache_dir>/gemm_profile.tsv)"}};
  b.codegen = codegen;
  b.runtime_plugin = "cutlass";
#else
  b.description =
      "TVM's CUTLASS pattern table (partitioning only: the CUDA toolkit or the CUTLASS headers were not found)";
#endif
  return b;
});

}  // namespace partita::backend::cutlass
