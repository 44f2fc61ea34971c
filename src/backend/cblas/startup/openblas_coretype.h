// OPENBLAS_CORETYPE, chosen for this CPU when the process starts (openblas_coretype.cc).
#pragma once

#include <string>

namespace partita::backend::cblas {

/// The OpenBLAS core for this CPU, from cpuid: "Cooperlake" (AVX-512 with BF16), "SkylakeX"
/// (AVX-512 F/CD/BW/DQ/VL), "Zen" (AMD with AVX2 + FMA), "Haswell" (AVX2 + FMA), "Sandybridge"
/// (AVX), or empty (older CPUs, where OpenBLAS's own choice is as good). All are core names
/// OpenBLAS 0.3.21 accepts.
std::string preferred_openblas_core();

/// The value libpartita_runtime set OPENBLAS_CORETYPE to when it was loaded, or null when it set
/// nothing (the variable was set already, the CPU has no preferred core, or OpenBLAS was loaded
/// before libpartita_runtime).
const char* openblas_coretype_set_at_load();

}  // namespace partita::backend::cblas
