// The CUTLASS side of benchmarks/gpu/bench_cutlass.py (opt-in: PARTITA_CUTLASS_BENCH=1 on a
// GPU; PARTITA_CUTLASS_BENCH_OUT=<file> receives the table). For the GEMMs with epilogues of
// bench_shapes.h (fp16): the profiler's time of every candidate kernel (a CUDA graph of calls:
// the kernel alone; and the same calls through the unit's host path), then all of them as one
// Partita module — partitioned, built with the profile cache, run by the VM on cuda:0 with CUDA
// Graphs (its default) and without (every call through the VM, the plug-in and the unit's host
// path) — and the time of a cached rebuild. CutlassBench.ShapesFile writes the shapes for the
// cuBLASLt and PyTorch sides (PARTITA_CUTLASS_BENCH_SHAPES=<file>; no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../cutlass_codegen.h"
#include "../profiler.h"
#include "bench_shapes.h"
#include "cutlass_test_util.h"

namespace partita {
namespace {

using Shape = cutlass_test::BenchShape;
const std::vector<Shape>& shapes() { return cutlass_test::bench_shapes(); }

// The GEMM workload of each shape as the build sees it (its class from the codegen: e.g. a
// residual added before any activation is "addpre"), matched by M, N, K and the activation
// (BERT's FFN1 is there with GELU and with its tanh form).
std::vector<backend::cutlass::GemmWorkload> shape_workloads(const IRModule& parted, const codegen::Target& target) {
  auto generated = cutlass_test::generate_module(parted, target).workloads;
  std::vector<backend::cutlass::GemmWorkload> out;
  const std::map<std::string, int> act_codes = {{"R.nn.relu", 1}, {"R.nn.gelu", 2}, {"R.nn.gelu_tanh", 3}};
  for (const Shape& s : shapes()) {
    auto it = std::find_if(generated.begin(), generated.end(), [&](const auto& w) {
      return w.m == s.m && w.n == s.n && w.k == s.k && (!*s.act || w.cls.epilogue.act == act_codes.at(s.act));
    });
    if (it == generated.end()) throw_error("ValueError", std::string("bench: no GEMM of shape ") + s.name);
    out.push_back(*it);
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Milliseconds per call of `reps` calls after `warmups` and at least 20 ms of calls (the SM
// clock idles at 345 MHz after the build's nvcc), host clock, one synchronization.
template <class F>
double time_calls(F call, int warmups, int reps) {
  auto* api = runtime::device_api(Device::cuda(0));
  for (int i = 0; i < warmups; ++i) call();
  for (auto w0 = std::chrono::steady_clock::now(); seconds_since(w0) < 0.02;) call();
  api->sync_stream(0, runtime::current_stream(Device::cuda(0)));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) call();
  api->sync_stream(0, runtime::current_stream(Device::cuda(0)));
  return seconds_since(t0) * 1e3 / reps;
}

// Each shape is timed on its own workload: two with one M, N and K (FFN1 with GELU and with
// its tanh form) are told apart by their activation (no GPU needed).
TEST(CutlassBench, EachShapeHasItsOwnWorkload) {
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  IRModule p = transform::partition_for("cutlass", script::parse_module(cutlass_test::bench_module_text()), false);
  auto ws = shape_workloads(p, cutlass_test::test_target());
  ASSERT_EQ(ws.size(), shapes().size());
  for (size_t i = 0; i < shapes().size(); ++i) {
    std::string act = shapes()[i].act;
    if (act == "R.nn.gelu") EXPECT_EQ(ws[i].cls.epilogue.act, 2) << shapes()[i].name;
    if (act == "R.nn.gelu_tanh") EXPECT_EQ(ws[i].cls.epilogue.act, 3) << shapes()[i].name;
  }
}

TEST(CutlassBench, ShapesFile) {
  const char* path = std::getenv("PARTITA_CUTLASS_BENCH_SHAPES");
  if (!path) GTEST_SKIP() << "set PARTITA_CUTLASS_BENCH_SHAPES=<file> to write the benchmark's shapes";
  std::ofstream out(path);
  out << "shape\tM\tN\tK\tact\tresidual\tpost_relu\n";
  for (const Shape& s : shapes()) {
    std::string act = *s.act ? std::string(s.act).substr(std::string("R.nn.").size()) : "none";
    out << s.name << "\t" << s.m << "\t" << s.n << "\t" << s.k << "\t" << act << "\t" << int(s.residual) << "\t"
        << int(cutlass_test::bench_post_relu(s)) << "\n";
  }
  ASSERT_TRUE(out.good());
}

TEST(CutlassBench, GemmsWithEpilogues) {
  const char* on = std::getenv("PARTITA_CUTLASS_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "set PARTITA_CUTLASS_BENCH=1 (on a GPU) to run the benchmark";
  PARTITA_REQUIRE_CUTLASS_GPU();
  const char* out_path = std::getenv("PARTITA_CUTLASS_BENCH_OUT");
  std::ofstream out(out_path ? out_path : "/dev/stdout");
  // A fresh profile cache: every workload is measured in this run.
  auto profile_file = std::filesystem::temp_directory_path() / "partita_cutlass_bench_profile.tsv";
  std::filesystem::remove(profile_file);
  auto target = cutlass_test::test_target({{"profile", true}, {"profile_cache", profile_file.string()}});
  auto nvcc = backend::cutlass::nvcc_options(target);

  // 1. Every candidate of every workload, one profiler run per class.
  IRModule p = transform::partition_for("cutlass", script::parse_module(cutlass_test::bench_module_text()), false);
  std::vector<backend::cutlass::GemmWorkload> ws = shape_workloads(p, target);
  backend::cutlass::ProfileOptions po;
  po.cache_file = profile_file.string();
  backend::cutlass::ProfileReport report;
  auto t0 = std::chrono::steady_clock::now();
  auto chosen = backend::cutlass::choose_gemm_configs(ws, nvcc, po, &report);
  double profile_s = seconds_since(t0);
  std::cerr << "[bench] profiled " << report.measured << " workloads in " << profile_s << " s\n" << report.log;
  std::map<std::string, std::string> candidates;  // workload key -> "cfg=graph_ms/host_ms ..."
  std::istringstream log(report.log);
  for (std::string line; std::getline(log, line);)
    if (size_t colon = line.find(": "); colon != std::string::npos) candidates[line.substr(0, colon)] = line.substr(colon + 2);
  backend::cutlass::ProfileCache cache(profile_file.string());

  // 2. All shapes as one module (one glue unit), built from the profile cache, then rebuilt.
  t0 = std::chrono::steady_clock::now();
  auto exec = codegen::build(p, codegen::BuildOptions({target}, false));
  double build_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto exec2 = codegen::build(p, codegen::BuildOptions({target}, false));
  double rebuild_s = seconds_since(t0);
  std::cerr << "[bench] module built in " << build_s << " s, rebuilt in " << rebuild_s << " s\n";
  EXPECT_LT(rebuild_s, 2.0) << "a cached rebuild ran nvcc or the profiler";

  // 3. Each function on the VM: with CUDA Graphs (captured at the second call), and without.
  // A VM keeps at most VirtualMachine's graph limit (16) of captured graphs: one VM per shape
  // for the graph times, so that every shape's are a graph's.
  runtime::VirtualMachine plain(exec, Device::cuda(0));
  plain.set_graph_capture(false);
  int64_t captures = 0, launches = 0, fallbacks = 0;
  out << "shape\tM\tN\tK\tTFLOP\tbest_ms\tbest_config\tbest_host_path_ms\tmodule_graph_ms\tmodule_plain_ms\t"
         "profile_s\tbuild_s\tcached_rebuild_s\tcandidates\n";
  for (size_t i = 0; i < shapes().size(); ++i) {
    const Shape& s = shapes()[i];
    std::string fn = "s" + std::to_string(i);
    std::vector<Tensor> in = {cutlass_test::random_input({s.m, s.k}, DataType::Float(16), 1).to(Device::cuda(0)),
                              cutlass_test::random_input({s.k, s.n}, DataType::Float(16), 2).to(Device::cuda(0)),
                              cutlass_test::random_input({s.n}, DataType::Float(16), 3).to(Device::cuda(0))};
    if (s.residual) in.push_back(cutlass_test::random_input({s.m, s.n}, DataType::Float(16), 4).to(Device::cuda(0)));
    std::vector<Tensor> res;
    runtime::VirtualMachine vm(exec, Device::cuda(0));
    double graph_ms = time_calls([&] { res = vm.invoke(fn, in); }, 5, 50);
    captures += vm.graph_stats().captures, launches += vm.graph_stats().launches;
    fallbacks += vm.graph_stats().fallbacks;
    double plain_ms = time_calls([&] { res = plain.invoke(fn, in); }, 5, 50);
    std::string key = ws[i].key(nvcc.sm);
    auto best = cache.lookup(key);
    // The chosen kernel's graph and host-path times from the candidates' line.
    double best_ms = -1, best_host_ms = -1;
    std::string cands = candidates.count(key) ? candidates[key] : "";
    if (best) {
      size_t at = cands.find(best->id() + "=");
      if (at != std::string::npos) std::sscanf(cands.c_str() + at + best->id().size() + 1, "%lf/%lf", &best_ms, &best_host_ms);
    }
    double tflop = 2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-12;
    out << s.name << "\t" << s.m << "\t" << s.n << "\t" << s.k << "\t" << tflop << "\t" << best_ms << "\t"
        << (best ? best->id() : "default") << "\t" << best_host_ms << "\t" << graph_ms << "\t" << plain_ms << "\t"
        << profile_s << "\t" << build_s << "\t" << rebuild_s << "\t" << cands << "\n";
    out.flush();
    EXPECT_EQ(chosen[i].id(), best ? best->id() : chosen[i].id());
  }
  std::cerr << "[bench] graphs: " << captures << " captured, " << launches << " launches, " << fallbacks
            << " fallbacks\n";
  EXPECT_EQ(captures, int64_t(shapes().size())) << "every function's run was captured";
}

// Attention at BERT-base's shapes (sequence 128, 12 heads of 64, float16) at batch 32 and 1:
// ten attention calls chained in one function (each reads the previous output as its query),
// run by the VM as a CUDA graph, so that the time per call is the kernel's and not the host's;
// the graph's copy of its three inputs is timed apart (a function returning its query) and
// subtracted. PyTorch's scaled_dot_product_attention on the same shapes:
// benchmarks/gpu/bench_attention.py. One line per batch and variant, "[attention] ...";
// PARTITA_CUTLASS_ATTENTION_VARIANTS="default,attention_kernel=sm80+attention_tile=32x128,..."
// times builds with those target options (default: the target's defaults alone).
TEST(CutlassBench, AttentionBertShapes) {
  if (!std::getenv("PARTITA_CUTLASS_BENCH")) GTEST_SKIP() << "set PARTITA_CUTLASS_BENCH=1 to run the benchmark";
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  // Without a GPU, with PARTITA_TEST_CUTLASS_PRECOMPILE=1: the modules are built (filling the
  // object cache the GPU machine is handed) and not run.
  const char* pre = std::getenv("PARTITA_TEST_CUTLASS_PRECOMPILE");
  const bool build_only = !cutlass_test::gpu_available() && pre && std::string(pre) == "1";
  if (!cutlass_test::gpu_available() && !build_only)
    GTEST_SKIP() << "no CUDA device here: the run-time tests of the cutlass backend need one";
  std::vector<std::string> variants{"default"};
  if (const char* t = std::getenv("PARTITA_CUTLASS_ATTENTION_VARIANTS"); t && *t) {
    variants.clear();
    std::stringstream ss(t);
    for (std::string one; std::getline(ss, one, ',');) variants.push_back(one);
  }
  for (const std::string& variant : variants) {
  codegen::TargetOptionMap options;  // "key=value[+key=value...]"
  std::stringstream parts(variant);
  for (std::string kv; std::getline(parts, kv, '+');)
    if (size_t eq = kv.find('='); eq != std::string::npos) options[kv.substr(0, eq)] = kv.substr(eq + 1);
  for (int64_t batch : {32, 1}) {
    const std::string shape = "(" + std::to_string(batch) + ", 128, 12, 64)";
    std::string body, params = "q: R.Tensor(" + shape + ", dtype=\"float16\"), k: R.Tensor(" + shape +
                                ", dtype=\"float16\"), v: R.Tensor(" + shape + ", dtype=\"float16\")";
    std::string prev = "q";
    for (int i = 0; i < 10; ++i) {
      body += "            a" + std::to_string(i) + " = R.nn.attention(" + prev + ", k, v)\n";
      prev = "a" + std::to_string(i);
    }
    const std::string text = "@I.ir_module\nclass Module:\n    @R.function\n    def main(" + params +
                             "):\n        with R.dataflow():\n" + body + "            R.output(" + prev +
                             ")\n        return " + prev + "\n    @R.function\n    def copy(" + params +
                             "):\n        return q\n";
    IRModule p = transform::partition_for("cutlass", script::parse_module(text), false);
    auto exec = codegen::build(p, codegen::BuildOptions({cutlass_test::test_target(options)}, false));
    if (build_only) continue;
    runtime::VirtualMachine vm(exec, Device::cuda(0));
    std::vector<Tensor> in;
    for (uint32_t i = 0; i < 3; ++i)
      in.push_back(cutlass_test::random_input({batch, 128, 12, 64}, DataType::Float(16), i + 1).to(Device::cuda(0)));
    std::vector<Tensor> res;
    std::vector<double> chain, copy;
    for (int round = 0; round < 5; ++round) {
      chain.push_back(time_calls([&] { res = vm.invoke("main", in); }, 5, 20));
      copy.push_back(time_calls([&] { res = vm.invoke("copy", in); }, 5, 20));
    }
    std::sort(chain.begin(), chain.end());
    std::sort(copy.begin(), copy.end());
    const double per_call_ms = (chain[2] - copy[2]) / 10;
    // The tile's result against the float32 host (the same chain).
    std::vector<Tensor> host_in;
    for (const auto& t : in) host_in.push_back(cutlass_test::to_f32(t.to(Device::cpu())));
    std::string f32 = cutlass_test::replace_all(text, "float16", "float32");
    Tensor want = cutlass_test::run_on_host(script::parse_module(f32), host_in).at(0);
    res = vm.invoke("main", in);
    EXPECT_EQ(cutlass_test::compare(res.at(0).to(Device::cpu()), want, cutlass_test::tolerance(DataType::Float(16))), "")
        << variant << ", batch " << batch;
    std::cerr << "[attention] " << variant << ", batch " << batch << ": " << per_call_ms * 1e3 << " us per attention (10 chained: "
              << chain[2] * 1e3 << " us median of 5 [" << chain[0] * 1e3 << ", " << chain[4] * 1e3
              << "], the inputs' copy " << copy[2] * 1e3 << " us); graphs " << vm.graph_stats().launches
              << " launches\n";
  }
  }
}

}  // namespace
}  // namespace partita
