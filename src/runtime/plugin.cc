// Loading runtime plug-ins with dlopen. The runtime library's own folder is found with dladdr
// on a function of this file, so a build tree and an installed tree both work without paths.
#include "partita/runtime/plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <vector>

#include "partita/support/error.h"

namespace partita::runtime {

namespace {

std::mutex& plugin_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& loaded_plugins() {
  static std::set<std::string> s;
  return s;
}

std::vector<std::string> plugin_candidates(const std::string& file) {
  std::vector<std::string> out;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_plugin), &info) && info.dli_fname) {
    auto dir = std::filesystem::path(info.dli_fname).parent_path();
    out.push_back((dir / file).string());
  }
  if (const char* env = std::getenv("PARTITA_PLUGIN_PATH")) {
    std::string paths = env;
    size_t start = 0;
    while (start <= paths.size()) {
      size_t end = paths.find(':', start);
      if (end == std::string::npos) end = paths.size();
      if (end > start) out.push_back((std::filesystem::path(paths.substr(start, end - start)) / file).string());
      start = end + 1;
    }
  }
  return out;
}

}  // namespace

void load_plugin(const std::string& name) {
  std::lock_guard<std::mutex> lock(plugin_mutex());
  if (loaded_plugins().count(name)) return;
  std::string file = "libpartita_runtime_" + name + ".so";
  std::string tried;
  for (const std::string& path : plugin_candidates(file)) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      tried += "\n  " + path + ": no such file";
      continue;
    }
    // RTLD_NOW: a plug-in with unresolved symbols fails here, with dlerror's reason, not later.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      loaded_plugins().insert(name);
      return;
    }
    const char* why = dlerror();
    tried += "\n  " + path + ": " + (why ? why : "unknown dlopen error");
  }
  if (tried.empty()) tried = "\n  (no folder to look in: the runtime library's location is unknown and PARTITA_PLUGIN_PATH is unset)";
  throw_error("RuntimeError", "runtime plug-in '" + name + "' (" + file + ") could not be loaded; tried:" + tried +
                                  "\nBuild it (it is built when its dependencies are found) or add its folder to "
                                  "PARTITA_PLUGIN_PATH.");
}

bool plugin_loaded(const std::string& name) {
  std::lock_guard<std::mutex> lock(plugin_mutex());
  return loaded_plugins().count(name) != 0;
}

}  // namespace partita::runtime
