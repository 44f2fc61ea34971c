// Sets OPENBLAS_CORETYPE for this CPU when libpartita_runtime is loaded, before main (or, in
// Python, when the extension is imported), so that OpenBLAS, which reads it once in its own
// constructor, runs this CPU's kernels without the user's help.
//
// Why here and not in the cblas plug-in when it loads OpenBLAS: glibc's setenv is not safe
// against getenv in other threads, and a plug-in is loaded while the VM's and OpenMP's threads
// run (found by the TSan stage). A shared library's constructor runs while the process has only
// the thread that loads it, for every program that links the runtime; a program that dlopens
// the runtime while threads of its own read the environment can set OPENBLAS_CORETYPE itself,
// and then nothing is written. The variable stays set, so OpenBLAS loaded later by anything in
// the process or its children gets the same kernels.
#include "openblas_coretype.h"

#include <dlfcn.h>
#include <stdlib.h>

#ifndef PARTITA_OPENBLAS_SONAME
#define PARTITA_OPENBLAS_SONAME "libopenblas.so.0"
#endif

namespace partita::backend::cblas {
namespace {

const char* preferred_core_name() {
  __builtin_cpu_init();  // constructors may run before the compiler's own cpuid initializer
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return nullptr;
}

const char* set_at_load = nullptr;  // constant-initialized: no order question with the constructor

__attribute__((constructor)) void set_openblas_coretype() {
  if (const char* user = getenv("OPENBLAS_CORETYPE"); user && *user) return;
  // Loaded already (a program linking OpenBLAS itself): its kernels are chosen.
  if (void* present = dlopen(PARTITA_OPENBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(present);
    return;
  }
  const char* core = preferred_core_name();
  // Unset or empty here (an empty value is OpenBLAS's own detection, the slow kernels on CPUs it
  // does not know): overwrite, as setenv without it keeps an empty variable.
  if (core && setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/1) == 0) set_at_load = core;
}

}  // namespace

std::string preferred_openblas_core() {
  const char* core = preferred_core_name();
  return core ? core : "";
}

const char* openblas_coretype_set_at_load() { return set_at_load; }

}  // namespace partita::backend::cblas
