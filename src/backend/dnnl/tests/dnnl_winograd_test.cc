// The dnnl module's Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions
// (src/backend/dnnl/runtime/winograd_conv.h): chains of 3x3 convolutions (blocked layouts between
// them) with and without bias, ReLU, clip, residual sums (copied and in place), on small and odd
// spatial sizes and channel counts that are multiples of 8 but not of 16, agree with a naive
// double-precision reference; the graph's "winograd" key (the Target option) decides whether the
// kernel runs, and the count of Winograd convolutions proves which path was taken.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>

#include "random_tensor.h"
#include "../runtime/dnnl_runtime.h"
#include "partita/codegen/build.h"
#include "partita/codegen/codegen.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/runtime/executable.h"
#include "partita/runtime/vm.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend::dnnl {
namespace {

using json = nlohmann::json;
const DataType F32 = DataType::Float(32);

// oneDNN's instruction set here is AVX-512 (where oneDNN 2.6 has a Winograd convolution);
// DNNL_MAX_CPU_ISA=AVX2 makes an AVX-512 CPU an AVX2 one.
bool onednn_avx512() {
  const int isa = int(::dnnl::get_effective_cpu_isa()), avx512 = int(::dnnl::cpu_isa::avx512_core);
  return (isa & avx512) == avx512;
}

// Where the kernel runs: AVX2 and FMA, and oneDNN choosing 8-channel blocks (with AVX-512 it
// chooses 16-channel blocks, which the kernel does not take).
bool avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !onednn_avx512(); }

using partita::testing::random_tensor;

// A reference 3x3, stride 1, pad 1 convolution (double accumulation), then bias and post-ops
// in order: "sum" adds `residual`, "relu" max(v, 0), "clip" clamps to [-1, 1].
Tensor reference_conv(const Tensor& x, const Tensor& w, const Tensor* bias,
                      const std::vector<std::string>& post, const Tensor* residual) {
  int64_t n = x.shape()[0], ci = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t co = w.shape()[0];
  Tensor y = Tensor::empty({n, co, h, wd}, F32);
  const float* wp = w.data_as<float>();
  for (int64_t b = 0; b < n * co; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < wd; ++j) {
        int64_t img = b / co, o = b % co;
        const float* xp = x.data_as<float>() + img * ci * h * wd;
        double acc = bias ? bias->data_as<float>()[o] : 0.0;
        for (int64_t c = 0; c < ci; ++c)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              int64_t yy = i + ky - 1, xx = j + kx - 1;
              if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
              acc += double(xp[(c * h + yy) * wd + xx]) * wp[((o * ci + c) * 3 + ky) * 3 + kx];
            }
        int64_t idx = (b * h + i) * wd + j;
        for (const auto& p : post) {
          if (p == "sum") acc += residual->data_as<float>()[idx];
          if (p == "relu") acc = std::max(acc, 0.0);
          if (p == "clip") acc = std::min(std::max(acc, -1.0), 1.0);
        }
        y.data_as<float>()[idx] = float(acc);
      }
  return y;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  double max_ref = 1e-6, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    max_ref = std::max(max_ref, double(std::fabs(want.data_as<float>()[i])));
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, double(std::fabs(got.data_as<float>()[i] - want.data_as<float>()[i])));
  EXPECT_LE(worst, 1e-4 * max_ref)
      << what << ": max abs error " << worst << ", max |ref| " << max_ref;
}

struct ChainCase {
  int64_t cin, cmid, cout, h, w;
  bool bias;
  int64_t n = 1;  // batch
};

std::string name_of(const ChainCase& c) {
  return std::to_string(c.cin) + "->" + std::to_string(c.cmid) + "->" + std::to_string(c.cout) +
         " at " + std::to_string(c.h) + "x" + std::to_string(c.w) + (c.bias ? " with bias" : "") +
         ", batch " + std::to_string(c.n);
}

// Four chained convolutions as one dnnl graph (values stay blocked between them):
//   y1 = relu(conv(x, w1) [+ b1]); y2 = relu(conv(y1, w2) [+ b2] + r)   (r an input: copied)
//   y3 = relu(conv(y2, w3) + y1)  (y1's last use: accumulated in place);  y4 = clip(conv(y3, w4))
// run with the given "winograd" mode; checks y2 and y4 against the reference and returns how
// many convolutions ran on our Winograd kernel and on oneDNN's (run_chain: ours only).
struct ChainRun {
  int64_t ours = 0, onednn = 0;  // convolutions on our Winograd kernel, on oneDNN's
};

ChainRun run_chain_counted(const ChainCase& c, int winograd, uint32_t seed) {
  const std::vector<int64_t> x_s{c.n, c.cin, c.h, c.w}, m_s{c.n, c.cmid, c.h, c.w},
      o_s{c.n, c.cout, c.h, c.w};
  Tensor x = random_tensor(x_s, seed), r = random_tensor(m_s, seed + 1);
  Tensor w1 = random_tensor({c.cmid, c.cin, 3, 3}, seed + 2, 1.0f / std::sqrt(float(9 * c.cin)));
  Tensor w2 = random_tensor({c.cmid, c.cmid, 3, 3}, seed + 3, 1.0f / std::sqrt(float(9 * c.cmid)));
  Tensor w3 = random_tensor({c.cmid, c.cmid, 3, 3}, seed + 4, 1.0f / std::sqrt(float(9 * c.cmid)));
  Tensor w4 = random_tensor({c.cout, c.cmid, 3, 3}, seed + 5, 1.0f / std::sqrt(float(9 * c.cmid)));
  Tensor b1 = random_tensor({c.cmid}, seed + 6), b2 = random_tensor({c.cmid}, seed + 7);
  // Values: 0 x, 1 r, 2 w1, 3 w2, 4 w3, 5 w4, 6 b1, 7 b2, 8 y1, 9 y2, 10 y3, 11 y4.
  json values = {x_s,
                 m_s,
                 w1.shape(),
                 w2.shape(),
                 w3.shape(),
                 w4.shape(),
                 json::array({c.cmid}),
                 json::array({c.cmid}),
                 m_s,
                 m_s,
                 m_s,
                 o_s};
  auto conv = [&](std::vector<int> in, int out, bool bias, json post) {
    return json{{"op", "conv2d"},    {"in", in},           {"out", out},
                {"strides", {1, 1}}, {"dilation", {1, 1}}, {"padding", {1, 1, 1, 1}},
                {"groups", 1},       {"has_bias", bias},   {"post", post}};
  };
  json relu = {{"kind", "eltwise"}, {"alg", "relu"}, {"alpha", 0.0}, {"beta", 0.0}};
  json clip = {{"kind", "eltwise"}, {"alg", "clip"}, {"alpha", -1.0}, {"beta", 1.0}};
  json nodes = json::array();
  // json::array: a braced single json is a copy of it for clang 14 and an array for g++ 12.
  nodes.push_back(c.bias ? conv({0, 2, 6}, 8, true, json::array({relu}))
                         : conv({0, 2}, 8, false, json::array({relu})));
  nodes.push_back(c.bias ? conv({8, 3, 7}, 9, true, {{{"kind", "sum"}, {"in", 1}}, relu})
                         : conv({8, 3}, 9, false, {{{"kind", "sum"}, {"in", 1}}, relu}));
  nodes.push_back(conv({9, 4}, 10, false, {{{"kind", "sum"}, {"in", 8}}, relu}));
  nodes.push_back(conv({10, 5}, 11, false, json::array({clip})));
  json consts = json::array();
  const char* names[] = {"w1", "w2", "w3", "w4", "b1", "b2"};
  for (int k = 0; k < 6; ++k) consts.push_back({{"value", 2 + k}, {"name", names[k]}});
  json g = {{"version", 1},
            {"num_threads", 2},
            {"winograd", winograd},
            {"functions",
             {{{"symbol", "chain"},
               {"values", values},
               {"inputs", {0, 1}},
               {"outputs", {9, 11}},
               {"constants", consts},
               {"nodes", nodes}}}}};
  auto mod = make_dnnl_module(g.dump());
  mod->init_constants({{"w1", w1}, {"w2", w2}, {"w3", w3}, {"w4", w4}, {"b1", b1}, {"b2", b2}});
  auto f = mod->get_function("chain");
  std::vector<Tensor> in{x, r}, out{Tensor::empty(m_s, F32), Tensor::empty(o_s, F32)};
  Tensor y1 = reference_conv(x, w1, c.bias ? &b1 : nullptr, {"relu"}, nullptr);
  Tensor y2 = reference_conv(y1, w2, c.bias ? &b2 : nullptr, {"sum", "relu"}, &r);
  Tensor y3 = reference_conv(y2, w3, nullptr, {"sum", "relu"}, &y1);
  Tensor y4 = reference_conv(y3, w4, nullptr, {"clip"}, nullptr);
  for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the built program
    f(in, out);
    expect_close(out[0], y2, name_of(c) + ", y2, winograd " + std::to_string(winograd));
    expect_close(out[1], y4, name_of(c) + ", y4, winograd " + std::to_string(winograd));
  }
  return {dnnl_module_winograd_convs(*mod), dnnl_module_onednn_winograd_convs(*mod)};
}

int64_t run_chain(const ChainCase& c, int winograd, uint32_t seed) { return run_chain_counted(c, winograd, seed).ours; }

const std::vector<ChainCase> kCases = {
    {8, 16, 24, 7, 7, true},   {16, 24, 8, 14, 14, false}, {24, 8, 16, 5, 9, true},
    {64, 64, 64, 1, 1, false}, {8, 24, 64, 2, 3, true},    {64, 16, 24, 7, 7, false},
    {16, 64, 8, 14, 14, true}, {16, 8, 16, 9, 7, true, 3}, {24, 16, 8, 3, 5, false, 2}};

TEST(DnnlWinograd, ForcedOnEverySupportedConvMatchesReference) {
  if (!avx2_fma()) GTEST_SKIP() << "not an AVX2 (non-AVX-512) CPU: the Winograd kernel is not used";
  uint32_t seed = 100;
  for (int tile : {2, 4})
    for (const auto& c : kCases) {
      int64_t n = run_chain(c, tile, seed += 10);
      EXPECT_EQ(n, 4) << name_of(c) << ", F(" << tile << "x" << tile
                      << ", 3x3): every convolution should run on the Winograd kernel";
    }
}

TEST(DnnlWinograd, OffRunsOneDnnOnly) {
  uint32_t seed = 200;
  for (const auto& c : kCases) EXPECT_EQ(run_chain(c, 0, seed += 10), 0) << name_of(c);
}

// oneDNN's Winograd convolution (mode 3: wherever oneDNN has one) with every post-op the chain
// uses, on odd sizes and channel counts, 1x1 maps and batches: same numbers as the reference.
TEST(DnnlWinograd, OneDnnsForcedMatchesReference) {
  if (!onednn_avx512()) GTEST_SKIP() << "not an AVX-512 CPU: oneDNN 2.6 has no Winograd convolution here";
  uint32_t seed = 600;
  // oneDNN 2.6 takes three of the four (not the clipped one).
  for (const auto& c : kCases) EXPECT_GE(run_chain_counted(c, 3, seed += 10).onednn, 3) << name_of(c);
}

// The default on AVX-512 CPUs times oneDNN's Winograd against its direct convolution per shape:
// whichever it picks, the numbers are the reference's.
TEST(DnnlWinograd, MeasuredChoiceMatchesReference) {
  uint32_t seed = 700;
  for (const auto& c : kCases) run_chain(c, 1, seed += 10);
  run_chain({64, 64, 64, 28, 28, true}, 1, seed += 10);
}

// Default mode: Winograd only where it measured faster (at least 7 pixels a side).
TEST(DnnlWinograd, DefaultFollowsTheMeasuredRule) {
  if (!avx2_fma()) GTEST_SKIP() << "not an AVX2 (non-AVX-512) CPU: the Winograd kernel is not used";
  uint32_t seed = 300;
  for (const auto& c : kCases) {
    int64_t want = c.h >= 7 && c.w >= 7 ? 4 : 0;
    EXPECT_EQ(run_chain(c, 1, seed += 10), want) << name_of(c);
  }
}

// Channels that are not multiples of 8 (padded blocks) stay on oneDNN even when forced.
TEST(DnnlWinograd, PaddedChannelsFallBackToOneDnn) {
  EXPECT_EQ(run_chain({12, 20, 5, 7, 7, true}, 2, 400), 0);
  EXPECT_EQ(run_chain({12, 20, 5, 7, 7, true}, 4, 410), 0);
}

// Through the compiler: Target("dnnl", {"winograd": ...}) reaches the graph and the module;
// results agree with the host VM either way.
Expr cst(const Tensor& t) { return make<ConstantNode>(t); }

TEST(DnnlWinograd, TargetOptionTurnsItOff) {
  Tensor w1 = random_tensor({16, 16, 3, 3}, 501, 0.1f), b1 = random_tensor({1, 16, 1, 1}, 502);
  Tensor w2 = random_tensor({16, 16, 3, 3}, 503, 0.1f);
  Var x = make<VarNode>("x", tensor_sinfo({1, 16, 14, 14}, F32));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  auto conv = [&](Expr in, const Tensor& w) {
    return bb.emit(op::make_call(
        "relax.nn.conv2d", {in, cst(w)},
        {{"strides", std::vector<int64_t>{1, 1}}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}}));
  };
  Var c1 = conv(x, w1);
  Var r1 =
      bb.emit(op::make_call("relax.nn.relu", {bb.emit(op::make_call("relax.add", {c1, cst(b1)}))}));
  Var c2 = conv(r1, w2);
  Var s = bb.emit(op::make_call("relax.add", {c2, x}));
  Var out = bb.emit_output(op::make_call("relax.nn.relu", {s}));
  bb.end_dataflow();
  bb.emit_func_output(out);
  IRModule mod = bb.get();
  Tensor in = random_tensor({1, 16, 14, 14}, 504);
  Tensor want = runtime::VirtualMachine(codegen::build(mod)).invoke("main", {in})[0];
  IRModule parted = transform::partition_for("dnnl", mod);
  for (int64_t mode : {0, 1, 2, 3, 4}) {
    codegen::BuildOptions opts;
    opts.targets.push_back(codegen::Target("dnnl", {{"num_threads", 2}, {"winograd", mode}}));
    auto exec = codegen::build(parted, opts);
    runtime::VirtualMachine vm(exec);
    expect_close(vm.invoke("main", {in})[0], want, "winograd " + std::to_string(mode));
    ASSERT_EQ(exec->external_modules.size(), 1u);
    json g = json::parse(exec->external_modules[0]->get_source());
    EXPECT_EQ(g.contains("winograd"), mode != 1);  // the default is left out of the graph
    int64_t n = dnnl_module_winograd_convs(*exec->external_modules[0]);
    EXPECT_EQ(n, (mode == 2 || mode == 4 || mode == 1) && avx2_fma() ? 2 : 0) << "winograd " << mode;
    int64_t onednn = dnnl_module_onednn_winograd_convs(*exec->external_modules[0]);
    if (mode == 3) EXPECT_EQ(onednn, onednn_avx512() ? 2 : 0) << "oneDNN has Winograd on AVX-512 CPUs only";
    if (mode != 1 && mode != 3) EXPECT_EQ(onednn, 0) << "winograd " << mode;
  }
  codegen::BuildOptions bad;
  bad.targets.push_back(codegen::Target("dnnl", {{"winograd", 5}}));  // only 0 to 4
  EXPECT_THROW(codegen::build(parted, bad), Error);
}

}  // namespace
}  // namespace partita::backend::dnnl
