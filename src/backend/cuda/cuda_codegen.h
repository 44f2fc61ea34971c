// The `cuda` target's default code generator: every operator call no BYOC backend took is
// grouped by fusion kind (partition_for_cuda, i.e. FuseOpsByKind) into "Codegen": "cuda"
// functions; RunCodegen hands them all to this codegen, which emits one CUDA C++ kernel per
// function (see src/backend/cuda/codegen/kernel_emitter.h), compiles the module's source with
// NVRTC into one cubin (cached by source hash in memory and on disk) and returns a "cuda"
// runtime module carrying source and cubin.
//
// The backend is registered as "cuda" (register.cc); its runtime half is the plug-in
// libpartita_runtime_cuda.so (runtime/kernel_module.cc), which the codegen never links: it writes
// the module's bytes (kernel_launch.h) and lets the runtime load them, as an artifact is loaded.
//
// Target kind "cuda": arch ("sm_90"), include_dirs (where NVRTC finds cuda_fp16.h; the toolkit's
// include directory found at configure time), options (more NVRTC options), gemm_split_k_below
// and gemm_split_k_groups (GemmTuning below), cache_dir ("": the directory
// $XDG_CACHE_HOME/partita/cuda, else ~/.cache/partita/cuda; "none": no disk cache).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernel_launch.h"
#include "partita/codegen/codegen.h"
#include "partita/op/registry.h"

namespace partita::backend::cuda {

/// The CUDA source of `functions` and each one's launch (throws codegen::UnsupportedFunction
/// for a function it cannot compile). Constants are named through `namer`.
struct GeneratedSource {
  std::string source;
  std::vector<KernelFunction> functions;
  std::vector<std::string> const_names;
};
/// How matrix products and convolutions pick their kernel (target options gemm_split_k_below and
/// gemm_split_k_groups). A product with float accumulation whose regular tiles (64 x 64 FFMA,
/// 128 x 128 tensor cores) number fewer than `split_k_below` — less than one wave of the GPU's
/// SMs, as at batch 1 — runs on 32 x 32 tiles with K split among `split_k_groups` groups of 64
/// threads of a block (0: 8 when even the small tiles are fewer than split_k_below, else 4).
struct GemmTuning {
  int64_t split_k_below = 132;  // the H200's SM count
  int split_k_groups = 0;
  /// 16-bit split-K products with K >= 1024 whose 64 x 64 tensor-core grid covers half of
  /// split_k_below take that tile, K shared among four groups of warps (false: they are treated
  /// as the other thin products, below).
  bool mma_split_k = true;
  /// The other 16-bit split-K products on tensor cores too: a 32 x 32 tile, K shared among four
  /// groups of warps (false: the FFMA split-K kernel).
  bool mma_thin = true;
  /// GEMM kernels whose operands are plain reads (no fused producer's arithmetic) fetch the next
  /// K slice into registers while they compute on the current one (false: never).
  bool prefetch = true;
  /// Products of at most 32 rows take 32 x 128 tiles on the regular kernels (false: the square
  /// tiles, half of whose rows are then beyond M).
  bool wide = true;
  /// The FFMA kernels' threads hold 4 x 4 blocks of adjacent rows and columns, read from shared
  /// memory as float4 (false: strided rows and columns, scalar reads).
  bool vector_smem = true;
};
/// `sm` is the compute capability compiled for (tensor-core matrix products need 70 / 80).
GeneratedSource generate_source(const std::vector<codegen::CodegenFunction>& functions, codegen::ConstantNamer& namer,
                                int sm = 90, const GemmTuning& tuning = {});
/// The compute capability of a "sm_XY" / "sm_XYa" arch (90 for sm_90); Error("ValueError")
/// naming the option for anything else.
int arch_compute_capability(const std::string& arch);

/// Compiles `source` with NVRTC for the target's arch; returns the cubin. Throws
/// Error("CompileError") with NVRTC's log when it does not compile.
std::string compile_cubin(const std::string& source, const codegen::Target& target);

/// How compile_cubin found its results since the process started (for tests and reports).
struct CompileCacheStats {
  int memory_hits = 0, disk_hits = 0, compiles = 0;
};
CompileCacheStats compile_cache_stats();
/// Forgets the in-memory cache (the disk cache stays).
void clear_compile_memory_cache();

/// The codegen registered as "cuda".
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

/// Why the cuda codegen cannot compile `call` (nullopt: it can).
std::optional<std::string> unsupported_call_reason(const CallNode& call);

/// How the codegen fuses `call`: the operator's fusion kind, except that batch_norm in inference
/// mode is a broadcast (the codegen computes it element by element, so it joins an epilogue).
op::FusionKind cuda_fusion_kind(const CallNode& call);

/// Groups the operator calls the codegen accepts into "Codegen": "cuda" functions
/// (transform::FuseOpsByKind with this backend's check and fusion kinds).
IRModule partition_for_cuda(IRModule mod);

}  // namespace partita::backend::cuda
