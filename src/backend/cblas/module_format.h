// The bytes of a "cblas" runtime module, written by the codegen and read by the runtime plug-in:
// one section, the serialized graph (JSON, version 1):
//   {"version": 1, "num_threads": N, "functions": [{"symbol": ..., "values": [[dims], ...],
//     "inputs": [ids], "outputs": [ids], "constants": [{"value": id, "name": ...}],
//     "nodes": [{"a": id, "b": id, "bias": id or -1, "transpose_b": bool,
//                "activation": "none" | "relu" | ..., "out": id,
//                "from": ["relax.matmul", "relax.add", ...]}]}]}
// Products run in node order and read only inputs, constants and earlier products' results; an
// (..., M, K) by (K, N) product is one product of all rows, an (..., M, K) by (..., K, N) one
// per batch entry. "outputs" holds one id, or several for a merged partition returning a tuple.
// "from" names the Relax operators a product computes (errors name them; optional).
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::cblas {

inline constexpr runtime::ModuleFormat kModuleFormat{"cblas", 0x42435450 /* "PTCB" */, 1};

}  // namespace partita::backend::cblas
