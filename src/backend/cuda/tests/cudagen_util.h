// Helpers of the cuda target's tests: modules from TVMScript, typed random inputs, running a
// module on the host VM and through the cuda target, comparing with dtype-aware tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "../cuda_codegen.h"
#include "partita/codegen/build.h"
#include "partita/ir/analysis.h"
#include "partita/runtime/half.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

namespace partita::cudagen_test {

/// Whether a CUDA device can be used here (the reason in `why` when not).
inline bool device_available(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
    cudaGetLastError();
    return false;
  }
  if (count == 0) *why = "the CUDA runtime reports no devices";
  return count > 0;
}

/// Skips the current test when no CUDA device can be used here.
#define PARTITA_REQUIRE_CUDA_DEVICE()                                         \
  do {                                                                       \
    std::string why_;                                                        \
    if (!::partita::cudagen_test::device_available(&why_))                   \
      GTEST_SKIP() << "no CUDA device: " << why_;                            \
  } while (0)

/// A cache directory of the build tree's (tests never write into the user's cache).
/// PARTITA_TEST_CUDA_CACHE overrides it (the GPU machine is handed kernels compiled here).
inline codegen::Target cuda_target() {
  const char* dir = std::getenv("PARTITA_TEST_CUDA_CACHE");
  std::string cache = dir && *dir ? dir : std::string(PARTITA_BINARY_DIR) + "/cuda_kernel_cache";
  return codegen::Target("cuda", {{"cache_dir", cache}});
}

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

inline bool is_16bit_float(DataType t) { return t == DataType::Float(16) || t == DataType::BFloat16(); }

/// Element `i` of `t` as a double (any dtype the cuda target handles).
inline double element(const Tensor& t, int64_t i) {
  DataType d = t.dtype();
  switch (d.code()) {
    case DataType::Code::Float:
      if (d.bits() == 32) return t.data_as<float>()[i];
      if (d.bits() == 64) return t.data_as<double>()[i];
      return runtime::half_bits_to_float(t.data_as<uint16_t>()[i]);
    case DataType::Code::BFloat: return runtime::bfloat16_bits_to_float(t.data_as<uint16_t>()[i]);
    case DataType::Code::Int:
      if (d.bits() == 8) return t.data_as<int8_t>()[i];
      if (d.bits() == 16) return t.data_as<int16_t>()[i];
      if (d.bits() == 32) return t.data_as<int32_t>()[i];
      return double(t.data_as<int64_t>()[i]);
    default:
      if (d.bits() <= 8) return t.data_as<uint8_t>()[i];
      if (d.bits() == 16) return t.data_as<uint16_t>()[i];
      if (d.bits() == 32) return t.data_as<uint32_t>()[i];
      return double(t.data_as<uint64_t>()[i]);
  }
}

inline void set_element(Tensor& t, int64_t i, double v) {
  DataType d = t.dtype();
  switch (d.code()) {
    case DataType::Code::Float:
      if (d.bits() == 32) t.data_as<float>()[i] = float(v);
      else if (d.bits() == 64) t.data_as<double>()[i] = v;
      else t.data_as<uint16_t>()[i] = runtime::float_to_half_bits(float(v));
      return;
    case DataType::Code::BFloat: t.data_as<uint16_t>()[i] = runtime::float_to_bfloat16_bits(float(v)); return;
    case DataType::Code::Int:
      if (d.bits() == 8) t.data_as<int8_t>()[i] = int8_t(v);
      else if (d.bits() == 16) t.data_as<int16_t>()[i] = int16_t(v);
      else if (d.bits() == 32) t.data_as<int32_t>()[i] = int32_t(v);
      else t.data_as<int64_t>()[i] = int64_t(v);
      return;
    default:
      if (d.bits() <= 8) t.data_as<uint8_t>()[i] = uint8_t(v);
      else if (d.bits() == 16) t.data_as<uint16_t>()[i] = uint16_t(v);
      else if (d.bits() == 32) t.data_as<uint32_t>()[i] = uint32_t(v);
      else t.data_as<uint64_t>()[i] = uint64_t(v);
  }
}

/// `t` converted element by element to `dtype` (exact for float16/bfloat16 -> float32).
inline Tensor converted(const Tensor& t, DataType dtype) {
  Tensor out = Tensor::empty(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) set_element(out, i, element(t, i));
  return out;
}

/// What values a test input takes.
struct ValueRange {
  double lo = -2, hi = 2;
  bool integral = false;  // whole numbers (indices, exact integer arithmetic)
};

inline Tensor random_input(const std::vector<int64_t>& shape, DataType dtype, uint32_t seed, ValueRange r = {}) {
  Tensor t = Tensor::empty(shape, dtype);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(r.lo, r.hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = dist(rng);
    if (dtype.is_bool()) v = v > (r.lo + r.hi) / 2 ? 1 : 0;
    else if (!dtype.is_float() || r.integral) v = std::floor(v);
    set_element(t, i, v);
  }
  return t;
}

/// Every element within atol + rtol * |expected| (NaN matches NaN, infinities their sign).
inline ::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.shape() != expected.shape()) return ::testing::AssertionFailure() << "shapes differ";
  if (!(actual.dtype() == expected.dtype()) && !(is_16bit_float(actual.dtype()) && expected.dtype() == DataType::Float(32)))
    return ::testing::AssertionFailure() << "dtypes differ: " << actual.dtype().str() << " and " << expected.dtype().str();
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = element(actual, i), b = element(expected, i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0)) continue;
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b)))
      return ::testing::AssertionFailure() << "element " << i << " of " << actual.numel() << ": got " << a
                                           << ", expected " << b << " (tolerance " << atol << " + " << rtol << " x)";
  }
  return ::testing::AssertionSuccess();
}

/// The tolerance of results of dtype `t` (relative and absolute alike), times `scale`.
inline double tolerance(DataType t, double scale = 1) {
  if (t == DataType::Float(32)) return 1e-5 * scale;
  if (t == DataType::Float(64)) return 1e-12 * scale;
  if (t == DataType::Float(16)) return 2e-3 * scale;
  if (t == DataType::BFloat16()) return 1.6e-2 * scale;
  return 0;  // integers and bool: exact
}

/// The operator calls left outside "Codegen" functions in `main` (views excepted).
inline std::vector<std::string> ops_left_on_host(const IRModule& mod) {
  std::vector<std::string> left;
  auto* fn = mod.lookup("main").as<FunctionNode>();
  for (const auto& block : fn->body.as<SeqExprNode>()->blocks)
    for (const auto& b : block->bindings)
      if (auto* vb = b.as<VarBindingNode>())
        if (auto* call = vb->value.as<CallNode>())
          if (auto* op = call->op.as<OpNode>())
            if (op->name != "relax.reshape" && op->name != "relax.flatten" && op->name != "relax.squeeze" &&
                op->name != "relax.expand_dims")
              left.push_back(op->name);
  return left;
}

/// Runs `mod`'s main on the host VM.
inline std::vector<Tensor> run_host(const IRModule& mod, const std::vector<Tensor>& inputs) {
  runtime::VirtualMachine vm(codegen::build(mod));
  return vm.invoke("main", inputs);
}

/// `main` of `exec` on the VM of cuda:0 (inputs may be host tensors: the VM moves them), the
/// results copied back to the host.
inline std::vector<Tensor> run_gpu(runtime::VirtualMachine& vm, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : vm.invoke("main", inputs)) out.push_back(t.to(Device::cpu()));
  return out;
}

/// RunCodegen with the tests' cuda target.
inline IRModule run_cuda_codegen(const IRModule& mod) {
  codegen::RunCodegenOptions options;
  options.targets = {cuda_target()};
  return codegen::run_codegen(mod, options);
}

/// `mod` built for the cuda target: build() groups what is left for its codegen (host tensors
/// are staged by the module).
inline std::shared_ptr<runtime::Executable> build_cuda(const IRModule& mod) {
  return codegen::build(mod, codegen::BuildOptions({cuda_target()}, false));
}

}  // namespace partita::cudagen_test
