// The pattern registry: one process-wide table, guarded by a mutex.
#include "partita/transform/pattern_registry.h"

#include <mutex>

#include "partita/support/error.h"
#include "partita/transform/merge_composite_functions.h"

namespace partita::transform {

// Defined in pattern_registry_tables.cc.
std::vector<FusionPattern> builtin_fusion_patterns();

namespace {

struct Registry {
  std::mutex mu;
  std::vector<FusionPattern> table;
  bool builtins_loaded = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

void add_locked(Registry& r, const std::vector<FusionPattern>& patterns) {
  for (const auto& p : patterns) {
    if (p.name.empty() || !p.pattern)
      throw_error("ValueError", "register_patterns: a pattern needs a name and a pattern ('" + p.name + "')");
    std::erase_if(r.table, [&](const FusionPattern& q) { return q.name == p.name; });
    r.table.push_back(p);
  }
}

// Loads the built-in tables once, outside static initialization (they need the op registry).
Registry& loaded() {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  if (!r.builtins_loaded) {
    r.builtins_loaded = true;
    lock.unlock();
    auto builtins = builtin_fusion_patterns();
    lock.lock();
    // Built-ins go first so user registrations take priority over them.
    std::vector<FusionPattern> user = std::move(r.table);
    r.table.clear();
    add_locked(r, builtins);
    add_locked(r, user);
  }
  return r;
}

}  // namespace

void register_patterns(const std::vector<FusionPattern>& patterns) {
  Registry& r = loaded();
  std::lock_guard lock(r.mu);
  add_locked(r, patterns);
}

std::vector<FusionPattern> get_patterns_with_prefix(const std::string& prefix) {
  Registry& r = loaded();
  std::lock_guard lock(r.mu);
  std::vector<FusionPattern> out;
  for (auto it = r.table.rbegin(); it != r.table.rend(); ++it)
    if (it->name.rfind(prefix, 0) == 0) out.push_back(*it);
  return out;
}

std::optional<FusionPattern> get_pattern(const std::string& name) {
  Registry& r = loaded();
  std::lock_guard lock(r.mu);
  for (const auto& p : r.table)
    if (p.name == name) return p;
  return std::nullopt;
}

std::vector<std::string> list_pattern_names() {
  Registry& r = loaded();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& p : r.table) out.push_back(p.name);
  return out;
}

IRModule partition_for(const std::string& backend_prefix, IRModule mod, bool merge, bool bind_constants) {
  std::string prefix = backend_prefix;
  if (!prefix.empty() && prefix.back() != '.') prefix += '.';
  auto patterns = get_patterns_with_prefix(prefix);
  if (patterns.empty())
    throw_error("KeyError", "partition_for: no fusion pattern is registered for backend '" + backend_prefix + "'");
  mod = fuse_ops_by_pattern(patterns, std::move(mod), bind_constants, /*annotate_codegen=*/!merge);
  if (merge) mod = merge_composite_functions(std::move(mod));
  return mod;
}

}  // namespace partita::transform
