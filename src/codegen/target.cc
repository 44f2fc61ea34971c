// Target kinds and Target construction (see target.h).
#include "partita/codegen/target.h"

#include <algorithm>
#include <mutex>

#include "partita/support/error.h"

namespace partita::codegen {
namespace {

struct KindRegistry {
  std::mutex mu;
  std::map<std::string, TargetKindDef> kinds;
};

KindRegistry& registry() {
  static KindRegistry r;
  return r;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out.empty() ? "(none)" : out;
}

}  // namespace

const char* target_option_type_name(TargetOptionType type) {
  switch (type) {
    case TargetOptionType::Bool: return "bool";
    case TargetOptionType::Int: return "int";
    case TargetOptionType::String: return "string";
    case TargetOptionType::StringList: return "list of strings";
  }
  return "?";
}

std::string TargetOptionValue::str() const {
  switch (type()) {
    case TargetOptionType::Bool: return std::get<bool>(v_) ? "1" : "0";
    case TargetOptionType::Int: return std::to_string(std::get<int64_t>(v_));
    case TargetOptionType::String: return std::get<std::string>(v_);
    case TargetOptionType::StringList: {
      std::string out;
      const auto& items = std::get<std::vector<std::string>>(v_);
      for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
      return out;
    }
  }
  return "";
}

void register_target_kind(TargetKindDef def) {
  for (const auto& opt : def.options) {
    if (opt.default_value.type() != opt.type)
      throw_error("ValueError", "target kind '" + def.name + "': default of option '" + opt.name + "' is a " +
                                    target_option_type_name(opt.default_value.type()) + ", declared " +
                                    target_option_type_name(opt.type));
  }
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string name = def.name;
  r.kinds[name] = std::move(def);
}

const TargetKindDef* find_target_kind(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kinds.find(name);
  return it == r.kinds.end() ? nullptr : &it->second;
}

std::vector<std::string> list_target_kinds() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, def] : r.kinds) out.push_back(name);
  return out;
}

Target::Target(const std::string& kind, const TargetOptionMap& options) : kind_(kind) {
  const TargetKindDef* def = find_target_kind(kind);
  if (!def)
    throw_error("ValueError", "unknown target kind '" + kind + "'; registered kinds: " + join(list_target_kinds()));
  for (const auto& spec : def->options) options_[spec.name] = spec.default_value;
  for (const auto& [name, value] : options) {
    // (clang 14 cannot capture a structured binding: name is captured by an init-capture)
    auto it = std::find_if(def->options.begin(), def->options.end(),
                           [&n = name](const TargetOptionSpec& s) { return s.name == n; });
    if (it == def->options.end()) {
      std::vector<std::string> valid;
      for (const auto& s : def->options) valid.push_back(s.name);
      throw_error("ValueError", "target '" + kind + "' has no option '" + name + "'; valid options: " + join(valid));
    }
    if (value.type() != it->type)
      throw_error("ValueError", "target '" + kind + "' option '" + name + "' expects a " +
                                    target_option_type_name(it->type) + ", got a " +
                                    target_option_type_name(value.type()) + " (" + value.str() + ")");
    options_[name] = value;
    explicit_.push_back(name);
  }
}

bool Target::is_explicit(const std::string& name) const {
  return std::find(explicit_.begin(), explicit_.end(), name) != explicit_.end();
}

const TargetOptionValue& Target::get(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) {
    std::vector<std::string> valid;
    for (const auto& [n, v] : options_) valid.push_back(n);
    throw_error("KeyError", "target '" + kind_ + "' has no option '" + name + "'; valid options: " + join(valid));
  }
  return it->second;
}

namespace {
template <class V>
const V& typed(const Target& t, const std::string& name, TargetOptionType type) {
  const TargetOptionValue& v = t.get(name);
  if (v.type() != type)
    throw_error("TypeError", "target '" + t.kind() + "' option '" + name + "' is a " +
                                 target_option_type_name(v.type()) + ", not a " + target_option_type_name(type));
  return std::get<V>(v.storage());
}
}  // namespace

bool Target::get_bool(const std::string& name) const { return typed<bool>(*this, name, TargetOptionType::Bool); }
int64_t Target::get_int(const std::string& name) const { return typed<int64_t>(*this, name, TargetOptionType::Int); }
const std::string& Target::get_string(const std::string& name) const {
  return typed<std::string>(*this, name, TargetOptionType::String);
}
const std::vector<std::string>& Target::get_string_list(const std::string& name) const {
  return typed<std::vector<std::string>>(*this, name, TargetOptionType::StringList);
}

std::string Target::str() const {
  std::string out = kind_;
  for (const auto& [name, value] : options_) {
    std::string v = value.str();
    if (v.find(' ') != std::string::npos) v = "'" + v + "'";
    out += " -" + name + "=" + v;
  }
  return out;
}

}  // namespace partita::codegen
