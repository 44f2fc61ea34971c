// The bytes of a "cudnn" runtime module, written by the codegen and read by the runtime plug-in:
// one section, the program (JSON):
//   {"version": 1, "allow_tf32": bool, "autotune": bool (absent: false),
//    "autotune_top_k": int (absent: 0, every engine), "functions": [{
//      "symbol": "...",
//      "values": [{"shape": [dims], "dtype": "float16", "layout": "logical" | "nhwc"}],
//      "inputs": [value ids, parameter order], "outputs": [value ids],
//      "constants": [{"value": id, "name": "<name in const_name_to_constant>"}],
//      "nodes": [...]}]}
// A value's shape is always its logical (Relax) shape; "nhwc" says a 4-d value is stored with
// its axes 1 and 3 swapped in memory: NCHW activations as NHWC, OIHW weights as OHWI.
// Nodes (in execution order; "in" and "out" are value ids):
//   {"op": "to_nhwc" | "to_nchw", "in": [a], "out": b}        layout conversions (4-d)
//   {"op": "conv2d", "in": [x, w, (bias), (residual)], "out": y, "has_bias": b,
//    "has_residual": b, "strides": [2], "padding": [t, l, b, r], "dilation": [2], "groups": g,
//    "activation": "" | "relu" | "gelu" | "silu" | "sigmoid" | "clip", "clip": [lo, hi]}
//      x, w, residual, y are "nhwc"; bias holds K elements
//   {"op": "attention", "in": [q, k, v, (bias)], "out": o, "scale": s,
//    "causal": "" | "TopLeft" | "BottomRight"}   (B, S, N, H) operands, bias (B|1, N|1, Sq|1, Skv)
// A "to_nhwc" of a constant runs once when the module is set up on a device (weights are
// re-laid out once at load).
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::cudnn {

inline constexpr runtime::ModuleFormat kModuleFormat{"cudnn", 0x4e434450 /* "PDCN" */, 1};

}  // namespace partita::backend::cudnn
