// The bytes of a "ccompiler" runtime module, written by the codegen and read by the runtime
// plug-in: sections (1) the generated C source, (2) the bytes of the "dso_library" module over
// the shared object compiled from it.
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::ccompiler {

inline constexpr runtime::ModuleFormat kModuleFormat{"ccompiler", 0x43435450 /* "PTCC" */, 1};

}  // namespace partita::backend::ccompiler
