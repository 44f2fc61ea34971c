// Runtime plug-ins: shared libraries loaded on demand (a device API such as CUDA's, a
// backend's runtime half), so that libpartita_runtime itself depends on none of them. A
// plug-in registers what it provides from static initializers when it is loaded.
#pragma once

#include <string>

namespace partita::runtime {

/// Loads `libpartita_runtime_<name>.so` once per process (later calls return at once). It is
/// looked for next to libpartita_runtime.so, then in each folder of PARTITA_PLUGIN_PATH
/// (colon-separated). Error("RuntimeError") naming the plug-in, every path tried and the
/// loader's message (dlerror) when it cannot be loaded.
void load_plugin(const std::string& name);

/// True when `load_plugin(name)` has succeeded in this process.
bool plugin_loaded(const std::string& name);

}  // namespace partita::runtime
