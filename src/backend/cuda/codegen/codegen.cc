// The "cuda" codegen: registration of the target kind and codegen, the module's source (prelude
// plus one kernel per function), and partition_for_cuda.
#include "partita/backend/cuda_codegen.h"

#include "kernel_emitter.h"
#include "op_support.h"
#include "prelude.h"
#include "partita/transform/fuse_ops_by_kind.h"

#ifndef PARTITA_CUDA_INCLUDE_DIR
#define PARTITA_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace partita::backend::cuda {

GeneratedSource generate_source(const std::vector<codegen::CodegenFunction>& functions, codegen::ConstantNamer& namer) {
  GeneratedSource out;
  out.source = kCudaPrelude;
  out.source += "\n";
  for (const auto& f : functions) {
    KernelEmitter emitter(f, namer, out.const_names);
    out.functions.push_back(emitter.emit(out.source));
  }
  return out;
}

codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  GeneratedSource gen = generate_source(functions, namer);
  std::string cubin = compile_cubin(gen.source, target);
  codegen::CodegenResult result;
  result.modules.push_back(make_cuda_kernel_module(std::move(gen.source), std::move(cubin), std::move(gen.functions)));
  result.constants = namer.added();
  return result;
}

std::optional<std::string> unsupported_call_reason(const CallNode& call) { return unsupported_reason(call); }

IRModule partition_for_cuda(IRModule mod) {
  transform::FuseOpsByKindOptions options;
  options.codegen = "cuda";
  options.accepts = [](const CallNode& call) { return !unsupported_reason(call); };
  return transform::fuse_ops_by_kind(std::move(mod), options);
}

namespace {

const bool registered = [] {
  codegen::register_target_kind(codegen::TargetKindDef{
      "cuda",
      {{"arch", codegen::TargetOptionType::String, "sm_90", "the GPU NVRTC compiles for (a real architecture)"},
       {"include_dirs", codegen::TargetOptionType::StringList, std::vector<std::string>{PARTITA_CUDA_INCLUDE_DIR},
        "directories NVRTC searches for cuda_fp16.h and cuda_bf16.h"},
       {"options", codegen::TargetOptionType::StringList, std::vector<std::string>{}, "more NVRTC options"},
       {"cache_dir", codegen::TargetOptionType::String, "",
        "where compiled kernels are cached (empty: $XDG_CACHE_HOME/partita/cuda or ~/.cache/partita/cuda; "
        "\"none\": no disk cache)"}}});
  codegen::register_codegen("cuda", codegen);
  return true;
}();

}  // namespace

}  // namespace partita::backend::cuda
