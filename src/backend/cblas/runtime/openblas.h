// OpenBLAS, loaded by the cblas runtime plug-in itself (dlopen at first use) instead of being
// a link dependency: OpenBLAS picks its kernels once, in its library constructor, from the
// environment variable OPENBLAS_CORETYPE or else its own CPU table, which does not know newer
// CPUs and then falls back to slow generic kernels (Debian 12's 0.3.21 on a Sapphire Rapids VM:
// SkylakeX instead of Cooperlake; on some machines Prescott). Loading it ourselves lets the
// plug-in set OPENBLAS_CORETYPE for the CPU it runs on before that constructor runs, so users
// never have to.
#pragma once

#include <cblas.h>

#include <string>

namespace partita::backend::cblas {

/// The OpenBLAS entry points the module calls.
struct OpenBlas {
  decltype(&::cblas_sgemm) sgemm;
  decltype(&::cblas_sgemv) sgemv;
  decltype(&::openblas_set_num_threads) set_num_threads;
  decltype(&::openblas_get_corename) get_corename;
};

/// OpenBLAS, loaded at the first call (thread-safe). Before loading it, when OPENBLAS_CORETYPE
/// is unset and preferred_openblas_core() names a core, sets OPENBLAS_CORETYPE to it (left set,
/// so other users of OpenBLAS in this process and its children get the same kernels); when
/// another library of the process loaded OpenBLAS first (numpy does), its choice stands. Throws
/// Error("RuntimeError") naming the library and dlerror when it cannot be loaded.
const OpenBlas& openblas();

/// The OpenBLAS core for this CPU, from cpuid: "Cooperlake" (AVX-512 with BF16), "SkylakeX"
/// (AVX-512 F/CD/BW/DQ/VL), "Zen" (AMD with AVX2 + FMA), "Haswell" (AVX2 + FMA), "Sandybridge"
/// (AVX), or empty (older CPUs, where OpenBLAS's own choice is as good). All are core names
/// OpenBLAS 0.3.21 accepts.
std::string preferred_openblas_core();

/// How OpenBLAS's core was chosen when it was loaded.
struct OpenBlasCore {
  std::string requested;  // OPENBLAS_CORETYPE at load (set by us or by the user), or empty
  bool set_by_partita = false;
  bool loaded_before = false;  // something else in the process had loaded OpenBLAS already
  std::string reported;        // openblas_get_corename() after loading
};
/// Loads OpenBLAS (see openblas()) and says how its core was chosen.
OpenBlasCore openblas_core();

}  // namespace partita::backend::cblas
