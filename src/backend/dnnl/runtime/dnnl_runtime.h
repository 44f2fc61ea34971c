// What the dnnl runtime plug-in (libpartita_runtime_dnnl.so) offers beyond its module loader,
// for this backend's own tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>

#include "partita/runtime/module.h"

namespace partita::backend::dnnl {

/// A "dnnl" runtime module over a serialized graph (../module_format.h). Primitives are created
/// and constant weights reordered once, on the first call after init_constants. Throws
/// Error("ValueError") for a malformed graph. Its get_source() is the graph.
runtime::ModulePtr make_dnnl_module(std::string graph_json);
/// How many convolutions of the functions built so far (run at least once) use the Winograd
/// kernel instead of oneDNN's (0 for another kind of module); for tests and benchmarks.
int64_t dnnl_module_winograd_convs(runtime::RuntimeModule& module);
/// How many use oneDNN's Winograd convolution (AVX-512 CPUs) instead of its direct one.
int64_t dnnl_module_onednn_winograd_convs(runtime::RuntimeModule& module);

}  // namespace partita::backend::dnnl
