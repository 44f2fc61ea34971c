// The backend registry (partita/backend/registry.h): one process-wide table behind a mutex.
#include "partita/backend/registry.h"

#include <cctype>
#include <map>
#include <mutex>

#include "partita/support/error.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendInfo> backends;
};

Registry& registry() {
  static Registry r;
  return r;
}

bool is_hex_colour(const std::string& c) {
  if (c.size() != 7 || c[0] != '#') return false;
  for (size_t i = 1; i < c.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(c[i]))) return false;
  return true;
}

}  // namespace

void register_backend(BackendInfo info) {
  if (info.name.empty() || info.name.find('.') != std::string::npos)
    throw_error("ValueError", "register_backend: a backend needs a name without '.' (got '" + info.name + "')");
  if (!is_hex_colour(info.colour))
    throw_error("ValueError", "register_backend: backend '" + info.name + "' has colour '" + info.colour +
                                  "', expected \"#rrggbb\"");
  codegen::register_target_kind(codegen::TargetKindDef{info.name, info.target_options});
  if (info.patterns) {
    auto patterns = info.patterns();
    for (const auto& p : patterns)
      if (p.name.rfind(info.name + ".", 0) != 0)
        throw_error("ValueError", "register_backend: pattern '" + p.name + "' of backend '" + info.name +
                                      "' must be named '" + info.name + ".<name>'");
    transform::register_patterns(patterns);
  }
  if (info.codegen) codegen::register_codegen(info.name, info.codegen);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.backends[info.name] = std::move(info);
}

std::optional<BackendInfo> find_backend(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.backends.find(name);
  if (it == r.backends.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> list_backends() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, info] : r.backends) out.push_back(name);
  return out;
}

IRModule prepare_for(const std::vector<std::string>& backends, IRModule mod) {
  for (const std::string& name : backends)
    if (auto info = find_backend(name); info && info->prepare) mod = info->prepare(std::move(mod));
  return mod;
}

}  // namespace partita::backend
