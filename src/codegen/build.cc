#include "partita/codegen/build.h"

#include "partita/codegen/codegen.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/transform/attention.h"
#include "partita/transform/basic.h"
#include "partita/transform/fuse_ops_by_kind.h"

namespace partita::codegen {

namespace {

// The host is the VM over built-in kernels, whatever name the user gives it (TVM users write
// "llvm"); these kinds have no options yet.
constexpr const char* kHostKinds[] = {"llvm", "c", "cpu"};

bool is_host_kind(const std::string& kind) {
  for (const char* k : kHostKinds)
    if (kind == k) return true;
  return false;
}

const bool host_kinds_registered = [] {
  for (const char* k : kHostKinds) register_target_kind(TargetKindDef{k, {}});
  return true;
}();

}  // namespace

std::shared_ptr<runtime::Executable> build(IRModule mod, const BuildOptions& options) {
  std::vector<Target> backend_targets;
  for (const Target& t : options.targets)
    if (!is_host_kind(t.kind())) backend_targets.push_back(t);
  mod = transform::Normalize()(mod);
  // A target whose code generator fuses by kind (the `cuda` target) takes what is left after
  // the BYOC partitioning the caller did: FuseOpsByKind groups it for that codegen.
  for (const Target& t : backend_targets)
    if (auto kinds = transform::find_kind_fusion(t.kind())) {
      // Attention that no BYOC backend took and the code generator cannot compile whole runs
      // as its matmul / softmax parts, which it can.
      auto accepts = kinds->accepts;
      mod = transform::DecomposeAttention([accepts](const CallNode& call) { return accepts && !accepts(call); })(mod);
      transform::FuseOpsByKindOptions fuse;
      fuse.codegen = t.kind();
      mod = transform::FuseOpsByKind(fuse)(mod);
    }
  mod = RunCodegenWithTargets(backend_targets, options.fallback)(mod);
  return build_vm_executable(mod, external_mods_of(mod));
}

}  // namespace partita::codegen
