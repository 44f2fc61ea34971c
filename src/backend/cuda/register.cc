// The "cuda" backend's record: the cuda target's default code generator. It has no patterns:
// what no BYOC backend took is grouped by fusion kind (partition_for_cuda, FuseOpsByKind, which
// finds this backend's check and kinds under its name) and compiled by the codegen.
#include "cuda_codegen.h"
#include "codegen/op_support.h"
#include "partita/backend/registry.h"
#include "partita/transform/fuse_ops_by_kind.h"

#ifndef PARTITA_CUDA_INCLUDE_DIR
#define PARTITA_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace partita::backend::cuda {
namespace {

const bool fusion_registered = [] {
  transform::register_kind_fusion("cuda", {[](const CallNode& call) { return !unsupported_reason(call); },
                                           cuda_fusion_kind});
  return true;
}();

}  // namespace

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "cuda";
  b.description = "generated CUDA kernels (NVRTC), fused by operator kind: every operator no other backend takes";
  b.colour = "#76b900";
  b.target_options = {
      {"arch", codegen::TargetOptionType::String, "sm_90", "the GPU NVRTC compiles for (a real architecture)"},
      {"include_dirs", codegen::TargetOptionType::StringList, std::vector<std::string>{PARTITA_CUDA_INCLUDE_DIR},
       "directories NVRTC searches for cuda_fp16.h and cuda_bf16.h"},
      {"options", codegen::TargetOptionType::StringList, std::vector<std::string>{}, "more NVRTC options"},
      {"gemm_split_k_below", codegen::TargetOptionType::Int, int64_t(132),
       "float-accumulating matrix products with fewer regular tiles than this take the split-K kernel "
       "(the GPU's SM count; 0: never)"},
      {"gemm_split_k_groups", codegen::TargetOptionType::Int, int64_t(0),
       "thread groups sharing K in the split-K kernel: 4, 8, or 0 (automatic)"},
      {"gemm_mma_split_k", codegen::TargetOptionType::Int, int64_t(1),
       "16-bit products that take split-K, have K >= 1024 and a 64 x 64 tensor-core grid covering "
       "half of gemm_split_k_below take the 64 x 64 tensor-core tile, four groups of warps sharing K "
       "(1); or the tile gemm_mma_thin gives other thin products (0)"},
      {"gemm_mma_thin", codegen::TargetOptionType::Int, int64_t(1),
       "the other 16-bit split-K products on tensor cores too, a 32 x 32 tile with four groups of warps "
       "sharing K (1), or on the FFMA split-K kernel (0)"},
      {"gemm_prefetch", codegen::TargetOptionType::Int, int64_t(1),
       "GEMM kernels whose operands are plain reads (no fused producer's arithmetic) fetch the next K "
       "slice into registers while computing the current one (1), or none does (0)"},
      {"gemm_wide", codegen::TargetOptionType::Int, int64_t(1),
       "products of at most 32 rows take 32 x 128 tiles on the regular FFMA and tensor-core kernels (1), "
       "or the square tiles (0)"},
      {"gemm_vector_smem", codegen::TargetOptionType::Int, int64_t(1),
       "each thread of the float-accumulating FFMA kernels holds a 4 x 4 block of adjacent rows and "
       "columns, read from shared memory as float4 (1), or strided ones read one value at a time (0)"},
      {"cache_dir", codegen::TargetOptionType::String, "",
       "where compiled kernels are cached (empty: $XDG_CACHE_HOME/partita/cuda or ~/.cache/partita/cuda; "
       "\"none\": no disk cache)"}};
  b.patterns = [] { return std::vector<transform::FusionPattern>{}; };
  b.codegen = codegen;
  b.runtime_plugin = "cuda";
  return b;
});

}  // namespace partita::backend::cuda
