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
#include "cuda_test_util.h"
#include "partita/codegen/build.h"
#include "partita/ir/analysis.h"
#include "partita/runtime/half.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

namespace partita::cudagen_test {

using ::partita::testing::converted;
using ::partita::testing::cuda_target;
using ::partita::testing::device_available;
using ::partita::testing::element;
using ::partita::testing::replace_all;
using ::partita::testing::run_host;
using ::partita::testing::set_element;

inline bool is_16bit_float(DataType t) { return t == DataType::Float(16) || t == DataType::BFloat16(); }

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

/// `main` of `exec` on the VM of cuda:0 (inputs may be host tensors: the VM moves them), the
/// results copied back to the host.
inline std::vector<Tensor> run_gpu(runtime::VirtualMachine& vm, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : vm.invoke("main", inputs)) out.push_back(t.to(Device::cpu()));
  return out;
}

/// RunCodegen with the tests' cuda target, given `options` besides its cache directory.
inline IRModule run_cuda_codegen(const IRModule& mod, codegen::TargetOptionMap options = {}) {
  options["cache_dir"] = cuda_target().get_string("cache_dir");
  codegen::RunCodegenOptions run;
  run.targets = {codegen::Target("cuda", options)};
  return codegen::run_codegen(mod, run);
}

/// `mod` built for the cuda target: build() groups what is left for its codegen (host tensors
/// are staged by the module).
inline std::shared_ptr<runtime::Executable> build_cuda(const IRModule& mod) {
  return codegen::build(mod, codegen::BuildOptions({cuda_target()}, false));
}

}  // namespace partita::cudagen_test
