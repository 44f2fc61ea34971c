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
  } else if (const char* value = std::getenv("OPENBLAS_CORETYPE"); value && *value) {
    // Set by libpartita_runtime when it was loaded (startup/openblas_coretype.cc), or by the
    // user; never set here, where other threads may be reading the environment.
    l.core.requested = value;
    const char* ours = openblas_coretype_set_at_load();
    l.core.set_by_partita = ours && l.core.requested == ours;
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

const OpenBlas& openblas() { return loaded().api; }

OpenBlasCore openblas_core() { return loaded().core; }

}  // namespace partita::backend::cblas
