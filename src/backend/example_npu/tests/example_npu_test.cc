// The example NPU: TVM's pattern table (names, order, what each check keeps on the host), the
// JSON graph its codegen writes, its runtime's results against the host VM (built, exported,
// reloaded), the dispatch decisions, and clean errors for malformed module bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/runtime/executable.h"
#include "partita/runtime/module_sections.h"
#include "partita/runtime/plugin.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/transform/pattern_registry.h"
#include "random_tensor.h"

namespace partita {
namespace {

using json = nlohmann::json;

IRModule parse(const std::string& body, const std::string& params, const std::string& ret) {
  return script::parse_module("@I.ir_module\nclass Module:\n    @R.function\n    def main(" +
                              params + ") -> " + ret + ":\n        with R.dataflow():\n" + body +
                              "        return out\n");
}

std::string tensor(const std::string& shape, const std::string& dtype = "float32") {
  return "R.Tensor((" + shape + "), dtype=\"" + dtype + "\")";
}

// The "Composite" names of a partitioned module, sorted.
std::vector<std::string> composites(const IRModule& mod) {
  std::vector<std::string> out;
  std::function<void(const Expr&)> visit = [&](const Expr& e) {
    auto* f = e.as<FunctionNode>();
    if (!f) return;
    if (auto c = f->attr_string("Composite")) out.push_back(*c);
    if (auto* seq = f->body.as<SeqExprNode>())
      for (const auto& b : seq->blocks)
        for (const auto& bind : b->bindings)
          if (auto* vb = bind.as<VarBindingNode>()) visit(vb->value);
  };
  for (const auto& [gv, f] : mod.functions()) visit(f);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Tensor> random_inputs(const IRModule& mod, uint32_t seed) {
  std::vector<Tensor> out;
  for (const auto& p : mod.lookup("main").as<FunctionNode>()->params)
    out.push_back(testing::random_tensor(*static_shape(p->struct_info_), seed++));
  return out;
}

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i)
    EXPECT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i],
                1e-5 * (1 + std::abs(want.data_as<float>()[i])))
        << i;
}

// Builds `mod` partitioned for the example NPU (merged or not), runs it, exports and reloads it,
// runs it again, and compares both with the host VM. Returns the built executable.
std::shared_ptr<runtime::Executable> check_against_host(const IRModule& mod, bool merge = true) {
  std::vector<Tensor> inputs = random_inputs(mod, 7);
  std::vector<Tensor> want = runtime::VirtualMachine(codegen::build(mod)).invoke("main", inputs);
  auto exec = codegen::build(transform::partition_for("example_npu", mod, merge),
                             codegen::BuildOptions({}, false));
  std::vector<Tensor> got = runtime::VirtualMachine(exec).invoke("main", inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) expect_close(got[k], want[k]);
  auto file = std::filesystem::temp_directory_path() /
              ("partita_example_npu_test_" + std::to_string(getpid()));
  exec->export_library(file.string());
  auto loaded = runtime::load_module(file.string());
  std::filesystem::remove(file);
  got = runtime::VirtualMachine(loaded).invoke("main", inputs);
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) expect_close(got[k], want[k]);
  return exec;
}

const char* kConvRelu =
    "            conv = R.nn.conv2d(data, weight)\n"
    "            out = R.nn.relu(conv)\n"
    "            R.output(out)\n";

TEST(ExampleNpu, RegistersTvmsPatternTableInItsOrder) {
  auto info = backend::find_backend("example_npu");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->runtime_plugin, "example_npu");
  std::vector<std::string> names;
  for (const auto& p : transform::get_patterns_with_prefix("example_npu.")) names.push_back(p.name);
  // TVM v0.26's list, highest priority first, without the patterns of operators Partita lacks
  // (quantize, dequantize, conv1d; TVM itself lacks relu6, sigmoid and tanh's relax.nn ops).
  std::vector<std::string> want = {"example_npu.conv2d_relu_fused",
                                   "example_npu.matmul_relu_fused",
                                   "example_npu.depthwise_conv2d",
                                   "example_npu.conv2d",
                                   "example_npu.matmul",
                                   "example_npu.dense",
                                   "example_npu.avg_pool2d",
                                   "example_npu.max_pool2d",
                                   "example_npu.batch_norm",
                                   "example_npu.softmax",
                                   "example_npu.gelu",
                                   "example_npu.relu",
                                   "example_npu.divide",
                                   "example_npu.subtract",
                                   "example_npu.multiply",
                                   "example_npu.add"};
  EXPECT_EQ(names, want);
}

TEST(ExampleNpu, FusesConv2dWithReluAsTheTutorialSays) {
  IRModule mod =
      parse(kConvRelu, "data: " + tensor("1, 3, 32, 32") + ", weight: " + tensor("16, 3, 3, 3"),
            tensor("1, 16, 30, 30"));
  IRModule parted = transform::partition_for("example_npu", mod);
  EXPECT_EQ(composites(parted), std::vector<std::string>{"example_npu.conv2d_relu_fused"});
  auto exec = check_against_host(mod);
  ASSERT_EQ(exec->external_modules.size(), 1u);
  EXPECT_EQ(exec->external_modules[0]->type_key(), "example_npu");
  EXPECT_TRUE(runtime::plugin_loaded("example_npu"));
  // The graph: one "kernel" node named by the pattern, holding conv2d (with its attributes) and
  // relu.
  json graph = json::parse(exec->external_modules[0]->get_source());
  ASSERT_EQ(graph["functions"].size(), 1u);
  const json& node = graph["functions"][0]["nodes"].at(0);
  EXPECT_EQ(node["name"], "example_npu.conv2d_relu_fused");
  EXPECT_EQ(node["op_type"], "kernel");
  ASSERT_EQ(node["ops"].size(), 2u);
  EXPECT_EQ(node["ops"][0]["op"], "relax.nn.conv2d");
  EXPECT_EQ(node["ops"][0]["attrs"]["strides"], json::parse(R"(["ints", [1, 1]])"));
  EXPECT_EQ(node["ops"][0]["attrs"]["data_layout"], json::parse(R"(["str", "NCHW"])"));
  EXPECT_EQ(node["ops"][1]["op"], "relax.nn.relu");
  // The dispatch decisions TVM's stub logs: 1 x 16 x 30 x 30 floats fit the 256 KiB SRAM.
  std::string log = exec->external_modules[0]->get_source("dispatch");
  EXPECT_NE(
      log.find(
          "example_npu.conv2d_relu_fused -> CONV_ENGINE, fused (the intermediate stays on chip), "
          "output 57600 bytes in L1 SRAM, single pass"),
      std::string::npos)
      << log;
}

TEST(ExampleNpu, LargeOutputsAreTiledAsTvmsTilingEngineTiles) {
  IRModule mod = parse("            out = R.add(x, y)\n            R.output(out)\n",
                       "x: " + tensor("1, 4, 128, 160") + ", y: " + tensor("1, 4, 128, 160"),
                       tensor("1, 4, 128, 160"));
  auto exec = check_against_host(mod);
  // 327,680 bytes: over the L1 SRAM, within the 512 KiB CMX; 32 x 32 tiles of 4 channels fit.
  EXPECT_NE(exec->external_modules[0]
                ->get_source("dispatch")
                .find("example_npu.add -> VECTOR_ENGINE, output 327680 bytes in L2 CMX, tiled 4x5 "
                      "tiles of 32x32"),
            std::string::npos)
      << exec->external_modules[0]->get_source("dispatch");
}

TEST(ExampleNpu, GroupedConvolutionsGoToTheDepthwiseUnit) {
  IRModule mod =
      parse("            out = R.nn.conv2d(x, w, groups=4)\n            R.output(out)\n",
            "x: " + tensor("1, 4, 9, 9") + ", w: " + tensor("4, 1, 3, 3"), tensor("1, 4, 7, 7"));
  EXPECT_EQ(composites(transform::partition_for("example_npu", mod)),
            std::vector<std::string>{"example_npu.depthwise_conv2d"});
  check_against_host(mod);
}

TEST(ExampleNpu, AConvolutionUsedElsewhereIsNotFusedWithItsRelu) {
  IRModule mod = parse(
      "            conv = R.nn.conv2d(data, weight)\n"
      "            r = R.nn.relu(conv)\n"
      "            out = R.add(r, conv)\n"
      "            R.output(out)\n",
      "data: " + tensor("1, 2, 6, 6") + ", weight: " + tensor("3, 2, 3, 3"), tensor("1, 3, 4, 4"));
  EXPECT_EQ(
      composites(transform::partition_for("example_npu", mod)),
      (std::vector<std::string>{"example_npu.add", "example_npu.conv2d", "example_npu.relu"}));
  check_against_host(mod);
  check_against_host(mod, /*merge=*/false);
}

TEST(ExampleNpu, RunsEveryKindOfItsTableAgainstTheHost) {
  // matmul + relu fused, batch_norm's tuple with its TupleGetItem inside the merged function,
  // pooling, softmax, gelu, broadcasting element-wise ops and a bound constant weight.
  IRModule mod = parse(
      "            m = R.nn.relu(R.matmul(x, w))\n"
      "            bn = R.nn.batch_norm(img, g, b, mean, var, axis=1, training=False)\n"
      "            y = bn[0]\n"
      "            p = R.nn.max_pool2d(y, pool_size=[2, 2], strides=[2, 2])\n"
      "            q = R.nn.avg_pool2d(p, pool_size=[2, 2])\n"
      "            s = R.nn.softmax(m, axis=0)\n"
      "            t = R.nn.gelu(R.divide(R.subtract(s, bias), R.multiply(bias, bias)))\n"
      "            out = (t, q)\n"
      "            R.output(out)\n",
      "x: " + tensor("4, 8") + ", w: " + tensor("8, 6") + ", bias: " + tensor("6") +
          ", img: " + tensor("1, 3, 8, 8") + ", g: " + tensor("3") + ", b: " + tensor("3") +
          ", mean: " + tensor("3") + ", var: " + tensor("3"),
      "R.Tuple(" + tensor("4, 6") + ", " + tensor("1, 3, 3, 3") + ")");
  IRModule parted = transform::partition_for("example_npu", mod);
  std::vector<std::string> want = {
      "example_npu.avg_pool2d", "example_npu.batch_norm",        "example_npu.divide",
      "example_npu.gelu",       "example_npu.matmul_relu_fused", "example_npu.max_pool2d",
      "example_npu.multiply",   "example_npu.softmax",           "example_npu.subtract"};
  EXPECT_EQ(composites(parted), want);
  std::vector<Tensor> inputs = random_inputs(mod, 3);
  // var must be positive: batch_norm takes its square root.
  for (int64_t i = 0; i < inputs[7].numel(); ++i)
    inputs[7].data_as<float>()[i] = 0.5f + std::abs(inputs[7].data_as<float>()[i]);
  std::vector<Tensor> want_out =
      runtime::VirtualMachine(codegen::build(mod)).invoke("main", inputs);
  for (bool merge : {true, false}) {
    auto exec = codegen::build(transform::partition_for("example_npu", mod, merge),
                               codegen::BuildOptions({}, false));
    EXPECT_TRUE(exec->kernel_names.empty()) << "left on the host: " << exec->kernel_names[0];
    std::vector<Tensor> got = runtime::VirtualMachine(exec).invoke("main", inputs);
    ASSERT_EQ(got.size(), 2u);
    expect_close(got[0], want_out[0]);
    expect_close(got[1], want_out[1]);
  }
}

TEST(ExampleNpu, WhatItCannotRunStaysOnTheHost) {
  // float16 and a symbolic batch: the checks refuse them, the host runs them.
  IRModule half = parse("            out = R.nn.relu(x)\n            R.output(out)\n",
                        "x: " + tensor("4, 4", "float16"), tensor("4, 4", "float16"));
  EXPECT_TRUE(composites(transform::partition_for("example_npu", half)).empty());
  IRModule symbolic = parse("            out = R.nn.relu(x)\n            R.output(out)\n",
                            "x: R.Tensor((\"n\", 4), dtype=\"float32\")",
                            "R.Tensor((\"n\", 4), dtype=\"float32\")");
  EXPECT_TRUE(composites(transform::partition_for("example_npu", symbolic)).empty());
  // relax.sigmoid is not in the table (TVM's pattern names relax.nn.sigmoid): only the add goes.
  IRModule mixed = parse(
      "            s = R.sigmoid(x)\n            out = R.add(s, x)\n            R.output(out)\n",
      "x: " + tensor("3, 5"), tensor("3, 5"));
  EXPECT_EQ(composites(transform::partition_for("example_npu", mixed)),
            std::vector<std::string>{"example_npu.add"});
  check_against_host(mixed);
}

TEST(ExampleNpu, TheCodegenRefusesWhatTheRuntimeCannotRun) {
  // An offloaded function that calls an operator outside a composite (annotated by hand).
  IRModule mod = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((2, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        R.func_attr({"Codegen": "example_npu", "global_symbol": "f"})
        y: R.Tensor((2, 2), dtype="float32") = R.nn.relu(x)
        return y

    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        cls = Module
        y: R.Tensor((2, 2), dtype="float32") = cls.f(x)
        return y
)");
  try {
    codegen::build(mod, codegen::BuildOptions({}, false));
    ADD_FAILURE() << "expected the codegen to refuse f";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("operator relax.nn.relu is called outside a composite function"),
        std::string::npos)
        << e.what();
  }
}

TEST(ExampleNpu, MalformedModuleBytesAreCleanErrors) {
  const runtime::ModuleFormat format{"example_npu", 0x55504E50, 1};
  EXPECT_THROW(runtime::load_module_from_binary("example_npu", "short"), Error);
  auto load_graph = [&](const std::string& graph) {
    try {
      runtime::load_module_from_binary("example_npu",
                                       runtime::write_module_sections(format, {graph}));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(load_graph("{\"functions\": 3}").find("malformed graph"), std::string::npos);
  const std::string f =
      R"({"functions": [{"symbol": "f", "values": [[2]], "inputs": [0], "constants": [],
      "nodes": [{"name": "example_npu.relu", "op_type": "kernel", "inputs": [0], "outputs": [%OUT%],
                 "ops": [{"op": "%OP%", "attrs": {%ATTRS%}, "inputs": [0], "outputs": [0]}]}], "outputs": [0]}]})";
  auto with = [&](std::string out, std::string op, std::string attrs) {
    std::string s = f;
    s.replace(s.find("%OUT%"), 5, out);
    s.replace(s.find("%OP%"), 4, op);
    s.replace(s.find("%ATTRS%"), 7, attrs);
    return s;
  };
  EXPECT_EQ(load_graph(with("0", "relax.nn.relu", "")), "no error");
  EXPECT_NE(load_graph(with("5", "relax.nn.relu", "")).find("value id 5 is out of range"),
            std::string::npos);
  EXPECT_NE(load_graph(with("0", "relax.nope", "")).find("operator relax.nope has no host kernel"),
            std::string::npos);
  EXPECT_NE(
      load_graph(with("0", "relax.nn.relu", "\"a\": [\"blob\", 1]")).find("unknown kind 'blob'"),
      std::string::npos);
  std::string other_version =
      runtime::write_module_sections({"example_npu", 0x55504E50, 2}, {"{}"});
  try {
    runtime::load_module_from_binary("example_npu", other_version);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported example_npu module version 2"),
              std::string::npos)
        << e.what();
  }
}

TEST(ExampleNpu, AModuleMadeFromItsGraphAloneSavesAsAnExampleNpuModule) {
  // TVM's runtime.ExampleNPUJSONRuntimeCreate path: the "example_npu.json" loader takes the graph.
  const std::string graph =
      R"({"functions": [{"symbol": "f", "values": [[3], [3]], "inputs": [0], "constants": [],
      "nodes": [{"name": "example_npu.relu", "op_type": "kernel", "inputs": [0], "outputs": [1],
                 "ops": [{"op": "relax.nn.relu", "attrs": {}, "inputs": [0], "outputs": [1]}]}], "outputs": [1]}]})";
  auto mod = runtime::load_module_from_binary("example_npu.json", graph);
  EXPECT_EQ(mod->type_key(), "example_npu");
  std::string bytes;
  mod->save_to_binary(bytes);
  auto again = runtime::load_module_from_binary("example_npu", bytes);
  Tensor x = Tensor::empty({3}, DataType::Float(32)), y = Tensor::empty({3}, DataType::Float(32));
  x.data_as<float>()[0] = -1, x.data_as<float>()[1] = 2, x.data_as<float>()[2] = -3;
  std::vector<Tensor> in = {x}, out = {y};
  again->get_function("f")(in, out);
  EXPECT_EQ(y.data_as<float>()[0], 0.f);
  EXPECT_EQ(y.data_as<float>()[1], 2.f);
  EXPECT_EQ(y.data_as<float>()[2], 0.f);
}

}  // namespace
}  // namespace partita
