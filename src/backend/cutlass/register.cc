// The "cutlass" backend's record: the seed tutorial's pattern table (matmul / conv2d with bias
// and activation, element-wise multiply and add). It partitions only: no codegen yet, so a
// module partitioned for it can be printed and transformed but not built.
#include "partita/backend/registry.h"
#include "partita/dpl/pattern.h"

namespace partita::backend::cutlass {
namespace {

using dpl::is_op;
using dpl::make_fused_bias_activation_pattern;
using dpl::wildcard;

transform::FusionPattern entry(std::string name, dpl::Pattern pattern, bool reject_leaks = false) {
  transform::FusionPattern p;
  p.name = "cutlass." + std::move(name);
  p.pattern = std::move(pattern);
  // Fused patterns may not hide an intermediate result someone else needs.
  if (reject_leaks)
    p.check = [](const transform::PatternCheckContext& ctx) {
      return !transform::has_leaking_intermediate_variables(ctx);
    };
  return p;
}

// Later entries have priority: general patterns come before the fused ones they extend.
std::vector<transform::FusionPattern> patterns() {
  std::vector<transform::FusionPattern> out;
  out.push_back(entry("multiply", is_op("relax.multiply")({wildcard(), wildcard()})));
  out.push_back(entry("add", is_op("relax.add")({wildcard(), wildcard()})));
  out.push_back(entry("matmul", make_fused_bias_activation_pattern("relax.matmul")));
  out.push_back(entry("matmul_bias", make_fused_bias_activation_pattern("relax.matmul", true), true));
  out.push_back(entry("matmul_bias_relu", make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.relu"),
                      true));
  out.push_back(entry("matmul_bias_gelu", make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.gelu"),
                      true));
  out.push_back(entry("conv2d", make_fused_bias_activation_pattern("relax.nn.conv2d")));
  out.push_back(entry("conv2d_bias", make_fused_bias_activation_pattern("relax.nn.conv2d", true), true));
  out.push_back(entry("conv2d_bias_relu",
                      make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu"), true));
  return out;
}

}  // namespace

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "cutlass";
  b.description = "the seed tutorial's CUTLASS pattern table (partitioning only, no codegen yet)";
  b.colour = "#c9a0dc";
  b.patterns = patterns;
  return b;
});

}  // namespace partita::backend::cutlass
