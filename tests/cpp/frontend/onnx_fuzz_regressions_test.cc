// Inputs the ONNX fuzzer (tests/fuzz/onnx_fuzzer.cc) found mishandled, each kept as a test.
#include <gtest/gtest.h>

#include <limits>

#include "onnx_builder.h"
#include "partita/frontend/onnx.h"
#include "partita/script/printer.h"
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

namespace {

// The ValueError a model with a node `op` raises, or "" when it imports.
std::string import_error(const std::string& bytes, frontend::OnnxImportOptions options = {}) {
  try {
    frontend::from_onnx_bytes(bytes, options);
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError") << e.message();
    return e.message();
  }
}

std::string eye_like_model(int64_t n) {
  partita::testing::ModelBuilder b;
  b.input("x", {n, n});
  b.output("y");
  b.node("EyeLike", {"x"}, {"y"}, "eye");
  return b.bytes();
}

}  // namespace

TEST(OnnxFuzzRegressions, AnEyeLikeOfAHugeDeclaredInputIsAnErrorNamingTheNode) {
  // Before: the importer built the 10^5 x 10^5 identity (80 GB) a 100-byte model declares.
  const std::string msg = import_error(eye_like_model(100000));
  EXPECT_NE(msg.find("node 'eye' (EyeLike)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the identity matrix (100000 x 100000 float64, 8e+10 bytes)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_constant_bytes = 1073741824"), std::string::npos) << msg;
  // A small one imports; the limit is an option.
  EXPECT_EQ(import_error(eye_like_model(64)), "");
  frontend::OnnxImportOptions small;
  small.max_constant_bytes = 64 * 64 * 8 - 1;
  EXPECT_NE(import_error(eye_like_model(64), small).find("max_constant_bytes = 32767"), std::string::npos);
}

TEST(OnnxFuzzRegressions, TheLimitCountsEveryConstantOfTheImport) {
  // Two identities of 32 KiB each: each fits a 48 KiB limit, both together do not.
  partita::testing::ModelBuilder b;
  b.input("x", {64, 64});
  b.output("z");
  b.node("EyeLike", {"x"}, {"e1"}, "first");
  b.node("EyeLike", {"x"}, {"e2"}, "second");
  b.node("Add", {"e1", "e2"}, {"z"});
  frontend::OnnxImportOptions options;
  options.max_constant_bytes = 48 * 1024;
  const std::string msg = import_error(b.bytes(), options);
  EXPECT_NE(msg.find("node 'second' (EyeLike)"), std::string::npos) << msg;
}

TEST(OnnxFuzzRegressions, DeclaredSizesOfOtherMadeConstantsAreLimited) {
  {  // OneHot's coordinates along a depth of 10^12
    partita::testing::ModelBuilder b;
    b.input("i", {3}, onnx::TensorProto::INT64);
    b.output("y");
    b.init_int64("depth", {}, {int64_t(1000000) * 1000000});
    b.init_float("values", {2}, {0.f, 1.f});
    b.node("OneHot", {"i", "depth", "values"}, {"y"}, "hot");
    const std::string msg = import_error(b.bytes());
    EXPECT_NE(msg.find("node 'hot' (OneHot): the coordinates along axis 1"), std::string::npos) << msg;
  }
  {  // a Hann window of 10^12 points
    partita::testing::ModelBuilder b;
    b.output("y");
    b.init_int64("size", {}, {int64_t(1000000) * 1000000});
    b.node("HannWindow", {"size"}, {"y"}, "window");
    const std::string msg = import_error(b.bytes());
    EXPECT_NE(msg.find("node 'window' (HannWindow): the window"), std::string::npos) << msg;
  }
  {  // InstanceNormalization's unit scale over 10^5 x 10^5 pixels
    partita::testing::ModelBuilder b;
    b.input("x", {1, 2, 100000, 100000});
    b.output("y");
    b.init_float("scale", {2}, {1.f, 1.f});
    b.init_float("bias", {2}, {0.f, 0.f});
    b.node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
    const std::string msg = import_error(b.bytes());
    EXPECT_NE(msg.find("node 'norm' (InstanceNormalization): the unit scale"), std::string::npos) << msg;
  }
}

TEST(OnnxFuzzRegressions, ARangeOfInfiniteLengthIsAnErrorNotAnUndefinedConversion) {
  // Before: ceil(inf) was converted to int64 (undefined behaviour; an empty range here).
  partita::testing::ModelBuilder b;
  b.output("y");
  b.init_float("start", {}, {0.f});
  b.init_float("limit", {}, {std::numeric_limits<float>::infinity()});
  b.init_float("delta", {}, {1.f});
  b.node("Range", {"start", "limit", "delta"}, {"y"}, "range");
  const std::string msg = import_error(b.bytes());
  EXPECT_NE(msg.find("node 'range' (Range): the range's length is not finite"), std::string::npos) << msg;
}

TEST(OnnxFuzzRegressions, AConstantOfShapeOfAHugeShapeStaysACallAndAllocatesNothing) {
  // R.full of the declared shape is left to run time (or to FoldConstant's own choice); the
  // importer makes no constant of that size.
  partita::testing::ModelBuilder b;
  b.output("y");
  b.init_int64("shape", {2}, {100000, 100000});
  b.node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  frontend::OnnxImportOptions options;
  options.max_constant_bytes = 1024;
  IRModule mod = frontend::from_onnx_bytes(b.bytes(), options);
  EXPECT_NE(script::print_module(mod).find("R.full(R.shape([100000, 100000])"), std::string::npos)
      << script::print_module(mod);
}
