// Operators exporters spell out in primitive nodes, put back together on import: GELU (in each
// association order torch and Hugging Face models export) and LayerNormalization before opset
// 17; look-alikes that differ stay as they are.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_builder.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/frontend/onnx.h"
#include "partita/ir/analysis.h"
#include "partita/runtime/vm.h"
#include "partita/script/printer.h"

namespace partita {
namespace {

using frontend::from_onnx;
using testing::ModelBuilder;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// x -> x * 0.5 * (1 + erf(x / sqrt(2))) in association order `form`:
/// 0: (x * A) * 0.5 (torch), 1: (x * 0.5) * A (Hugging Face), 2: x * (A * 0.5); `half` is the
/// constant that should be 0.5.
ModelBuilder gelu_model(int form, float half = 0.5f, bool multiply_by_inverse = false,
                        int elem = onnx::TensorProto::FLOAT) {
  ModelBuilder b;
  b.input("x", {2, 3}, elem);
  auto init = [&](const std::string& name, float v) {
    if (elem == onnx::TensorProto::FLOAT) b.init_float(name, {}, {v});
    else b.init_16bit(name, elem, {}, {v});
  };
  init("sqrt2", multiply_by_inverse ? float(std::sqrt(0.5)) : float(std::sqrt(2.0)));
  init("one", 1.0f);
  init("half", half);
  b.node(multiply_by_inverse ? "Mul" : "Div", {"x", "sqrt2"}, {"s"});
  b.node("Erf", {"s"}, {"e"});
  b.node("Add", {"one", "e"}, {"a"});  // the constant first: the matcher takes either order
  if (form == 0) {
    b.node("Mul", {"x", "a"}, {"m"});
    b.node("Mul", {"m", "half"}, {"y"});
  } else if (form == 1) {
    b.node("Mul", {"half", "x"}, {"m"});
    b.node("Mul", {"m", "a"}, {"y"});
  } else {
    b.node("Mul", {"a", "half"}, {"m"});
    b.node("Mul", {"x", "m"}, {"y"});
  }
  b.output("y", elem);
  return b;
}

TEST(OnnxFusion, GeluInEveryAssociationOrder) {
  Tensor x = Tensor::empty({2, 3}, DataType::Float(32));
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = -1.5f + 0.6f * float(i);
  for (int form = 0; form < 3; ++form) {
    for (bool inverse : {false, true}) {
      IRModule mod = from_onnx(gelu_model(form, 0.5f, inverse).model());
      ASSERT_TRUE(well_formed(mod));
      std::string text = script::print_module(mod);
      EXPECT_EQ(count(text, "R.nn.gelu(x)"), 1) << "form " << form << "\n" << text;
      EXPECT_EQ(count(text, "R.erf("), 0) << text;
      EXPECT_EQ(count(text, "R.multiply("), 0) << text;
      runtime::VirtualMachine vm(codegen::build_vm_executable(mod));
      Tensor y = vm.invoke("main", {x})[0];
      for (int i = 0; i < 6; ++i) {
        double v = x.data_as<float>()[i];
        EXPECT_NEAR(y.data_as<float>()[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
      }
    }
  }
}

// A float16 or bfloat16 export holds sqrt(2) and 1/sqrt(2) rounded to its precision (1.4140625).
TEST(OnnxFusion, GeluOf16BitExports) {
  for (int elem : {int(onnx::TensorProto::FLOAT16), int(onnx::TensorProto::BFLOAT16)})
    for (int form = 0; form < 3; ++form)
      for (bool inverse : {false, true}) {
        std::string text = script::print_module(from_onnx(gelu_model(form, 0.5f, inverse, elem).model()));
        EXPECT_EQ(count(text, "R.nn.gelu(x)"), 1) << "elem " << elem << " form " << form << "\n" << text;
        EXPECT_EQ(count(text, "R.erf("), 0) << text;
      }
  // A constant a float16 ulp away from 0.5 is another function.
  std::string text = script::print_module(from_onnx(gelu_model(0, 0.5f + 0x1p-10f, false, onnx::TensorProto::FLOAT16).model()));
  EXPECT_EQ(count(text, "R.nn.gelu("), 0) << text;
}

// torch's nn.SiLU exports as x * Sigmoid(x) (either operand order); a sigmoid gate of another
// tensor (squeeze-excitation: y * Sigmoid(s)) stays as it is.
TEST(OnnxFusion, SiluAndNotTheGateOfAnotherTensor) {
  for (bool sigmoid_first : {false, true}) {
    ModelBuilder b;
    b.input("x", {2, 3});
    b.node("Sigmoid", {"x"}, {"s"});
    b.node("Mul", sigmoid_first ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"}, {"y"});
    b.output("y");
    IRModule mod = from_onnx(b.model());
    std::string text = script::print_module(mod);
    EXPECT_EQ(count(text, "R.nn.silu(x)"), 1) << text;
    EXPECT_EQ(count(text, "R.sigmoid("), 0) << text;
    Tensor x = Tensor::empty({2, 3}, DataType::Float(32));
    for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = -2.5f + float(i);
    Tensor y = runtime::VirtualMachine(codegen::build_vm_executable(mod)).invoke("main", {x})[0];
    for (int i = 0; i < 6; ++i) {
      double v = x.data_as<float>()[i];
      EXPECT_NEAR(y.data_as<float>()[i], v / (1 + std::exp(-v)), 1e-6);
    }
  }
  ModelBuilder gate;
  gate.input("x", {2, 3});
  gate.input("z", {2, 3});
  gate.node("Sigmoid", {"z"}, {"s"});
  gate.node("Mul", {"x", "s"}, {"y"});
  gate.output("y");
  std::string text = script::print_module(from_onnx(gate.model()));
  EXPECT_EQ(count(text, "R.nn.silu("), 0) << text;
  EXPECT_EQ(count(text, "R.sigmoid(z)"), 1) << text;
}

TEST(OnnxFusion, GeluLookAlikesStay) {
  std::string text = script::print_module(from_onnx(gelu_model(0, 0.49f).model()));
  EXPECT_EQ(count(text, "R.nn.gelu("), 0) << text;
  EXPECT_EQ(count(text, "R.erf("), 1) << text;
  // erf of another tensor than the one multiplied.
  ModelBuilder b;
  b.input("x", {4});
  b.input("z", {4});
  b.init_float("sqrt2", {}, {float(std::sqrt(2.0))});
  b.init_float("one", {}, {1.0f});
  b.init_float("half", {}, {0.5f});
  b.node("Div", {"z", "sqrt2"}, {"s"});
  b.node("Erf", {"s"}, {"e"});
  b.node("Add", {"e", "one"}, {"a"});
  b.node("Mul", {"x", "a"}, {"m"});
  b.node("Mul", {"m", "half"}, {"y"});
  b.output("y");
  text = script::print_module(from_onnx(b.model()));
  EXPECT_EQ(count(text, "R.nn.gelu("), 0) << text;
}

/// torch's LayerNorm export before opset 17, normalizing the trailing `axes` of x (2, 3, 4).
ModelBuilder layer_norm_model(std::vector<int64_t> axes, bool with_pow = true) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 4});
  std::vector<int64_t> dims;
  for (int64_t a : axes) dims.push_back(a == 1 || a == -2 ? 3 : a == 0 ? 2 : 4);
  if (axes == std::vector<int64_t>{0}) dims = {2, 1, 1};  // broadcasts against (2, 3, 4)
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> gamma, beta;
  for (int64_t i = 0; i < n; ++i) {
    gamma.push_back(1.0f + 0.1f * float(i));
    beta.push_back(-0.05f * float(i));
  }
  b.init_float("gamma", dims, gamma);
  b.init_float("beta", dims, beta);
  b.init_float("two", {}, {2.0f});
  b.init_float("eps", {}, {1e-5f});
  ModelBuilder::attr_ints(b.node("ReduceMean", {"x"}, {"mu"}), "axes", axes);
  b.node("Sub", {"x", "mu"}, {"d"});
  if (with_pow) b.node("Pow", {"d", "two"}, {"sq"});
  else b.node("Mul", {"d", "d"}, {"sq"});
  ModelBuilder::attr_ints(b.node("ReduceMean", {"sq"}, {"var"}), "axes", axes);
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.node("Mul", {"n", "gamma"}, {"g"});
  b.node("Add", {"g", "beta"}, {"y"});
  b.output("y");
  return b;
}

TEST(OnnxFusion, LayerNormBeforeOpset17) {
  Tensor x = Tensor::empty({2, 3, 4}, DataType::Float(32));
  for (int i = 0; i < 24; ++i) x.data_as<float>()[i] = std::sin(float(i));
  for (auto axes : {std::vector<int64_t>{-1}, std::vector<int64_t>{1, 2}}) {
    for (bool with_pow : {true, false}) {
      IRModule mod = from_onnx(layer_norm_model(axes, with_pow).model());
      ASSERT_TRUE(well_formed(mod));
      std::string text = script::print_module(mod);
      std::string want = axes.size() == 1 ? "axes=[2]" : "axes=[1, 2]";
      EXPECT_EQ(count(text, "R.nn.layer_norm(x, "), 1) << text;
      EXPECT_NE(text.find(want + ", epsilon=9.9999997473787516e-06"), std::string::npos) << text;
      EXPECT_EQ(count(text, "R.mean("), 0) << text;
      // Against the definition, computed here.
      runtime::VirtualMachine vm(codegen::build_vm_executable(mod));
      Tensor y = vm.invoke("main", {x})[0];
      const int64_t group = axes.size() == 1 ? 4 : 12;
      for (int64_t g = 0; g < 24 / group; ++g) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < group; ++i) mean += x.data_as<float>()[g * group + i];
        mean /= double(group);
        for (int64_t i = 0; i < group; ++i) var += std::pow(x.data_as<float>()[g * group + i] - mean, 2);
        var /= double(group);
        for (int64_t i = 0; i < group; ++i) {
          double want_v = (x.data_as<float>()[g * group + i] - mean) / std::sqrt(var + 1e-5) * (1.0 + 0.1 * double(i)) -
                          0.05 * double(i);
          EXPECT_NEAR(y.data_as<float>()[g * group + i], want_v, 1e-5);
        }
      }
    }
  }
}

TEST(OnnxFusion, NormalizationOverLeadingAxesStays) {
  std::string text = script::print_module(from_onnx(layer_norm_model({0}).model()));
  EXPECT_EQ(count(text, "R.nn.layer_norm("), 0) << text;
  EXPECT_EQ(count(text, "R.mean("), 2) << text;
}

}  // namespace
}  // namespace partita
