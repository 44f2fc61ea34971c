// The "ccompiler" backend's record: its patterns (one per supported operator, no fusion: the C
// code of a merged partition runs them one after the other), target options and codegen.
#include "ccompiler.h"
#include "partita/backend/registry.h"
#include "partita/dpl/pattern.h"

namespace partita::backend::ccompiler {
namespace {

using dpl::is_op;
using dpl::wildcard;

transform::FusionPattern entry(std::string name, dpl::Pattern pattern) {
  transform::FusionPattern p;
  p.name = "ccompiler." + std::move(name);
  p.pattern = std::move(pattern);
  return p;
}

std::vector<transform::FusionPattern> patterns() {
  std::vector<transform::FusionPattern> out;
  for (const char* op : {"add", "subtract", "multiply", "divide"})
    out.push_back(entry(op, is_op(std::string("relax.") + op)({wildcard(), wildcard()})));
  out.push_back(entry("relu", is_op("relax.nn.relu")({wildcard()})));
  out.push_back(entry("matmul", is_op("relax.matmul")({wildcard(), wildcard()})));
  return out;
}

}  // namespace

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "ccompiler";
  b.description = "generated C compiled by the system C compiler (element-wise ops, relu, matmul)";
  b.colour = "#8fd18f";
  b.target_options = {{"cc", codegen::TargetOptionType::String, "gcc", "the C compiler"},
                      {"cflags", codegen::TargetOptionType::StringList, std::vector<std::string>{"-O2"},
                       "flags for the C compiler (-shared -fPIC are always added)"}};
  b.patterns = patterns;
  b.codegen = codegen;
  b.runtime_plugin = "ccompiler";
  return b;
});

}  // namespace partita::backend::ccompiler
