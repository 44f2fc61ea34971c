// The bytes of a "dnnl" runtime module, written by the codegen and read by the runtime plug-in:
// one section, the serialized graph.
//
// Serialized graph (JSON, version 1):
//   {"version": 1, "num_threads": N, ["winograd": 0 | 2 | 4,] "functions": [{
//      "symbol": "fused_...", "values": [[dims...], ...],        // value id = index; float32
//      "inputs": [value ids, in parameter order], "outputs": [value ids],
//      "constants": [{"value": id, "name": "<name in const_name_to_constant>"}],
//      "nodes": [{"op": "conv2d" | "matmul" | "pool" | "softmax" | "layer_norm" | "eltwise" |
//                        "binary" | "permute", "in": [ids], "out": id, ...attributes,
//                 "post": [{"kind": "eltwise", "alg": "relu", "alpha": a, "beta": b} |
//                          {"kind": "sum", "in": id}]}]}]}
// conv2d: strides, dilation, padding [t, l, b, r], groups, has_bias (in = [src, w, (bias)]);
// matmul: transpose_b, has_bias; pool: alg (max | avg_include | avg_exclude), kernel,
// strides, padding [t, l, b, r] (adaptive average pooling becomes a pool whose windows tile the
// input); softmax: axis; layer_norm: eps, scale, shift (in = [x, g, b]);
// eltwise: alg, alpha, beta; binary: alg (add | mul); permute: axes.
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::dnnl {

inline constexpr runtime::ModuleFormat kModuleFormat{"dnnl", 0x4e445450 /* "PTDN" */, 1};

}  // namespace partita::backend::dnnl
