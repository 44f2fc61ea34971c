// The oneDNN backend ("dnnl"): patterns `dnnl.*`, partition_for_dnnl, and a codegen that turns
// each offloaded function (a whole merged partition) into a serialized graph of oneDNN
// primitives, which the runtime module (src/backend/dnnl/runtime) builds once and runs.
//
// Target kind "dnnl": num_threads (int, 0 = every core); winograd (int): 3x3 stride-1
// convolutions on our Winograd kernel (AVX2+FMA CPUs, src/backend/dnnl/runtime/winograd_conv.h)
// instead of oneDNN's direct one: 0 never, 1 (default) for the shapes where it measured faster
// (with the tile size that did), 2 / 4 F(2x2, 3x3) / F(4x4, 3x3) wherever supported (tests,
// benchmarks). Written to the graph as "winograd" only when not 1.
//
// Serialized graph (JSON, version 1; the module's binary is magic "PTDN", version, this text):
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

#include <map>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/ir/module.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::dnnl {

/// The `dnnl.*` fusion patterns (also registered in the pattern registry at load).
std::vector<transform::FusionPattern> dnnl_patterns();

/// Offloads what the `dnnl.*` patterns match: merge=true is FuseOpsByPattern +
/// MergeCompositeFunctions (whole partitions), merge=false one function per composite.
IRModule partition_for_dnnl(IRModule mod, bool merge = true, bool bind_constants = true);

/// The serialized graph (JSON) of `functions`; constants named through `namer`.
std::string serialize_graph(const std::vector<codegen::CodegenFunction>& functions, codegen::ConstantNamer& namer,
                            int64_t num_threads, std::vector<std::string>& const_names, int64_t winograd = 1);

/// The codegen registered as "dnnl".
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::dnnl
