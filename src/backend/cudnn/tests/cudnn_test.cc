// The cudnn backend without a GPU: patterns and checks before / after in the text format, what
// stays on the host, the program the codegen writes (NHWC between convolutions, weights
// converted once), the module format round trip and malformed module bytes.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "../module_format.h"
#include "cudnn_util.h"
#include "partita/backend/registry.h"
#include "partita/codegen/codegen.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/ops.h"
#include "partita/runtime/module_sections.h"

namespace partita::backend::cudnn::testing {
namespace {

using json = nlohmann::json;

const std::string kHeader = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
)";

/// conv2d of x (1, 8, 6, 6) by w (16, 8 / groups, 3, 3) as `lv`, then `body` (ending in gv).
std::string conv_module(const std::string& dtype, const std::string& body, const std::string& extra = "",
                        const std::string& conv_attrs = "groups=1, data_layout=\"NCHW\"", int64_t groups = 1) {
  std::string text = kHeader + R"(    @R.function
    def main(x: R.Tensor((1, 8, 6, 6), dtype="DT"), w: R.Tensor((16, WC, 3, 3), dtype="DT"), b: R.Tensor((1, 16, 1, 1), dtype="DT")EXTRA) -> R.Tensor((1, 16, 6, 6), dtype="DT"):
        with R.dataflow():
            lv: R.Tensor((1, 16, 6, 6), dtype="DT") = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], CONV, kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
)" + body + R"(            R.output(gv)
        return gv
)";
  text = replace_all(text, "CONV", conv_attrs);
  text = replace_all(text, "WC", std::to_string(8 / groups));
  text = replace_all(text, "EXTRA", extra);
  return replace_all(text, "DT", dtype);
}

/// q, k, v (2, SQ, 4, H) attention as gv.
std::string attention_module(const std::string& dtype, int64_t sq, int64_t skv, int64_t h, const std::string& call,
                             const std::string& extra = "") {
  std::string text = kHeader + R"(    @R.function
    def main(q: R.Tensor((2, SQ, 4, H), dtype="DT"), k: R.Tensor((2, SKV, 4, H), dtype="DT"), v: R.Tensor((2, SKV, 4, H), dtype="DT")EXTRA) -> R.Tensor((2, SQ, 4, H), dtype="DT"):
        with R.dataflow():
            gv: R.Tensor((2, SQ, 4, H), dtype="DT") = CALL
            R.output(gv)
        return gv
)";
  text = replace_all(text, "CALL", call);
  text = replace_all(text, "EXTRA", extra);
  text = replace_all(text, "SKV", std::to_string(skv));
  text = replace_all(text, "SQ", std::to_string(sq));
  text = replace_all(text, "H)", std::to_string(h) + ")");
  return replace_all(text, "DT", dtype);
}

std::vector<std::string> composites(const IRModule& mod) {
  std::vector<std::string> names;
  std::function<void(const Expr&)> visit = [&](const Expr& e) {
    const auto* f = e.as<FunctionNode>();
    if (!f) return;
    if (auto it = f->attrs.find("Composite"); it != f->attrs.end()) names.push_back(std::get<std::string>(it->second));
    if (const auto* seq = f->body.as<SeqExprNode>())
      for (const auto& block : seq->blocks)
        for (const auto& b : block->bindings)
          if (const auto* vb = b.as<VarBindingNode>()) visit(vb->value);
  };
  for (const auto& [gv, fn] : mod.functions()) visit(fn);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CudnnPatterns, ConvBiasReluBeforeAfter) {
  std::string before = conv_module("float16", R"(            lv1: R.Tensor((1, 16, 6, 6), dtype="float16") = R.add(lv, b)
            gv: R.Tensor((1, 16, 6, 6), dtype="float16") = R.nn.relu(lv1)
)");
  const std::string expected = kHeader + R"(    @R.function
    def fused_relax_nn_conv2d_relax_add_relax_nn_relu_cudnn(x: R.Tensor((1, 8, 6, 6), dtype="float16"), w: R.Tensor((16, 8, 3, 3), dtype="float16"), b: R.Tensor((1, 16, 1, 1), dtype="float16")) -> R.Tensor((1, 16, 6, 6), dtype="float16"):
        R.func_attr({"Codegen": "cudnn"})
        # from tvm.script import relax as R

        @R.function
        def local_func(x_1: R.Tensor((1, 8, 6, 6), dtype="float16"), w_1: R.Tensor((16, 8, 3, 3), dtype="float16"), b_1: R.Tensor((1, 16, 1, 1), dtype="float16")) -> R.Tensor((1, 16, 6, 6), dtype="float16"):
            R.func_attr({"Composite": "cudnn.conv2d_bias_relu"})
            with R.dataflow():
                lv: R.Tensor((1, 16, 6, 6), dtype="float16") = R.nn.conv2d(x_1, w_1, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
                lv1: R.Tensor((1, 16, 6, 6), dtype="float16") = R.add(lv, b_1)
                gv: R.Tensor((1, 16, 6, 6), dtype="float16") = R.nn.relu(lv1)
                R.output(gv)
            return gv

        output: R.Tensor((1, 16, 6, 6), dtype="float16") = local_func(x, w, b)
        return output

    @R.function
    def main(x: R.Tensor((1, 8, 6, 6), dtype="float16"), w: R.Tensor((16, 8, 3, 3), dtype="float16"), b: R.Tensor((1, 16, 1, 1), dtype="float16")) -> R.Tensor((1, 16, 6, 6), dtype="float16"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((1, 16, 6, 6), dtype="float16") = cls.fused_relax_nn_conv2d_relax_add_relax_nn_relu_cudnn(x, w, b)
            R.output(gv)
        return gv
)";
  IRModule after = partition_for_cudnn(script::parse_module(before), /*merge=*/false);
  EXPECT_TRUE(well_formed(after));
  EXPECT_TRUE(structural_equal(after, script::parse_module(expected))) << script::print_module(after);
}

struct HostCase {
  std::string what, text;
  std::vector<std::string> offloaded;  // composite names, sorted
};

TEST(CudnnChecks, AcceptExactlyWhatTheRuntimeRuns) {
  const std::string relu = "            gv: R.Tensor((1, 16, 6, 6), dtype=\"DT\") = R.nn.relu(lv)\n";
  auto bias_then = [](const std::string& dt, const std::string& tail) {
    return replace_all("            lv1: R.Tensor((1, 16, 6, 6), dtype=\"DT\") = R.add(lv, b)\n" + tail, "DT", dt);
  };
  const std::string res = ", r: R.Tensor((1, 16, 6, 6), dtype=\"DT\")";
  const std::vector<HostCase> cases = {
      {"fp32 conv + relu", conv_module("float32", replace_all(relu, "DT", "float32")), {"cudnn.conv2d_relu"}},
      {"bf16 conv + bias + residual + clip",
       conv_module("bfloat16",
                   bias_then("bfloat16",
                             "            lv2: R.Tensor((1, 16, 6, 6), dtype=\"bfloat16\") = R.add(lv1, r)\n"
                             "            gv: R.Tensor((1, 16, 6, 6), dtype=\"bfloat16\") = R.clip(lv2, R.prim_value(0), R.prim_value(6))\n"),
                   replace_all(res, "DT", "bfloat16")),
       {"cudnn.conv2d_bias_add"}},  // the clip left to the generated kernels (kFuseClipConfig)
      {"fp16 conv + bias + gelu / silu / sigmoid",
       conv_module("float16", bias_then("float16",
                                        "            lv2: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.nn.gelu(lv1)\n"
                                        "            lv3: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.nn.silu(lv2)\n"
                                        "            gv: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.sigmoid(lv3)\n")),
       {"cudnn.conv2d_bias_gelu"}},
      {"depthwise stays for the generated kernels",
       conv_module("float16", bias_then("float16", "            gv: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.nn.relu(lv1)\n"), "",
                   "groups=8, data_layout=\"NCHW\"", 8),
       {}},
      {"float64 stays", conv_module("float64", replace_all(relu, "DT", "float64")), {}},
      {"NHWC data stays",
       replace_all(replace_all(conv_module("float16", replace_all(relu, "DT", "float16")), "(1, 8, 6, 6)", "(1, 6, 6, 8)"),
                   "data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"NCHW\"",
                   "data_layout=\"NHWC\", kernel_layout=\"OIHW\", out_layout=\"NCHW\""),
       {}},
      {"a scalar add is no bias",
       conv_module("float16", "            gv: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.add(lv, R.const(1.0, \"float16\"))\n"),
       {"cudnn.conv2d"}},
      {"a leaking intermediate keeps the epilogue on the host",
       replace_all(conv_module("float16", "            lv1: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.nn.relu(lv)\n"
                                          "            gv: R.Tuple(R.Tensor((1, 16, 6, 6), dtype=\"float16\"), R.Tensor((1, 16, 6, 6), dtype=\"float16\")) = (lv, lv1)\n"),
                   "-> R.Tensor((1, 16, 6, 6), dtype=\"float16\"):",
                   "-> R.Tuple(R.Tensor((1, 16, 6, 6), dtype=\"float16\"), R.Tensor((1, 16, 6, 6), dtype=\"float16\")):"),
       {"cudnn.conv2d"}},
      {"fp16 attention", attention_module("float16", 16, 16, 64, "R.nn.attention(q, k, v)"), {"cudnn.attention"}},
      {"bf16 causal attention with a bias stays unless asked (kBiasedAttentionConfig)",
       attention_module("bfloat16", 8, 24, 32, "R.nn.attention(q, k, v, m, causal_mask=\"TopLeft\")",
                        ", m: R.Tensor((2, 1, 1, 24), dtype=\"bfloat16\")"),
       {}},
      {"BottomRight with a bias stays",
       attention_module("float16", 8, 24, 32, "R.nn.attention(q, k, v, m, causal_mask=\"BottomRight\")",
                        ", m: R.Tensor((2, 1, 1, 24), dtype=\"float16\")"),
       {}},
      {"grouped bf16 conv + bias + gelu leaves the gelu on the host",
       conv_module("bfloat16", bias_then("bfloat16", "            gv: R.Tensor((1, 16, 6, 6), dtype=\"bfloat16\") = R.nn.gelu(lv1)\n"), "",
                   "groups=2, data_layout=\"NCHW\"", 2),
       {"cudnn.conv2d_bias"}},
      {"grouped fp16 conv + bias + gelu is fused",
       conv_module("float16", bias_then("float16", "            gv: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.nn.gelu(lv1)\n"), "",
                   "groups=2, data_layout=\"NCHW\"", 2),
       {"cudnn.conv2d_bias_gelu"}},
      {"fp32 conv + bias + gelu leaves the gelu on the host",
       conv_module("float32", bias_then("float32", "            gv: R.Tensor((1, 16, 6, 6), dtype=\"float32\") = R.nn.gelu(lv1)\n")),
       {"cudnn.conv2d_bias"}},
      {"fp32 attention stays", attention_module("float32", 16, 16, 64, "R.nn.attention(q, k, v)"), {}},
      {"head dim 12 stays", attention_module("float16", 16, 16, 12, "R.nn.attention(q, k, v)"), {}},
      {"BottomRight with more queries than keys stays",
       attention_module("float16", 24, 8, 64, "R.nn.attention(q, k, v, causal_mask=\"BottomRight\")"), {}},
  };
  for (const HostCase& c : cases) {
    SCOPED_TRACE(c.what);
    IRModule after = partition_for_cudnn(script::parse_module(c.text));
    EXPECT_TRUE(well_formed(after));
    EXPECT_EQ(composites(after), c.offloaded) << script::print_module(after);
  }
}

// Placement preferences: depthwise convolutions are offloaded only when asked (by the argument or
// the PassContext), fused clips only when the PassContext asks.
TEST(CudnnPatterns, DepthwiseAndClipAreOffloadedOnlyWhenAsked) {
  const std::string text = conv_module(
      "float16", "            lv1: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.add(lv, b)\n"
                 "            gv: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.nn.relu(lv1)\n",
      "", "groups=8, data_layout=\"NCHW\"", 8);
  const std::vector<std::string> offloaded{"cudnn.conv2d_bias_relu"};
  EXPECT_EQ(composites(partition_for_cudnn(script::parse_module(text))), std::vector<std::string>{});
  EXPECT_EQ(composites(partition_for_cudnn(script::parse_module(text), true, true, true)), offloaded);
  transform::PassContext ctx;
  ctx.config[kTakeDepthwiseConfig] = int64_t(1);
  {
    transform::PassContext::Scope scope(ctx);
    EXPECT_EQ(composites(partition_for_cudnn(script::parse_module(text))), offloaded);
    EXPECT_EQ(composites(partition_for_cudnn(script::parse_module(text), true, true, false)), std::vector<std::string>{});
  }
  // A clip (ReLU6) is fused only when asked.
  const std::string clipped = conv_module(
      "float16", "            gv: R.Tensor((1, 16, 6, 6), dtype=\"float16\") = R.clip(lv, R.prim_value(0), R.prim_value(6))\n");
  EXPECT_EQ(composites(partition_for_cudnn(script::parse_module(clipped))), std::vector<std::string>{"cudnn.conv2d"});
  transform::PassContext fuse_clip;
  fuse_clip.config[kFuseClipConfig] = true;
  {
    transform::PassContext::Scope scope(fuse_clip);
    EXPECT_EQ(composites(partition_for_cudnn(script::parse_module(clipped))), std::vector<std::string>{"cudnn.conv2d_clip"});
  }
  ctx.config[kTakeDepthwiseConfig] = std::string("yes");
  transform::PassContext::Scope scope(ctx);
  try {
    partition_for_cudnn(script::parse_module(text));
    ADD_FAILURE() << "a string config was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudnn.depthwise must be a bool or an int"), std::string::npos) << e.what();
  }
}

/// BERT's attention as exported (q, k, v (2, 16, 4, 64), an additive mask) in `dtype`.
std::string attention_chain_module(const std::string& dtype) {
  return replace_all(kHeader + R"(    @R.function
    def main(q: R.Tensor((2, 16, 4, 64), dtype="float16"), k: R.Tensor((2, 16, 4, 64), dtype="float16"), v: R.Tensor((2, 16, 4, 64), dtype="float16"), mask: R.Tensor((2, 1, 1, 16), dtype="float16")) -> R.Tensor((2, 16, 4, 64), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((2, 4, 16, 64), dtype="float16") = R.permute_dims(q, axes=[0, 2, 1, 3])
            lv1: R.Tensor((2, 4, 64, 16), dtype="float16") = R.permute_dims(k, axes=[0, 2, 3, 1])
            lv2: R.Tensor((2, 4, 16, 64), dtype="float16") = R.permute_dims(v, axes=[0, 2, 1, 3])
            lv3: R.Tensor((2, 4, 16, 16), dtype="float16") = R.matmul(lv, lv1, out_dtype="void")
            lv4: R.Tensor((2, 4, 16, 16), dtype="float16") = R.divide(lv3, R.const(8.0, "float16"))
            lv5: R.Tensor((2, 4, 16, 16), dtype="float16") = R.add(lv4, mask)
            lv6: R.Tensor((2, 4, 16, 16), dtype="float16") = R.nn.softmax(lv5, axis=-1)
            lv7: R.Tensor((2, 4, 16, 64), dtype="float16") = R.matmul(lv6, lv2, out_dtype="void")
            gv: R.Tensor((2, 16, 4, 64), dtype="float16") = R.permute_dims(lv7, axes=[0, 2, 1, 3])
            R.output(gv)
        return gv
)", "float16", dtype);
}

// BERT's attention as exported: rewritten to R.nn.attention before partitioning.
TEST(CudnnPatterns, BertChainIsRewrittenThenOffloaded) {
  const std::string text = attention_chain_module("float16");
  transform::PassContext biased;
  biased.config[kBiasedAttentionConfig] = true;
  transform::PassContext::Scope scope(biased);
  IRModule after = partition_for_cudnn(script::parse_module(text));
  EXPECT_EQ(composites(after), std::vector<std::string>{"cudnn.attention_bias"}) << script::print_module(after);
}

// The prepare step runs before any backend partitions (the CLI's --backends cublas,cudnn): the
// attention chains cuDNN runs become R.nn.attention before cuBLAS could take their matmuls; a
// chain it cannot run (float32) stays matmul and softmax.
TEST(CudnnPrepare, RewritesOnlyTheAttentionCudnnRuns) {
  auto count_of = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  auto prepared = [&](const std::string& dtype) {
    return script::print_module(
        backend::prepare_for({"cublas", "cudnn"}, script::parse_module(attention_chain_module(dtype))));
  };
  {
    transform::PassContext biased;
    biased.config[kBiasedAttentionConfig] = true;
    transform::PassContext::Scope scope(biased);
    const std::string half = prepared("float16");
    EXPECT_EQ(count_of(half, "R.nn.attention_bias("), 1) << half;
    EXPECT_EQ(count_of(half, "R.nn.softmax("), 0) << half;
  }
  // By default a biased attention stays matmul and softmax (kBiasedAttentionConfig).
  const std::string plain = prepared("float16");
  EXPECT_EQ(count_of(plain, "R.nn.attention"), 0) << plain;
  EXPECT_EQ(count_of(plain, "R.nn.softmax("), 1) << plain;
  IRModule single = backend::prepare_for({"cublas", "cudnn"}, script::parse_module(attention_chain_module("float32")));
  EXPECT_TRUE(well_formed(single));
  const std::string full = script::print_module(single);
  EXPECT_EQ(count_of(full, "R.nn.attention"), 0) << full;
  EXPECT_EQ(count_of(full, "R.nn.softmax("), 1) << full;
}

std::vector<codegen::CodegenFunction> cudnn_functions(const IRModule& mod) {
  std::vector<codegen::CodegenFunction> out;
  for (const auto& [gv, fn] : mod.functions())
    if (const auto* f = fn.as<FunctionNode>(); f && f->attrs.count("Codegen"))
      out.push_back({gv->name_hint, fn.as_ref<FunctionNode>()});
  return out;
}

json program_of(const IRModule& partitioned) {
  auto result = codegen(cudnn_functions(partitioned), codegen::Target("cudnn"), {});
  EXPECT_EQ(result.modules.size(), 1u);
  return json::parse(result.modules.at(0)->get_source());
}

// Two convolutions in one partition: the activation is converted where it enters and leaves,
// each weight by a node of a constant (run once at load), never between the convolutions.
TEST(CudnnCodegen, NhwcBetweenConvolutionsWeightsConvertedOnce) {
  const DataType f16 = DataType::Float(16);
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{1, 8, 6, 6}, f16));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Expr w1 = make<ConstantNode>(random_tensor({8, 8, 3, 3}, f16, 1));
  Expr w2 = make<ConstantNode>(random_tensor({8, 1, 3, 3}, f16, 2));
  Var lv = bb.emit(op::nn::conv2d(x, w1, {1, 1}, {1, 1}));
  Var lv1 = bb.emit(op::nn::relu(lv));
  Var gv = bb.emit_output(op::nn::conv2d(lv1, w2, {1, 1}, {1, 1}, {1, 1}, 8));
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule after = partition_for_cudnn(bb.get(), true, true, /*depthwise=*/true);
  ASSERT_EQ(composites(after), (std::vector<std::string>{"cudnn.conv2d", "cudnn.conv2d_relu"}));
  json program = program_of(after);
  ASSERT_EQ(program["functions"].size(), 1u);
  const json& f = program["functions"][0];
  std::vector<std::string> ops;
  std::set<int> constants;
  for (const json& c : f["constants"]) constants.insert(c["value"].get<int>());
  int activation_conversions = 0;
  for (const json& n : f["nodes"]) {
    ops.push_back(n["op"]);
    if (n["op"] == "to_nhwc" && !constants.count(n["in"][0].get<int>())) ++activation_conversions;
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"to_nhwc", "to_nhwc", "conv2d", "to_nhwc", "conv2d", "to_nchw"}));
  EXPECT_EQ(activation_conversions, 1);
  EXPECT_EQ(constants.size(), 2u);
  EXPECT_EQ(f["nodes"][4]["groups"], 8);
  EXPECT_EQ(f["nodes"][2]["activation"], "relu");
}

runtime::ModulePtr module_from(const std::string& program) {
  return runtime::load_module_from_binary("cudnn", runtime::write_module_sections(kModuleFormat, {program}));
}

TEST(CudnnModuleFormat, RoundTripAndExportWithoutAGpu) {
  IRModule mod = partition_for_cudnn(script::parse_module(attention_module("float16", 16, 16, 64, "R.nn.attention(q, k, v)")));
  json program = program_of(mod);
  runtime::ModulePtr m = module_from(program.dump());
  std::string bytes;
  m->save_to_binary(bytes);
  runtime::ModulePtr again = runtime::load_module_from_binary("cudnn", bytes);
  EXPECT_EQ(again->get_source(), m->get_source());
  EXPECT_EQ(again->function_names(), m->function_names());
  EXPECT_EQ(again->device_kind(), DeviceKind::kCUDA);
  // A whole executable exports and loads back on a machine without a GPU.
  auto exec = codegen::build(mod, codegen::BuildOptions({codegen::Target("cudnn")}, false));
  auto path = std::filesystem::temp_directory_path() / ("partita_cudnn_" + std::to_string(getpid()) + ".ptx");
  exec->export_library(path.string());
  auto loaded = runtime::load_module(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded);
}

TEST(CudnnModuleFormat, MalformedBytesGiveErrors) {
  auto error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.kind() + ": " + e.message();
    }
    return "";
  };
  const std::string good = R"({"version": 1, "functions": [{"symbol": "f", "values": [{"shape": [1, 2, 3, 4], "dtype": "float16", "layout": "logical"}, {"shape": [1, 2, 3, 4], "dtype": "float16", "layout": "nhwc"}], "inputs": [0], "outputs": [1], "constants": [], "nodes": [{"op": "to_nhwc", "in": [0], "out": 1}]}]})";
  EXPECT_EQ(error_of([&] { module_from(good); }), "");
  EXPECT_NE(error_of([&] { runtime::load_module_from_binary("cudnn", "not a module"); }).find("ValueError"), std::string::npos);
  EXPECT_NE(error_of([&] { module_from("{\"version\": 1, "); }).find("malformed program"), std::string::npos);
  EXPECT_NE(error_of([&] { module_from(replace_all(good, "\"version\": 1", "\"version\": 7")); }).find("version"),
            std::string::npos);
  EXPECT_NE(error_of([&] { module_from(replace_all(good, "\"out\": 1", "\"out\": 9")); }).find("names value 9"),
            std::string::npos);
  EXPECT_NE(error_of([&] { module_from(replace_all(good, "to_nhwc", "fft")); }).find("unknown node \"fft\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { module_from(replace_all(good, "\"dtype\": \"float16\"", "\"dtype\": \"float99\"")); })
                .find("dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] { module_from(replace_all(good, ", \"inputs\": [0]", "")); }).find("no \"inputs\""),
            std::string::npos);
}

TEST(CudnnTarget, AllowTf32IsChecked) {
  IRModule mod = partition_for_cudnn(script::parse_module(attention_module("float16", 16, 16, 64, "R.nn.attention(q, k, v)")));
  auto error = [&]() -> std::string {
    try {
      codegen(cudnn_functions(mod), codegen::Target("cudnn", {{"allow_tf32", int64_t(3)}}), {});
    } catch (const Error& e) {
      return e.message();
    }
    return "";
  }();
  EXPECT_NE(error.find("allow_tf32"), std::string::npos);
}

// autotune=1 times the engines at load (PyTorch's cudnn.benchmark); by default (0, as PyTorch's
// default) the heuristic's first choice runs; the program carries the choice to the runtime.
TEST(CudnnTarget, AutotuneIsAnOptionAndChecked) {
  IRModule mod = partition_for_cudnn(script::parse_module(attention_module("float16", 16, 16, 64, "R.nn.attention(q, k, v)")));
  auto program = [&](const codegen::Target& t) {
    return codegen(cudnn_functions(mod), t, {}).modules.at(0)->get_source();
  };
  EXPECT_NE(program(codegen::Target("cudnn")).find("\"autotune\":false"), std::string::npos);
  EXPECT_NE(program(codegen::Target("cudnn", {{"autotune", int64_t(1)}})).find("\"autotune\":true"), std::string::npos);
  try {
    program(codegen::Target("cudnn", {{"autotune", int64_t(2)}}));
    ADD_FAILURE() << "autotune=2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("autotune must be 0 or 1"), std::string::npos) << e.message();
  }
  // autotune_top_k bounds the engines built and timed (0, the default: every engine).
  EXPECT_NE(program(codegen::Target("cudnn")).find("\"autotune_top_k\":0"), std::string::npos);
  EXPECT_NE(program(codegen::Target("cudnn", {{"autotune", int64_t(1)}, {"autotune_top_k", int64_t(4)}}))
                .find("\"autotune_top_k\":4"),
            std::string::npos);
  try {
    program(codegen::Target("cudnn", {{"autotune_top_k", int64_t(-1)}}));
    ADD_FAILURE() << "autotune_top_k=-1 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("autotune_top_k must be >= 0"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace partita::backend::cudnn::testing

namespace partita::backend::cudnn::testing {
namespace {

// What cudnn refuses (float32 attention) and the cuda target cannot compile whole is decomposed
// by build() into matmul / softmax kernels of the cuda target, not left to the host kernel.
TEST(CudnnWithCudaTarget, RefusedAttentionBecomesGeneratedKernels) {
  IRModule mod = partition_for_cudnn(script::parse_module(attention_module("float32", 16, 16, 64, "R.nn.attention(q, k, v)")));
  ASSERT_TRUE(composites(mod).empty());
  const char* cache = std::getenv("PARTITA_TEST_CUDA_CACHE");
  codegen::Target cuda("cuda", {{"cache_dir", std::string(cache && *cache ? cache : PARTITA_BINARY_DIR "/cuda_kernel_cache")}});
  auto exec = codegen::build(mod, codegen::BuildOptions({codegen::Target("cudnn"), cuda}, false));
  const std::string text = exec->as_text();
  EXPECT_EQ(text.find("relax.nn.attention"), std::string::npos) << text;
  // The prepare step gave the refused attention back as the operators it is made of (as
  // `partita compile` does), so the host build runs them too.
  auto host = codegen::build(mod);
  EXPECT_EQ(host->as_text().find("relax.nn.attention"), std::string::npos);
  EXPECT_NE(host->as_text().find("relax.nn.softmax"), std::string::npos) << host->as_text();
}

}  // namespace
}  // namespace partita::backend::cudnn::testing
