// Inputs the ONNX fuzzer (tests/fuzz/onnx_fuzzer.cc) found mishandled, each kept as a test.
#include <gtest/gtest.h>

#include "onnx_builder.h"
#include "partita/frontend/onnx.h"
#include "partita/support/error.h"

using namespace partita;

TEST(OnnxFuzzRegressions, AHugeDeclaredTensorWithoutItsDataIsAnErrorNotAnAllocation) {
  // 2^35 float32 elements (128 GiB) declared, none stored: before, the tensor was allocated
  // before its data was counted (out of memory); now the count is checked first.
  for (bool raw : {false, true}) {
    partita::testing::ModelBuilder b;
    b.input("x", {2});
    b.output("y");
    b.init_float("w", {int64_t(1) << 20, int64_t(1) << 15}, {1.f, 2.f});
    if (raw) b.model().mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(8, '\0'));
    b.node("Add", {"x", "w"}, {"y"});
    try {
      frontend::from_onnx_bytes(b.bytes());
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), "ValueError");
      EXPECT_NE(e.message().find("needs 34359738368 elements but holds 2"), std::string::npos) << e.message();
    }
  }
}

TEST(OnnxFuzzRegressions, ClipWithAnEmptyConstantBoundIsAnErrorNamingTheNode) {
  // Before: std::out_of_range escaped from the Clip converter (an uncaught exception).
  partita::testing::ModelBuilder b;
  b.input("x", {2});
  b.output("y");
  b.init_float("lo", {0}, {});
  b.init_float("hi", {1}, {1.f});
  b.node("Clip", {"x", "lo", "hi"}, {"y"});
  try {
    frontend::from_onnx_bytes(b.bytes());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(e.message().find("Clip"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("malformed node"), std::string::npos) << e.message();
  }
}
