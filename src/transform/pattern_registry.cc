// The pattern registry: one process-wide table, guarded by a mutex.
#include "partita/transform/pattern_registry.h"

#include <mutex>

#include "partita/support/error.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/fuse_ops_by_kind.h"
#include "partita/transform/merge_composite_functions.h"

namespace partita::transform {

namespace {

// The one table, locked for as long as the caller holds `lock`.
struct Locked {
  std::unique_lock<std::mutex> lock;
  std::vector<FusionPattern>& table;
};

Locked registry() {
  static std::mutex mu;
  static std::vector<FusionPattern> table;
  return {std::unique_lock(mu), table};
}

}  // namespace

// Backends register their tables from static initializers of the compiler library
// (partita/backend/registry.h), so they come before any user registration and user patterns take
// priority over them.
void register_patterns(const std::vector<FusionPattern>& patterns) {
  auto [lock, table] = registry();
  for (const auto& p : patterns) {
    if (p.name.empty() || !p.pattern)
      throw_error("ValueError",
                  "register_patterns: a pattern needs a name and a pattern ('" + p.name + "')");
    std::erase_if(table, [&](const FusionPattern& q) { return q.name == p.name; });
    table.push_back(p);
  }
}

std::vector<FusionPattern> get_patterns_with_prefix(const std::string& prefix) {
  auto [lock, table] = registry();
  std::vector<FusionPattern> out;
  for (auto it = table.rbegin(); it != table.rend(); ++it)
    if (it->name.rfind(prefix, 0) == 0) out.push_back(*it);
  return out;
}

std::optional<FusionPattern> get_pattern(const std::string& name) {
  auto [lock, table] = registry();
  for (const auto& p : table)
    if (p.name == name) return p;
  return std::nullopt;
}

std::vector<std::string> list_pattern_names() {
  auto [lock, table] = registry();
  std::vector<std::string> out;
  for (const auto& p : table) out.push_back(p.name);
  return out;
}

IRModule partition_for(const std::string& backend_prefix, IRModule mod, bool merge, bool bind_constants) {
  std::string prefix = backend_prefix;
  if (!prefix.empty() && prefix.back() != '.') prefix += '.';
  auto patterns = get_patterns_with_prefix(prefix);
  // Constants are folded first (batch_norm into convolutions, weight transposes, shape
  // arithmetic), as every inference compiler does, so the patterns see what will run.
  const bool kind_fusion = patterns.empty() && find_kind_fusion(backend_prefix);
  if (patterns.empty() && !kind_fusion)
    throw_error("KeyError", "partition_for: no fusion pattern is registered for backend '" + backend_prefix + "'");
  mod = FoldForInference()(std::move(mod));
  // A code generator that fuses by operator kind has no patterns: it takes
  // every call its registered check accepts (FuseOpsByKind).
  if (kind_fusion) {
    FuseOpsByKindOptions options;
    options.codegen = backend_prefix;
    return fuse_ops_by_kind(std::move(mod), options);
  }
  mod = fuse_ops_by_pattern(patterns, std::move(mod), bind_constants, /*annotate_codegen=*/!merge);
  if (merge) mod = merge_composite_functions(std::move(mod));
  return mod;
}

}  // namespace partita::transform
