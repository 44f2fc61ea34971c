// The CUTLASS side of benchmarks/gpu/bench_cutlass.py (opt-in: PARTITA_CUTLASS_BENCH=1 on a
// GPU; PARTITA_CUTLASS_BENCH_OUT=<file> receives the table). For the GEMMs with epilogues of
// BERT-base and the zoo's ResNet-50 at batch 32 (fp16): the profiler's time of every candidate
// kernel (the default is the first), then the whole Partita module — partitioned, built with
// the profile cache, run by the VM on cuda:0 — and the time of a cached rebuild.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "../cutlass_codegen.h"
#include "../profiler.h"
#include "bench_shapes.h"
#include "cutlass_test_util.h"

namespace partita {
namespace {

using cutlass_test::bench_class;
using Shape = cutlass_test::BenchShape;
const std::vector<Shape>& shapes() { return cutlass_test::bench_shapes(); }

std::string module_text(const Shape& s) {
  std::string M = std::to_string(s.m), N = std::to_string(s.n), K = std::to_string(s.k);
  std::string t = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((" + M + ", " + K +
                  "), dtype=\"float16\"), w: R.Tensor((" + K + ", " + N + "), dtype=\"float16\"), b: R.Tensor((" + N +
                  ",), dtype=\"float16\"), r: R.Tensor((" + M + ", " + N + "), dtype=\"float16\")) -> R.Tensor((" + M +
                  ", " + N + "), dtype=\"float16\"):\n        with R.dataflow():\n";
  std::string ty = "R.Tensor((" + M + ", " + N + "), dtype=\"float16\")";
  t += "            m: " + ty + " = R.matmul(x, w, out_dtype=\"void\")\n";
  t += "            a: " + ty + " = R.add(m, b)\n";
  std::string last = "a";
  if (*s.act) {
    t += "            h: " + ty + " = " + s.act + "(a)\n";
    last = "h";
  }
  if (s.residual) {
    t += "            o: " + ty + " = R.add(" + last + ", r)\n";
    last = "o";
    if (std::string(s.name).find("relu") != std::string::npos) {
      t += "            p: " + ty + " = R.nn.relu(o)\n";
      last = "p";
    }
  }
  t += "            R.output(" + last + ")\n        return " + last + "\n";
  return t;
}

TEST(CutlassBench, GemmsWithEpilogues) {
  const char* on = std::getenv("PARTITA_CUTLASS_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "set PARTITA_CUTLASS_BENCH=1 (on a GPU) to run the benchmark";
  PARTITA_REQUIRE_CUTLASS_GPU();
  const char* out_path = std::getenv("PARTITA_CUTLASS_BENCH_OUT");
  std::ofstream out(out_path ? out_path : "/dev/stdout");
  auto target = cutlass_test::test_target({{"profile", true}});
  auto nvcc = backend::cutlass::nvcc_options(target);
  out << "shape\tM\tN\tK\tTFLOP\tdefault_ms\tbest_ms\tbest_config\tmodule_ms\tbuild_s\tcached_rebuild_s\tcandidates\n";
  for (const Shape& s : shapes()) {
    IRModule m = script::parse_module(module_text(s));
    IRModule p = transform::partition_for("cutlass", m, false);
    // The profiler, through the build (its cache is the target's): times every candidate.
    auto t0 = std::chrono::steady_clock::now();
    auto exec = codegen::build(p, codegen::BuildOptions({target}, false));
    double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    auto exec2 = codegen::build(p, codegen::BuildOptions({target}, false));
    double rebuild_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The candidates' times again, for the table (the cache keeps only the best).
    backend::cutlass::GemmWorkload w;
    w.cls = bench_class(s);
    w.m = s.m;
    w.n = s.n;
    w.k = s.k;
    auto cands = backend::cutlass::candidate_configs(w.cls, 90);
    std::vector<std::pair<std::string, std::string>> units;
    for (const auto& c : cands)
      units.emplace_back(backend::cutlass::gemm_symbol(w.cls, c), backend::cutlass::gemm_unit_source(w.cls, c));
    units.emplace_back("profiler", backend::cutlass::profiler_source(w.cls, cands));
    std::string exe = backend::cutlass::link(backend::cutlass::compile_objects(units, nvcc), false, nvcc);
    auto ms = backend::cutlass::run_profiler(exe, {w}, cands.size(), 120);
    ASSERT_TRUE(ms);
    double best = 1e30;
    std::string best_id, all;
    for (size_t c = 0; c < cands.size(); ++c) {
      double t = (*ms)[0][c];
      all += (c ? "," : "") + cands[c].id() + "=" + std::to_string(t);
      if (t > 0 && t < best) best = t, best_id = cands[c].id();
    }
    // The module on the VM: inputs on the GPU, warm-up (CUDA Graph capture), then 50 calls.
    std::vector<Tensor> in = {cutlass_test::random_input({s.m, s.k}, DataType::Float(16), 1).to(Device::cuda(0)),
                              cutlass_test::random_input({s.k, s.n}, DataType::Float(16), 2).to(Device::cuda(0)),
                              cutlass_test::random_input({s.n}, DataType::Float(16), 3).to(Device::cuda(0)),
                              cutlass_test::random_input({s.m, s.n}, DataType::Float(16), 4).to(Device::cuda(0))};
    runtime::VirtualMachine vm(exec2, Device::cuda(0));
    for (int i = 0; i < 5; ++i) vm.invoke("main", in);
    auto* api = runtime::device_api(Device::cuda(0));
    api->sync_stream(0, runtime::current_stream(Device::cuda(0)));
    const int reps = 50;
    t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> res;
    for (int i = 0; i < reps; ++i) res = vm.invoke("main", in);
    Tensor host = res.at(0).to(Device::cpu());  // waits for the work
    double module_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    double tflop = 2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-12;
    out << s.name << "\t" << s.m << "\t" << s.n << "\t" << s.k << "\t" << tflop << "\t" << (*ms)[0][0] << "\t" << best
        << "\t" << best_id << "\t" << module_ms << "\t" << build_s << "\t" << rebuild_s << "\t" << all << "\n";
    out.flush();
    EXPECT_LT(rebuild_s, 2.0) << "a cached rebuild ran nvcc or the profiler";
  }
}

}  // namespace
}  // namespace partita
