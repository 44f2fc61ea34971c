// The shared layout of backend modules' bytes (partita/runtime/module_sections.h).
#include "partita/runtime/module_sections.h"

#include "partita/runtime/serialize.h"

namespace partita::runtime {

std::string write_module_sections(const ModuleFormat& format, std::initializer_list<std::string_view> sections) {
  std::string out;
  Writer w(out);
  w.u32(format.magic);
  w.u32(format.version);
  for (std::string_view s : sections) w.str(s);
  return out;
}

std::vector<std::string> read_module_sections(const ModuleFormat& format, std::string_view bytes,
                                              std::initializer_list<const char*> names) {
  const std::string key = format.type_key;
  Reader r(bytes, key + " module");
  if (r.u32("magic") != format.magic) r.fail("not a " + key + " module (bad magic)");
  uint32_t version = r.u32("version");
  if (version != format.version)
    r.fail("unsupported " + key + " module version " + std::to_string(version) + " (this runtime reads version " +
           std::to_string(format.version) + ")");
  std::vector<std::string> sections;
  for (const char* name : names) sections.push_back(r.str(name));
  if (!r.at_end()) r.fail("trailing bytes");
  return sections;
}

}  // namespace partita::runtime
