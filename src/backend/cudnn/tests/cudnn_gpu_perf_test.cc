// Times the cudnn runtime's nodes on the GPU for benchmarks/gpu/bench_cudnn.py (which times
// PyTorch on the same shapes in the same run): resnet50's convolutions with bias + relu (batch 1
// and 32, float16 and float32, activations in NHWC as inside a partition) and BERT-base's
// attention (batch 1 and 32, float16 and bfloat16, with and without the padding mask). Each is
// one module function of a hand-written program, called 50 times, each call timed with CUDA
// events; the median goes to the JSON file named by PARTITA_CUDNN_BENCH (skipped when unset).
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../module_format.h"
#include "cudnn_util.h"
#include "partita/runtime/module_sections.h"

namespace partita::backend::cudnn::testing {
namespace {

using json = nlohmann::json;

struct ConvShape {
  const char* name;
  int64_t c, hw, k, r, stride;
};

// Every distinct convolution of torchvision's resnet50 at 224 x 224.
const ConvShape kResnet50[] = {
    {"conv1", 3, 224, 64, 7, 2},         {"l1.1x1a", 64, 56, 64, 1, 1},     {"l1.3x3", 64, 56, 64, 3, 1},
    {"l1.1x1b", 64, 56, 256, 1, 1},      {"l1.1x1c", 256, 56, 64, 1, 1},    {"l2.1x1a", 256, 56, 128, 1, 1},
    {"l2.3x3s2", 128, 56, 128, 3, 2},    {"l2.1x1b", 128, 28, 512, 1, 1},   {"l2.down", 256, 56, 512, 1, 2},
    {"l2.1x1c", 512, 28, 128, 1, 1},     {"l2.3x3", 128, 28, 128, 3, 1},    {"l3.1x1a", 512, 28, 256, 1, 1},
    {"l3.3x3s2", 256, 28, 256, 3, 2},    {"l3.1x1b", 256, 14, 1024, 1, 1},  {"l3.down", 512, 28, 1024, 1, 2},
    {"l3.1x1c", 1024, 14, 256, 1, 1},    {"l3.3x3", 256, 14, 256, 3, 1},    {"l4.1x1a", 1024, 14, 512, 1, 1},
    {"l4.3x3s2", 512, 14, 512, 3, 2},    {"l4.1x1b", 512, 7, 2048, 1, 1},   {"l4.down", 1024, 14, 2048, 1, 2},
    {"l4.1x1c", 2048, 7, 512, 1, 1},     {"l4.3x3", 512, 7, 512, 3, 1},
};

json value(std::vector<int64_t> shape, DataType dt, bool nhwc) {
  return {{"shape", shape}, {"dtype", dt.str()}, {"layout", nhwc ? "nhwc" : "logical"}};
}

/// Median milliseconds of 50 calls of `f` (after 5 warm-up calls), each between CUDA events.
double median_ms(const runtime::PackedFunc& f, std::span<const Tensor> in, std::span<Tensor> out) {
  for (int i = 0; i < 5; ++i) f(in, out);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ms;
  for (int i = 0; i < 50; ++i) {
    cudaEventRecord(a, nullptr);
    f(in, out);
    cudaEventRecord(b, nullptr);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return (ms[24] + ms[25]) / 2;
}

/// Builds the one-function module of `program`, times it on device tensors of `shapes`.
double time_program(const json& program, const std::vector<std::vector<int64_t>>& shapes,
                    const std::vector<int64_t>& out_shape, DataType dt) {
  auto m = runtime::load_module_from_binary("cudnn", runtime::write_module_sections(kModuleFormat, {program.dump()}));
  m->init_constants({});
  std::vector<Tensor> in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor t = Tensor::empty(shapes[i], dt, Device::cuda(0));
    t.copy_from(random_tensor(shapes[i], dt, uint32_t(i + 1), 0.5));
    in.push_back(t);
  }
  std::vector<Tensor> out{Tensor::empty(out_shape, dt, Device::cuda(0))};
  return median_ms(m->get_function("f"), in, out);
}

TEST(CudnnPerf, Resnet50ConvsAndBertAttention) {
  const char* path = std::getenv("PARTITA_CUDNN_BENCH");
  if (!path) GTEST_SKIP() << "set PARTITA_CUDNN_BENCH=<file.json> to run the benchmark";
  PARTITA_REQUIRE_CUDA_DEVICE();
  json records = json::array();
  for (DataType dt : {DataType::Float(16), DataType::Float(32)})
    for (int64_t n : {1, 32})
      for (const ConvShape& s : kResnet50) {
        const int64_t pad = s.r / 2, out = (s.hw + 2 * pad - s.r) / s.stride + 1;
        std::vector<int64_t> x{n, s.c, s.hw, s.hw}, w{s.k, s.c, s.r, s.r}, b{1, s.k, 1, 1}, y{n, s.k, out, out};
        json f = {{"symbol", "f"},
                  {"values", {value(x, dt, true), value(w, dt, true), value(b, dt, false), value(y, dt, true)}},
                  {"inputs", {0, 1, 2}},
                  {"outputs", {3}},
                  {"constants", json::array()},
                  {"nodes", {{{"op", "conv2d"}, {"in", {0, 1, 2}}, {"out", 3}, {"has_bias", true},
                              {"has_residual", false}, {"strides", {s.stride, s.stride}},
                              {"padding", {pad, pad, pad, pad}}, {"dilation", {1, 1}}, {"groups", 1},
                              {"activation", "relu"}, {"clip", {0, 0}}}}}};
        json program = {{"version", 1}, {"allow_tf32", false}, {"functions", {f}}};
        double ms = time_program(program, {x, w, b}, y, dt);
        records.push_back({{"kind", "conv"}, {"name", s.name}, {"batch", n}, {"dtype", dt.str()}, {"c", s.c},
                           {"hw", s.hw}, {"k", s.k}, {"r", s.r}, {"stride", s.stride}, {"pad", pad}, {"ms", ms}});
        std::printf("conv %-9s n=%-2lld %-8s %8.4f ms\n", s.name, (long long)n, dt.str().c_str(), ms);
      }
  for (DataType dt : {DataType::Float(16), DataType::BFloat16()})
    for (int64_t n : {1, 32})
      for (int mask = 0; mask < 2; ++mask) {
        const int64_t s = 128, heads = 12, d = 64;
        std::vector<int64_t> q{n, s, heads, d}, bias{n, 1, 1, s};
        json values = {value(q, dt, false), value(q, dt, false), value(q, dt, false), value(q, dt, false)};
        json in = {0, 1, 2};
        std::vector<std::vector<int64_t>> shapes{q, q, q};
        if (mask) {
          values.push_back(value(bias, dt, false));
          in.push_back(4);
          shapes.push_back(bias);
        }
        json f = {{"symbol", "f"},   {"values", values},   {"inputs", in},
                  {"outputs", {3}},  {"constants", json::array()},
                  {"nodes", {{{"op", "attention"}, {"in", in}, {"out", 3}, {"scale", 0.125}, {"causal", ""}}}}};
        json program = {{"version", 1}, {"allow_tf32", false}, {"functions", {f}}};
        double ms = time_program(program, shapes, q, dt);
        records.push_back({{"kind", "attention"}, {"name", mask ? "bert.masked" : "bert"}, {"batch", n},
                           {"dtype", dt.str()}, {"seq", s}, {"heads", heads}, {"head_dim", d}, {"mask", bool(mask)},
                           {"ms", ms}});
        std::printf("attention %s n=%-2lld %-8s %8.4f ms\n", mask ? "masked" : "plain ", (long long)n, dt.str().c_str(),
                    ms);
      }
  std::ofstream(path) << records.dump(1);
}

}  // namespace
}  // namespace partita::backend::cudnn::testing
