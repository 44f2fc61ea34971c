// The cutlass backend without a GPU: its pattern table and checks (what is offloaded, what
// stays on the host, TVM's composite names), the generated C++ for each family, the module
// format, the profile cache, and — when the codegen is built — one small module compiled by
// nvcc (twice: the second build must run no nvcc).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "../attention_kernel.h"
#include "../cutlass_codegen.h"
#include "../gemm_kernel.h"
#include "../profiler.h"
#include "cutlass_test_util.h"
#include "partita/backend/registry.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita {
namespace {

using cutlass_test::fill;

const char* kSeed = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            R.output(a)
        return a
)";

// matmul + bias + activation, optionally a residual op and a second activation.
const char* kMatmul = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({M}, {K}), dtype="{dt}"), w: R.Tensor(({K}, {N}), dtype="{dt}"), b: R.Tensor(({N},), dtype="{dt}"), r: R.Tensor(({M}, {N}), dtype="{dt}")) -> R.Tensor(({M}, {N}), dtype="{dt}"):
        with R.dataflow():
            lv: R.Tensor(({M}, {N}), dtype="{dt}") = R.matmul(x, w, out_dtype="void")
            lv1: R.Tensor(({M}, {N}), dtype="{dt}") = R.add(lv, b)
            lv2: R.Tensor(({M}, {N}), dtype="{dt}") = R.nn.relu(lv1)
            lv3: R.Tensor(({M}, {N}), dtype="{dt}") = R.add(lv2, r)
            R.output(lv3)
        return lv3
)";

std::vector<std::string> composites(const IRModule& m) {
  std::vector<std::string> out;
  std::string text = script::print_module(m), key = "\"Composite\": \"";
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    size_t b = at + key.size();
    out.push_back(text.substr(b, text.find('"', b) - b));
  }
  return out;
}

IRModule parse(const std::string& text) { return script::parse_module(text); }

TEST(CutlassPatterns, TvmFamiliesInPriorityOrder) {
  auto patterns = transform::get_patterns_with_prefix("cutlass.");
  std::set<std::string> names;
  for (const auto& p : patterns) names.insert(p.name);
  for (const char* n : {"cutlass.multiply", "cutlass.add", "cutlass.matmul", "cutlass.matmul_bias", "cutlass.matmul_bias_relu",
                        "cutlass.matmul_bias_gelu", "cutlass.matmul_bias_silu", "cutlass.matmul_transposed",
                        "cutlass.matmul_transposed_bias_gelu", "cutlass.conv2d", "cutlass.conv2d_bias_relu",
                        "cutlass.conv2d_bias_silu", "cutlass.matmul_bias_relu_residual_add",
                        "cutlass.matmul_transposed_bias_residual_multiply_relu", "cutlass.conv2d_bias_residual_add_relu",
                        "cutlass.layer_norm", "cutlass.rms_norm", "cutlass.attention", "cutlass.attention_bias",
                        "cutlass.stacked_attention", "cutlass.stacked_attention_bias"})
    EXPECT_TRUE(names.count(n)) << n;
  // Highest priority first: attention, the norms, then residual blocks, then the plain GEMMs, the
  // seed's last.
  EXPECT_EQ(patterns.front().name, "cutlass.stacked_attention_bias");
  EXPECT_EQ(patterns.back().name, "cutlass.multiply");
  EXPECT_EQ(patterns.size(), 2u + 16u + 2u * 2u * 13u + 2u + 4u);
}

TEST(CutlassPatterns, SeedTutorialBothPaths) {
  IRModule m = parse(kSeed);
  IRModule p1 = transform::partition_for("cutlass", m, /*merge=*/false);
  IRModule p2 = transform::partition_for("cutlass", m, /*merge=*/true);
  EXPECT_TRUE(p1.contains("fused_relax_multiply_cutlass"));
  EXPECT_TRUE(p2.contains("fused_relax_multiply1_cutlass"));
}

// The fused residual block, before and after, in the text format (path 1).
TEST(CutlassPatterns, ResidualBlockText) {
  IRModule m = parse(fill(kMatmul, {{"M", "64"}, {"K", "64"}, {"N", "128"}, {"dt", "float16"}}));
  IRModule p = transform::partition_for("cutlass", m, /*merge=*/false);
  std::string text = script::print_module(p);
  EXPECT_NE(text.find(R"(R.func_attr({"Composite": "cutlass.matmul_bias_relu_residual_add"}))"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(R.func_attr({"Codegen": "cutlass"}))"), std::string::npos) << text;
  const char* main = R"(    @R.function
    def main(x: R.Tensor((64, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16"), b: R.Tensor((128,), dtype="float16"), r: R.Tensor((64, 128), dtype="float16")) -> R.Tensor((64, 128), dtype="float16"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((64, 128), dtype="float16") = cls.fused_relax_matmul_relax_add_relax_nn_relu_relax_add_cutlass(x, w, b, r)
            R.output(gv)
        return gv)";
  EXPECT_NE(text.find(main), std::string::npos) << text;
  EXPECT_EQ(composites(p), std::vector<std::string>{"cutlass.matmul_bias_relu_residual_add"});
}

struct CheckCase {
  const char* what;
  std::string text;
  std::vector<std::string> expected;  // composites offloaded
};

TEST(CutlassPatterns, ChecksKeepWhatTheCodegenCannotRunOnTheHost) {
  const std::string f16 = fill(kMatmul, {{"M", "64"}, {"K", "64"}, {"N", "128"}, {"dt", "float16"}});
  std::vector<CheckCase> cases = {
      {"fp16 residual block", f16, {"cutlass.matmul_bias_relu_residual_add"}},
      {"bf16", fill(kMatmul, {{"M", "n"}, {"K", "64"}, {"N", "128"}, {"dt", "bfloat16"}}),
       {"cutlass.matmul_bias_relu_residual_add"}},
      // K not a multiple of 8 halves: TMA needs 16-byte rows; only the two adds are offloaded.
      {"misaligned K", fill(kMatmul, {{"M", "64"}, {"K", "60"}, {"N", "128"}, {"dt", "float16"}}),
       {"cutlass.add", "cutlass.add"}},
      // float32 with a weight that is neither constant nor transposed cannot be read K-major.
      {"fp32 plain weight", fill(kMatmul, {{"M", "64"}, {"K", "64"}, {"N", "128"}, {"dt", "float32"}}),
       {"cutlass.add", "cutlass.add"}},
      {"float64", fill(kMatmul, {{"M", "64"}, {"K", "64"}, {"N", "128"}, {"dt", "float64"}}),
       {"cutlass.add", "cutlass.add"}},
  };
  // The residual is computed from the product itself: it cannot be an input of the fused kernel.
  cases.push_back({"residual depends on the product", R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), dtype="float16"), w: R.Tensor((64, 64), dtype="float16"), b: R.Tensor((64,), dtype="float16")) -> R.Tensor((64, 64), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((64, 64), dtype="float16") = R.matmul(x, w, out_dtype="void")
            lv1: R.Tensor((64, 64), dtype="float16") = R.add(lv, b)
            lv2: R.Tensor((64, 64), dtype="float16") = R.exp(lv1)
            lv3: R.Tensor((64, 64), dtype="float16") = R.add(lv1, lv2)
            R.output(lv3)
        return lv3
)", {"cutlass.add", "cutlass.matmul_bias"}});
  // An intermediate used outside the match stays visible: no fusion across it.
  cases.push_back({"leaking intermediate", R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), dtype="float16"), w: R.Tensor((64, 64), dtype="float16"), b: R.Tensor((64,), dtype="float16")) -> R.Tuple(R.Tensor((64, 64), dtype="float16"), R.Tensor((64, 64), dtype="float16")):
        with R.dataflow():
            lv: R.Tensor((64, 64), dtype="float16") = R.matmul(x, w, out_dtype="void")
            lv1: R.Tensor((64, 64), dtype="float16") = R.add(lv, b)
            lv2: R.Tensor((64, 64), dtype="float16") = R.nn.relu(lv1)
            gv: R.Tuple(R.Tensor((64, 64), dtype="float16"), R.Tensor((64, 64), dtype="float16")) = (lv1, lv2)
            R.output(gv)
        return gv
)", {"cutlass.matmul_bias"}});
  // conv2d: NHWC/OHWI with bias and silu is fused; NCHW stays on the host.
  const char* conv = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor({xs}, dtype="float16"), w: R.Tensor({ws}, dtype="float16"), b: R.Tensor((1, 1, 1, 32), dtype="float16")) -> R.Tensor({os}, dtype="float16"):
        with R.dataflow():
            lv: R.Tensor({os}, dtype="float16") = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="{dl}", kernel_layout="{kl}", out_layout="{dl}", out_dtype="void")
            lv1: R.Tensor({os}, dtype="float16") = R.add(lv, b)
            lv2: R.Tensor({os}, dtype="float16") = R.nn.silu(lv1)
            R.output(lv2)
        return lv2
)";
  cases.push_back({"conv2d NHWC", fill(conv, {{"xs", "(2, 8, 8, 16)"}, {"ws", "(32, 3, 3, 16)"}, {"os", "(2, 8, 8, 32)"},
                                             {"dl", "NHWC"}, {"kl", "OHWI"}}),
                   {"cutlass.conv2d_bias_silu"}});
  for (const auto& c : cases) {
    IRModule p = transform::partition_for("cutlass", parse(c.text), /*merge=*/false);
    auto got = composites(p);
    std::sort(got.begin(), got.end());
    auto want = c.expected;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << c.what << "\n" << script::print_module(p);
  }
}

TEST(CutlassPatterns, LayerNormAndRmsNorm) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 64), dtype="float16"), g: R.Tensor((64,), dtype="float16"), b: R.Tensor((64,), dtype="float16")) -> R.Tuple(R.Tensor((4, 64), dtype="float16"), R.Tensor((4, 64), dtype="float16")):
        with R.dataflow():
            ln: R.Tensor((4, 64), dtype="float16") = R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)
            sq: R.Tensor((4, 64), dtype="float16") = R.multiply(x, x)
            ms: R.Tensor((4, 1), dtype="float16") = R.mean(sq, axis=[-1], keepdims=True)
            ep: R.Tensor((4, 1), dtype="float16") = R.add(ms, R.const(9.9999997e-07, "float16"))
            rs: R.Tensor((4, 1), dtype="float16") = R.rsqrt(ep)
            nx: R.Tensor((4, 64), dtype="float16") = R.multiply(x, rs)
            rms: R.Tensor((4, 64), dtype="float16") = R.multiply(nx, g)
            gv: R.Tuple(R.Tensor((4, 64), dtype="float16"), R.Tensor((4, 64), dtype="float16")) = (ln, rms)
            R.output(gv)
        return gv
)";
  IRModule p = transform::partition_for("cutlass", parse(text), /*merge=*/true);
  auto got = composites(p);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"cutlass.layer_norm", "cutlass.rms_norm"})) << script::print_module(p);
}

// Attention: fp16 / bf16 calls with and without a bias go to the attention kernel; what it cannot
// run (float32, a head dimension that is not a multiple of 8, grouped-query heads, bottom-right
// causal masks with fewer keys than queries) does not. The prepare step rewrites a scaled
// dot-product chain to R.nn.attention and decomposes again the attention the kernel refuses.
std::string attention_module(const std::string& dt, const std::string& q, const std::string& kv,
                             const std::string& call, const std::string& bias = "") {
  return fill(R"(
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor({q}, dtype="{dt}"), k: R.Tensor({kv}, dtype="{dt}"), v: R.Tensor({kv}, dtype="{dt}"){bias}):
        with R.dataflow():
            gv = {call}
            R.output(gv)
        return gv
)", {{"dt", dt}, {"q", q}, {"kv", kv}, {"call", call}, {"bias", bias.empty() ? "" : ", b: R.Tensor(" + bias + ", dtype=\"" + dt + "\")"}});
}

// One (B, 16, 768) tensor split into query, key and value of 4 heads of 64.
std::string stacked_attention_module(int batch) {
  return fill(R"(
@I.ir_module
class Module:
    @R.function
    def main(qkv: R.Tensor(({b}, 16, 768), dtype="float16")):
        with R.dataflow():
            sp = R.split(qkv, indices_or_sections=3, axis=2)
            s0 = sp[0]
            s1 = sp[1]
            s2 = sp[2]
            q = R.reshape(s0, R.shape([{b}, 16, 4, 64]))
            k = R.reshape(s1, R.shape([{b}, 16, 4, 64]))
            v = R.reshape(s2, R.shape([{b}, 16, 4, 64]))
            gv = R.nn.attention(q, k, v)
            R.output(gv)
        return gv
)", {{"b", std::to_string(batch)}});
}

TEST(CutlassPatterns, AttentionAndWhatTheKernelRefuses) {
  const std::string s = "(2, 16, 4, 64)", s40 = "(2, 16, 4, 40)";
  struct Case {
    const char* what;
    std::string text;
    std::vector<std::string> expected;
  };
  std::vector<Case> cases = {
      {"fp16", attention_module("float16", s, s, "R.nn.attention(q, k, v)"), {"cutlass.attention"}},
      {"bf16, head dim 40, causal", attention_module("bfloat16", s40, s40, "R.nn.attention(q, k, v, causal_mask=\"TopLeft\")"),
       {"cutlass.attention"}},
      {"bias over heads", attention_module("float16", s, s, "R.nn.attention(q, k, v, b)", "(2, 1, 16, 16)"),
       {"cutlass.attention_bias"}},
      {"more keys, bottom right", attention_module("float16", s, "(2, 24, 4, 64)", "R.nn.attention(q, k, v, causal_mask=\"BottomRight\")"),
       {"cutlass.attention"}},
      {"float32", attention_module("float32", s, s, "R.nn.attention(q, k, v)"), {}},
      {"head dim 12", attention_module("float16", "(2, 16, 4, 12)", "(2, 16, 4, 12)", "R.nn.attention(q, k, v)"), {}},
      {"grouped heads", attention_module("float16", s, "(2, 16, 2, 64)", "R.nn.attention(q, k, v)"), {}},
      {"fewer keys, bottom right", attention_module("float16", "(2, 24, 4, 64)", s, "R.nn.attention(q, k, v, causal_mask=\"BottomRight\")"),
       {}},
      {"bias rows of 12", attention_module("float16", "(2, 12, 4, 64)", "(2, 12, 4, 64)", "R.nn.attention(q, k, v, b)", "(2, 4, 12, 12)"),
       {}},
  };
  for (const auto& c : cases) {
    IRModule p = transform::partition_for("cutlass", parse(c.text), /*merge=*/false);
    EXPECT_EQ(composites(p), c.expected) << c.what << "\n" << script::print_module(p);
  }
  // Stacked QKV: the split and the reshapes fuse into the attention (TVM's stacked_attention).
  IRModule sp = transform::partition_for("cutlass", parse(stacked_attention_module(2)), /*merge=*/false);
  EXPECT_EQ(composites(sp), std::vector<std::string>{"cutlass.stacked_attention"}) << script::print_module(sp);
  // BERT's attention as exported, (B, N, S, H) operands, scaled by a constant: the prepare step
  // makes it one R.nn.attention.
  const char* chain = R"(
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, 4, 16, 64), dtype="float16"), k: R.Tensor((1, 4, 16, 64), dtype="float16"), v: R.Tensor((1, 4, 16, 64), dtype="float16")):
        with R.dataflow():
            kt = R.permute_dims(k, axes=[0, 1, 3, 2])
            s = R.matmul(q, kt)
            sc = R.multiply(s, R.const(0.125, "float16"))
            p = R.nn.softmax(sc, axis=-1)
            gv = R.matmul(p, v)
            R.output(gv)
        return gv
)";
  IRModule prepared = backend::prepare_for({"cutlass"}, parse(chain));
  IRModule p = transform::partition_for("cutlass", prepared, /*merge=*/false);
  EXPECT_EQ(composites(p), std::vector<std::string>{"cutlass.attention"}) << script::print_module(p);
  // An attention the kernel refuses is decomposed by the prepare step, its products left to the
  // GEMM patterns.
  IRModule f12 = backend::prepare_for({"cutlass"}, parse(attention_module("float16", "(2, 16, 4, 12)", "(2, 16, 4, 12)",
                                                                          "R.nn.attention(q, k, v)")));
  EXPECT_EQ(script::print_module(f12).find("R.nn.attention"), std::string::npos) << script::print_module(f12);
}

// ---- codegen without nvcc ----

backend::cutlass::GeneratedModule generate_for(const IRModule& parted, const codegen::Target& target) {
  std::vector<codegen::CodegenFunction> fs;
  for (const auto& [gv, f] : parted.functions()) {
    auto* fn = f.as<FunctionNode>();
    if (fn && fn->attr_string("Codegen") == "cutlass")
      fs.push_back({fn->attr_string("global_symbol").value_or(gv->name_hint), Function(fn)});
  }
  codegen::ConstantNamer namer({});
  return backend::cutlass::generate(fs, target, namer);
}

TEST(CutlassCodegen, GeneratesOneFusedGemmCallPerComposite) {
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  IRModule p = transform::partition_for(
      "cutlass", parse(fill(kMatmul, {{"M", "n"}, {"K", "64"}, {"N", "128"}, {"dt", "float16"}})), true);
  auto m = generate_for(p, cutlass_test::test_target());
  ASSERT_EQ(m.workloads.size(), 1u);
  const auto& w = m.workloads[0];
  EXPECT_EQ(w.cls.id(), "f16_bn_c_f16_bias_relu_add");
  EXPECT_EQ(w.m, -1) << "M is symbolic";
  EXPECT_EQ(w.k, 64);
  EXPECT_TRUE(w.cls.epilogue.bias);
  EXPECT_EQ(w.cls.epilogue.act, 1);
  EXPECT_EQ(w.cls.epilogue.residual_mode, 2);
  EXPECT_EQ(w.cls.epilogue.post_act, 0);
  backend::cutlass::bind_kernels(m, {backend::cutlass::default_config(w.cls, 90)});
  EXPECT_NE(m.source.find("pt_gemm_f16_bn_c_f16_bias_relu_add_128x128x64_1x1_coop(&gemm"), std::string::npos)
      << m.source;
  EXPECT_EQ(m.source.find("@PT_GEMM"), std::string::npos);
  EXPECT_EQ(m.source.find("@PT_SPLITS"), std::string::npos);
  EXPECT_NE(m.source.find(".splits = 1;"), std::string::npos) << "the default kernel does not split K";
  ASSERT_EQ(m.units.size(), 1u);
  const std::string& unit = m.units[0].second;
  EXPECT_NE(unit.find("KernelTmaWarpSpecializedCooperative"), std::string::npos);
  EXPECT_NE(unit.find("Sm90SrcFetch"), std::string::npos);
  // The epilogue is compiled in: its codes are the unit's constants, not launch arguments.
  for (const char* d : {"#define PT_BIAS 1\n", "#define PT_ACT 1\n", "#define PT_C_MODE 2\n", "#define PT_POST_ACT 0\n"})
    EXPECT_NE(unit.find(d), std::string::npos) << d;
  EXPECT_EQ(unit.find("p.act"), std::string::npos) << "a run-time activation code is back in the epilogue";
  EXPECT_NE(m.units[0].second.find("collective_builder.hpp"), std::string::npos);
  // A split-K choice: the stream-K unit, its split count in the call's arguments.
  auto split = generate_for(p, cutlass_test::test_target());
  backend::cutlass::bind_kernels(split, {backend::cutlass::GemmConfig::parse("128x64x64_1x1_sk8")});
  EXPECT_NE(split.source.find(".splits = 8;"), std::string::npos);
  EXPECT_NE(split.source.find("pt_gemm_f16_bn_c_f16_bias_relu_add_128x64x64_1x1_sk(&gemm"), std::string::npos);
}

// One kernel per epilogue kind: the kind is part of the class (its id, its unit's symbol and
// source), and codes the device code does not know are refused before any nvcc.
TEST(CutlassCodegen, EachEpilogueKindIsItsOwnKernel) {
  using backend::cutlass::GemmClass;
  using backend::cutlass::GemmEpilogue;
  using backend::cutlass::GemmConfig;
  EXPECT_EQ(GemmEpilogue{}.id(), "plain");
  EXPECT_EQ((GemmEpilogue{true, 2, 0, 0}.id()), "bias_gelu");
  EXPECT_EQ((GemmEpilogue{true, 1, 2, 1}.id()), "bias_relu_add_postrelu");
  EXPECT_EQ((GemmEpilogue{false, 3, 1, 4}.id()), "gelutanh_addpre_postsilu");
  EXPECT_EQ((GemmEpilogue{true, 0, 3, 0}.id()), "bias_mul");
  EXPECT_THROW((GemmEpilogue{false, 5, 0, 0}.id()), Error);
  EXPECT_THROW((GemmEpilogue{false, 0, 4, 0}.id()), Error);
  const DataType f16 = DataType::Float(16);
  GemmClass relu{f16, f16, false, {true, 1, 0, 0}}, gelu{f16, f16, false, {true, 2, 0, 0}};
  GemmClass res{f16, f16, false, {true, 1, 2, 0}};
  EXPECT_FALSE(relu.has_c());
  EXPECT_TRUE(res.has_c());
  EXPECT_EQ(res.id(), "f16_bn_c_f16_bias_relu_add");
  auto k = backend::cutlass::default_config(relu, 90);
  EXPECT_NE(backend::cutlass::gemm_symbol(relu, k), backend::cutlass::gemm_symbol(gelu, k));
  std::string a = backend::cutlass::gemm_unit_source(relu, k), b = backend::cutlass::gemm_unit_source(gelu, k);
  EXPECT_NE(a.find("#define PT_ACT 1\n"), std::string::npos);
  EXPECT_NE(b.find("#define PT_ACT 2\n"), std::string::npos);
  EXPECT_NE(a.find("#define PT_HAS_C 0\n"), std::string::npos);
  EXPECT_NE(backend::cutlass::gemm_unit_source(res, k).find("#define PT_HAS_C 1\n"), std::string::npos);
  // A costly activation adds a ping-pong candidate (its epilogue overlaps the other warp
  // group's product).
  auto relu_cands = backend::cutlass::candidate_configs(relu, 90), gelu_cands = backend::cutlass::candidate_configs(gelu, 90);
  ASSERT_EQ(relu_cands.size(), 4u);
  ASSERT_EQ(gelu_cands.size(), 5u);
  EXPECT_EQ(gelu_cands[0].id(), k.id()) << "the default first";
  EXPECT_EQ(gelu_cands[3].id(), "128x128x64_1x1_pp");
  // Every class also tries 64x64 ping-pong tiles (few rows: batch-1 BERT / ViT, a classifier).
  EXPECT_EQ(relu_cands[3].id(), "64x64x64_1x1_pp");
  EXPECT_EQ(gelu_cands[4].id(), "64x64x64_1x1_pp");
  // Stream-K is a configuration of its own (the cooperative kernel with CUTLASS's stream-K
  // scheduler; a profile cache line may name it), measured slower in its heuristic mode and in
  // its split-K mode (`_sk<n>`: each tile's K split n ways, all on one unit), so no candidate.
  auto sk_config = GemmConfig::parse("128x128x64_1x1_sk");
  EXPECT_TRUE(sk_config.stream_k);
  EXPECT_EQ(sk_config.splits, 1);
  EXPECT_EQ(sk_config.id(), "128x128x64_1x1_sk");
  EXPECT_THROW(GemmConfig::parse("128x128x64_1x1_streamk"), Error);
  EXPECT_THROW(GemmConfig::parse("128x128x64_1x1_sk0"), Error);
  EXPECT_THROW(GemmConfig::parse("128x128x64_1x1_sk1"), Error) << "one split is written 'sk'";
  EXPECT_THROW(GemmConfig::parse("128x128x64_1x1_coop4"), Error);
  auto split8 = GemmConfig::parse("128x64x64_1x1_sk8");
  EXPECT_TRUE(split8.stream_k);
  EXPECT_EQ(split8.splits, 8);
  EXPECT_EQ(split8.id(), "128x64x64_1x1_sk8");
  EXPECT_EQ(split8.unit_id(), "128x64x64_1x1_sk");
  auto split2 = GemmConfig::parse("128x64x64_1x1_sk2");
  EXPECT_EQ(backend::cutlass::gemm_symbol(relu, split2), backend::cutlass::gemm_symbol(relu, split8))
      << "every split count runs on one unit";
  auto units = backend::cutlass::gemm_units(relu, {k, split2, split8, GemmConfig::parse("128x64x64_1x1_sk")});
  ASSERT_EQ(units.size(), 2u) << "the default and the one stream-K unit";
  EXPECT_EQ(units[1].first, "pt_gemm_f16_bn_nc_f16_bias_relu_128x64x64_1x1_sk");
  std::string sk = backend::cutlass::gemm_unit_source(relu, sk_config);
  EXPECT_NE(sk.find("CollectiveEpilogue, cutlass::gemm::StreamKScheduler>;"), std::string::npos);
  EXPECT_NE(sk.find("KernelTmaWarpSpecializedCooperative"), std::string::npos);
  EXPECT_NE(sk.find("#define PT_STREAM_K 1\n"), std::string::npos);
  EXPECT_NE(sk.find("args.scheduler.splits = g.splits"), std::string::npos) << "the split count is a launch argument";
  EXPECT_NE(a.find("#define PT_STREAM_K 0\n"), std::string::npos) << "a unit without it refuses a split count";
  EXPECT_EQ(a.find("StreamKScheduler"), std::string::npos) << "the persistent scheduler otherwise";
  EXPECT_NE(a.find("CollectiveMainloop, CollectiveEpilogue>;\nusing Gemm ="), std::string::npos);
  GemmClass bad{f16, f16, false, {false, 9, 0, 0}};
  EXPECT_THROW(backend::cutlass::gemm_unit_source(bad, k), Error);
}

TEST(CutlassCodegen, RefusesWhatTheTargetCannotRun) {
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  IRModule p = transform::partition_for(
      "cutlass", parse(fill(kMatmul, {{"M", "64"}, {"K", "64"}, {"N", "128"}, {"dt", "float16"}})), false);
  try {
    generate_for(p, cutlass_test::test_target({{"sm", 80}}));
    ADD_FAILURE() << "expected UnsupportedFunction";
  } catch (const codegen::UnsupportedFunction& e) {
    EXPECT_NE(std::string(e.what()).find("sm >= 90"), std::string::npos) << e.what();
  }
  const char* f32 = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), dtype="float32"), w: R.Tensor((128, 64), dtype="float32")) -> R.Tensor((64, 128), dtype="float32"):
        with R.dataflow():
            wt: R.Tensor((64, 128), dtype="float32") = R.permute_dims(w, axes=None)
            lv: R.Tensor((64, 128), dtype="float32") = R.matmul(x, wt, out_dtype="void")
            R.output(lv)
        return lv
)";
  IRModule q = transform::partition_for("cutlass", parse(f32), false);
  EXPECT_EQ(composites(q), std::vector<std::string>{"cutlass.matmul_transposed"});
  try {
    generate_for(q, cutlass_test::test_target({{"tf32", false}}));
    ADD_FAILURE() << "expected UnsupportedFunction";
  } catch (const codegen::UnsupportedFunction& e) {
    EXPECT_NE(std::string(e.what()).find("tf32"), std::string::npos) << e.what();
  }
  auto m = generate_for(q, cutlass_test::test_target());
  ASSERT_EQ(m.workloads.size(), 1u);
  EXPECT_EQ(m.workloads[0].cls.id(), "f32_bk_nc_f32_plain");
}

TEST(CutlassCodegen, Conv2dRunsAsImplicitGemmThroughIm2col) {
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  const char* conv = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 8, 8, 16), dtype="float16"), w: R.Tensor((32, 3, 3, 16), dtype="float16")) -> R.Tensor((2, 4, 4, 32), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((2, 4, 4, 32), dtype="float16") = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="void")
            R.output(lv)
        return lv
)";
  auto m = generate_for(transform::partition_for("cutlass", parse(conv), false), cutlass_test::test_target());
  ASSERT_EQ(m.workloads.size(), 1u);
  EXPECT_EQ(m.workloads[0].m, 32);
  EXPECT_EQ(m.workloads[0].k, 144);
  EXPECT_EQ(m.workloads[0].cls.id(), "f16_bk_nc_f16_plain");
  EXPECT_NE(m.source.find("pt_im2col_kernel<__half>"), std::string::npos);
}

// ---- module format, profile cache ----

TEST(CutlassFormat, FunctionTableRoundTripsAndBadBytesAreErrors) {
  std::vector<backend::cutlass::CutlassFunction> fs{{"f", 2, {"c0", "c1"}}, {"g", 1, {}}};
  auto back = backend::cutlass::read_function_table(backend::cutlass::write_function_table(fs));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].constants, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_TRUE(back[1].constants.empty());
  EXPECT_THROW(backend::cutlass::read_function_table("f\tx\t\n"), Error);
  if (!cutlass_test::codegen_built()) return;
  EXPECT_THROW(runtime::load_module_from_binary("cutlass", "not a module"), Error);
}

TEST(CutlassProfiler, CacheKeysTheWholeWorkloadAndPersists) {
  namespace fs = std::filesystem;
  fs::path file = fs::temp_directory_path() / ("partita_cutlass_profile_" + std::to_string(getpid()) + ".tsv");
  fs::remove(file);
  backend::cutlass::GemmWorkload w;
  w.cls = {DataType::Float(16), DataType::Float(16), false, {true, 2, 2, 0}};
  w.m = 128;
  w.n = 256;
  w.k = 64;
  std::string key = w.key(90);
  EXPECT_EQ(key, "sm90 f16_bn_c_f16_bias_gelu_add m=128 n=256 k=64 batch=1");
  auto other = w;
  other.cls.epilogue.act = 1;
  EXPECT_NE(other.key(90), key) << "the epilogue is part of the key";
  EXPECT_NE(w.key(100), key) << "the architecture is part of the key";
  {
    backend::cutlass::ProfileCache c(file.string());
    EXPECT_FALSE(c.lookup(key));
    c.store(key, backend::cutlass::GemmConfig::parse("128x256x64_1x1_coop"), 0.01);
  }
  {
    std::ofstream(file, std::ios::app) << "garbage line\n";
    backend::cutlass::ProfileCache c(file.string());
    ASSERT_TRUE(c.lookup(key));
    EXPECT_EQ(c.lookup(key)->id(), "128x256x64_1x1_coop");
    EXPECT_EQ(c.size(), 1u);
  }
  // A later build reads the cache instead of measuring; symbolic M takes the default.
  backend::cutlass::NvccOptions nvcc;
  backend::cutlass::ProfileOptions po;
  po.cache_file = file.string();
  auto sym = w;
  sym.m = -1;
  backend::cutlass::ProfileReport rep;
  auto chosen = backend::cutlass::choose_gemm_configs({w, sym}, nvcc, po, &rep);
  EXPECT_EQ(chosen[0].id(), "128x256x64_1x1_coop");
  EXPECT_EQ(chosen[1].id(), backend::cutlass::default_config(w.cls, 90).id());
  EXPECT_EQ(rep.from_cache, 1);
  EXPECT_EQ(rep.defaulted, 1);
  EXPECT_THROW(backend::cutlass::GemmConfig::parse("128x128"), Error);
  fs::remove(file);
  auto src = backend::cutlass::profiler_source(w.cls, backend::cutlass::candidate_configs(w.cls, 90));
  EXPECT_NE(src.find("pt_gemm_f16_bn_c_f16_bias_gelu_add_128x192x64_1x1_coop"), std::string::npos);
  // Each split count is a candidate of its own on the one stream-K unit, declared once.
  auto cands = backend::cutlass::candidate_configs(w.cls, 90);
  for (const char* id : {"128x64x64_1x1_sk2", "128x64x64_1x1_sk4"}) cands.push_back(backend::cutlass::GemmConfig::parse(id));
  src = backend::cutlass::profiler_source(w.cls, cands);
  EXPECT_NE(src.find("{\"128x64x64_1x1_sk4\", pt_gemm_f16_bn_c_f16_bias_gelu_add_128x64x64_1x1_sk_workspace, "
                     "pt_gemm_f16_bn_c_f16_bias_gelu_add_128x64x64_1x1_sk, 4, 128, 64}"),
            std::string::npos)
      << src;
  std::string decl = "int32_t pt_gemm_f16_bn_c_f16_bias_gelu_add_128x64x64_1x1_sk(";
  EXPECT_EQ(src.find(decl, src.find(decl) + 1), std::string::npos) << "declared once";
}

// The epilogues' GELU (gemm_kernel.h): the fit against erf over the whole float range that
// matters, and the device source evaluates the same polynomial.
TEST(CutlassCodegen, EpilogueGeluMatchesErf) {
  double worst = 0, worst_abs = 0;
  for (int i = -200000; i <= 200000; ++i) {
    double x = i * 5e-5;  // [-10, 10]
    double ref = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    double got = backend::cutlass::gelu_erf_approx(float(x));
    double err = std::fabs(got - ref);
    worst_abs = std::max(worst_abs, err);
    if (std::fabs(ref) > 1e-6) worst = std::max(worst, err / std::fabs(ref));
  }
  EXPECT_LT(worst, 1e-5) << "relative error where |gelu| > 1e-6";
  EXPECT_LT(worst_abs, 1e-6);
  EXPECT_EQ(backend::cutlass::gelu_erf_approx(0.f), 0.f);
  EXPECT_EQ(backend::cutlass::gelu_erf_approx(100.f), 100.f);
  EXPECT_EQ(backend::cutlass::gelu_erf_approx(-100.f), 0.f);
  EXPECT_TRUE(std::isnan(backend::cutlass::gelu_erf_approx(std::nanf(""))));
  std::string dev = backend::cutlass::gelu_erf_device_source();
  EXPECT_NE(dev.find("ex2.approx.ftz.f32"), std::string::npos);
  EXPECT_NE(dev.find("-0.999995291f"), std::string::npos) << dev;
  EXPECT_EQ(dev.find("erff"), std::string::npos);
  EXPECT_NE(dev.find("fminf(a, 6.0f)"), std::string::npos) << "a whole number is written as a float literal";
  EXPECT_FALSE(std::regex_search(dev, std::regex("(^|[^0-9A-Za-z_.+-])[0-9]+f[^0-9A-Za-z_]"))) << dev;
  const DataType f16 = DataType::Float(16);
  backend::cutlass::GemmClass gelu{f16, f16, false, {true, 2, 0, 0}};
  EXPECT_NE(backend::cutlass::gemm_unit_source(gelu, backend::cutlass::default_config(gelu, 90)).find(dev),
            std::string::npos);
}

// ---- one small module through nvcc (CI: about a minute for its one GEMM unit) ----

// The profiler program's report, read back: "R" (graph) and "B" (host path) times per workload
// and candidate; a refused candidate ("F": it cannot run, or its result is not the default
// kernel's) has none, so it is never chosen. A stand-in program prints the lines.
TEST(CutlassProfiler, ReportLinesAreReadBackAndRefusedCandidatesHaveNoTime) {
  namespace fs = std::filesystem;
  fs::path exe = fs::temp_directory_path() / ("partita_fake_profiler_" + std::to_string(getpid()) + ".sh");
  {
    std::ofstream f(exe);
    f << "#!/bin/sh\n"
         "test -s \"$1\" || exit 9\n"
         "echo 'R 0 0 0.030000'\necho 'B 0 0 0.031000'\n"
         "echo 'F 0 1 its result differs from the default kernel'\n"
         "echo 'R 1 1 0.007000'\necho 'B 1 1 0.012000'\necho 'R 9 0 1.0'\n";
  }
  fs::permissions(exe, fs::perms::owner_all);
  backend::cutlass::GemmWorkload w;
  w.cls = {DataType::Float(16), DataType::Float(16), false, {true, 0, 0, 0}};
  w.m = 4096;
  w.n = 768;
  w.k = 768;
  auto w1 = w;
  w1.m = 128;
  std::vector<std::vector<double>> host;
  auto ms = backend::cutlass::run_profiler(exe.string(), {w, w1}, 2, 10, nullptr, &host);
  ASSERT_TRUE(ms);
  EXPECT_EQ((*ms)[0], (std::vector<double>{0.03, -1.0}));
  EXPECT_EQ((*ms)[1], (std::vector<double>{-1.0, 0.007}));
  EXPECT_EQ(host[0], (std::vector<double>{0.031, -1.0}));
  EXPECT_EQ(host[1][1], 0.012);
  {
    std::ofstream f(exe);
    f << "#!/bin/sh\necho NODEVICE\n";
  }
  EXPECT_FALSE(backend::cutlass::run_profiler(exe.string(), {w}, 2, 10));
  {
    std::ofstream f(exe);
    f << "#!/bin/sh\necho 'R 0 0 0.1'\nexit 3\n";
  }
  EXPECT_THROW(backend::cutlass::run_profiler(exe.string(), {w}, 2, 10), Error);
  fs::remove(exe);
  // The program checks every candidate's result against the default's, within the dtype's
  // tolerance (exact for int32).
  auto text = backend::cutlass::profiler_source(w.cls, backend::cutlass::candidate_configs(w.cls, 90));
  EXPECT_NE(text.find("#define PT_CHECK_RTOL 2e-2f"), std::string::npos);
  backend::cutlass::GemmClass i8{DataType::Int(8), DataType::Int(32), true, {}};
  EXPECT_NE(backend::cutlass::profiler_source(i8, {backend::cutlass::default_config(i8, 90)}).find("PT_CHECK_RTOL 0.f"),
            std::string::npos);
}

// Each attention call runs the unit of its class (dtype, head-dimension bound, bias): CUTLASS's
// fused multi-head attention kernel, declared in the glue and compiled apart.
TEST(CutlassCodegen, AttentionCallsTheUnitOfItsClass) {
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 16, 4, 64), dtype="float16"), k: R.Tensor((2, 16, 4, 64), dtype="float16"), v: R.Tensor((2, 16, 4, 64), dtype="float16"), q2: R.Tensor((1, 8, 2, 96), dtype="bfloat16"), b: R.Tensor((1, 2, 1, 8), dtype="bfloat16")):
        with R.dataflow():
            a = R.nn.attention(q, k, v, scale=0.5, causal_mask="TopLeft")
            c = R.nn.attention(q2, q2, q2, b)
            gv = (a, c)
            R.output(gv)
        return gv
)";
  IRModule p = transform::partition_for("cutlass", parse(text), /*merge=*/false);
  auto m = generate_for(p, cutlass_test::test_target());
  EXPECT_TRUE(m.workloads.empty());
  std::vector<std::string> units;
  for (const auto& [sym, source] : m.units) units.push_back(sym);
  std::sort(units.begin(), units.end());
  EXPECT_EQ(units, (std::vector<std::string>{"pt_attention_bf16_k128_bias", "pt_attention_f16_k64"}));
  EXPECT_NE(m.source.find("pt_attention_f16_k64(&attn"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find(".scale = 0.5f; "), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("PT_MASK_TOP_LEFT"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find(".bias_stride_q = "), std::string::npos) << m.source;
  for (const auto& [sym, source] : m.units) {
    EXPECT_NE(source.find("#include \"kernel_forward.h\""), std::string::npos) << sym;
    EXPECT_EQ(source.find('@'), std::string::npos) << "an unfilled field in " << sym;
  }
  EXPECT_THROW(backend::cutlass::attention_class(DataType::Float(16), 160, false), Error);
  // The target's attention_tile: another unit, named by its tile; tiles the kernel cannot take
  // are refused with the rule.
  EXPECT_EQ(backend::cutlass::attention_class(DataType::Float(16), 64, false, "32x128").id(), "f16_k64_q32x128");
  EXPECT_EQ(backend::cutlass::attention_class(DataType::Float(16), 64, false, "64x64").id(), "f16_k64");
  for (const char* bad : {"48x64", "64x32", "256x128", "64", "64x64x1"})
    EXPECT_THROW(backend::cutlass::attention_class(DataType::Float(16), 64, false, bad), Error) << bad;
  // Stacked QKV: key and value read in place, 256 and 512 elements into rows of 768.
  IRModule sp = transform::partition_for("cutlass", parse(stacked_attention_module(3)), /*merge=*/false);
  ASSERT_EQ(composites(sp), std::vector<std::string>{"cutlass.stacked_attention"}) << script::print_module(sp);
  auto ms = generate_for(sp, cutlass_test::test_target());
  for (const char* want : {" + 256);", " + 512);", ".q_row = 768; ", ".k_row = 768; ", ".v_row = 768;", ".heads = (int32_t)4;"})
    EXPECT_NE(ms.source.find(want), std::string::npos) << want << "\n" << ms.source;
  // On sm90, float16 without a bias, at the default scale, 16 queries: CUTLASS's Hopper FMHA;
  // with attention_kernel=sm80, example 41's kernel.
  ASSERT_EQ(ms.units.size(), 1u);
  EXPECT_EQ(ms.units[0].first, "pt_attention_f16_d64_sm90");
  EXPECT_NE(ms.units[0].second.find("fmha_kernel_builder.hpp"), std::string::npos);
  EXPECT_NE(ms.units[0].second.find("ResidualFusion"), std::string::npos);
  // The unit sets its kernel's shared memory itself (CUTLASS remembers having set it in one
  // static per process, so a second module's kernel launched without it on the H100).
  EXPECT_NE(ms.units[0].second.find("cudaFuncAttributeMaxDynamicSharedMemorySize"), std::string::npos);
  auto m80 = generate_for(sp, cutlass_test::test_target({{"attention_kernel", "sm80"}}));
  ASSERT_EQ(m80.units.size(), 1u);
  EXPECT_EQ(m80.units[0].first, "pt_attention_f16_k64");
  using backend::cutlass::sm90_attention_class;
  auto call = [](DataType dt, int64_t d, int64_t dv, bool bias, const char* mask, int64_t sq, int64_t skv,
                 double scale_times_sqrt_d) {
    backend::cutlass::AttentionCall a{dt, d, dv, bias, mask, scale_times_sqrt_d / std::sqrt(double(d)), sq, skv};
    return a;
  };
  const DataType f16 = DataType::Float(16);
  EXPECT_EQ(sm90_attention_class(call(f16, 128, 128, false, "TopLeft", 64, 64, 1))->id(), "f16_d128_sm90_causal");
  EXPECT_FALSE(sm90_attention_class(call(f16, 64, 64, false, "", 77, 77, 1))) << "77 queries: not TMA rows";
  EXPECT_FALSE(sm90_attention_class(call(f16, 64, 64, false, "TopLeft", 64, 80, 1))) << "a causal mask over more keys";
  EXPECT_FALSE(sm90_attention_class(call(f16, 64, 64, true, "", 64, 64, 1))) << "a bias";
  EXPECT_FALSE(sm90_attention_class(call(f16, 64, 64, false, "", 64, 64, 0.5))) << "another scale";
  EXPECT_FALSE(sm90_attention_class(call(f16, 40, 40, false, "", 64, 64, 1))) << "head dimension 40";
  EXPECT_FALSE(sm90_attention_class(call(DataType::BFloat16(), 64, 64, false, "", 64, 64, 1)));
  // The target's schedule and tile: other units, named by them; example 41's tiles leave the
  // call to that kernel.
  const auto bert = call(f16, 64, 64, false, "", 128, 128, 1);
  EXPECT_EQ(sm90_attention_class(bert, "pingpong", "128x128")->id(), "f16_d64_sm90_k128_pingpong");
  EXPECT_FALSE(sm90_attention_class(bert, "", "32x128"));
  EXPECT_EQ(backend::cutlass::choose_attention_class(bert, 90, "auto", "32x128", "").id(), "f16_k64_q32x128");
  EXPECT_EQ(backend::cutlass::choose_attention_class(bert, 80, "auto", "", "").id(), "f16_k64");
  EXPECT_THROW(backend::cutlass::choose_attention_class(bert, 90, "sm90", "", ""), Error) << "only auto or sm80";
  EXPECT_THROW(sm90_attention_class(bert, "fast"), Error);
}

// The attention unit and its glue compile with nvcc (about 20 s), and the module loads.
TEST(CutlassCompile, AttentionModuleCompiles) {
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  IRModule p = transform::partition_for(
      "cutlass", parse(attention_module("float16", "(2, 16, 4, 64)", "(2, 16, 4, 64)", "R.nn.attention(q, k, v)")), false);
  auto exec = codegen::build(p, codegen::BuildOptions({cutlass_test::test_target()}, false));
  ASSERT_TRUE(exec);
  bool found = false;
  for (const auto& mod : exec->external_modules) found = found || mod->type_key() == "cutlass";
  EXPECT_TRUE(found);
}

TEST(CutlassCompile, OneModuleCompilesAndASecondBuildRunsNoNvcc) {
  if (!cutlass_test::codegen_built()) GTEST_SKIP() << "the cutlass codegen is not built";
  IRModule p = transform::partition_for(
      "cutlass", parse(fill(kMatmul, {{"M", "n"}, {"K", "64"}, {"N", "128"}, {"dt", "float16"}})), true);
  auto& stats = backend::cutlass::nvcc_stats();
  // The glue the precompile helper makes is the build's own (the same source, so a cache hit).
  cutlass_test::compile_glue_only(p, cutlass_test::test_target());
  int glue_compiled = stats.compiled;
  auto exec = codegen::build(p, codegen::BuildOptions({cutlass_test::test_target()}, false));
  int compiled = stats.compiled;
  EXPECT_GE(stats.cached, 1) << "the build compiled the glue again: compile_glue_only made another source";
  (void)glue_compiled;
  auto start = std::chrono::steady_clock::now();
  auto exec2 = codegen::build(p, codegen::BuildOptions({cutlass_test::test_target()}, false));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(stats.compiled, compiled) << "the second build compiled again";
  EXPECT_LT(seconds, 5.0);
  // The artifact carries the compiled code and reloads without a GPU.
  auto file = std::filesystem::temp_directory_path() / ("partita_cutlass_" + std::to_string(getpid()) + ".partita");
  exec2->export_library(file.string());
  auto loaded = runtime::load_module(file.string());
  std::filesystem::remove(file);
  EXPECT_TRUE(loaded);
  // A VM asks whether a module's calls can be captured into a CUDA Graph when it is made,
  // before any call: the answer must already be yes (the plug-in loads its code at the first
  // call, which the VM runs uncaptured).
  bool found = false;
  for (const auto& mod : loaded->external_modules)
    if (mod->type_key() == "cutlass") {
      found = true;
      EXPECT_TRUE(mod->supports_graph_capture());
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace partita
