// The one layout of a backend module's serialized bytes (what save_to_binary writes and its
// loader reads): a 4-byte magic, a format version, then named sections (length-prefixed byte
// strings: a graph, a source, a nested module's bytes, ...). Every backend's runtime plug-in
// and codegen use these two functions, so the header checks (magic, version, truncation,
// trailing bytes) are written once and give the same clear errors for every backend.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace partita::runtime {

/// What identifies one backend module format; a backend keeps one constant of it beside the
/// code that writes and reads the module (e.g. {"mine", 0x4e4d5450 /* "PTMN" */, 1}).
struct ModuleFormat {
  const char* type_key;  // the module's type key, named in error messages
  uint32_t magic;
  uint32_t version;
};

/// The bytes of a module in `format` holding `sections`, in order.
std::string write_module_sections(const ModuleFormat& format, std::initializer_list<std::string_view> sections);

/// The sections of `bytes` written by write_module_sections with `format`, one per entry of
/// `names` (which name them in error messages). Throws Error("ValueError") naming the type key
/// for another magic ("not a <key> module (bad magic)"), another version, missing sections and
/// trailing bytes.
std::vector<std::string> read_module_sections(const ModuleFormat& format, std::string_view bytes,
                                              std::initializer_list<const char*> names);

}  // namespace partita::runtime
