// Loading OpenBLAS on the CPU's own kernels (openblas.h).
#include "openblas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "partita/support/error.h"

#ifndef PARTITA_OPENBLAS_SONAME
#define PARTITA_OPENBLAS_SONAME "libopenblas.so.0"
#endif

namespace partita::backend::cblas {
namespace {

struct Loaded {
  OpenBlas api{};
  OpenBlasCore core;
};

template <class F>
F symbol(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (!p) throw_error("RuntimeError", std::string("cblas: OpenBLAS (") + PARTITA_OPENBLAS_SONAME + ") lacks " + name);
  return reinterpret_cast<F>(p);
}

Loaded load() {
  Loaded l;
  // Already in the process (numpy links it too): its kernels are chosen; say so, set nothing.
  if (void* present = dlopen(PARTITA_OPENBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(present);
    l.core.loaded_before = true;
  } else if (const char* user = std::getenv("OPENBLAS_CORETYPE"); user && *user) {
    l.core.requested = user;
  } else if (std::string core = preferred_openblas_core(); !core.empty()) {
    // Before dlopen: OpenBLAS reads the variable in its constructor.
    setenv("OPENBLAS_CORETYPE", core.c_str(), /*overwrite=*/0);
    l.core.requested = core;
    l.core.set_by_partita = true;
  }
  void* handle = dlopen(PARTITA_OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw_error("RuntimeError", std::string("cblas: cannot load OpenBLAS (") + PARTITA_OPENBLAS_SONAME +
                                    "): " + (why ? why : "unknown dlopen error"));
  }
  l.api.sgemm = symbol<decltype(l.api.sgemm)>(handle, "cblas_sgemm");
  l.api.sgemv = symbol<decltype(l.api.sgemv)>(handle, "cblas_sgemv");
  l.api.set_num_threads = symbol<decltype(l.api.set_num_threads)>(handle, "openblas_set_num_threads");
  l.api.get_corename = symbol<decltype(l.api.get_corename)>(handle, "openblas_get_corename");
  const char* name = l.api.get_corename();
  l.core.reported = name ? name : "";
  return l;
}

const Loaded& loaded() {
  static std::once_flag once;
  static Loaded l;
  std::call_once(once, [] { l = load(); });
  return l;
}

}  // namespace

std::string preferred_openblas_core() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return "";
}

const OpenBlas& openblas() { return loaded().api; }

OpenBlasCore openblas_core() { return loaded().core; }

}  // namespace partita::backend::cblas
