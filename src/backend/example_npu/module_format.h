// The bytes of an "example_npu" runtime module, shared by the codegen (which writes them), the
// runtime plug-in (which reads them) and the Python half (python/__init__.py, which writes them
// for TVM's runtime.ExampleNPUJSONRuntimeCreate): one section, a JSON graph
//
//   {"functions": [{
//      "symbol": "...",                          the function's global symbol
//      "values": [[dims], ...],                  float32 tensors, numbered in order
//      "inputs": [ids],                          the function's parameters, in order
//      "constants": [{"value": id, "name": "..."}],   named constants of the executable
//      "nodes": [{                               one per composite, in execution order (TVM's
//         "name": "example_npu.conv2d_relu_fused",     JSON graph has one "kernel" node per
//         "op_type": "kernel",                         composite, named by its pattern)
//         "inputs": [ids], "outputs": [ids],
//         "ops": [{"op": "relax.nn.conv2d",     the composite's operator calls, in order, each
//                  "attrs": {"strides": ["ints", [1, 1]], ...},   run by the host kernel of
//                  "inputs": [ids], "outputs": [ids]}, ...]}],    that name with these attrs
//      "outputs": [ids]}]}                        the result, a tuple flattened
//
// An attribute is [kind, value] with kind "none", "bool", "int", "float", "str", "dtype" or
// "ints" (the runtime's KernelAttrValue alternatives).
#pragma once

#include "partita/runtime/module_sections.h"

namespace partita::backend::example_npu {

inline constexpr runtime::ModuleFormat kModuleFormat{"example_npu", 0x55504E50 /* "PNPU" */, 1};

}  // namespace partita::backend::example_npu
