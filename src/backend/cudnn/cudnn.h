// The cuDNN backend's compiler half: the `cudnn.*` patterns (convolutions with fused epilogues,
// scaled dot-product attention), the checks that accept exactly what the runtime runs, and the
// codegen that writes each offloaded function as a small program of cuDNN graphs
// (module_format.h). See README.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/ir/module.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::cudnn {

/// A conv2d with its epilogue, read from a composite's bindings: conv2d, then an optional
/// channel bias add, an optional residual add of the output's shape, an optional activation.
struct ConvChain {
  const CallNode* conv = nullptr;
  Expr data, weight;
  Expr bias;      // null when absent; (1, K, 1, 1) or (K, 1, 1)
  Expr residual;  // null when absent; the output's shape
  std::string activation;  // "", "relu", "gelu", "silu", "sigmoid", "clip"
  double clip_min = 0, clip_max = 0;
  const CallNode* root = nullptr;  // the last call of the chain (its result is the output)
};

/// Reads the chain ending at `root`; `value_of` gives the value bound to a variable (null when
/// it is not bound inside the chain). nullopt when `root` is not such a chain.
std::optional<ConvChain> read_conv_chain(const CallNode& root, const std::function<Expr(const Expr&)>& value_of);

/// Why the runtime cannot run `chain` (nullopt when it can): dtypes (float16, bfloat16,
/// float32, one for all operands), NCHW / OIHW layouts, static shapes, groups, bias and residual
/// shapes, constant clip bounds.
std::optional<std::string> conv_unsupported(const ConvChain& chain);
/// Why cuDNN's fused flash attention cannot run `call` (relax.nn.attention[_bias]).
std::optional<std::string> attention_unsupported(const CallNode& call);

/// The PassContext config key (an int, 0 by default) that makes the `cudnn.*` patterns take
/// depthwise convolutions (groups == input channels > 1). By default they are left to the
/// generated CUDA kernels: on the H200, mnasnet1_0 at batch 32 in float16 with cuBLAS + cuDNN
/// ran in 3.70 ms with cuDNN's heuristic engines for them (session 7) and 1.30 ms with the
/// generated ones (the next call; docs/benchmarks.md). The codegen and runtime run them either
/// way; this is a placement choice, not a capability.
inline constexpr const char* kTakeDepthwiseConfig = "cudnn.depthwise";
/// The PassContext config key (an int, 0 by default) that lets the `cudnn.*` patterns fuse a
/// clip (ReLU6) into a convolution. By default the clip is left to the generated kernels, which
/// fuse it into its consumer: cuDNN 9.14's engines for a convolution with a clipped-ReLU epilogue
/// ran mobilenet_v2 at batch 32 in float16 15× slower (17.1 ms against 1.16 ms, docs/benchmarks.md).
inline constexpr const char* kFuseClipConfig = "cudnn.fuse_clip";
/// The PassContext config key (an int, 0 by default) that makes the `cudnn.*` patterns take an
/// attention with a bias (relax.nn.attention_bias: BERT's padding mask, Swin's relative position
/// bias). By default it stays matmul, softmax and matmul for cuBLAS and the generated kernels;
/// attention without a bias (ViT, causal GPT) runs on cuDNN. The default rests on no valid
/// measurement: it was set after BERT-base at batch 32 took 58.5 ms with cuDNN attention, a time
/// later traced to reshapes placed on the host (that BERT has no mask: its attention has no bias;
/// docs/benchmarks.md, session 9), and Swin's biased attention on cuDNN was not re-measured since.
inline constexpr const char* kBiasedAttentionConfig = "cudnn.attention_bias";

/// The backend's prepare step (BackendInfo::prepare, run before any backend of a compile
/// partitions): constants folded, the attention chains cuDNN runs rewritten to R.nn.attention
/// (RewriteAttention), and every attention call the patterns would decline, rewritten here or
/// already in `mod`, decomposed again (DecomposeAttention), so other backends take its matmuls.
IRModule prepare_for_cudnn(IRModule mod);

/// The `cudnn.*` fusion patterns, general ones first.
std::vector<transform::FusionPattern> cudnn_patterns();

/// The prepare step (prepare_for_cudnn), then the generic partitioning with the `cudnn.*`
/// patterns (transform::partition_for); `depthwise` sets
/// kTakeDepthwiseConfig for the call (nullopt: the current PassContext's value).
IRModule partition_for_cudnn(IRModule mod, bool merge = true, bool bind_constants = true,
                             std::optional<bool> depthwise = std::nullopt);

/// The program (JSON, module_format.h) of `functions`; constants named through `namer`.
std::string serialize_program(const std::vector<codegen::CodegenFunction>& functions, codegen::ConstantNamer& namer,
                              std::vector<std::string>& const_names, bool allow_tf32, bool autotune = false,
                              int64_t autotune_top_k = 0);

/// The codegen registered for "cudnn".
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::cudnn
