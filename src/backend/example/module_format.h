// The bytes of an "example" runtime module, shared by the codegen (which writes them) and the
// runtime plug-in (which reads them): one section, a JSON graph
//   {"functions": [{"symbol": "...", "values": [[dims], ...], "inputs": [ids],
//                   "constants": [{"value": id, "name": "..."}], "adds": [[a, b, out], ...],
//                   "output": id}]}
// Values are float32 tensors numbered in order; each add is out = a + b element by element
// (same shapes: the patterns take no broadcasting).
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::example {

inline constexpr runtime::ModuleFormat kModuleFormat{"example", 0x58455450 /* "PTEX" */, 1};

}  // namespace partita::backend::example
