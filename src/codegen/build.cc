#include "partita/codegen/build.h"

#include "partita/codegen/codegen.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/transform/attention.h"
#include "partita/transform/basic.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/fuse_ops_by_kind.h"
#include "partita/transform/place_device_copies.h"

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

/// Where each compiled function runs, by global symbol: the device kind its runtime module
/// declares (RuntimeModule::device_kind; the VM finds a symbol in a module or its imports and
/// runs it on that module's device). Host modules are left out.
std::map<std::string, VDevice> device_functions(const std::vector<runtime::ModulePtr>& mods) {
  std::map<std::string, VDevice> out;
  for (const runtime::ModulePtr& m : mods) {
    if (m->device_kind() == DeviceKind::kCPU) continue;
    VDevice d = make_vdevice(device_type_name(int(m->device_kind())));
    std::vector<const runtime::RuntimeModule*> work{m.get()};
    while (!work.empty()) {
      const runtime::RuntimeModule* cur = work.back();
      work.pop_back();
      for (const std::string& name : cur->function_names()) out.emplace(name, d);
      for (const auto& imported : cur->imports()) work.push_back(imported.get());
    }
  }
  return out;
}

}  // namespace

std::shared_ptr<runtime::Executable> build(IRModule mod, const BuildOptions& options) {
  std::vector<Target> backend_targets;
  for (const Target& t : options.targets)
    if (!is_host_kind(t.kind())) backend_targets.push_back(t);
  mod = transform::Normalize()(mod);
  // A target whose code generator fuses by kind takes what is left after
  // the BYOC partitioning the caller did: FuseOpsByKind groups it for that codegen. The BYOC
  // codegens run first, so a function one of them refuses is inlined back and becomes generated
  // code too (with a warning naming it and why), unless fallback is turned off.
  std::vector<std::string> fusing;
  for (const Target& t : backend_targets)
    if (transform::find_kind_fusion(t.kind())) fusing.push_back(t.kind());
  if (!fusing.empty()) {
    RunCodegenOptions byoc;
    byoc.targets = backend_targets;
    byoc.fallback = options.fallback;
    if (!byoc.fallback) {
      byoc.fallback = true;
      if (const AttrValue* v = transform::PassContext::current().get_config(kRunCodegenFallbackConfig))
        if (auto* b = std::get_if<bool>(v)) byoc.fallback = *b;
        else if (auto* i = std::get_if<int64_t>(v)) byoc.fallback = *i != 0;
    }
    byoc.fallback_to = "as generated " + fusing.front() + " code";
    mod = run_codegen(mod, byoc);
  }
  // Constants are folded before grouping by kind, as partition_for does before its patterns: a
  // weight's transpose (ONNX Gemm's transB) is then stored transposed once instead of being
  // read through the permute, strided, by every GEMM tile.
  if (!fusing.empty()) mod = transform::FoldForInference()(mod);
  for (const std::string& kind : fusing) {
    // Attention that no BYOC backend took and the code generator cannot compile whole runs as
    // its matmul / softmax parts, which it can.
    auto accepts = transform::find_kind_fusion(kind)->accepts;
    mod = transform::DecomposeAttention([accepts](const CallNode& call) { return accepts && !accepts(call); })(mod);
    transform::FuseOpsByKindOptions fuse;
    fuse.codegen = kind;
    mod = transform::FuseOpsByKind(fuse)(mod);
  }
  mod = RunCodegenWithTargets(backend_targets, options.fallback)(mod);
  std::vector<runtime::ModulePtr> mods = external_mods_of(mod);
  // Devices: every compiled function's arguments are copied to its module's device only where
  // they are elsewhere, so consecutive device functions hand tensors on in device memory; the
  // lowering leaves the copies at the edges (inputs, results) to the VM, which keeps them where
  // the user's tensors are, and uploads the constants copied to a device once, when it is made.
  if (auto placed = device_functions(mods); !placed.empty())
    mod = transform::PlaceDeviceCopiesOfExterns(std::move(placed))(mod);
  return build_vm_executable(mod, std::move(mods));
}

}  // namespace partita::codegen
