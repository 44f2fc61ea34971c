// Helpers of the cublas backend's tests: modules from TVMScript, what a partitioned module
// offloaded, typed random inputs and tolerant comparison, and whether a GPU is here
// (cuda_test_util.h).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "partita/ir/analysis.h"
#include "partita/ir/module.h"
#include "partita/runtime/half.h"
#include "partita/runtime/tensor.h"
#include "partita/script/parser.h"
#include "cuda_test_util.h"

namespace partita::backend::cublas::test {

using ::partita::testing::converted;
using ::partita::testing::device_available;
using ::partita::testing::element;
using ::partita::testing::set_element;

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
inline Tensor as_f32(const Tensor& t) { return converted(t, DataType::Float(32)); }

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
