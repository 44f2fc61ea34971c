// Targets: a kind ("llvm", a backend's name, ...) plus typed options with defaults (TVM's
// Target). For a kind "mine" that declares the options "cc" and "cflags":
//
//   Target t("mine", {{"cc", "gcc"}, {"cflags", std::vector<std::string>{"-O2"}}});
//   t.get_string("cc");              // "gcc"
//   t.str();                         // "mine -cc=gcc -cflags=-O2"
//
// Every option a backend reads is declared with its kind's registration (register_target_kind),
// so unknown kinds and options, and values of the wrong type, are errors that list what is valid.
// A Target always holds every declared option: those not given take their defaults.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace partita::codegen {

enum class TargetOptionType : uint8_t { Bool, Int, String, StringList };
const char* target_option_type_name(TargetOptionType type);

/// An option value: a bool, an integer, a string or a list of strings. Built implicitly from
/// literals so option maps read naturally ({"cc", "gcc"}, {"opt", 3}, {"flags", {"-a", "-b"}}).
class TargetOptionValue {
 public:
  using Storage = std::variant<bool, int64_t, std::string, std::vector<std::string>>;
  TargetOptionValue() : v_(false) {}
  TargetOptionValue(bool v) : v_(v) {}
  TargetOptionValue(int v) : v_(int64_t(v)) {}
  TargetOptionValue(int64_t v) : v_(v) {}
  TargetOptionValue(const char* v) : v_(std::string(v)) {}
  TargetOptionValue(std::string v) : v_(std::move(v)) {}
  TargetOptionValue(std::vector<std::string> v) : v_(std::move(v)) {}
  TargetOptionValue(std::initializer_list<const char*> v) : v_(std::vector<std::string>(v.begin(), v.end())) {}

  TargetOptionType type() const { return TargetOptionType(v_.index()); }
  const Storage& storage() const { return v_; }
  /// Text form used by Target::str(): lists are comma-separated.
  std::string str() const;
  friend bool operator==(const TargetOptionValue& a, const TargetOptionValue& b) { return a.v_ == b.v_; }

 private:
  Storage v_;
};

using TargetOptionMap = std::map<std::string, TargetOptionValue>;

struct TargetOptionSpec {
  std::string name;
  TargetOptionType type;
  TargetOptionValue default_value;
  std::string doc;
};

struct TargetKindDef {
  std::string name;
  std::vector<TargetOptionSpec> options;
};

/// Registers a target kind. Re-registering the same name replaces it (so a backend and a test
/// may both declare one); an option whose default has another type than declared is an error.
void register_target_kind(TargetKindDef def);
/// The kind named `name`, or nullptr.
const TargetKindDef* find_target_kind(const std::string& name);
/// Registered kind names, sorted.
std::vector<std::string> list_target_kinds();

class Target {
 public:
  /// Throws Error("ValueError") for an unknown kind (listing the registered kinds), an unknown
  /// option (listing the kind's options) or a value of the wrong type.
  explicit Target(const std::string& kind, const TargetOptionMap& options = {});

  const std::string& kind() const { return kind_; }
  /// Every option of the kind, given or defaulted.
  const TargetOptionMap& options() const { return options_; }
  /// Whether `name` was given explicitly (not defaulted).
  bool is_explicit(const std::string& name) const;

  const TargetOptionValue& get(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::vector<std::string>& get_string_list(const std::string& name) const;

  /// "<kind> -opt=value ..." over every option in name order (TVM's Target::str()).
  std::string str() const;

  friend bool operator==(const Target& a, const Target& b) {
    return a.kind_ == b.kind_ && a.options_ == b.options_;
  }

 private:
  std::string kind_;
  TargetOptionMap options_;
  std::vector<std::string> explicit_;
};

}  // namespace partita::codegen
