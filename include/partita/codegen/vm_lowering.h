// Lowering the host part of a normalized module to VM bytecode.
#pragma once

#include <memory>
#include <vector>

#include "partita/ir/module.h"
#include "partita/runtime/executable.h"

namespace partita::codegen {

/// Lowers every host Relax function of `mod` (functions without "Codegen"/"Composite"
/// attributes) to bytecode. Calls of ExternFunc become calls of external symbols, resolved at
/// VM creation against `external_mods`. The module's `const_name_to_constant` is merged into the
/// executable's constant pool. Output shapes are computed at compile time when static; symbolic
/// dimensions are bound from input shapes (or match_cast) and evaluated at run time.
/// Throws Error("ValueError"/"TypeError") naming the function and the unsupported construct.
std::shared_ptr<runtime::Executable> build_vm_executable(const IRModule& mod,
                                                         std::vector<runtime::ModulePtr> external_mods = {});

}  // namespace partita::codegen
