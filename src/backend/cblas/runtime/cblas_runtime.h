// What the cblas runtime plug-in (libpartita_runtime_cblas.so) offers beyond its module loader,
// for this backend's own tests and benchmarks.
#pragma once

#include <string>

#include "partita/runtime/module.h"

namespace partita::backend::cblas {

/// A "cblas" module over a serialized graph (format in ../module_format.h).
runtime::ModulePtr make_cblas_module(std::string graph_json);
/// When OpenBLAS runs generic kernels on a CPU with AVX2 / AVX-512 (e.g. a user's
/// OPENBLAS_CORETYPE named a slow core, or the library lacks the right one), the warning to
/// print; else empty. `core_name` receives openblas_get_corename(). Modules print it once per
/// process.
std::string openblas_core_warning(std::string* core_name = nullptr);

}  // namespace partita::backend::cblas
