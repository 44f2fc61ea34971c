// The bytes of a "dnnl" runtime module, written by the codegen and read by the runtime plug-in:
// one section, the serialized graph.
//
// Serialized graph (JSON, version 1):
//   {"version": 1, "num_threads": N, ["winograd": 0 | 2 | 3 | 4,] "functions": [{
//      "symbol": "fused_...", "values": [[dims...], ...],        // value id = index; float32
//      "inputs": [value ids, in parameter order], "outputs": [value ids],
//      "constants": [{"value": id, "name": "<name in const_name_to_constant>"}],
//      "nodes": [{"op": "conv2d" | "matmul" | "pool" | "softmax" | "layer_norm" | "eltwise" |
//                        "binary" | "permute" | "reshape" | "slice" | "concat" | "batch_norm" |
//                        "pad" | "resample",
//                 "in": [ids], "out": id, ...attributes,
//                 "from": ["relax.nn.conv2d", "relax.add", ...],
//                 "post": [{"kind": "eltwise", "alg": "relu", "alpha": a, "beta": b} |
//                          {"kind": "sum", "in": id}]}]}]}
// A value of 0 dims ([]) runs as one element. "from" names the Relax operators lowered into the
// node (errors name them; optional).
// conv2d: strides, dilation, padding [t, l, b, r], groups, has_bias (in = [src, w, (bias)]),
// optionally scale_in: a (1, C, 1, 1) value scaling the source's channels (1x1, ungrouped only;
// applied to the weights at each call);
// matmul: transpose_b, has_bias (operands of 2 or more dims, the lower-rank one broadcast);
// pool: alg (max | avg_include | avg_exclude), kernel, strides, padding [t, l, b, r]
// (adaptive average pooling becomes a pool whose windows tile the input); softmax: axis (the
// last, or one followed by 1s only); layer_norm: eps, scale, shift, axes (how many trailing
// dims it normalizes, default 1; in = [x, g, b]); eltwise: alg, alpha, beta; binary: alg
// (add | mul | div; in[0] has the result's shape, in[1] is broadcast numpy-style); permute: axes;
// reshape (row-major, the value's dims give the shape); slice: begin (per axis; the value's dims
// give the extents, unit strides);
// concat: axis (in = the sources); batch_norm: eps, scale, shift, relu (in = [x, gamma, beta,
// mean, var], inference); pad: mode (constant | edge | reflect), value, widths (before, after
// per axis); resample: alg (nearest | linear). eltwise algs include linear (alpha x + beta) and
// hardswish.
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::dnnl {

inline constexpr runtime::ModuleFormat kModuleFormat{"dnnl", 0x4e445450 /* "PTDN" */, 1};

}  // namespace partita::backend::dnnl
