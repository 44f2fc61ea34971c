// Throughput of generated kernels on the GPU (CUDA events, median of 20 after warm-up), printed
// for docs/gpu.md; each also checks its result against the host on a sample. Runs only with
// PARTITA_CUDA_PERF=1 (it takes seconds and prints numbers, not pass/fail on speed).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "cudagen_util.h"
#include "partita/codegen/codegen.h"

namespace partita::cudagen_test {
namespace {

Tensor device_copy(const Tensor& host) { return host.to(Device::cuda(0)); }

Tensor host_copy(const Tensor& dev) { return dev.to(Device::cpu()); }

struct Measured {
  double ms = 0;
  std::vector<Tensor> outputs;  // on the host
};

// The single fused function of `text` (its shapes static), run on device tensors.
Measured time_kernel(const std::string& text, const std::vector<Tensor>& inputs,
                     codegen::TargetOptionMap options = {}) {
  IRModule out =
      run_cuda_codegen(backend::cuda::partition_for_cuda(script::parse_module(text)), std::move(options));
  auto mods = codegen::external_mods_of(out);
  EXPECT_EQ(mods.size(), 1u);
  EXPECT_EQ(mods[0]->function_names().size(), 1u) << "expected one fused kernel";
  runtime::PackedFunc f = mods[0]->get_function(mods[0]->function_names()[0]);
  std::vector<Tensor> in;
  for (const auto& t : inputs) in.push_back(device_copy(t));
  const auto* ret = out.lookup("main").as<FunctionNode>()->ret_struct_info.as<TensorStructInfoNode>();
  Tensor o = device_copy(Tensor::empty(*static_shape(out.lookup("main").as<FunctionNode>()->ret_struct_info), ret->dtype));
  std::vector<Tensor> outs = {o};
  for (int i = 0; i < 3; ++i) f(in, outs);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> times;
  for (int i = 0; i < 20; ++i) {
    cudaEventRecord(a);
    f(in, outs);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    times.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], {host_copy(o)}};
}

bool perf_enabled(std::string* why) {
  const char* e = std::getenv("PARTITA_CUDA_PERF");
  if (!e || std::string(e) != "1") {
    *why = "set PARTITA_CUDA_PERF=1 to measure";
    return false;
  }
  return device_available(why);
}

#define PARTITA_REQUIRE_PERF()                       \
  do {                                              \
    std::string why_;                               \
    if (!perf_enabled(&why_)) GTEST_SKIP() << why_; \
  } while (0)

TEST(CudaPerf, ElementwiseBandwidth) {
  PARTITA_REQUIRE_PERF();
  for (const char* dt : {"float32", "float16"}) {
    std::string text = replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8192, 8192), dtype="DT"), y: R.Tensor((8192,), dtype="DT")) -> R.Tensor((8192, 8192), dtype="DT"):
        with R.dataflow():
            a = R.add(x, y)
            gv = R.nn.gelu(a)
            R.output(gv)
        return gv
)", "DT", dt);
    DataType d = DataType::parse(dt);
    Measured m = time_kernel(text, {random_input({8192, 8192}, d, 1), random_input({8192}, d, 2)});
    double bytes = 2.0 * 8192 * 8192 * d.bytes();
    std::printf("[perf] add+gelu 8192x8192 %s: %.3f ms, %.0f GB/s\n", dt, m.ms, bytes / m.ms / 1e6);
  }
}

TEST(CudaPerf, SoftmaxAndLayerNorm) {
  PARTITA_REQUIRE_PERF();
  for (const char* dt : {"float32", "float16"}) {
    DataType d = DataType::parse(dt);
    std::string sm = replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((32768, 1024), dtype="DT")) -> R.Tensor((32768, 1024), dtype="DT"):
        with R.dataflow():
            gv = R.nn.softmax(x, axis=-1)
            R.output(gv)
        return gv
)", "DT", dt);
    Measured m = time_kernel(sm, {random_input({32768, 1024}, d, 1)});
    std::printf("[perf] softmax 32768x1024 %s: %.3f ms, %.0f GB/s\n", dt, m.ms, 2.0 * 32768 * 1024 * d.bytes() / m.ms / 1e6);
    std::string ln = replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((32768, 768), dtype="DT"), g: R.Tensor((768,), dtype="DT"), b: R.Tensor((768,), dtype="DT")) -> R.Tensor((32768, 768), dtype="DT"):
        with R.dataflow():
            gv = R.nn.layer_norm(x, g, b, axes=[-1])
            R.output(gv)
        return gv
)", "DT", dt);
    m = time_kernel(ln, {random_input({32768, 768}, d, 1), random_input({768}, d, 2), random_input({768}, d, 3)});
    std::printf("[perf] layer_norm 32768x768 %s: %.3f ms, %.0f GB/s\n", dt, m.ms, 2.0 * 32768 * 768 * d.bytes() / m.ms / 1e6);
  }
}

TEST(CudaPerf, MatmulAndConv) {
  PARTITA_REQUIRE_PERF();
  for (const char* dt : {"float32", "float16", "bfloat16"}) {
    DataType d = DataType::parse(dt);
    std::string mm = replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4096, 4096), dtype="DT"), w: R.Tensor((4096, 4096), dtype="DT")) -> R.Tensor((4096, 4096), dtype="DT"):
        with R.dataflow():
            gv = R.matmul(x, w)
            R.output(gv)
        return gv
)", "DT", dt);
    Tensor x = random_input({4096, 4096}, d, 1), w = random_input({4096, 4096}, d, 2);
    Measured m = time_kernel(mm, {x, w});
    std::printf("[perf] matmul 4096^3 %s: %.3f ms, %.1f TFLOP/s\n", dt, m.ms, 2.0 * 4096 * 4096 * 4096 / m.ms / 1e9);
    // One row checked against a double-precision dot product.
    Tensor xf = converted(x, DataType::Float(32)), wf = converted(w, DataType::Float(32));
    double worst = 0, scale = 0;
    for (int j = 0; j < 4096; j += 97) {
      double ref = 0;
      for (int k = 0; k < 4096; ++k) ref += double(xf.data_as<float>()[k]) * wf.data_as<float>()[int64_t(k) * 4096 + j];
      worst = std::max(worst, std::fabs(element(m.outputs[0], j) - ref));
      scale = std::max(scale, std::fabs(ref));
    }
    EXPECT_LE(worst / scale, d == DataType::Float(32) ? 1e-5 : 1e-2) << dt;
    std::string conv = replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((32, 256, 28, 28), dtype="DT"), w: R.Tensor((256, 256, 3, 3), dtype="DT")) -> R.Tensor((32, 256, 28, 28), dtype="DT"):
        with R.dataflow():
            a = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            gv = R.nn.relu(a)
            R.output(gv)
        return gv
)", "DT", dt);
    m = time_kernel(conv, {random_input({32, 256, 28, 28}, d, 1), random_input({256, 256, 3, 3}, d, 2, {-0.1, 0.1})});
    double flops = 2.0 * 32 * 256 * 28 * 28 * 256 * 9;
    std::printf("[perf] conv2d 3x3 32x256x28x28 -> 256 %s: %.3f ms, %.1f TFLOP/s\n", dt, m.ms, flops / m.ms / 1e9);
  }
}

// The batch-1 products of ViT-B/16 and BERT-base and the style network's 3 x 3 convolutions (as
// products): thin grids, under a wave of the GPU's SMs in 64 x 64 tiles. Each kernel choice
// (gemm_mma_thin, gemm_prefetch) is timed, and its result checked against the FFMA kernel's.
// float16 only: bfloat16 takes the same kernels.
TEST(CudaPerf, ThinProducts) {
  PARTITA_REQUIRE_PERF();
  struct Shape {
    const char* name;
    int64_t m, k, n;
  };
  const Shape shapes[] = {{"vit qkv", 197, 768, 2304}, {"vit proj", 197, 768, 768}, {"vit fc1", 197, 768, 3072},
                          {"vit fc2", 197, 3072, 768}, {"bert fc1", 128, 768, 3072}, {"bert fc2", 128, 3072, 768},
                          {"style conv", 3136, 1152, 128}, {"conv 14x14", 196, 2304, 256}};
  const std::pair<const char*, codegen::TargetOptionMap> variants[] = {
      {"ffma", {{"gemm_mma_thin", 0}, {"gemm_prefetch", 1}}},
      {"ffma-noprefetch", {{"gemm_mma_thin", 0}, {"gemm_prefetch", 0}}},
      {"mma32", {{"gemm_mma_thin", 1}, {"gemm_prefetch", 1}}},
      {"mma32-noprefetch", {{"gemm_mma_thin", 1}, {"gemm_prefetch", 0}}}};
  const DataType d = DataType::Float(16);
  for (const Shape& s : shapes) {
    std::string text = replace_all(replace_all(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((DM, DK), dtype="float16"), w: R.Tensor((DK, DN), dtype="float16")):
        with R.dataflow():
            gv = R.matmul(x, w)
            R.output(gv)
        return gv
)", "DM", std::to_string(s.m)), "DK", std::to_string(s.k)), "DN", std::to_string(s.n));
    Tensor x = random_input({s.m, s.k}, d, 1, {-0.5, 0.5}), w = random_input({s.k, s.n}, d, 2, {-0.5, 0.5});
    std::optional<Tensor> ffma;
    for (const auto& [name, options] : variants) {
      Measured m = time_kernel(text, {x, w}, options);
      std::printf("[perf] %-10s %lldx%lldx%lld float16 %-16s %.4f ms, %.1f TFLOP/s\n", s.name, (long long)s.m,
                  (long long)s.k, (long long)s.n, name, m.ms, 2.0 * s.m * s.k * s.n / m.ms / 1e9);
      if (!ffma) ffma = m.outputs[0];
      else EXPECT_TRUE(close(m.outputs[0], *ffma, tolerance(d, 4), tolerance(d, 4))) << s.name << " " << name;
    }
  }
}

}  // namespace
}  // namespace partita::cudagen_test
