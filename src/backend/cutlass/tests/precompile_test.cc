// Fills the object cache with the GEMM units the GPU tests and the benchmark use, in one
// parallel nvcc run, so that the GPU machine compiles nothing (run here with
// PARTITA_TEST_CUTLASS_PRECOMPILE=1; skipped otherwise: it takes minutes of nvcc).
#include <gtest/gtest.h>

#include "../cutlass_codegen.h"
#include "../gemm_kernel.h"
#include "cutlass_test_util.h"

namespace partita {
namespace {

using backend::cutlass::GemmClass;

TEST(CutlassPrecompile, KernelUnitsOfTheGpuTestsAndTheBenchmark) {
  const char* on = std::getenv("PARTITA_TEST_CUTLASS_PRECOMPILE");
  if (!on || std::string(on) != "1")
    GTEST_SKIP() << "set PARTITA_TEST_CUTLASS_PRECOMPILE=1 to fill the cache (minutes)";
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  const DataType f16 = DataType::Float(16), bf16 = DataType::BFloat16(), f32 = DataType::Float(32);
  std::vector<GemmClass> defaults = {{f16, f16, false, false},
                                     {f16, f16, false, true},
                                     {f16, f16, true, false},
                                     {f16, f16, true, true},
                                     {bf16, bf16, false, false},
                                     {bf16, bf16, false, true},
                                     {bf16, bf16, true, false},
                                     {bf16, bf16, true, true},
                                     {f32, f32, true, false},
                                     {f32, f32, true, true},
                                     {DataType::Int(8), DataType::Int(32), true, false},
                                     {DataType::Int(8), DataType::Int(32), true, true}};
  // The profiler's candidates for one class (the profiler test and the benchmark's shapes
  // without a residual); the residual shapes of the benchmark time the default alone.
  std::vector<GemmClass> profiled = {{f16, f16, false, false}};
  std::vector<std::pair<std::string, std::string>> units;
  for (const auto& c : defaults) {
    auto k = backend::cutlass::default_config(c, 90);
    units.emplace_back(backend::cutlass::gemm_symbol(c, k), backend::cutlass::gemm_unit_source(c, k));
  }
  for (const auto& c : profiled) {
    auto cands = backend::cutlass::candidate_configs(c, 90);
    for (size_t i = 1; i < cands.size(); ++i)
      units.emplace_back(backend::cutlass::gemm_symbol(c, cands[i]), backend::cutlass::gemm_unit_source(c, cands[i]));
    units.emplace_back("profiler_" + c.id(), backend::cutlass::profiler_source(c, cands));
  }
  GemmClass res{f16, f16, false, true};
  units.emplace_back("profiler_" + res.id(),
                     backend::cutlass::profiler_source(res, {backend::cutlass::default_config(res, 90)}));
  auto t = cutlass_test::test_target();
  auto objects = backend::cutlass::compile_objects(units, backend::cutlass::nvcc_options(t));
  EXPECT_EQ(objects.size(), units.size());
  std::cout << "[cutlass precompile] " << backend::cutlass::nvcc_stats().compiled << " compiled, "
            << backend::cutlass::nvcc_stats().cached << " cached\n";
}

}  // namespace
}  // namespace partita
