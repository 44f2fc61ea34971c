// External codegens (BYOC) and RunCodegen, module-at-a-time as in TVM Relax.
//
// A backend registers one codegen under its name. RunCodegen hands it *all* the
// functions of the module whose "Codegen" attribute names it, at once, with its Target (the
// kind's defaults when the caller gave none) and the module's named-constant table. The codegen
// returns runtime modules defining each function's "global_symbol", plus any constants it
// wants added to the table by name. A codegen that cannot compile one function throws
// UnsupportedFunction naming it; RunCodegen then fails, or (fallback) gives that function back
// to the host and asks again for the rest.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "partita/codegen/target.h"
#include "partita/ir/module.h"
#include "partita/runtime/module.h"
#include "partita/support/error.h"
#include "partita/transform/pass.h"

namespace partita::codegen {

/// Thrown by a codegen for a function it cannot compile (Error kind "UnsupportedFunction").
class UnsupportedFunction : public Error {
 public:
  UnsupportedFunction(std::string function, const std::string& reason)
      : Error("UnsupportedFunction", "cannot compile function '" + function + "': " + reason),
        function_(std::move(function)), reason_(reason) {}
  /// The function's global symbol.
  const std::string& function() const { return function_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string function_;
  std::string reason_;
};

/// One offloaded function as a codegen sees it.
struct CodegenFunction {
  std::string symbol;  // its "global_symbol" (the name its callers use at run time)
  Function func;
};

struct CodegenResult {
  std::vector<runtime::ModulePtr> modules;
  /// Constants to add to the module's const_name_to_constant, by name.
  std::map<std::string, Tensor> constants;
};

using CodegenFn = std::function<CodegenResult(const std::vector<CodegenFunction>& functions,
                                              const Target& target,
                                              const std::map<std::string, Tensor>& const_name_to_constant)>;

/// Registers the codegen `name`. When no target kind `name` exists, one without options is
/// registered so that Target(name) works. Re-registering replaces the codegen.
void register_codegen(const std::string& name, CodegenFn fn);
/// The codegen `name`, or nullptr.
const CodegenFn* find_codegen(const std::string& name);
std::vector<std::string> list_codegens();

/// Names constants for one codegen invocation: a tensor already in the table (same buffer, or
/// same contents) keeps its name; a new one gets "<symbol>_const_<i>" (the first free i) and is
/// recorded in `added()`. So each tensor is stored once, whichever pass named it first.
class ConstantNamer {
 public:
  explicit ConstantNamer(const std::map<std::string, Tensor>& existing);
  std::string name_for(const Tensor& tensor, const std::string& symbol);
  const std::map<std::string, Tensor>& added() const { return added_; }

 private:
  std::map<std::string, Tensor> all_;
  std::map<std::string, Tensor> added_;
  std::multimap<size_t, std::string> by_hash_;
  // Names by the buffer they hold, and the next index to try per symbol: a module with
  // thousands of constants is named in linear time (scanning every name made it quadratic).
  std::multimap<const void*, std::string> by_buffer_;
  std::map<std::string, int> next_index_;
};

/// What a backend's codegen returns when its artifact is `bytes`, a module of type `type_key`:
/// the module made from those bytes by the backend's runtime plug-in, as when an exported
/// artifact is loaded (so the compiler half links nothing of the runtime half, and what runs
/// now is what runs after export), and the constants `namer` added.
CodegenResult module_from_bytes(const std::string& type_key, const std::string& bytes,
                                const ConstantNamer& namer);

/// Config key (PassContext::config, a bool): when true, a function its codegen rejects runs on
/// the host instead (with a warning on stderr naming it); when false (default), RunCodegen fails.
inline constexpr const char* kRunCodegenFallbackConfig = "relax.RunCodegen.fallback";

struct RunCodegenOptions {
  /// Options per codegen name (TVM's target_options): {"<name>": {{"<option>", value}}}.
  std::map<std::string, TargetOptionMap> target_options;
  /// Explicit Targets, by kind (take precedence over target_options).
  std::vector<Target> targets;
  /// Only codegen functions reachable from these functions are compiled (all when empty).
  std::vector<std::string> entry_functions;
  /// Overrides kRunCodegenFallbackConfig when set.
  std::optional<bool> fallback;
  /// Where fallback warnings go (stderr when null).
  std::function<void(const std::string&)> warn;
  /// Where a refused function runs instead, as its warning says ("on the host"; build() with a
  /// target that fuses by kind says its generated code).
  std::string fallback_to = "on the host";
};

/// The module-level transformation: offloaded functions removed, each call of one becomes
/// `R.call_packed("<symbol>", args..., sinfo_args=(<result>,))` (a pure ExternFunc call), the
/// runtime modules are appended to attrs["external_mods"] (an ExternalModules node), constants
/// merged into const_name_to_constant (a name bound to different contents is an error).
IRModule run_codegen(IRModule mod, const RunCodegenOptions& options = {});

/// RunCodegen(target_options, entry_functions) as in TVM.
transform::Pass RunCodegen(std::map<std::string, TargetOptionMap> target_options = {},
                           std::vector<std::string> entry_functions = {});
/// The same with explicit Targets (one per codegen kind) and a fallback choice.
transform::Pass RunCodegenWithTargets(std::vector<Target> targets, std::optional<bool> fallback = std::nullopt,
                                      std::vector<std::string> entry_functions = {});

/// Moves the constants used by "Codegen" functions into const_name_to_constant under
/// "<symbol>_const_<i>" (numbered in visiting order per function; a tensor already in the
/// table keeps its name). The functions themselves are unchanged: codegens find the names
/// through ConstantNamer.
IRModule name_codegen_constants(IRModule mod);
transform::Pass NameCodegenConstants();

/// The runtime modules in attrs["external_mods"] (empty when there are none).
std::vector<runtime::ModulePtr> external_mods_of(const IRModule& mod);

}  // namespace partita::codegen
