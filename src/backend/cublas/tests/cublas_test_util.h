// Helpers of the cublas backend's tests: modules from TVMScript, what a partitioned module
// offloaded, typed random inputs and tolerant comparison, and whether a GPU is here.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "partita/ir/analysis.h"
#include "partita/ir/module.h"
#include "partita/runtime/half.h"
#include "partita/runtime/tensor.h"
#include "partita/script/parser.h"

namespace partita::backend::cublas::test {

/// `main(params) -> ret` whose dataflow block is `body` (lines, the last binding `gv`).
inline std::string module_text(const std::string& params, const std::vector<std::string>& body, const std::string& ret) {
  std::string s = "@I.ir_module\nclass Module:\n    @R.function\n    def main(" + params + ") -> " + ret +
                  ":\n        with R.dataflow():\n";
  for (const auto& line : body) s += "            " + line + "\n";
  return s + "            R.output(gv)\n        return gv\n";
}

inline std::string tensor(const std::string& shape, const std::string& dtype) {
  return "R.Tensor(" + shape + ", dtype=\"" + dtype + "\")";
}

/// The "Composite" names of the composites inside the module's "Codegen": "cublas" functions, sorted.
inline std::vector<std::string> cublas_composites(const IRModule& mod) {
  std::vector<std::string> out;
  for (const auto& [gv, f] : mod.functions()) {
    auto* fn = f.as<FunctionNode>();
    if (!fn || fn->attr_string("Codegen") != std::optional<std::string>("cublas")) continue;
    auto* seq = fn->body.as<SeqExprNode>();
    if (!seq) continue;
    for (const auto& block : seq->blocks)
      for (const auto& b : block->bindings)
        if (auto* vb = b.as<VarBindingNode>())
          if (auto* inner = vb->value.as<FunctionNode>())
            if (auto c = inner->attr_string("Composite")) out.push_back(*c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The operators main still calls itself.
inline std::vector<std::string> ops_in_main(const IRModule& mod) {
  std::vector<std::string> out;
  auto* fn = mod.lookup("main").as<FunctionNode>();
  auto* seq = fn ? fn->body.as<SeqExprNode>() : nullptr;
  if (!seq) return out;
  for (const auto& block : seq->blocks)
    for (const auto& b : block->bindings)
      if (auto* vb = b.as<VarBindingNode>())
        if (auto* call = vb->value.as<CallNode>())
          if (auto* op = call->op.as<OpNode>()) out.push_back(op->name);
  return out;
}

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

#define PARTITA_CUBLAS_REQUIRE_GPU()                                    \
  do {                                                                  \
    std::string why_;                                                   \
    if (!::partita::backend::cublas::test::device_available(&why_))     \
      GTEST_SKIP() << "no CUDA device: " << why_;                       \
  } while (0)

inline double element(const Tensor& t, int64_t i) {
  DataType d = t.dtype();
  if (d == DataType::Float(32)) return t.data_as<float>()[i];
  if (d == DataType::Float(16)) return runtime::half_bits_to_float(t.data_as<uint16_t>()[i]);
  if (d == DataType::BFloat16()) return runtime::bfloat16_bits_to_float(t.data_as<uint16_t>()[i]);
  if (d == DataType::Int(8)) return t.data_as<int8_t>()[i];
  if (d == DataType::Int(32)) return t.data_as<int32_t>()[i];
  if (d == DataType::Float(64)) return t.data_as<double>()[i];
  throw_error("TypeError", "test: no element reader for " + d.str());
}

inline void set_element(Tensor& t, int64_t i, double v) {
  DataType d = t.dtype();
  if (d == DataType::Float(32)) t.data_as<float>()[i] = float(v);
  else if (d == DataType::Float(16)) t.data_as<uint16_t>()[i] = runtime::float_to_half_bits(float(v));
  else if (d == DataType::BFloat16()) t.data_as<uint16_t>()[i] = runtime::float_to_bfloat16_bits(float(v));
  else if (d == DataType::Int(8)) t.data_as<int8_t>()[i] = int8_t(v);
  else if (d == DataType::Int(32)) t.data_as<int32_t>()[i] = int32_t(v);
  else throw_error("TypeError", "test: no element writer for " + d.str());
}

/// Random in [-1, 1] (integers: [-4, 4]), exactly representable in 16-bit floats at 1/64 steps
/// so the float32 reference sees the very same inputs.
inline Tensor random_input(const std::vector<int64_t>& shape, DataType dtype, uint32_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-64, 64);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int v = dist(rng);
    set_element(t, i, dtype.is_int() ? double(v / 16) : v / 64.0);
  }
  return t;
}

/// `t` as float32 (exact for the 16-bit floats).
inline Tensor as_f32(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) out.data_as<float>()[i] = float(element(t, i));
  return out;
}

/// Every element within atol + rtol * |expected|, where the scale is the largest |expected|.
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol) {
  if (got.numel() != want.numel()) return ::testing::AssertionFailure() << "sizes differ";
  double scale = 1;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(element(want, i)));
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = element(got, i), b = element(want, i);
    if (!(std::fabs(a - b) <= tol * scale))
      return ::testing::AssertionFailure() << "element " << i << " of " << got.numel() << ": got " << a << ", expected " << b
                                           << " (tolerance " << tol << " x " << scale << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace partita::backend::cublas::test
