// The "cuda" codegen: the module's source (prelude plus one kernel per function), the module
// made from its bytes, partition_for_cuda.
#include "../cuda_codegen.h"

#include <cctype>


#include "kernel_emitter.h"
#include "op_support.h"
#include "prelude.h"
#include "partita/transform/attention.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/fuse_ops_by_kind.h"

namespace partita::backend::cuda {

int arch_compute_capability(const std::string& arch) {
  size_t digits = 0;
  while (3 + digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[3 + digits]))) ++digits;
  bool ok = arch.rfind("sm_", 0) == 0 && digits >= 2 && (3 + digits == arch.size() || arch.substr(3 + digits) == "a");
  if (!ok)
    throw_error("ValueError", "cuda target: arch '" + arch + "' is not a real GPU architecture such as \"sm_90\"");
  return std::stoi(arch.substr(3, digits));
}

GeneratedSource generate_source(const std::vector<codegen::CodegenFunction>& functions, codegen::ConstantNamer& namer,
                                int sm, const GemmTuning& tuning) {
  GeneratedSource out;
  out.source = kCudaPrelude;
  out.source += "\n";
  std::string kernels;
  for (const auto& f : functions) {
    KernelEmitter emitter(f, namer, out.const_names, sm, tuning);
    out.functions.push_back(emitter.emit(kernels));
  }
  // Tensor-core kernels need mma.h, which triples NVRTC's time: included only when used.
  if (kernels.find("wmma::") != std::string::npos) out.source += "#include <mma.h>\n\n";
  out.source += kernels;
  return out;
}

codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  GemmTuning tuning;
  tuning.split_k_below = target.get_int("gemm_split_k_below");
  tuning.split_k_groups = int(target.get_int("gemm_split_k_groups"));
  tuning.mma_split_k = target.get_int("gemm_mma_split_k") != 0;
  tuning.mma_thin = target.get_int("gemm_mma_thin") != 0;
  tuning.prefetch = target.get_int("gemm_prefetch") != 0;
  tuning.wide = target.get_int("gemm_wide") != 0;
  tuning.vector_smem = target.get_int("gemm_vector_smem") != 0;
  if (tuning.split_k_groups != 0 && tuning.split_k_groups != 4 && tuning.split_k_groups != 8)
    throw_error("ValueError", "cuda target: gemm_split_k_groups must be 0 (automatic), 4 or 8, not " +
                                  std::to_string(tuning.split_k_groups));
  GeneratedSource gen =
      generate_source(functions, namer, arch_compute_capability(target.get_string("arch")), tuning);
  std::string cubin = compile_cubin(gen.source, target);
  return codegen::module_from_bytes(kModuleFormat.type_key,
                                    write_cuda_module(gen.source, cubin, gen.functions), namer);
}

std::optional<std::string> unsupported_call_reason(const CallNode& call) { return unsupported_reason(call); }

op::FusionKind cuda_fusion_kind(const CallNode& call) {
  const op::OpDef* def = op::callee_op_def(call);
  if (!def || def->fusion_kind == op::FusionKind::Unset) return op::FusionKind::Opaque;
  if (def->name == "relax.nn.batch_norm" && call.attrs)
    if (const AttrValue* v = call.attrs->find("training"); v && std::get_if<bool>(v) && !*std::get_if<bool>(v))
      return op::FusionKind::Broadcast;
  return def->fusion_kind;
}

IRModule partition_for_cuda(IRModule mod) {
  // As build() does: constants folded, and attention the codegen refuses run as its matmul /
  // softmax parts.
  mod = transform::FoldForInference()(std::move(mod));
  mod = transform::DecomposeAttention([](const CallNode& call) { return bool(unsupported_reason(call)); })(mod);
  transform::FuseOpsByKindOptions options;
  options.codegen = "cuda";
  options.accepts = [](const CallNode& call) { return !unsupported_reason(call); };
  options.fusion_kind = cuda_fusion_kind;
  return transform::fuse_ops_by_kind(std::move(mod), options);
}

}  // namespace partita::backend::cuda
