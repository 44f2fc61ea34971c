// The BLAS backend ("cblas", OpenBLAS cblas_sgemm): patterns `cblas.*` for matmul / dense (2-d,
// and batched 3-d by 2-d or 3-d) with an optional bias add and activation (relu, gelu,
// gelu_tanh, silu, sigmoid, tanh), partition_for_cblas, and a codegen whose runtime module
// (src/backend/cblas/runtime) splits each product into blocks of columns spread over OpenMP
// threads, adding the bias and applying the activation to each block while it is still in
// cache. A product by a constant 2-d weight runs on the runtime's micro-kernel
// (runtime/kernels/gemm_micro_kernel.h) with the weight packed once, at its first use (sgemm
// would repack it on every call); products of two activations call single-threaded sgemm.
//
// Target kind "cblas": num_threads (int, 0 = OpenMP's default).
//
// Serialized graph (JSON, version 1; the module binary is magic "PTCB", version, this text):
//   {"version": 1, "num_threads": N, "functions": [{"symbol": ..., "values": [[dims], ...],
//     "inputs": [ids], "outputs": [ids], "constants": [{"value": id, "name": ...}],
//     "nodes": [{"a": id, "b": id, "bias": id or -1, "transpose_b": bool,
//                "activation": "none" | "relu" | ..., "out": id}]}]}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/ir/module.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::backend::cblas {

std::vector<transform::FusionPattern> cblas_patterns();
IRModule partition_for_cblas(IRModule mod, bool merge = true, bool bind_constants = true);
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::cblas
