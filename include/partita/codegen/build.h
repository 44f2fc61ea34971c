// `build`: TVM's relax.build — from a (partitioned) module to one Executable.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "partita/codegen/target.h"
#include "partita/ir/module.h"
#include "partita/runtime/executable.h"

namespace partita::codegen {

struct BuildOptions {
  BuildOptions(std::vector<Target> targets = {}, std::optional<bool> fallback = std::nullopt)
      : targets(std::move(targets)), fallback(fallback) {}
  /// Targets: the host ("llvm"/"c"/"cpu" kinds are all the host VM) plus backend targets whose
  /// options the codegens read. Backends without a target use their defaults.
  std::vector<Target> targets;
  /// When a codegen refuses a function: fall back to the host (true) or fail (false). Unset:
  /// the PassContext config "relax.RunCodegen.fallback" decides.
  std::optional<bool> fallback;
};

/// Offloads every function carrying "Codegen" with its backend (RunCodegen, module-at-a-time),
/// after grouping what is left for each target whose code generator fuses by kind (FuseOpsByKind:
/// every operator no BYOC backend took runs as its generated kernels), lowers
/// the rest to VM bytecode, and packs bytecode, constants (named constants stored once)
/// and external modules into an Executable.
std::shared_ptr<runtime::Executable> build(IRModule mod, const BuildOptions& options = {});

}  // namespace partita::codegen
