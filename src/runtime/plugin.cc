// Loading runtime plug-ins (partita/runtime/plugin.h) with dlopen.
#include "partita/runtime/plugin.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "partita/support/error.h"

namespace partita::runtime {
namespace {

// Recursive: a plug-in's static initializers (run inside dlopen) may load another plug-in.
std::recursive_mutex& plugin_mutex() {
  static std::recursive_mutex m;
  return m;
}

std::map<std::string, void*>& loaded_plugins() {
  static std::map<std::string, void*> m;
  return m;
}

// The directory of the library this function is linked into (libpartita_runtime.so).
std::string runtime_library_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&plugin_search_path), &info) == 0 || !info.dli_fname) return "";
  std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(dir.empty() ? "." : dir, ec);
  return ec ? dir.string() : abs.lexically_normal().string();
}

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

std::vector<std::string> plugin_search_path() {
  std::vector<std::string> dirs;
  if (std::string own = runtime_library_dir(); !own.empty()) dirs.push_back(own);
  if (const char* env = std::getenv("PARTITA_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) dirs.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  return dirs;
}

std::string plugin_for_type_key(const std::string& type_key) { return type_key.substr(0, type_key.find('.')); }

bool plugin_loaded(const std::string& name) {
  std::lock_guard lock(plugin_mutex());
  return loaded_plugins().count(name) > 0;
}

void load_plugin(const std::string& name) {
  if (!is_identifier(name))
    throw_error("ValueError", "load_plugin: '" + name + "' is not a plug-in name (letters, digits and '_')");
  std::lock_guard lock(plugin_mutex());
  if (loaded_plugins().count(name)) return;
  const std::string file = "libpartita_runtime_" + name + ".so";
  std::string tried;
  for (const std::string& dir : plugin_search_path()) {
    std::string path = (std::filesystem::path(dir) / file).string();
    dlerror();
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      loaded_plugins()[name] = handle;
      return;
    }
    const char* why = dlerror();
    tried += "\n  " + path + ": " + (why ? why : "unknown dlopen error");
  }
  if (tried.empty()) tried = "\n  (no directory to search: libpartita_runtime.so's own was not found and "
                             "PARTITA_PLUGIN_PATH is unset)";
  throw_error("RuntimeError", "cannot load the runtime plug-in of backend '" + name + "' (" + file +
                                  "); tried, in order (the runtime library's directory, then PARTITA_PLUGIN_PATH):" +
                                  tried);
}

}  // namespace partita::runtime
