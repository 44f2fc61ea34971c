// ONNX importer: small models built with protobuf, imported and compared with expected
// TVMScript (structural equality after parsing), plus the error paths.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "onnx_builder.h"
#include "partita/frontend/onnx.h"
#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"

namespace partita {
namespace {

using frontend::from_onnx;
using frontend::from_onnx_bytes;
using frontend::from_onnx_file;
using frontend::OnnxImportOptions;
using testing::ModelBuilder;

/// Compares the functions of `got` with the module `expected` (module attributes such as the
/// kept "params" are not part of the text).
void expect_module(const IRModule& got, const char* expected) {
  ASSERT_TRUE(well_formed(got)) << script::print_module(got);
  IRModule want = script::parse_module(expected);
  IRModule fns = IRModule::create();
  for (const auto& [gv, f] : got.functions()) fns.add(gv, f);
  auto diff = structural_diff(fns, want);
  EXPECT_FALSE(diff.has_value()) << *diff << "\n--- got:\n" << script::print_module(got) << "\n--- want:\n" << expected;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.kind()) + ": " + e.message();
  }
  return "<no error>";
}

TEST(OnnxImport, MlpWithSymbolicBatch) {
  ModelBuilder b;
  b.input("x", {"batch", 4});
  b.input("w", {4, 8});
  b.input("bias", {8});
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Add", {"h", "bias"}, {"a"});
  b.node("Relu", {"a"}, {"y"});
  b.output("y");
  expect_module(from_onnx(b.model()), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("batch", 4), dtype="float32"), w: R.Tensor((4, 8), dtype="float32"), bias: R.Tensor((8,), dtype="float32")) -> R.Tensor(("batch", 8), dtype="float32"):
        batch = T.int64()
        R.func_attr({"num_input": 3})
        with R.dataflow():
            lv: R.Tensor((batch, 8), dtype="float32") = R.matmul(x, w, out_dtype=None)
            lv1: R.Tensor((batch, 8), dtype="float32") = R.add(lv, bias)
            lv2: R.Tensor((batch, 8), dtype="float32") = R.nn.relu(lv1)
            gv: R.Tensor((batch, 8), dtype="float32") = lv2
            R.output(gv)
        return gv
)");
}

TEST(OnnxImport, GemmTransposedWithAlphaBeta) {
  ModelBuilder b;
  b.input("a", {2, 3});
  b.input("w", {5, 3});
  b.input("c", {5});
  auto& n = b.node("Gemm", {"a", "w", "c"}, {"y"});
  ModelBuilder::attr_int(n, "transB", 1);
  ModelBuilder::attr_float(n, "alpha", 2.0f);
  ModelBuilder::attr_float(n, "beta", 0.5f);
  b.output("y");
  expect_module(from_onnx(b.model()), R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3), dtype="float32"), w: R.Tensor((5, 3), dtype="float32"), c: R.Tensor((5,), dtype="float32")) -> R.Tensor((2, 5), dtype="float32"):
        R.func_attr({"num_input": 3})
        with R.dataflow():
            lv = R.permute_dims(w, axes=[1, 0])
            lv1 = R.matmul(a, lv, out_dtype=None)
            lv2 = R.multiply(lv1, R.const(2.0, "float32"))
            lv3 = R.multiply(c, R.const(0.5, "float32"))
            lv4 = R.add(lv2, lv3)
            gv = lv4
            R.output(gv)
        return gv
)");
}

TEST(OnnxImport, ConvWithBiasAutoPadAndPool) {
  ModelBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.input("w", {4, 3, 3, 3});
  b.input("bias", {4});
  auto& c = b.node("Conv", {"x", "w", "bias"}, {"c"});
  ModelBuilder::attr_ints(c, "strides", {2, 2});
  auto* ap = c.add_attribute();
  ap->set_name("auto_pad");
  ap->set_type(onnx::AttributeProto::STRING);
  ap->set_s("SAME_UPPER");
  auto& p = b.node("MaxPool", {"c"}, {"p"});
  ModelBuilder::attr_ints(p, "kernel_shape", {2, 2});
  ModelBuilder::attr_int(p, "ceil_mode", 1);
  b.node("GlobalAveragePool", {"p"}, {"y"});
  b.output("y");
  expect_module(from_onnx(b.model()), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32"), bias: R.Tensor((4,), dtype="float32")) -> R.Tensor((1, 4, 1, 1), dtype="float32"):
        R.func_attr({"num_input": 3})
        with R.dataflow():
            lv = R.nn.conv2d(x, w, strides=[2, 2], padding=[0, 0, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            lv1 = R.reshape(bias, R.shape([1, 4, 1, 1]))
            lv2 = R.add(lv, lv1)
            lv3 = R.nn.max_pool2d(lv2, pool_size=[2, 2], strides=[1, 1], dilation=[1, 1], padding=[0, 0, 0, 0], ceil_mode=True, count_include_pad=False, layout="NCHW", out_layout="NCHW")
            lv4 = R.nn.adaptive_avg_pool2d(lv3, output_size=[1, 1], layout="NCHW", out_layout="NCHW")
            gv = lv4
            R.output(gv)
        return gv
)");
}

TEST(OnnxImport, ShapeArithmeticFoldsToConstantShape) {
  // x.reshape(x.shape[0], -1) the way exporters write it.
  ModelBuilder b;
  b.input("x", {2, 3, 4});
  b.init_int64("zero", {}, {0});
  b.init_int64("axes0", {1}, {0});
  b.init_int64("minus1", {1}, {-1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"d0"});
  b.node("Unsqueeze", {"d0", "axes0"}, {"d0v"});
  auto& cat = b.node("Concat", {"d0v", "minus1"}, {"shape"});
  ModelBuilder::attr_int(cat, "axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y");
  expect_module(from_onnx(b.model()), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), dtype="float32")) -> R.Tensor((2, 12), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv = R.reshape(x, R.shape([2, 12]))
            gv = lv
            R.output(gv)
        return gv
)");
}

TEST(OnnxImport, ShapeArithmeticKeepsSymbolicDims) {
  // Shape -> Slice -> Concat with a constant, feeding Reshape: the batch dim stays symbolic.
  ModelBuilder b;
  b.input("x", {"n", 2, 6});
  b.init_int64("st", {1}, {0});
  b.init_int64("en", {1}, {2});
  b.init_int64("tail", {2}, {3, 2});
  b.node("Shape", {"x"}, {"s"});
  b.node("Slice", {"s", "st", "en"}, {"head"});
  auto& cat = b.node("Concat", {"head", "tail"}, {"shape"});
  ModelBuilder::attr_int(cat, "axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y");
  expect_module(from_onnx(b.model()), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2, 6), dtype="float32")) -> R.Tensor(("n", 2, 3, 2), dtype="float32"):
        n = T.int64()
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv = R.reshape(x, R.shape([n, 2, 3, 2]))
            gv = lv
            R.output(gv)
        return gv
)");
}

TEST(OnnxImport, UnknownDimsBecomeFreshSymbolicVars) {
  ModelBuilder b;
  b.input("x", {"?", 4});
  b.input("y", {"?", 4});
  b.node("Sub", {"x", "y"}, {"z"});
  b.output("z");
  IRModule mod = from_onnx(b.model());
  ASSERT_TRUE(well_formed(mod));
  const auto* f = mod.lookup("main").as<FunctionNode>();
  const auto* tx = f->params[0]->struct_info_.as<TensorStructInfoNode>();
  const auto* ty = f->params[1]->struct_info_.as<TensorStructInfoNode>();
  ASSERT_TRUE(tx->shape && ty->shape);
  EXPECT_TRUE((*tx->shape)[0].as<PrimVarNode>());
  EXPECT_FALSE((*tx->shape)[0] == (*ty->shape)[0]);  // unrelated unknown dims
}

TEST(OnnxImport, SharedDimParamIsOneVariable) {
  ModelBuilder b;
  b.input("x", {"batch", 4});
  b.input("y", {"batch", 4});
  b.node("Add", {"x", "y"}, {"z"});
  b.output("z");
  IRModule mod = from_onnx(b.model());
  const auto* f = mod.lookup("main").as<FunctionNode>();
  EXPECT_TRUE((*f->params[0]->struct_info_.as<TensorStructInfoNode>()->shape)[0] ==
              (*f->params[1]->struct_info_.as<TensorStructInfoNode>()->shape)[0]);
  const auto* ret = f->ret_struct_info.as<TensorStructInfoNode>();
  ASSERT_TRUE(ret && ret->shape);
  EXPECT_TRUE((*ret->shape)[0].as<PrimVarNode>());  // the broadcast keeps the symbolic batch
}

TEST(OnnxImport, ShapeDictOverridesInputShapes) {
  ModelBuilder b;
  b.input("x", {"?", 4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  OnnxImportOptions opts;
  opts.shape_dict["x"] = {int64_t(3), int64_t(4)};
  IRModule mod = from_onnx(b.model(), opts);
  const auto* ret = mod.lookup("main").as<FunctionNode>()->ret_struct_info.as<TensorStructInfoNode>();
  EXPECT_EQ(script::print_expr(mod.lookup("main").as<FunctionNode>()->ret_struct_info),
            "R.Tensor((3, 4), dtype=\"float32\")");
  (void)ret;
}

TEST(OnnxImport, InitializersBecomeConstantsOrParams) {
  ModelBuilder b;
  b.input("x", {2, 2});
  b.init_float("w", {2, 2}, {1, 2, 3, 4});
  b.node("MatMul", {"x", "w"}, {"y"});
  b.output("y");
  IRModule as_const = from_onnx(b.model());
  std::string text = script::print_module(as_const);
  EXPECT_NE(text.find("metadata[\"relax.expr.Constant\"][0]"), std::string::npos) << text;
  // The printed module (with its metadata section) parses back to the same module.
  EXPECT_TRUE(structural_equal(script::parse_module(text), as_const));

  OnnxImportOptions opts;
  opts.keep_params_in_input = true;
  IRModule as_param = from_onnx(b.model(), opts);
  expect_module(as_param, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32"), w: R.Tensor((2, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv = R.matmul(x, w, out_dtype=None)
            gv = lv
            R.output(gv)
        return gv
)");
  auto params = frontend::onnx_params_of(as_param);
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "w");
  EXPECT_EQ(params[0].second.data_as<float>()[3], 4.0f);
}

TEST(OnnxImport, LayerNormSoftmaxAndSplit) {
  ModelBuilder b;
  b.input("x", {2, 8});
  b.input("g", {8});
  b.input("bb", {8});
  auto& ln = b.node("LayerNormalization", {"x", "g", "bb"}, {"l"});
  ModelBuilder::attr_float(ln, "epsilon", 1e-6f);
  auto& sm = b.node("Softmax", {"l"}, {"s"});
  ModelBuilder::attr_int(sm, "axis", 1);
  auto& sp = b.node("Split", {"s"}, {"p0", "p1"});
  ModelBuilder::attr_int(sp, "axis", 1);
  b.output("p0");
  b.output("p1");
  IRModule mod = from_onnx(b.model());
  ASSERT_TRUE(well_formed(mod));
  std::string text = script::print_module(mod);
  EXPECT_NE(text.find("R.nn.layer_norm(x, g, bb, axes=[1]"), std::string::npos) << text;
  EXPECT_NE(text.find("R.nn.softmax(lv, axis=1)"), std::string::npos) << text;
  EXPECT_NE(text.find("R.split(lv1, indices_or_sections=2, axis=1)"), std::string::npos) << text;
  EXPECT_NE(text.find("R.Tuple(R.Tensor((2, 4), dtype=\"float32\"), R.Tensor((2, 4), dtype=\"float32\"))"),
            std::string::npos)
      << text;
}

TEST(OnnxImport, UnsupportedOperatorsAreListedInOneError) {
  ModelBuilder b;
  b.input("x", {2, 2});
  b.node("Relu", {"x"}, {"a"});
  b.node("NonMaxSuppression", {"a", "a"}, {"b"}, "nms_1");
  b.node("RoiAlign", {"a", "a"}, {"c", "d"}, "roi_1");
  b.node("NonMaxSuppression", {"a", "a"}, {"e"}, "nms_2");
  auto& custom = b.node("MyOp", {"a"}, {"f"}, "mine");
  custom.set_domain("com.example");
  b.output("f");
  std::string err = error_of([&] { from_onnx(b.model()); });
  EXPECT_NE(err.find("NotImplementedError"), std::string::npos) << err;
  EXPECT_NE(err.find("3 unsupported operator types"), std::string::npos) << err;
  EXPECT_NE(err.find("NonMaxSuppression (2 nodes): nms_1, nms_2"), std::string::npos) << err;
  EXPECT_NE(err.find("RoiAlign (1 node): roi_1"), std::string::npos) << err;
  EXPECT_NE(err.find("com.example.MyOp (1 node): mine"), std::string::npos) << err;
  EXPECT_EQ(err.find("Relu"), std::string::npos) << err;
}

TEST(OnnxImport, InconsistentGraphsNameTheNode) {
  {
    ModelBuilder b;
    b.input("x", {2});
    b.node("Add", {"x", "nowhere"}, {"y"}, "adder");
    b.output("y");
    std::string err = error_of([&] { from_onnx(b.model()); });
    EXPECT_NE(err.find("node 'adder' (Add) uses 'nowhere'"), std::string::npos) << err;
  }
  {
    ModelBuilder b;
    b.input("x", {2});
    b.node("Relu", {"x", "x"}, {"y"}, "two_in");
    b.output("y");
    std::string err = error_of([&] { from_onnx(b.model()); });
    EXPECT_NE(err.find("node 'two_in' (Relu) has 2 inputs"), std::string::npos) << err;
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3});
    b.input("y", {4, 5});
    b.node("MatMul", {"x", "y"}, {"z"}, "mm");
    b.output("z");
    std::string err = error_of([&] { from_onnx(b.model()); });
    EXPECT_NE(err.find("node 'mm' (MatMul)"), std::string::npos) << err;
    EXPECT_NE(err.find("reduction dimensions differ"), std::string::npos) << err;
  }
  {
    ModelBuilder b;
    b.input("x", {2});
    b.node("Relu", {"x"}, {"y"});
    b.output("missing");
    std::string err = error_of([&] { from_onnx(b.model()); });
    EXPECT_NE(err.find("graph output 'missing'"), std::string::npos) << err;
  }
  {
    ModelBuilder b(11);
    b.input("x", {2});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    std::string err = error_of([&] { from_onnx(b.model()); });
    EXPECT_NE(err.find("opset 11 is not supported"), std::string::npos) << err;
  }
}

TEST(OnnxImport, CorruptedTruncatedAndMissingFiles) {
  ModelBuilder b;
  b.input("x", {2, 2});
  b.init_float("w", {2, 2}, {1, 2, 3, 4});
  b.node("MatMul", {"x", "w"}, {"y"});
  b.output("y");
  std::string bytes = b.bytes();
  std::string dir = ::testing::TempDir();

  std::string missing = dir + "/does_not_exist.onnx";
  std::string err = error_of([&] { from_onnx_file(missing); });
  EXPECT_NE(err.find("IOError: " + missing + ": cannot open"), std::string::npos) << err;

  // Every truncation either fails cleanly (a partita::Error naming the file) or imports.
  std::string path = dir + "/truncated.onnx";
  int failures = 0;
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(cut));
    try {
      from_onnx_file(path);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      ++failures;
    }
  }
  EXPECT_GT(failures, int(bytes.size()) / 2);

  // Garbage bytes.
  std::string junk(64, '\xff');
  err = error_of([&] { from_onnx_bytes(junk); });
  EXPECT_NE(err.find("IOError"), std::string::npos) << err;

  // Flipped bytes: never a crash.
  for (size_t k = 0; k < bytes.size(); ++k) {
    std::string m = bytes;
    m[k] = char(m[k] ^ 0x5a);
    try {
      from_onnx_bytes(m);
    } catch (const Error&) {
    }
  }
  std::remove(path.c_str());
}

TEST(OnnxImport, InitializerSizeMismatchIsAnError) {
  ModelBuilder b;
  b.input("x", {2, 2});
  b.init_float("w", {2, 2}, {1, 2, 3});
  b.node("MatMul", {"x", "w"}, {"y"});
  b.output("y");
  std::string err = error_of([&] { from_onnx(b.model()); });
  EXPECT_NE(err.find("initializer 'w'"), std::string::npos) << err;
  EXPECT_NE(err.find("needs 4 elements but holds 3"), std::string::npos) << err;
}

}  // namespace
}  // namespace partita
