// Runtime half of the "ccompiler" backend (runtime library; no compiler headers): a module
// holding generated C source and the shared object compiled from it. Saved as type key
// "ccompiler"; at load the shared object is written to a temporary file and dlopen-ed.
#pragma once

#include <string>
#include <vector>

#include "partita/runtime/module.h"

namespace partita::backend::ccompiler {

runtime::ModulePtr make_ccompiler_module(std::string source, std::string so_bytes, std::vector<std::string> symbols,
                                         std::vector<std::string> const_names);
/// The C source of a "ccompiler" module (empty for another kind of module).
std::string ccompiler_module_source(const runtime::RuntimeModule& module);

}  // namespace partita::backend::ccompiler
