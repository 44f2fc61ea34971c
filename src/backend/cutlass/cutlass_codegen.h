// The cutlass backend's compiler half (codegen.cc): generating the module's C++, choosing its
// GEMM kernels, compiling and linking it with nvcc. See README.md.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "module_format.h"
#include "nvcc.h"
#include "partita/codegen/codegen.h"
#include "profiler.h"

namespace partita::backend::cutlass {

/// A module's generated code before compilation.
struct GeneratedModule {
  std::string source;  // the glue translation unit
  std::vector<CutlassFunction> functions;
  std::vector<GemmWorkload> workloads;                     // every GEMM call, in order of the placeholders
  std::vector<std::pair<std::string, std::string>> units;  // (symbol, source) of the GEMM units
};

/// The generated source with placeholders per GEMM for its unit and split count (throws
/// codegen::UnsupportedFunction).
GeneratedModule generate(const std::vector<codegen::CodegenFunction>& functions, const codegen::Target& target,
                         codegen::ConstantNamer& namer);
/// Puts the chosen kernels' symbols and split counts into the source and lists their units.
void bind_kernels(GeneratedModule& m, const std::vector<GemmConfig>& configs);
/// The nvcc settings a target asks for.
NvccOptions nvcc_options(const codegen::Target& target);

/// The codegen registered for "cutlass".
codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant);

}  // namespace partita::backend::cutlass
