// The GEMM benchmark's Partita half (benchmarks/gpu/bench_cublas_gemm.py drives it and times
// torch in the same run): with PARTITA_CUBLAS_BENCH_SHAPES=<file> (lines "name dtype batch m k
// n kind", kind linear | linear_bias | linear_bias_relu | linear_bias_gelu | bmm) every shape is
// partitioned with partition_for_cublas, built for cuda and run on a VM on cuda:0 (graph capture
// off: one call is one cuBLASLt launch), timed with CUDA events around each call, median of 50
// after 10 warm-up calls; the results go to PARTITA_CUBLAS_BENCH_OUT as JSON lines.
// PARTITA_CUBLAS_BENCH_TOP_K sets the Target option autotune_top_k. Skipped without the variables
// or a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "cublas_gpu_util.h"

namespace partita::backend::cublas::test {
namespace {

std::string module_for(const std::string& dtype, int64_t batch, int64_t m, int64_t k, int64_t n, const std::string& kind,
                       std::vector<std::vector<int64_t>>& inputs) {
  auto T = [&](const std::vector<int64_t>& s) {
    std::string out = "(";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return tensor(out + (s.size() == 1 ? ",)" : ")"), dtype);
  };
  if (kind == "bmm") {
    inputs = {{batch, m, k}, {batch, k, n}};
    return module_text("x: " + T(inputs[0]) + ", y: " + T(inputs[1]),
                       {"gv: " + T({batch, m, n}) + " = R.matmul(x, y, out_dtype=\"void\")"}, T({batch, m, n}));
  }
  // torch.nn.Linear's layout: the weight is (n, k).
  inputs = {{m, k}, {n, k}};
  std::vector<std::string> body = {"wt: " + T({k, n}) + " = R.permute_dims(w, axes=None)",
                                   "mm: " + T({m, n}) + " = R.matmul(x, wt, out_dtype=\"void\")"};
  std::string params = "x: " + T(inputs[0]) + ", w: " + T(inputs[1]);
  if (kind != "linear") {
    inputs.push_back({n});
    params += ", b: " + T({n});
    body.push_back("a: " + T({m, n}) + " = R.add(mm, b)");
    if (kind == "linear_bias_relu" || kind == "linear_bias_gelu") {
      body.push_back("r: " + T({m, n}) + " = R.nn." + kind.substr(12) + "(a)");
    }
  }
  body.back().replace(0, body.back().find(':'), "gv");
  return module_text(params, body, T({m, n}));
}

// Inputs with every mantissa bit random, like torch.randn's: data of few significant bits (or
// zeros) draws less power and runs faster on tensor cores, which would flatter the timing.
Tensor full_random(const std::vector<int64_t>& shape, DataType dtype, uint32_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, dist(rng));
  return t;
}

TEST(CublasBench, Gemms) {
  const char* shapes = std::getenv("PARTITA_CUBLAS_BENCH_SHAPES");
  const char* out_path = std::getenv("PARTITA_CUBLAS_BENCH_OUT");
  if (!shapes || !out_path) GTEST_SKIP() << "PARTITA_CUBLAS_BENCH_SHAPES / _OUT not set (benchmarks/gpu/bench_cublas_gemm.py sets them)";
  PARTITA_REQUIRE_CUDA_DEVICE();
  std::ifstream in(shapes);
  ASSERT_TRUE(in) << shapes;
  std::ofstream out(out_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, dtype, kind;
    int64_t batch = 0, m = 0, k = 0, n = 0;
    if (!(fields >> name >> dtype >> batch >> m >> k >> n >> kind)) continue;
    std::vector<std::vector<int64_t>> shapes_in;
    IRModule mod = script::parse_module(module_for(dtype, batch, m, k, n, kind, shapes_in));
    IRModule parted = partition_for_cublas(mod);
    ASSERT_EQ(cublas_composites(parted).size(), 1u) << name;
    const char* top_k = std::getenv("PARTITA_CUBLAS_BENCH_TOP_K");
    codegen::Target cublas("cublas", {{"autotune_top_k", int64_t(top_k ? std::atoi(top_k) : 0)}});
    auto ex = codegen::build(parted, codegen::BuildOptions({cuda_target(), cublas}, false));
    runtime::VirtualMachine vm(ex, Device::cuda(0));
    vm.set_graph_capture(false);
    std::vector<Tensor> args;
    for (size_t i = 0; i < shapes_in.size(); ++i)
      args.push_back(full_random(shapes_in[i], DataType::parse(dtype), uint32_t(i + 1)).to(Device::cuda(0)));
    for (int i = 0; i < 10; ++i) vm.invoke("main", args);
    cudaDeviceSynchronize();
    std::vector<cudaEvent_t> start(50), stop(50);
    for (int i = 0; i < 50; ++i) {
      cudaEventCreate(&start[size_t(i)]);
      cudaEventCreate(&stop[size_t(i)]);
    }
    for (int i = 0; i < 50; ++i) {
      cudaEventRecord(start[size_t(i)], nullptr);
      vm.invoke("main", args);
      cudaEventRecord(stop[size_t(i)], nullptr);
    }
    cudaDeviceSynchronize();
    std::vector<float> ms(50);
    for (int i = 0; i < 50; ++i) {
      cudaEventElapsedTime(&ms[size_t(i)], start[size_t(i)], stop[size_t(i)]);
      cudaEventDestroy(start[size_t(i)]);
      cudaEventDestroy(stop[size_t(i)]);
    }
    std::nth_element(ms.begin(), ms.begin() + 25, ms.end());
    char buf[256];
    std::snprintf(buf, sizeof buf, "{\"name\": \"%s\", \"dtype\": \"%s\", \"median_us\": %.3f}\n", name.c_str(), dtype.c_str(),
                  double(ms[25]) * 1000);
    out << buf;
    std::printf("%s", buf);
  }
}

}  // namespace
}  // namespace partita::backend::cublas::test
