// The backend registry: one record per backend, registered from the backend's own folder
// (src/backend/<name>/), that says everything the rest of the project needs to know about it.
// Registering a backend registers its target kind, its fusion patterns and its codegen, so a
// backend is one PARTITA_REGISTER_BACKEND in its folder and nothing outside the folder names it.
// See docs/adding-a-backend.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/codegen/target.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend {

struct BackendInfo {
  /// The backend's one name: its codegen, its target kind and the prefix of its patterns
  /// ("<name>.conv2d"); also the "Codegen" attribute of the functions it receives.
  std::string name;
  /// One line for listings and reports (the library it runs on and what it takes).
  std::string description;
  /// Fill colour of its partitions in reports and graph pictures ("#rrggbb").
  std::string colour;
  /// The options of its target kind (the kind itself is `name`).
  std::vector<codegen::TargetOptionSpec> target_options;
  /// Rewrites that expose what it runs, applied to the whole module before any backend of a
  /// compile partitions (so a backend listed earlier does not take the pieces first): cuDNN
  /// rewrites the attention chains it runs to R.nn.attention. Empty when it has none.
  std::function<IRModule(IRModule)> prepare;
  /// Its fusion patterns, general ones first (later entries have priority, as in TVM). Called
  /// once, at registration.
  std::function<std::vector<transform::FusionPattern>()> patterns;
  /// Its codegen; empty for a backend that only partitions so far (no code generated yet).
  codegen::CodegenFn codegen;
  /// The runtime plug-in (libpartita_runtime_<plugin>.so) that loads the modules its codegen
  /// makes; their type keys are "<plugin>" or "<plugin>.<...>" (partita/runtime/plugin.h).
  /// Empty when its modules are the runtime's own (e.g. "dso_library") or it has no codegen.
  std::string runtime_plugin;
};

/// Registers `info` and its target kind, patterns and codegen. Error("ValueError") for a record
/// without a name or with a colour that is not "#rrggbb"; registering a name again replaces it.
void register_backend(BackendInfo info);
/// The record of backend `name`, if registered.
std::optional<BackendInfo> find_backend(const std::string& name);
/// Registered backend names, sorted.
std::vector<std::string> list_backends();
/// `mod` after the `prepare` rewrites of each of `backends` (in their order; names without a
/// record or a prepare step are skipped).
IRModule prepare_for(const std::vector<std::string>& backends, IRModule mod);

namespace detail {
struct BackendRegistrar {
  explicit BackendRegistrar(BackendInfo (*make)()) { register_backend(make()); }
};
}  // namespace detail

}  // namespace partita::backend

#define PARTITA_BACKEND_CONCAT_INNER_(a, b) a##b
#define PARTITA_BACKEND_CONCAT_(a, b) PARTITA_BACKEND_CONCAT_INNER_(a, b)
/// At namespace scope in one source file of a backend's folder:
///   PARTITA_REGISTER_BACKEND([] { BackendInfo b; b.name = "mine"; ...; return b; });
/// Runs when the compiler library is loaded (the op and pattern registries are built on first
/// use, so the order of static initializers does not matter).
#define PARTITA_REGISTER_BACKEND(...)                                                         \
  static ::partita::backend::detail::BackendRegistrar PARTITA_BACKEND_CONCAT_(               \
      partita_backend_registrar_, __COUNTER__)(+(__VA_ARGS__))
