// OpenBLAS, loaded by the cblas runtime plug-in itself (dlopen at first use) instead of being
// a link dependency: OpenBLAS picks its kernels once, in its library constructor, from the
// environment variable OPENBLAS_CORETYPE or else its own CPU table, which does not know newer
// CPUs and then falls back to slow generic kernels (Debian 12's 0.3.21 on a Sapphire Rapids VM:
// SkylakeX instead of Cooperlake; on some machines Prescott). libpartita_runtime sets
// OPENBLAS_CORETYPE for the CPU when it is loaded (../startup/openblas_coretype.h: before any
// thread exists, as setenv requires), and loading OpenBLAS ourselves, later, makes sure its
// constructor sees it, so users never have to.
#pragma once

#include <cblas.h>

#include <string>

#include "../startup/openblas_coretype.h"

namespace partita::backend::cblas {

/// The OpenBLAS entry points the module calls.
struct OpenBlas {
  decltype(&::cblas_sgemm) sgemm;
  decltype(&::cblas_sgemv) sgemv;
  decltype(&::openblas_set_num_threads) set_num_threads;
  decltype(&::openblas_get_corename) get_corename;
};

/// OpenBLAS, loaded at the first call (thread-safe), on the kernels OPENBLAS_CORETYPE names
/// (set when the process started, see above); when another library of the process loaded
/// OpenBLAS first (numpy does), its choice stands. Changes no environment variable. Throws
/// Error("RuntimeError") naming the library and dlerror when it cannot be loaded.
const OpenBlas& openblas();

/// How OpenBLAS's core was chosen when it was loaded.
struct OpenBlasCore {
  std::string requested;  // OPENBLAS_CORETYPE at load (set by us or by the user), or empty
  bool set_by_partita = false;  // requested is what libpartita_runtime set when it was loaded
  bool loaded_before = false;  // something else in the process had loaded OpenBLAS already
  std::string reported;        // openblas_get_corename() after loading
};
/// Loads OpenBLAS (see openblas()) and says how its core was chosen.
OpenBlasCore openblas_core();

}  // namespace partita::backend::cblas
