// The operator interface table (see op_interface.h).
#include "partita/ir/op_interface.h"

#include <atomic>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "partita/support/error.h"

namespace partita {
namespace {

struct Table {
  std::shared_mutex mutex;
  std::map<std::string, OpInterface> entries;  // node-based: entry addresses never move
};

Table& table() {
  static Table t;
  return t;
}

// Constant-initialized (no constructor runs), so installing it from another file's static
// initializer is safe whatever order the initializers run in.
std::atomic<OpInterfaceLoader> g_loader{nullptr};

}  // namespace

void set_op_interface_loader(OpInterfaceLoader loader) { g_loader.store(loader); }

void register_op_interface(const std::string& name, OpInterface iface) {
  Table& t = table();
  std::unique_lock lock(t.mutex);
  if (!t.entries.emplace(name, std::move(iface)).second)
    throw_error("ValueError", "operator '" + name + "' already has an interface registered");
}

const OpInterface* find_op_interface(const std::string& name) {
  // Outside the lock: the loader registers entries (it runs once; later calls return at once).
  if (OpInterfaceLoader load = g_loader.load()) load();
  Table& t = table();
  std::shared_lock lock(t.mutex);
  auto it = t.entries.find(name);
  return it == t.entries.end() ? nullptr : &it->second;
}

}  // namespace partita
