// Runtime half of the BLAS backend (runtime library; no compiler headers).
#pragma once

#include <string>

#include "partita/runtime/module.h"

namespace partita::backend::cblas {

/// A "cblas" module over a serialized graph (format in partita/backend/cblas.h).
runtime::ModulePtr make_cblas_module(std::string graph_json);
/// When OpenBLAS runs generic kernels on a CPU with AVX2 / AVX-512 (Debian's build picks its
/// core at run time and can fall back to Prescott-class code), the warning to print; else
/// empty. `core_name` receives openblas_get_corename(). Modules print it once per process.
std::string openblas_core_warning(std::string* core_name = nullptr);

}  // namespace partita::backend::cblas
