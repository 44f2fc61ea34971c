// Built-in fusion-pattern tables. Order matters: within a backend, later entries have higher
// priority (they are tried first), so general patterns come before the fused ones they extend.
#include "partita/dpl/pattern.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform {

using dpl::is_op;
using dpl::make_fused_bias_activation_pattern;
using dpl::wildcard;

namespace {

FusionPattern entry(std::string name, dpl::Pattern pattern, bool reject_leaks = false) {
  FusionPattern p;
  p.name = std::move(name);
  p.pattern = std::move(pattern);
  // Fused patterns may not hide an intermediate result someone else needs.
  if (reject_leaks) p.check = [](const PatternCheckContext& ctx) { return !has_leaking_intermediate_variables(ctx); };
  return p;
}

std::vector<FusionPattern> cutlass_patterns() {
  std::vector<FusionPattern> out;
  out.push_back(entry("cutlass.multiply", is_op("relax.multiply")({wildcard(), wildcard()})));
  out.push_back(entry("cutlass.add", is_op("relax.add")({wildcard(), wildcard()})));
  out.push_back(entry("cutlass.matmul", make_fused_bias_activation_pattern("relax.matmul")));
  out.push_back(entry("cutlass.matmul_bias", make_fused_bias_activation_pattern("relax.matmul", true), true));
  out.push_back(entry("cutlass.matmul_bias_relu",
                      make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.relu"), true));
  out.push_back(entry("cutlass.matmul_bias_gelu",
                      make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.gelu"), true));
  out.push_back(entry("cutlass.conv2d", make_fused_bias_activation_pattern("relax.nn.conv2d")));
  out.push_back(entry("cutlass.conv2d_bias", make_fused_bias_activation_pattern("relax.nn.conv2d", true), true));
  out.push_back(entry("cutlass.conv2d_bias_relu",
                      make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu"), true));
  return out;
}

std::vector<FusionPattern> ccompiler_patterns() {
  std::vector<FusionPattern> out;
  for (const char* op : {"add", "subtract", "multiply", "divide"})
    out.push_back(entry(std::string("ccompiler.") + op, is_op(std::string("relax.") + op)({wildcard(), wildcard()})));
  out.push_back(entry("ccompiler.relu", is_op("relax.nn.relu")({wildcard()})));
  out.push_back(entry("ccompiler.matmul", is_op("relax.matmul")({wildcard(), wildcard()})));
  return out;
}

}  // namespace

std::vector<FusionPattern> builtin_fusion_patterns() {
  std::vector<FusionPattern> out = cutlass_patterns();
  auto cc = ccompiler_patterns();
  out.insert(out.end(), cc.begin(), cc.end());
  return out;
}

}  // namespace partita::transform
