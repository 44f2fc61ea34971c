// The bytes of a "cblas" runtime module, written by the codegen and read by the runtime plug-in:
// one section, the serialized graph (JSON, version 1):
//   {"version": 1, "num_threads": N, "functions": [{"symbol": ..., "values": [[dims], ...],
//     "inputs": [ids], "outputs": [ids], "constants": [{"value": id, "name": ...}],
//     "nodes": [{"a": id, "b": id, "bias": id or -1, "transpose_b": bool,
//                "activation": "none" | "relu" | ..., "out": id}]}]}
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::cblas {

inline constexpr runtime::ModuleFormat kModuleFormat{"cblas", 0x42435450 /* "PTCB" */, 1};

}  // namespace partita::backend::cblas
