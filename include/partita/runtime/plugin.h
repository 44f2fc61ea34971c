// Runtime plug-ins: the runtime half of a backend (its module loaders, device APIs, ...) is a
// shared library of its own, `libpartita_runtime_<name>.so`, loaded into the process when it is
// first needed, so that libpartita_runtime itself depends on no backend.
//
// A plug-in registers what it provides from static initializers (PARTITA_REGISTER_MODULE_LOADER
// and the like), which run when the library is loaded. The module-loader registry loads plug-ins
// by a naming convention: a runtime module of type key "<name>" or "<name>.<anything>" is read by
// the plug-in "<name>" (see plugin_for_type_key), so an exported artifact needs to record nothing
// beyond its modules' type keys.
//
// Search order for `libpartita_runtime_<name>.so`: the directory holding libpartita_runtime.so
// (found with dladdr, so a build tree or an install prefix works without configuration), then
// each directory of the environment variable PARTITA_PLUGIN_PATH (colon separated, read at every
// call). Plug-ins are never unloaded.
#pragma once

#include <string>
#include <vector>

namespace partita::runtime {

/// Loads the runtime plug-in `name` unless it is loaded already (idempotent and thread-safe;
/// a plug-in whose static initializers load another plug-in is fine). Throws
/// Error("RuntimeError") naming the plug-in, every path tried and the loader's message when no
/// candidate loads, and Error("ValueError") for a name that is not a plain identifier.
void load_plugin(const std::string& name);

/// Whether the plug-in `name` was loaded by load_plugin in this process.
bool plugin_loaded(const std::string& name);

/// The directories searched for plug-ins, in order (as load_plugin would search them now).
std::vector<std::string> plugin_search_path();

/// The plug-in that provides the loader for runtime modules of type `type_key`: the key up to
/// its first '.' ("mine" -> "mine", "mine.graph" -> "mine").
std::string plugin_for_type_key(const std::string& type_key);

}  // namespace partita::runtime
