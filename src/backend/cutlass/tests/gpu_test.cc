// The cutlass backend on a GPU: the seed tutorial through both composite paths, every pattern
// family (fp16, bf16, TF32, int8) against a float32 host reference, CUDA Graph replays of a
// module, a differential test over 216 random graphs, the profiler measuring and caching.
// Without a GPU these tests skip; with
// PARTITA_TEST_CUTLASS_PRECOMPILE=1 they still build every module, filling the object cache
// that the GPU machine is handed (so it runs no nvcc).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "../cutlass_codegen.h"
#include "../profiler.h"
#include "cutlass_test_util.h"

namespace partita {
namespace {

using cutlass_test::fill;

bool precompile_only() {
  const char* on = std::getenv("PARTITA_TEST_CUTLASS_PRECOMPILE");
  return on && std::string(on) == "1" && !cutlass_test::gpu_available();
}

// Skips without a GPU, unless precompiling (then the test builds and stops before running).
#define REQUIRE_GPU_OR_PRECOMPILE()                                                   \
  do {                                                                                \
    if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built"; \
    if (!cutlass_test::gpu_available() && !precompile_only())                         \
      GTEST_SKIP() << "no CUDA device here: the run-time tests of the cutlass backend need one"; \
  } while (0)

std::shared_ptr<runtime::Executable> build_for_gpu(const IRModule& parted, codegen::TargetOptionMap options = {}) {
  if (precompile_only()) {
    cutlass_test::compile_glue_only(parted, cutlass_test::test_target(options));
    return nullptr;
  }
  return codegen::build(parted, codegen::BuildOptions({cutlass_test::test_target(options)}, /*fallback=*/false));
}

std::vector<Tensor> run(const std::shared_ptr<runtime::Executable>& exec, const std::vector<Tensor>& inputs) {
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  std::vector<Tensor> out = vm.invoke("main", inputs);
  for (auto& t : out) t = t.to(Device::cpu());
  return out;
}

std::vector<std::string> composites(const IRModule& m) {
  std::vector<std::string> out;
  std::string text = script::print_module(m), key = "\"Composite\": \"";
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    size_t b = at + key.size();
    out.push_back(text.substr(b, text.find('"', b) - b));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CutlassGpu, SeedTutorialBothPathsReturnXTimesY) {
  REQUIRE_GPU_OR_PRECOMPILE();
  const char* seed = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            R.output(a)
        return a
)";
  IRModule m = script::parse_module(seed);
  Tensor x = cutlass_test::random_input({10, 10}, DataType::Float(32), 1), y = cutlass_test::random_input({10, 10}, DataType::Float(32), 2);
  for (bool merge : {false, true}) {
    auto exec = build_for_gpu(transform::partition_for("cutlass", m, merge));
    if (precompile_only()) continue;
    Tensor got = run(exec, {x, y}).at(0);
    for (int i = 0; i < 100; ++i)
      ASSERT_EQ(got.data_as<float>()[i], x.data_as<float>()[i] * y.data_as<float>()[i]) << (merge ? "path 2" : "path 1");
  }
}

// Every family in one module (one generated translation unit per dtype and path): M is
// symbolic, so the same compiled code runs every M.
const char* kFamilies = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64), dtype="{dt}"), w: R.Tensor((64, 128), dtype="{dt}"), wt: R.Tensor((128, 64), dtype="{dt}"), b: R.Tensor((128,), dtype="{dt}"), r: R.Tensor(("n", 128), dtype="{dt}"), cx: R.Tensor((2, 8, 8, 16), dtype="{dt}"), cw: R.Tensor((32, 3, 3, 16), dtype="{dt}"), cw1: R.Tensor((32, 1, 1, 16), dtype="{dt}"), cb: R.Tensor((32,), dtype="{dt}"), cr: R.Tensor((2, 8, 8, 32), dtype="{dt}"), g: R.Tensor((128,), dtype="{dt}"), be: R.Tensor((128,), dtype="{dt}")) -> R.Tuple(R.Tensor(("n", 128), dtype="{dt}"), R.Tensor(("n", 128), dtype="{dt}"), R.Tensor(("n", 128), dtype="{dt}"), R.Tensor(("n", 128), dtype="{dt}"), R.Tensor(("n", 128), dtype="{dt}"), R.Tensor((2, 8, 8, 32), dtype="{dt}"), R.Tensor((2, 8, 8, 32), dtype="{dt}"), R.Tensor(("n", 128), dtype="{dt}"), R.Tensor(("n", 128), dtype="{dt}"), R.Tensor(("n", 128), dtype="{dt}")):
        n = T.int64()
        with R.dataflow():
            o1: R.Tensor((n, 128), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            m2: R.Tensor((n, 128), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            a2: R.Tensor((n, 128), dtype="{dt}") = R.add(m2, b)
            o2: R.Tensor((n, 128), dtype="{dt}") = R.nn.gelu(a2)
            t3: R.Tensor((64, 128), dtype="{dt}") = R.permute_dims(wt, axes=None)
            m3: R.Tensor((n, 128), dtype="{dt}") = R.matmul(x, t3, out_dtype="void")
            a3: R.Tensor((n, 128), dtype="{dt}") = R.add(m3, b)
            o3: R.Tensor((n, 128), dtype="{dt}") = R.nn.silu(a3)
            m4: R.Tensor((n, 128), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            a4: R.Tensor((n, 128), dtype="{dt}") = R.add(m4, b)
            r4: R.Tensor((n, 128), dtype="{dt}") = R.nn.relu(a4)
            s4: R.Tensor((n, 128), dtype="{dt}") = R.add(r4, r)
            o4: R.Tensor((n, 128), dtype="{dt}") = R.nn.relu(s4)
            m5: R.Tensor((n, 128), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            a5: R.Tensor((n, 128), dtype="{dt}") = R.add(m5, b)
            g5: R.Tensor((n, 128), dtype="{dt}") = R.nn.gelu_tanh(a5)
            o5: R.Tensor((n, 128), dtype="{dt}") = R.multiply(g5, r)
            c6: R.Tensor((2, 8, 8, 32), dtype="{dt}") = R.nn.conv2d(cx, cw, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="void")
            a6: R.Tensor((2, 8, 8, 32), dtype="{dt}") = R.add(c6, cb)
            o6: R.Tensor((2, 8, 8, 32), dtype="{dt}") = R.nn.relu(a6)
            c7: R.Tensor((2, 8, 8, 32), dtype="{dt}") = R.nn.conv2d(cx, cw1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="void")
            a7: R.Tensor((2, 8, 8, 32), dtype="{dt}") = R.add(c7, cb)
            s7: R.Tensor((2, 8, 8, 32), dtype="{dt}") = R.nn.silu(a7)
            o7: R.Tensor((2, 8, 8, 32), dtype="{dt}") = R.add(s7, cr)
            o8: R.Tensor((n, 128), dtype="{dt}") = R.nn.layer_norm(r, g, be, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)
            q9: R.Tensor((n, 128), dtype="{dt}") = R.multiply(r, r)
            e9: R.Tensor((n, 1), dtype="{dt}") = R.mean(q9, axis=[-1], keepdims=True)
            eps9: R.Tensor((), dtype="{dt}") = R.astype(R.const(9.9999997e-07, "float32"), dtype="{dt}")
            p9: R.Tensor((n, 1), dtype="{dt}") = R.add(e9, eps9)
            s9: R.Tensor((n, 1), dtype="{dt}") = R.rsqrt(p9)
            x9: R.Tensor((n, 128), dtype="{dt}") = R.multiply(r, s9)
            o9: R.Tensor((n, 128), dtype="{dt}") = R.multiply(x9, g)
            o10: R.Tensor((n, 128), dtype="{dt}") = R.add(r, b)
            gv: R.Tuple(R.Tensor((n, 128), dtype="{dt}"), R.Tensor((n, 128), dtype="{dt}"), R.Tensor((n, 128), dtype="{dt}"), R.Tensor((n, 128), dtype="{dt}"), R.Tensor((n, 128), dtype="{dt}"), R.Tensor((2, 8, 8, 32), dtype="{dt}"), R.Tensor((2, 8, 8, 32), dtype="{dt}"), R.Tensor((n, 128), dtype="{dt}"), R.Tensor((n, 128), dtype="{dt}"), R.Tensor((n, 128), dtype="{dt}")) = (o1, o2, o3, o4, o5, o6, o7, o8, o9, o10)
            R.output(gv)
        return gv
)";

// The host runs conv2d in NCHW / OIHW only: the reference transposes around it.
std::string nchw_reference(std::string text) {
  const std::string c6 = R"(            c6: R.Tensor((2, 8, 8, 32), dtype="float32") = R.nn.conv2d(cx, cw, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="void")
)";
  const std::string c7 = R"(            c7: R.Tensor((2, 8, 8, 32), dtype="float32") = R.nn.conv2d(cx, cw1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="void")
)";
  auto conv = [](const std::string& out, const std::string& w, int kh, const std::string& pad) {
    std::string k = std::to_string(kh);
    return "            " + out + "x: R.Tensor((2, 16, 8, 8), dtype=\"float32\") = R.permute_dims(cx, axes=[0, 3, 1, 2])\n" +
           "            " + out + "w: R.Tensor((32, 16, " + k + ", " + k + "), dtype=\"float32\") = R.permute_dims(" + w +
           ", axes=[0, 3, 1, 2])\n" + "            " + out + "n: R.Tensor((2, 32, 8, 8), dtype=\"float32\") = R.nn.conv2d(" + out +
           "x, " + out + "w, strides=[1, 1], padding=" + pad +
           ", dilation=[1, 1], groups=1, data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"NCHW\", out_dtype=\"void\")\n" +
           "            " + out + ": R.Tensor((2, 8, 8, 32), dtype=\"float32\") = R.permute_dims(" + out + "n, axes=[0, 2, 3, 1])\n";
  };
  text = fill(text, {});
  text = cutlass_test::replace_all(text, c6, conv("c6", "cw", 3, "[1, 1, 1, 1]"));
  return cutlass_test::replace_all(text, c7, conv("c7", "cw1", 1, "[0, 0, 0, 0]"));
}

std::vector<Tensor> family_inputs(DataType dt, int64_t n, uint32_t seed) {
  std::vector<std::vector<int64_t>> shapes = {{n, 64}, {64, 128}, {128, 64}, {128}, {n, 128}, {2, 8, 8, 16},
                                              {32, 3, 3, 16}, {32, 1, 1, 16}, {32}, {2, 8, 8, 32}, {128}, {128}};
  std::vector<Tensor> in;
  for (size_t i = 0; i < shapes.size(); ++i) in.push_back(cutlass_test::random_input(shapes[i], dt, seed * 31 + uint32_t(i)));
  return in;
}

std::vector<Tensor> f32_reference(const std::string& tmpl, const std::vector<std::pair<std::string, std::string>>& f32_values,
                                  const std::vector<Tensor>& inputs) {
  std::vector<Tensor> in;
  for (const auto& t : inputs) in.push_back(cutlass_test::to_f32(t));
  return cutlass_test::run_on_host(script::parse_module(nchw_reference(fill(tmpl, f32_values))), in);
}

const std::vector<std::string> kFamilyComposites = {
    "cutlass.add", "cutlass.conv2d_bias_relu", "cutlass.conv2d_bias_silu_residual_add", "cutlass.layer_norm",
    "cutlass.matmul", "cutlass.matmul_bias_gelu", "cutlass.matmul_bias_gelu_tanh_residual_multiply",
    "cutlass.matmul_bias_relu_residual_add_relu", "cutlass.matmul_transposed_bias_silu", "cutlass.rms_norm"};

TEST(CutlassGpu, EveryFamilyAgainstTheHost) {
  REQUIRE_GPU_OR_PRECOMPILE();
  const auto& expected = kFamilyComposites;
  for (DataType dt : {DataType::Float(16), DataType::BFloat16()}) {
    IRModule m = script::parse_module(fill(kFamilies, {{"dt", dt.str()}}));
    for (bool merge : {false, true}) {
      IRModule p = transform::partition_for("cutlass", m, merge);
      ASSERT_EQ(composites(p), expected) << script::print_module(p);
      auto exec = build_for_gpu(p);
      if (precompile_only()) continue;
      for (int64_t n : {1, 37, 256}) {
        auto inputs = family_inputs(dt, n, uint32_t(n));
        auto got = run(exec, inputs);
        auto want = f32_reference(kFamilies, {{"dt", "float32"}}, inputs);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          std::string why = cutlass_test::compare(got[k], want[k], cutlass_test::tolerance(dt));
          EXPECT_EQ(why, "") << dt.str() << (merge ? " merged" : " annotated") << " n=" << n << " output " << k;
        }
      }
    }
  }
}

// The VM captures a cutlass module's run into a CUDA Graph (at a signature's second call) and
// replays it: each replay reads that call's inputs and writes correct results, so the
// temporaries the graph recorded (im2col columns, merged partitions' intermediates, GEMM
// workspaces) are still the module's and nothing else's.
TEST(CutlassGpu, GraphReplaysReadNewInputsAndKeepTheirTemporaries) {
  REQUIRE_GPU_OR_PRECOMPILE();
  DataType dt = DataType::Float(16);
  IRModule m = script::parse_module(fill(kFamilies, {{"dt", dt.str()}}));
  for (bool merge : {false, true}) {
    auto exec = build_for_gpu(transform::partition_for("cutlass", m, merge));
    if (precompile_only()) continue;
    runtime::VirtualMachine vm(exec, Device::cuda(0));
    for (uint32_t call = 0; call < 4; ++call) {
      auto inputs = family_inputs(dt, 37, 100 + call);
      std::vector<Tensor> on_gpu;
      for (const auto& t : inputs) on_gpu.push_back(t.to(Device::cuda(0)));
      auto got = vm.invoke("main", on_gpu);
      auto want = f32_reference(kFamilies, {{"dt", "float32"}}, inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        std::string why = cutlass_test::compare(got[k].to(Device::cpu()), want[k], cutlass_test::tolerance(dt));
        EXPECT_EQ(why, "") << (merge ? "merged" : "annotated") << " call " << call << " output " << k;
      }
    }
    const auto& g = vm.graph_stats();
    EXPECT_EQ(g.captures, 1) << (merge ? "merged" : "annotated");
    EXPECT_EQ(g.fallbacks, 0);
    EXPECT_EQ(g.launches, 3) << "calls 2-4 through the graph";
  }
}

// float32 on the tensor cores as TF32, and int8 with int32 results (exact).
const char* kTf32Int8 = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64), dtype="{dt}"), wt: R.Tensor((128, 64), dtype="{dt}"), b: R.Tensor((128,), dtype="{odt}"), r: R.Tensor(("n", 128), dtype="{odt}")) -> R.Tuple(R.Tensor(("n", 128), dtype="{odt}"), R.Tensor(("n", 128), dtype="{odt}")):
        n = T.int64()
        with R.dataflow():
            t: R.Tensor((64, 128), dtype="{dt}") = R.permute_dims(wt, axes=None)
            o1: R.Tensor((n, 128), dtype="{odt}") = R.matmul(x, t, out_dtype="{odt}")
            t2: R.Tensor((64, 128), dtype="{dt}") = R.permute_dims(wt, axes=None)
            m2: R.Tensor((n, 128), dtype="{odt}") = R.matmul(x, t2, out_dtype="{odt}")
            a2: R.Tensor((n, 128), dtype="{odt}") = R.add(m2, b)
            r2: R.Tensor((n, 128), dtype="{odt}") = R.nn.relu(a2)
            o2: R.Tensor((n, 128), dtype="{odt}") = R.add(r2, r)
            gv: R.Tuple(R.Tensor((n, 128), dtype="{odt}"), R.Tensor((n, 128), dtype="{odt}")) = (o1, o2)
            R.output(gv)
        return gv
)";

// Attention on CUTLASS's fused kernel against the float32 host: both head-dimension classes (64
// and 128), more keys than queries (77 queries: a partial block), query / key / value read in
// place from one stacked QKV tensor; in float16 three of them (the BERT-like shapes, the stacked
// causal one, head dimension 128 over 72 keys: a partial block) on the Hopper kernel, causal masks from either corner, a bias broadcast over heads
// and one over queries, an explicit scale, a value head dimension other than the query's; and
// BERT-like shapes (sequence 128, 12 heads of 64) through a CUDA Graph replay.
const char* kAttention = R"(
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 77, 4, 64), dtype="{dt}"), k: R.Tensor((2, 80, 4, 64), dtype="{dt}"), v: R.Tensor((2, 80, 4, 64), dtype="{dt}"), b: R.Tensor((2, 1, 77, 80), dtype="{dt}"), q2: R.Tensor((1, 10, 3, 128), dtype="{dt}"), k2: R.Tensor((1, 24, 3, 128), dtype="{dt}"), v2: R.Tensor((1, 24, 3, 96), dtype="{dt}"), b2: R.Tensor((1, 3, 1, 24), dtype="{dt}"), q3: R.Tensor((2, 128, 12, 64), dtype="{dt}"), k3: R.Tensor((2, 128, 12, 64), dtype="{dt}"), v3: R.Tensor((2, 128, 12, 64), dtype="{dt}"), qkv: R.Tensor((2, 64, 768), dtype="{dt}"), q7: R.Tensor((1, 72, 2, 128), dtype="{dt}"), k7: R.Tensor((1, 72, 2, 128), dtype="{dt}"), v7: R.Tensor((1, 72, 2, 128), dtype="{dt}")):
        with R.dataflow():
            o1 = R.nn.attention(q, k, v)
            o2 = R.nn.attention(q, k, v, b, causal_mask="TopLeft")
            o3 = R.nn.attention(q2, k2, v2, scale=0.3, causal_mask="BottomRight")
            o4 = R.nn.attention(q2, k2, v2, b2)
            o5 = R.nn.attention(q3, k3, v3)
            sp = R.split(qkv, indices_or_sections=3, axis=2)
            s0 = sp[0]
            s1 = sp[1]
            s2 = sp[2]
            q6 = R.reshape(s0, R.shape([2, 64, 4, 64]))
            k6 = R.reshape(s1, R.shape([2, 64, 4, 64]))
            v6 = R.reshape(s2, R.shape([2, 64, 4, 64]))
            o6 = R.nn.attention(q6, k6, v6, causal_mask="TopLeft")
            o7 = R.nn.attention(q7, k7, v7)
            gv = (o1, o2, o3, o4, o5, o6, o7)
            R.output(gv)
        return gv
)";

TEST(CutlassGpu, AttentionAgainstTheHost) {
  REQUIRE_GPU_OR_PRECOMPILE();
  const std::vector<std::vector<int64_t>> shapes = {{2, 77, 4, 64}, {2, 80, 4, 64}, {2, 80, 4, 64}, {2, 1, 77, 80},
                                                    {1, 10, 3, 128}, {1, 24, 3, 128}, {1, 24, 3, 96}, {1, 3, 1, 24},
                                                    {2, 128, 12, 64}, {2, 128, 12, 64}, {2, 128, 12, 64}, {2, 64, 768},
                                                    {1, 72, 2, 128}, {1, 72, 2, 128}, {1, 72, 2, 128}};
  // float16 calls run on the Hopper kernel where it applies: with each of its schedules that may
  // become the default; bfloat16 calls run on example 41's kernel.
  for (auto [dt, schedule] : {std::pair{DataType::Float(16), "cooperative"}, std::pair{DataType::Float(16), "persistent"},
                              std::pair{DataType::BFloat16(), ""}}) {
    IRModule m = script::parse_module(fill(kAttention, {{"dt", dt.str()}}));
    for (bool merge : {false, true}) {
      SCOPED_TRACE(std::string(schedule));
      IRModule p = transform::partition_for("cutlass", m, merge);
      ASSERT_EQ(composites(p), (std::vector<std::string>{"cutlass.attention", "cutlass.attention", "cutlass.attention",
                                                         "cutlass.attention", "cutlass.attention_bias",
                                                         "cutlass.attention_bias", "cutlass.stacked_attention"}))
          << script::print_module(p);
      auto exec = build_for_gpu(p, {{"attention_schedule", std::string(schedule)}});
      if (precompile_only()) continue;
      runtime::VirtualMachine vm(exec, Device::cuda(0));
      for (uint32_t call = 0; call < 3; ++call) {  // the second call is captured, the third replayed
        std::vector<Tensor> inputs, on_gpu, f32;
        for (size_t i = 0; i < shapes.size(); ++i) {
          inputs.push_back(cutlass_test::random_input(shapes[i], dt, 7 * call + uint32_t(i) + 1));
          on_gpu.push_back(inputs.back().to(Device::cuda(0)));
          f32.push_back(cutlass_test::to_f32(inputs.back()));
        }
        auto got = vm.invoke("main", on_gpu);
        auto want = cutlass_test::run_on_host(script::parse_module(fill(kAttention, {{"dt", "float32"}})), f32);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          std::string why = cutlass_test::compare(got[k].to(Device::cpu()), want[k], cutlass_test::tolerance(dt));
          EXPECT_EQ(why, "") << dt.str() << (merge ? " merged" : " annotated") << " call " << call << " output " << k;
        }
      }
    }
  }
}

TEST(CutlassGpu, Tf32AndInt8AgainstTheHost) {
  REQUIRE_GPU_OR_PRECOMPILE();
  for (auto [dt, odt] : {std::pair{DataType::Float(32), DataType::Float(32)}, std::pair{DataType::Int(8), DataType::Int(32)}}) {
    IRModule m = script::parse_module(fill(kTf32Int8, {{"dt", dt.str()}, {"odt", odt.str()}}));
    IRModule p = transform::partition_for("cutlass", m, true);
    ASSERT_EQ(composites(p), (std::vector<std::string>{"cutlass.matmul_transposed", "cutlass.matmul_transposed_bias_relu_residual_add"}))
        << script::print_module(p);
    auto exec = build_for_gpu(p);
    if (precompile_only()) continue;
    for (int64_t n : {5, 200}) {
      std::vector<Tensor> in = {cutlass_test::random_input({n, 64}, dt, 1), cutlass_test::random_input({128, 64}, dt, 2),
                                dt == odt ? cutlass_test::random_input({128}, odt, 3) : Tensor(),
                                dt == odt ? cutlass_test::random_input({n, 128}, odt, 4) : Tensor()};
      if (dt != odt) {  // int32 bias and residual: small whole numbers
        for (int k : {2, 3}) {
          in[size_t(k)] = Tensor::empty(k == 2 ? std::vector<int64_t>{128} : std::vector<int64_t>{n, 128}, odt);
          for (int64_t i = 0; i < in[size_t(k)].numel(); ++i) in[size_t(k)].data_as<int32_t>()[i] = int32_t(i % 7) - 3;
        }
      }
      auto got = run(exec, in);
      auto want = f32_reference(kTf32Int8, {{"dt", "float32"}, {"odt", "float32"}}, in);
      for (size_t k = 0; k < got.size(); ++k)
        EXPECT_EQ(cutlass_test::compare(got[k], want[k], cutlass_test::tolerance(dt)), "") << dt.str() << " n=" << n << " output " << k;
    }
  }
}

// ---- the differential test: random graphs of the families, shapes varying at run time ----

// Chains of families; in each, M is symbolic (n), so one compiled module per structure, dtype
// and path serves every case drawn for it.
const std::vector<const char*>& structures() {
  static const std::vector<const char*> s = {
      // matmul + bias + relu + residual add, then layer_norm
      R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64), dtype="{dt}"), w: R.Tensor((64, 64), dtype="{dt}"), b: R.Tensor((64,), dtype="{dt}"), g: R.Tensor((64,), dtype="{dt}"), be: R.Tensor((64,), dtype="{dt}")) -> R.Tensor(("n", 64), dtype="{dt}"):
        n = T.int64()
        with R.dataflow():
            m: R.Tensor((n, 64), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            a: R.Tensor((n, 64), dtype="{dt}") = R.add(m, b)
            r: R.Tensor((n, 64), dtype="{dt}") = R.nn.relu(a)
            s: R.Tensor((n, 64), dtype="{dt}") = R.add(r, x)
            o: R.Tensor((n, 64), dtype="{dt}") = R.nn.layer_norm(s, g, be, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)
            R.output(o)
        return o
)",
      // a transformer MLP: transposed weights, gelu, second product, residual add, then rms_norm
      R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64), dtype="{dt}"), w1: R.Tensor((128, 64), dtype="{dt}"), b1: R.Tensor((128,), dtype="{dt}"), w2: R.Tensor((64, 128), dtype="{dt}"), b2: R.Tensor((64,), dtype="{dt}"), g: R.Tensor((64,), dtype="{dt}")) -> R.Tensor(("n", 64), dtype="{dt}"):
        n = T.int64()
        with R.dataflow():
            t1: R.Tensor((64, 128), dtype="{dt}") = R.permute_dims(w1, axes=None)
            m1: R.Tensor((n, 128), dtype="{dt}") = R.matmul(x, t1, out_dtype="void")
            a1: R.Tensor((n, 128), dtype="{dt}") = R.add(m1, b1)
            h: R.Tensor((n, 128), dtype="{dt}") = R.nn.gelu(a1)
            t2: R.Tensor((128, 64), dtype="{dt}") = R.permute_dims(w2, axes=None)
            m2: R.Tensor((n, 64), dtype="{dt}") = R.matmul(h, t2, out_dtype="void")
            a2: R.Tensor((n, 64), dtype="{dt}") = R.add(m2, b2)
            s: R.Tensor((n, 64), dtype="{dt}") = R.add(a2, x)
            q: R.Tensor((n, 64), dtype="{dt}") = R.multiply(s, s)
            e: R.Tensor((n, 1), dtype="{dt}") = R.mean(q, axis=[-1], keepdims=True)
            ep: R.Tensor((), dtype="{dt}") = R.astype(R.const(9.9999997e-07, "float32"), dtype="{dt}")
            p: R.Tensor((n, 1), dtype="{dt}") = R.add(e, ep)
            rs: R.Tensor((n, 1), dtype="{dt}") = R.rsqrt(p)
            xs: R.Tensor((n, 64), dtype="{dt}") = R.multiply(s, rs)
            o: R.Tensor((n, 64), dtype="{dt}") = R.multiply(xs, g)
            R.output(o)
        return o
)",
      // silu-gated product with a residual multiply, then an element-wise add with broadcasting
      R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64), dtype="{dt}"), w: R.Tensor((64, 64), dtype="{dt}"), b: R.Tensor((64,), dtype="{dt}"), y: R.Tensor(("n", 64), dtype="{dt}")) -> R.Tensor(("n", 64), dtype="{dt}"):
        n = T.int64()
        with R.dataflow():
            m: R.Tensor((n, 64), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            a: R.Tensor((n, 64), dtype="{dt}") = R.add(m, b)
            s: R.Tensor((n, 64), dtype="{dt}") = R.nn.silu(a)
            r: R.Tensor((n, 64), dtype="{dt}") = R.multiply(s, y)
            o: R.Tensor((n, 64), dtype="{dt}") = R.add(r, b)
            R.output(o)
        return o
)",
      // a batched product (3-d operands), then a plain one with the residual before relu
      R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, "n", 64), dtype="{dt}"), w: R.Tensor((4, 64, 64), dtype="{dt}"), v: R.Tensor((64, 64), dtype="{dt}"), b: R.Tensor((64,), dtype="{dt}")) -> R.Tensor((4, "n", 64), dtype="{dt}"):
        n = T.int64()
        with R.dataflow():
            m: R.Tensor((4, n, 64), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            m2: R.Tensor((4, n, 64), dtype="{dt}") = R.matmul(m, v, out_dtype="void")
            a: R.Tensor((4, n, 64), dtype="{dt}") = R.add(m2, b)
            s: R.Tensor((4, n, 64), dtype="{dt}") = R.add(a, x)
            o: R.Tensor((4, n, 64), dtype="{dt}") = R.nn.relu(s)
            R.output(o)
        return o
)"};
  return s;
}

// The parameter shapes of structure `s` for M = n.
std::vector<std::vector<int64_t>> structure_shapes(size_t s, int64_t n) {
  switch (s) {
    case 0: return {{n, 64}, {64, 64}, {64}, {64}, {64}};
    case 1: return {{n, 64}, {128, 64}, {128}, {64, 128}, {64}, {64}};
    case 2: return {{n, 64}, {64, 64}, {64}, {n, 64}};
    default: return {{4, n, 64}, {4, 64, 64}, {64, 64}, {64}};
  }
}

TEST(CutlassGpu, DifferentialOverRandomGraphs) {
  REQUIRE_GPU_OR_PRECOMPILE();
  const std::vector<DataType> dtypes = {DataType::Float(16), DataType::BFloat16()};
  // One build per structure, dtype and path; 216 random cases over them.
  std::map<std::tuple<size_t, size_t, bool>, std::shared_ptr<runtime::Executable>> built;
  std::map<std::string, int> patterns;
  for (size_t s = 0; s < structures().size(); ++s)
    for (size_t d = 0; d < dtypes.size(); ++d)
      for (bool merge : {false, true}) {
        IRModule p = transform::partition_for("cutlass", script::parse_module(fill(structures()[s], {{"dt", dtypes[d].str()}})), merge);
        for (const auto& c : composites(p)) ++patterns[c];
        built[{s, d, merge}] = build_for_gpu(p);
      }
  if (precompile_only()) return;
  std::mt19937 rng(2026);
  int cases = 0, failures = 0;
  for (; cases < 216; ++cases) {
    size_t s = rng() % structures().size(), d = rng() % dtypes.size();
    bool merge = rng() % 2;
    int64_t n = 1 + int64_t(rng() % 300);
    std::vector<Tensor> in;
    for (const auto& shape : structure_shapes(s, n)) in.push_back(cutlass_test::random_input(shape, dtypes[d], rng(), 1.f));
    auto got = run(built[{s, d, merge}], in);
    auto want = f32_reference(structures()[s], {{"dt", "float32"}}, in);
    std::string why = cutlass_test::compare(got.at(0), want.at(0), 2 * cutlass_test::tolerance(dtypes[d]));
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << "case " << cases << ": structure " << s << " " << dtypes[d].str() << " n=" << n
                    << (merge ? " merged: " : " annotated: ") << why;
    }
  }
  std::string summary;
  for (const auto& [k, v] : patterns) summary += " " + k + "=" + std::to_string(v);
  std::cout << "[cutlass differential] " << cases << " cases, " << failures << " failures; patterns over the builds:" << summary << "\n";
  EXPECT_GE(cases, 200);
}

// Without a GPU: every template partitions as the GPU tests expect and its float32 reference
// runs on the host (so a GPU run can only fail on the GPU's side).
TEST(CutlassGpuCases, TemplatesPartitionAndTheirReferencesRun) {
  for (bool merge : {false, true}) {
    IRModule p = transform::partition_for("cutlass", script::parse_module(fill(kFamilies, {{"dt", "float16"}})), merge);
    EXPECT_EQ(composites(p), kFamilyComposites);
  }
  auto in = family_inputs(DataType::Float(16), 3, 1);
  EXPECT_EQ(f32_reference(kFamilies, {{"dt", "float32"}}, in).size(), 10u);
  const std::vector<std::vector<std::string>> want = {
      {"cutlass.layer_norm", "cutlass.matmul_bias_relu_residual_add"},
      {"cutlass.matmul_transposed_bias_gelu", "cutlass.matmul_transposed_bias_residual_add", "cutlass.rms_norm"},
      {"cutlass.add", "cutlass.matmul_bias_silu_residual_multiply"},
      {"cutlass.matmul", "cutlass.matmul_bias_residual_add_relu"}};
  for (size_t s = 0; s < structures().size(); ++s) {
    IRModule p = transform::partition_for("cutlass", script::parse_module(fill(structures()[s], {{"dt", "bfloat16"}})), true);
    EXPECT_EQ(composites(p), want[s]) << "structure " << s << "\n" << script::print_module(p);
    std::vector<Tensor> sin;
    for (const auto& shape : structure_shapes(s, 7)) sin.push_back(cutlass_test::random_input(shape, DataType::BFloat16(), 5));
    EXPECT_EQ(f32_reference(structures()[s], {{"dt", "float32"}}, sin).size(), 1u);
  }
}

TEST(CutlassGpu, ProfilerMeasuresThenTheCacheAnswers) {
  REQUIRE_GPU_OR_PRECOMPILE();
  if (precompile_only()) return;  // the candidates are in the precompile test's list
  namespace fs = std::filesystem;
  fs::path file = fs::temp_directory_path() / "partita_cutlass_profile_gpu_test.tsv";
  fs::remove(file);
  backend::cutlass::GemmWorkload w;
  w.cls = {DataType::Float(16), DataType::Float(16), false, {true, 2, 0, 0}};  // + bias, gelu
  w.m = 4096;
  w.n = 3072;
  w.k = 768;
  auto w2 = w;
  w2.m = 256;
  backend::cutlass::ProfileOptions po;
  po.cache_file = file.string();
  auto nvcc = backend::cutlass::nvcc_options(cutlass_test::test_target());
  backend::cutlass::ProfileReport first, second;
  auto a = backend::cutlass::choose_gemm_configs({w, w2}, nvcc, po, &first);
  std::cout << first.log;
  EXPECT_EQ(first.measured, 2);
  auto b = backend::cutlass::choose_gemm_configs({w, w2}, nvcc, po, &second);
  EXPECT_EQ(second.from_cache, 2);
  EXPECT_EQ(a[0].id(), b[0].id());
  EXPECT_EQ(a[1].id(), b[1].id());
}

}  // namespace
}  // namespace partita
