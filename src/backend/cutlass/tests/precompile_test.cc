// Fills the object cache with the GEMM units the GPU tests and the benchmark use, in one
// parallel nvcc run, so that the GPU machine compiles nothing it was handed (run with
// PARTITA_TEST_CUTLASS_PRECOMPILE=1; skipped otherwise: it takes minutes of nvcc). The GPU
// tests' units are those their modules need (recorded by compile_glue_only when the GPU tests
// ran in precompile mode, `pending_units/`); the benchmark's and the profiler test's are every
// candidate of their classes and the profiler programs. PARTITA_TEST_CUTLASS_PRECOMPILE_ONLY=
// tests|bench compiles one of the two groups.
#include <gtest/gtest.h>

#include "../cutlass_codegen.h"
#include "../gemm_kernel.h"
#include "../profiler.h"
#include "bench_shapes.h"
#include "cutlass_test_util.h"

namespace partita {
namespace {

using backend::cutlass::GemmClass;

TEST(CutlassPrecompile, KernelUnitsOfTheGpuTestsAndTheBenchmark) {
  const char* on = std::getenv("PARTITA_TEST_CUTLASS_PRECOMPILE");
  if (!on || std::string(on) != "1")
    GTEST_SKIP() << "set PARTITA_TEST_CUTLASS_PRECOMPILE=1 to fill the cache (minutes)";
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  const char* only_env = std::getenv("PARTITA_TEST_CUTLASS_PRECOMPILE_ONLY");
  std::string only = only_env ? only_env : "";
  std::vector<std::pair<std::string, std::string>> units;
  if (only != "bench") units = cutlass_test::pending_units();
  if (only != "tests") {
    // The benchmark's classes (as its module's build sees them) and the profiler test's (f16,
    // bias + gelu: the FFN1 class, also the benchmark's).
    IRModule bench = transform::partition_for("cutlass", script::parse_module(cutlass_test::bench_module_text()), false);
    std::vector<GemmClass> profiled;
    for (const auto& w : cutlass_test::generate_module(bench, cutlass_test::test_target()).workloads) {
      bool seen = false;
      for (const auto& p : profiled) seen = seen || p.id() == w.cls.id();
      if (!seen) profiled.push_back(w.cls);
    }
    for (const auto& c : profiled) {
      auto cands = backend::cutlass::candidate_configs(c, 90);
      for (auto& u : backend::cutlass::gemm_units(c, cands)) units.push_back(std::move(u));
      units.emplace_back("profiler_" + c.id(), backend::cutlass::profiler_source(c, cands));
    }
  }
  auto t = cutlass_test::test_target();
  auto objects = backend::cutlass::compile_objects(units, backend::cutlass::nvcc_options(t));
  EXPECT_EQ(objects.size(), units.size());
  std::cout << "[cutlass precompile] " << units.size() << " units: " << backend::cutlass::nvcc_stats().compiled
            << " compiled, " << backend::cutlass::nvcc_stats().cached << " cached\n";
}

}  // namespace
}  // namespace partita
