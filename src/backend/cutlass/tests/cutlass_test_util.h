// Helpers of the cutlass backend's tests: the test target (a cache in the build tree), modules
// from TVMScript templates, typed random inputs, a float32 host reference and tolerant
// comparison, and running a partitioned module on the GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../cutlass_codegen.h"
#include "../device_code.h"
#include "../nvcc.h"
#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/half.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/pattern_registry.h"

namespace partita::cutlass_test {

inline bool codegen_built() { return bool(backend::find_backend("cutlass")->codegen); }

/// The object cache of the build tree (PARTITA_TEST_CUTLASS_CACHE overrides it: the GPU machine
/// is handed objects compiled here). Profiling only when PARTITA_TEST_CUTLASS_PROFILE=1.
inline std::string test_cache_dir() {
  const char* dir = std::getenv("PARTITA_TEST_CUTLASS_CACHE");
  return dir && *dir ? dir : std::string(PARTITA_BINARY_DIR) + "/cutlass_cache";
}
inline codegen::Target test_target(codegen::TargetOptionMap extra = {}) {
  const char* p = std::getenv("PARTITA_TEST_CUTLASS_PROFILE");
  codegen::TargetOptionMap o{{"cache_dir", test_cache_dir()}, {"tf32", true}, {"profile", p && std::string(p) == "1"}};
  if (const char* dir = std::getenv("PARTITA_TEST_CUTLASS_DIR"); dir && *dir) o["cutlass_dir"] = std::string(dir);
  for (auto& [k, v] : extra) o[k] = v;
  return codegen::Target("cutlass", o);
}

inline bool gpu_available() { return runtime::device_exists(Device::cuda(0)); }

#define PARTITA_REQUIRE_CUTLASS_GPU()                                                            \
  do {                                                                                           \
    if (!::partita::cutlass_test::codegen_built())                                               \
      GTEST_SKIP() << "the cutlass codegen is not built (no CUDA toolkit or CUTLASS headers)";   \
    if (!::partita::cutlass_test::gpu_available())                                               \
      GTEST_SKIP() << "no CUDA device here: the run-time tests of the cutlass backend need one"; \
  } while (0)

using backend::cutlass::replace_all;  // the backend's (device_code.h)

/// Fills a template's {name} placeholders.
inline std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [k, v] : values) text = replace_all(text, "{" + k + "}", v);
  return text;
}

/// Random values of `dtype` in [-scale, scale] (integers: whole numbers in [-3, 3]), exactly
/// representable in every dtype so that a float32 reference sees the same numbers.
inline Tensor random_input(const std::vector<int64_t>& shape, DataType dtype, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  Tensor t = Tensor::empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(rng);
    if (dtype == DataType::Float(32))
      t.data_as<float>()[i] = v;
    else if (dtype == DataType::Float(16))
      static_cast<uint16_t*>(t.data())[i] = runtime::float_to_half_bits(v);
    else if (dtype == DataType::BFloat16())
      static_cast<uint16_t*>(t.data())[i] = runtime::float_to_bfloat16_bits(v);
    else if (dtype == DataType::Int(8))
      static_cast<int8_t*>(t.data())[i] = int8_t(std::lround(v * 3 / scale));
    else
      throw_error("ValueError", "random_input: dtype " + dtype.str());
  }
  return t;
}

inline std::vector<float> as_floats(const Tensor& in) {
  Tensor t = in.device().is_host_accessible() ? in : in.to(Device::cpu());
  std::vector<float> out(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    DataType d = t.dtype();
    if (d == DataType::Float(32))
      out[size_t(i)] = t.data_as<float>()[i];
    else if (d == DataType::Float(16))
      out[size_t(i)] = runtime::half_bits_to_float(static_cast<const uint16_t*>(t.data())[i]);
    else if (d == DataType::BFloat16())
      out[size_t(i)] = runtime::bfloat16_bits_to_float(static_cast<const uint16_t*>(t.data())[i]);
    else if (d == DataType::Int(8))
      out[size_t(i)] = float(static_cast<const int8_t*>(t.data())[i]);
    else if (d == DataType::Int(32))
      out[size_t(i)] = float(static_cast<const int32_t*>(t.data())[i]);
    else
      throw_error("ValueError", "as_floats: dtype " + d.str());
  }
  return out;
}

/// The same values as float32 (the reference's inputs).
inline Tensor to_f32(const Tensor& t) {
  std::vector<float> v = as_floats(t);
  Tensor out = Tensor::empty(t.shape(), DataType::Float(32));
  std::copy(v.begin(), v.end(), out.data_as<float>());
  return out;
}

/// Each element within rtol * max(1, max |want|), or why not.
inline std::string compare(const Tensor& got, const Tensor& want, double rtol) {
  if (got.shape() != want.shape()) return "shapes differ";
  std::vector<float> g = as_floats(got), w = as_floats(want);
  double scale = 1;
  for (float x : w) scale = std::max(scale, double(std::fabs(x)));
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(double(g[i]) - double(w[i])) <= rtol * scale))
      return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
  return "";
}

/// The tolerance of a result computed from `dtype` operands (relative to the largest value).
inline double tolerance(DataType dtype) {
  if (dtype == DataType::Float(16)) return 1e-2;
  if (dtype == DataType::BFloat16()) return 3e-2;
  if (dtype == DataType::Float(32)) return 5e-3;  // TF32 products
  return 0;                                       // int8: exact
}

/// Builds `mod` (already partitioned) for the cutlass test target, fallback off, and runs
/// `main` on cuda:0.
inline std::vector<Tensor> run_on_gpu(const IRModule& mod, const std::vector<Tensor>& inputs,
                                      codegen::TargetOptionMap extra = {}) {
  auto exec = codegen::build(mod, codegen::BuildOptions({test_target(extra)}, /*fallback=*/false));
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  std::vector<Tensor> out = vm.invoke("main", inputs);
  for (auto& t : out) t = t.to(Device::cpu());
  return out;
}

/// The code a build of `parted` generates (same functions in the same order as RunCodegen hands
/// them), its GEMMs not yet bound to kernels: its workloads are the build's own.
inline backend::cutlass::GeneratedModule generate_module(const IRModule& parted, const codegen::Target& target) {
  std::vector<codegen::CodegenFunction> fs;
  for (const auto& [gv, f] : parted.functions()) {
    auto* fn = f.as<FunctionNode>();
    if (fn && fn->attr_string("Codegen") == "cutlass")
      fs.push_back({fn->attr_string("global_symbol").value_or(gv->name_hint), Function(fn)});
  }
  codegen::ConstantNamer namer(parted->const_name_to_constant);
  return backend::cutlass::generate(fs, target, namer);
}

/// Compiles the glue translation unit a build of `parted` makes (default kernels), and none of
/// its GEMM units: how the GPU tests' modules are precompiled here while the GPU machine
/// compiles the units in parallel.
inline void compile_glue_only(const IRModule& parted, const codegen::Target& target) {
  auto m = generate_module(parted, target);
  std::vector<backend::cutlass::GemmConfig> configs;
  for (const auto& w : m.workloads) configs.push_back(backend::cutlass::default_config(w.cls, 90));
  backend::cutlass::bind_kernels(m, configs);
  backend::cutlass::compile_objects({{"glue", m.source}}, backend::cutlass::nvcc_options(target));
  // The module's GEMM units, for the precompile step to compile all at once (pending_units()).
  std::filesystem::path dir = std::filesystem::path(test_cache_dir()) / "pending_units";
  std::filesystem::create_directories(dir);
  for (const auto& [symbol, source] : m.units) std::ofstream(dir / (symbol + ".cu")) << source;
}

/// The GEMM units compile_glue_only recorded: (symbol, source) of each.
inline std::vector<std::pair<std::string, std::string>> pending_units() {
  std::vector<std::pair<std::string, std::string>> out;
  std::filesystem::path dir = std::filesystem::path(test_cache_dir()) / "pending_units";
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".cu") out.emplace_back(e.path().stem().string(), backend::cutlass::read_file(e.path().string()));
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<Tensor> run_on_host(const IRModule& mod, const std::vector<Tensor>& inputs) {
  return runtime::VirtualMachine(codegen::build(mod)).invoke("main", inputs);
}

}  // namespace partita::cutlass_test
