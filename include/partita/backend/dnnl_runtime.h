// Runtime half of the oneDNN backend (runtime library; no compiler headers).
#pragma once

#include <cstdint>
#include <string>

#include "partita/runtime/module.h"

namespace partita::backend::dnnl {

/// A "dnnl" runtime module over a serialized graph (see partita/backend/dnnl.h for the format).
/// Primitives are created and constant weights reordered once, on the first call after
/// init_constants. Throws Error("ValueError") for a malformed graph.
runtime::ModulePtr make_dnnl_module(std::string graph_json);
/// The graph text of a "dnnl" module (empty for another kind of module).
std::string dnnl_module_graph(const runtime::RuntimeModule& module);
/// How many convolutions of the functions built so far (run at least once) use the Winograd
/// kernel instead of oneDNN's (0 for another kind of module); for tests and benchmarks.
int64_t dnnl_module_winograd_convs(runtime::RuntimeModule& module);

}  // namespace partita::backend::dnnl
