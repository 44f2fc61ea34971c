// The bytes of a "cublas" runtime module, written by the codegen and read by the runtime plug-in
// (partita/runtime/module_sections.h: magic, version, sections). One section, the GEMM program
// as JSON (gemm_program.h describes every field):
//   {"version": 1, "allow_tf32": bool, "autotune_top_k": int, "workspace_mib": int,
//    "functions": [{"symbol": ..., "values": [{"dtype": "float16", "shape": [dims, -1 = symbolic]}],
//                   "inputs": [ids], "outputs": [ids], "constants": [{"value": id, "name": ...}],
//                   "gemms": [{"a": id, "b": id, "transpose_b": bool, "bias": id or -1,
//                              "bias_kind": "none" | "vector" | "matrix",
//                              "epilogue": "none" | "relu" | "gelu",
//                              "scale_a": id or -1, "scale_b": id or -1, "out": id,
//                              "from": "cublas.matmul_bias" }]}]}
// GEMMs run in order and read inputs, constants and earlier GEMMs' results. Every shape is read
// from the tensors at run time (the static dims are checked); the descriptors of a shape are
// made once and cached.
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::cublas {

inline constexpr runtime::ModuleFormat kModuleFormat{"cublas", 0x4c425543 /* "CUBL" */, 1};

}  // namespace partita::backend::cublas
