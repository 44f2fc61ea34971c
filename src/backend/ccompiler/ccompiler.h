// The "ccompiler" backend's compiler half (the seeds' demo BYOC target): emits C for its
// partitions, compiles it with the Target's C compiler into a shared object and returns a
// runtime module carrying both the source and the compiled bytes. See README.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"

namespace partita::backend::ccompiler {

/// The C source for `functions` (throws codegen::UnsupportedFunction for one it cannot
/// handle). Constants are named through `namer`; `const_names` receives the names used.
std::string generate_source(const std::vector<codegen::CodegenFunction>& functions, codegen::ConstantNamer& namer,
                            std::vector<std::string>& const_names);

/// Compiles C `source` into a shared object with the target's cc/cflags; returns its bytes.
/// Throws Error("CompileError") with the compiler's output on failure.
std::string compile_shared_object(const std::string& source, const codegen::Target& target);

/// The codegen registered for "ccompiler".
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::ccompiler
