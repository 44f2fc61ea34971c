// The cudnn backend on a GPU (skipped without one): every pattern × dtype against the host
// (the same graph in float32 on the host VM), attention with each mask, a partition of chained
// convolutions, the exported artifact reloaded, and a differential test over random graphs
// (PARTITA_CUDNN_GRAPHS of them, 300 by default).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <filesystem>

#include "cudnn_util.h"
#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"

namespace partita::backend::cudnn::testing {
namespace {

const DataType kF16 = DataType::Float(16), kBF16 = DataType::BFloat16(), kF32 = DataType::Float(32);

/// A graph built twice: in the dtype under test (for cudnn) and in float32 (the reference).
struct Built {
  IRModule mod, reference;
  std::vector<Tensor> inputs;
};

/// Builds `body` over parameters of `shapes` in `dt` and in float32.
template <class Body>
Built build_graph(DataType dt, const std::vector<std::vector<int64_t>>& shapes, uint32_t seed, Body body,
                  const std::vector<double>& scales = {}) {
  Built out;
  for (int pass = 0; pass < 2; ++pass) {
    const DataType t = pass == 0 ? dt : kF32;
    std::vector<Var> params;
    for (size_t i = 0; i < shapes.size(); ++i)
      params.push_back(make<VarNode>("p" + std::to_string(i), tensor_sinfo(shapes[i], t)));
    BlockBuilder bb;
    bb.begin_function("main", params);
    bb.begin_dataflow();
    Expr result = body(bb, params, t);
    Var gv = bb.emit_output(result);
    bb.end_dataflow();
    bb.emit_func_output(gv);
    (pass == 0 ? out.mod : out.reference) = bb.get();
  }
  for (size_t i = 0; i < shapes.size(); ++i)
    out.inputs.push_back(random_tensor(shapes[i], dt, seed + uint32_t(i) * 101u, i < scales.size() ? scales[i] : 1.0));
  return out;
}

size_t count_composites(const IRModule& mod) {
  size_t n = 0;
  std::function<void(const Expr&)> visit = [&](const Expr& e) {
    const auto* f = e.as<FunctionNode>();
    if (!f) return;
    n += f->attrs.count("Composite");
    if (const auto* seq = f->body.as<SeqExprNode>())
      for (const auto& block : seq->blocks)
        for (const auto& b : block->bindings)
          if (const auto* vb = b.as<VarBindingNode>()) visit(vb->value);
  };
  for (const auto& [gv, fn] : mod.functions()) visit(fn);
  return n;
}

/// Runs job(i) for every i < n on PARTITA_CUDNN_THREADS threads (8 by default): building cuDNN
/// plans compiles kernels on the CPU, which the GPU machine's cores do side by side.
template <class F>
void parallel_for(int n, F job) {
  const char* env = std::getenv("PARTITA_CUDNN_THREADS");
  const int threads = std::max(1, std::min(n, env ? std::atoi(env) : 8));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int i; (i = next++) < n;) job(i);
    });
  for (auto& t : pool) t.join();
}

/// Partitions for cudnn (expecting `composites` matches), builds with fallback off, runs on
/// cuda:0 and compares with the float32 host run; returns the relative error.
double check_on_gpu_or_throw(const Built& g, DataType dt, size_t composites, bool export_reload, bool capture,
                             double tol, const codegen::Target& target) {
  // What cuDNN can run, not only what it runs fastest: depthwise convolutions, fused clips and
  // biased attention too.
  transform::PassContext ctx = transform::PassContext::current();
  for (const char* key : {kTakeDepthwiseConfig, kFuseClipConfig, kBiasedAttentionConfig}) ctx.config[key] = true;
  transform::PassContext::Scope scope(ctx);
  IRModule part = partition_for_cudnn(g.mod);
  EXPECT_EQ(count_composites(part), composites) << script::print_module(part);
  auto exec = codegen::build(part, codegen::BuildOptions({target}, false));
  if (export_reload) {
    auto path = std::filesystem::temp_directory_path() / ("partita_cudnn_gpu_" + std::to_string(getpid()) + ".ptx");
    exec->export_library(path.string());
    exec = runtime::load_module(path.string());
    std::filesystem::remove(path);
  }
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  // Tests running on several threads leave CUDA Graphs alone: one thread's capture would
  // forbid the others' work on the legacy default stream.
  vm.set_graph_capture(capture);
  Tensor got = vm.invoke("main", g.inputs)[0].to(Device::cpu());
  Tensor again = vm.invoke("main", g.inputs)[0].to(Device::cpu());  // plans reused (captured)
  if (capture) {
    Tensor replayed = vm.invoke("main", g.inputs)[0].to(Device::cpu());
    EXPECT_EQ(relative_error(replayed, got), 0.0) << "the replayed CUDA Graph differs";
    EXPECT_EQ(vm.graph_stats().captures, 1);
    EXPECT_EQ(vm.graph_stats().fallbacks, 0);
  }
  std::vector<Tensor> ref_in;
  for (const Tensor& t : g.inputs) ref_in.push_back(to_f32(t));
  runtime::VirtualMachine host(codegen::build(g.reference));
  Tensor want = host.invoke("main", ref_in)[0];
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(relative_error(again, got), 0.0) << "a second run differs";
  const double err = relative_error(got, want);
  EXPECT_LT(err, tol > 0 ? tol : tolerance(dt));
  return err;
}

/// check_on_gpu_or_throw, with an Error (a plan cuDNN cannot build) recorded as a failure, so
/// one run on the GPU reports every case.
double check_on_gpu(const Built& g, DataType dt, size_t composites, bool export_reload = false, bool capture = false,
                    double tol = 0, const codegen::Target& target = codegen::Target("cudnn")) {
  try {
    return check_on_gpu_or_throw(g, dt, composites, export_reload, capture, tol, target);
  } catch (const Error& e) {
    ADD_FAILURE() << e.kind() << ": " << e.message();
    return -1;
  }
}

const char* kActs[] = {"", "relu", "gelu", "silu", "sigmoid", "clip"};

Expr activation(const std::string& act, Expr x) {
  if (act == "relu") return op::nn::relu(x);
  if (act == "gelu") return op::nn::gelu(x);
  if (act == "silu") return op::nn::silu(x);
  if (act == "sigmoid") return op::sigmoid(x);
  return op::clip(x, 0.0, 0.5);
}

TEST(CudnnGpu, EveryConvPatternAndDtype) {
  PARTITA_REQUIRE_CUDA_DEVICE();
  const DataType dts[] = {kF16, kBF16, kF32};
  parallel_for(3 * 2 * 2 * 6, [&](int i) {
    const DataType dt = dts[i / 24];
    const int bias = i / 12 % 2, res = i / 6 % 2;
    const char* act = kActs[i % 6];
    SCOPED_TRACE(dt.str() + " bias " + std::to_string(bias) + " residual " + std::to_string(res) + " act " + act);
    Built g = build_graph(dt, {{2, 16, 9, 9}, {32, 16, 3, 3}, {1, 32, 1, 1}, {2, 32, 9, 9}}, 11,
                          [&](BlockBuilder& bb, const std::vector<Var>& p, DataType) -> Expr {
                            Expr y = bb.emit(op::nn::conv2d(p[0], p[1], {1, 1}, {1, 1}));
                            if (bias) y = bb.emit(op::add(y, p[2]));
                            if (res) y = bb.emit(op::add(y, p[3]));
                            if (*act) y = activation(act, y);
                            return y;
                          },
                          {1.0, 1.0 / 12, 1.0, 1.0});
    check_on_gpu(g, dt, 1);
  });
}

TEST(CudnnGpu, GroupedDepthwiseStridedDilatedPadded) {
  PARTITA_REQUIRE_CUDA_DEVICE();
  struct Conv {
    int64_t c, k, r, groups, stride, pad, dilation;
  };
  for (DataType dt : {kF16, kF32})
    for (Conv c : {Conv{16, 32, 3, 4, 1, 1, 1}, Conv{32, 32, 3, 32, 2, 1, 1}, Conv{8, 16, 5, 1, 2, 2, 1},
                   Conv{16, 16, 3, 1, 1, 2, 2}, Conv{3, 16, 7, 1, 2, 3, 1}, Conv{24, 24, 3, 24, 1, 1, 1}}) {
      SCOPED_TRACE(dt.str() + " c " + std::to_string(c.c) + " groups " + std::to_string(c.groups));
      Built g = build_graph(dt, {{2, c.c, 15, 15}, {c.k, c.c / c.groups, c.r, c.r}, {1, c.k, 1, 1}}, 5,
                            [&](BlockBuilder& bb, const std::vector<Var>& p, DataType) -> Expr {
                              Expr y = bb.emit(op::nn::conv2d(p[0], p[1], {c.stride, c.stride}, {c.pad, c.pad},
                                                              {c.dilation, c.dilation}, c.groups));
                              return op::nn::relu(bb.emit(op::add(y, p[2])));
                            },
                            {1.0, 0.3, 1.0});
      check_on_gpu(g, dt, 1);
    }
}

// autotune=1 with autotune_top_k=3: the heuristic's first three engines are built and timed at
// load; whichever wins, the result is the same convolution (depthwise and grouped, where the
// heuristic's first choice is known to be slow in NHWC float16).
TEST(CudnnGpu, AutotunedTopKEnginesGiveTheSameResult) {
  PARTITA_REQUIRE_CUDA_DEVICE();
  const codegen::Target tuned("cudnn", {{"autotune", int64_t(1)}, {"autotune_top_k", int64_t(3)}});
  for (DataType dt : {kF16, kF32})
    for (int64_t groups : {int64_t(1), int64_t(4), int64_t(32)}) {
      SCOPED_TRACE(dt.str() + " groups " + std::to_string(groups));
      Built g = build_graph(dt, {{4, 32, 15, 15}, {32, 32 / groups, 3, 3}, {1, 32, 1, 1}}, 5,
                            [&](BlockBuilder& bb, const std::vector<Var>& p, DataType) -> Expr {
                              Expr y = bb.emit(op::nn::conv2d(p[0], p[1], {1, 1}, {1, 1}, {1, 1}, groups));
                              return op::nn::relu(bb.emit(op::add(y, p[2])));
                            },
                            {1.0, 0.3, 1.0});
      check_on_gpu(g, dt, 1, /*export_reload=*/true, /*capture=*/true, 0, tuned);
    }
}

// A residual block as one partition (NHWC throughout), with constant weights re-laid out at
// load, exported and reloaded.
TEST(CudnnGpu, ResidualBlockWithConstantWeightsExported) {
  PARTITA_REQUIRE_CUDA_DEVICE();
  for (DataType dt : {kF16, kF32}) {
    Built g = build_graph(dt, {{2, 32, 14, 14}}, 3, [&](BlockBuilder& bb, const std::vector<Var>& p, DataType t) -> Expr {
      auto weight = [&](std::vector<int64_t> s, uint32_t seed) {
        Tensor w = to_f32(random_tensor(s, dt, seed, 0.2));
        if (!(t == kF32)) w = random_tensor(s, dt, seed, 0.2);
        return make<ConstantNode>(w);
      };
      Expr a = bb.emit(op::nn::relu(bb.emit(op::add(bb.emit(op::nn::conv2d(p[0], weight({16, 32, 1, 1}, 1))),
                                                      weight({1, 16, 1, 1}, 2)))));
      Expr b2 = bb.emit(op::nn::relu(bb.emit(op::nn::conv2d(a, weight({16, 16, 3, 3}, 3), {1, 1}, {1, 1}))));
      Expr c = bb.emit(op::add(bb.emit(op::nn::conv2d(b2, weight({32, 16, 1, 1}, 4))), p[0]));
      return op::nn::relu(c);
    });
    check_on_gpu(g, dt, 3, /*export_reload=*/true, /*capture=*/true);
  }
}

TEST(CudnnGpu, AttentionWithEachMask) {
  PARTITA_REQUIRE_CUDA_DEVICE();
  struct Case {
    int64_t sq, skv, d;
    std::string causal;
    std::vector<int64_t> bias;
  };
  const std::vector<Case> cases = {{64, 64, 64, "", {}},          {128, 128, 64, "TopLeft", {}},
                                   {32, 96, 64, "BottomRight", {}}, {128, 128, 64, "", {2, 1, 1, 128}},
                                   {64, 80, 32, "", {1, 4, 64, 80}}, {64, 64, 128, "TopLeft", {2, 1, 64, 64}}};
  parallel_for(int(2 * cases.size()), [&](int i) {
    const DataType dt = i % 2 ? kBF16 : kF16;
    const Case& c = cases[size_t(i / 2)];
    {
      SCOPED_TRACE(dt.str() + " sq " + std::to_string(c.sq) + " skv " + std::to_string(c.skv) + " " + c.causal +
                   (c.bias.empty() ? "" : " bias"));
      std::vector<std::vector<int64_t>> shapes = {{2, c.sq, 4, c.d}, {2, c.skv, 4, c.d}, {2, c.skv, 4, c.d}};
      if (!c.bias.empty()) shapes.push_back(c.bias);
      Built g = build_graph(dt, shapes, 17, [&](BlockBuilder&, const std::vector<Var>& p, DataType) -> Expr {
        std::vector<Expr> args(p.begin(), p.end());
        std::vector<std::pair<std::string, AttrValue>> attrs;
        if (!c.causal.empty()) attrs.emplace_back("causal_mask", c.causal);
        return op::make_call(args.size() == 4 ? "relax.nn.attention_bias" : "relax.nn.attention", args, attrs);
      });
      check_on_gpu(g, dt, 1);
    }
  });
}

// Random graphs: one to three convolutions in a chain (random shapes, groups, strides, padding,
// dilation, epilogues, dtypes), or an attention (random lengths, heads, masks, scales) —
// against the host. The graphs are drawn first (so a run is the same whatever the threads do),
// then checked side by side.
struct Layer {
  int64_t k, r, groups, stride, pad, dilation;
  bool bias, res;
  std::string act;
};

struct GraphSpec {
  DataType dt;
  bool attention = false;
  // attention
  int64_t b = 0, sq = 0, skv = 0, n = 0, d = 0;
  std::string causal;
  bool scaled = false;
  double scale = 0;
  std::vector<int64_t> bias;
  // convolutions
  int64_t batch = 0, c = 0, hw = 0;
  std::vector<Layer> layers;
  std::vector<int64_t> out_hw;

  std::string describe() const {
    if (attention)
      return "attention b " + std::to_string(b) + " q " + std::to_string(sq) + " kv " + std::to_string(skv) + " n " +
             std::to_string(n) + " d " + std::to_string(d) + " " + causal + (bias.empty() ? "" : " bias") +
             (scaled ? " scale " + std::to_string(scale) : "");
    std::string what = "convs n " + std::to_string(batch) + " c " + std::to_string(c) + " hw " + std::to_string(hw);
    for (const Layer& L : layers)
      what += " | k " + std::to_string(L.k) + " r " + std::to_string(L.r) + " g " + std::to_string(L.groups) + " s " +
              std::to_string(L.stride) + " p " + std::to_string(L.pad) + " d " + std::to_string(L.dilation) +
              (L.bias ? " bias" : "") + (L.res ? " res" : "") + " " + L.act;
    return what;
  }
};

GraphSpec draw(std::mt19937& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  GraphSpec g;
  g.attention = uniform(0, 4) == 0;
  if (g.attention) {
    g.dt = uniform(0, 1) ? kF16 : kBF16;
    g.b = uniform(1, 3), g.sq = uniform(1, 12) * 16, g.skv = uniform(1, 12) * 16, g.n = uniform(1, 8);
    g.d = std::vector<int64_t>{32, 64, 128}[size_t(uniform(0, 2))];
    g.causal = std::vector<std::string>{"", "", "TopLeft", "BottomRight"}[size_t(uniform(0, 3))];
    if (g.causal == "BottomRight" && g.skv < g.sq) std::swap(g.sq, g.skv);
    // cuDNN takes no bias with a bottom-right mask (the check leaves such calls on the host).
    if (uniform(0, 1) && g.causal != "BottomRight")
      g.bias = {uniform(0, 1) ? g.b : 1, uniform(0, 1) ? g.n : 1, uniform(0, 1) ? g.sq : 1, g.skv};
    g.scaled = uniform(0, 1);
    g.scale = 0.05 + 0.01 * double(uniform(0, 10));
    return g;
  }
  g.dt = std::vector<DataType>{kF16, kBF16, kF32}[size_t(uniform(0, 2))];
  const int64_t layers = uniform(1, 3);
  g.batch = uniform(1, 3), g.hw = uniform(5, 20), g.c = uniform(1, 6) * (uniform(0, 2) ? 8 : 1);
  int64_t cc = g.c, h = g.hw;
  for (int64_t l = 0; l < layers; ++l) {
    Layer L;
    L.groups = std::vector<int64_t>{1, 1, 1, 2, cc}[size_t(uniform(0, 4))];
    if (cc % L.groups) L.groups = 1;
    L.k = L.groups == cc && uniform(0, 1) ? cc : L.groups * uniform(1, 4) * (uniform(0, 1) ? 8 : 1);
    L.r = std::vector<int64_t>{1, 3, 5}[size_t(uniform(0, 2))];
    L.stride = uniform(1, 2);
    L.dilation = L.r > 1 && uniform(0, 3) == 0 ? 2 : 1;
    L.pad = uniform(0, L.r / 2 * L.dilation);
    const int64_t span = L.dilation * (L.r - 1) + 1;
    if (h + 2 * L.pad < span) L.pad = (span - h + 1) / 2;
    L.bias = uniform(0, 1);
    L.res = uniform(0, 3) == 0;
    L.act = kActs[uniform(0, 5)];
    // Where the check leaves a gelu on the host (float32; grouped bfloat16 with a bias), the host
    // could not run it in 16 bits: such layers take a relu instead.
    if (L.act == "gelu" && g.dt == kBF16 && L.groups != 1 && L.bias) L.act = "relu";
    g.layers.push_back(L);
    h = (h + 2 * L.pad - span) / L.stride + 1;
    g.out_hw.push_back(h);
    cc = L.k;
  }
  return g;
}

void check_spec(const GraphSpec& spec, uint32_t seed) {
  const DataType dt = spec.dt;
  if (spec.attention) {
    std::vector<std::vector<int64_t>> shapes = {
        {spec.b, spec.sq, spec.n, spec.d}, {spec.b, spec.skv, spec.n, spec.d}, {spec.b, spec.skv, spec.n, spec.d}};
    if (!spec.bias.empty()) shapes.push_back(spec.bias);
    Built g = build_graph(dt, shapes, seed, [&](BlockBuilder&, const std::vector<Var>& p, DataType) -> Expr {
      std::vector<Expr> args(p.begin(), p.end());
      std::vector<std::pair<std::string, AttrValue>> attrs;
      if (!spec.causal.empty()) attrs.emplace_back("causal_mask", spec.causal);
      if (spec.scaled) attrs.emplace_back("scale", spec.scale);
      return op::make_call(args.size() == 4 ? "relax.nn.attention_bias" : "relax.nn.attention", args, attrs);
    });
    check_on_gpu(g, dt, 1);
    return;
  }
  // Weights scaled by 1 / sqrt(fan-in), so values stay of order 1 through the chain.
  std::vector<std::vector<int64_t>> shapes = {{spec.batch, spec.c, spec.hw, spec.hw}};
  std::vector<double> scales = {1.0};
  int64_t cc = spec.c;
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const Layer& L = spec.layers[l];
    shapes.push_back({L.k, cc / L.groups, L.r, L.r});
    scales.push_back(1.0 / std::sqrt(double(cc / L.groups * L.r * L.r)));
    shapes.push_back({1, L.k, 1, 1});
    scales.push_back(0.5);
    if (L.res) {
      shapes.push_back({spec.batch, L.k, spec.out_hw[l], spec.out_hw[l]});
      scales.push_back(1.0);
    }
    cc = L.k;
  }
  Built g = build_graph(dt, shapes, seed, [&](BlockBuilder& bb, const std::vector<Var>& p, DataType) -> Expr {
    Expr y = p[0];
    size_t k = 1;
    for (const Layer& L : spec.layers) {
      y = bb.emit(op::nn::conv2d(y, p[k++], {L.stride, L.stride}, {L.pad, L.pad}, {L.dilation, L.dilation}, L.groups));
      Expr b = p[k++];
      if (L.bias) y = bb.emit(op::add(y, b));
      if (L.res) y = bb.emit(op::add(y, p[k++]));
      if (!L.act.empty()) y = bb.emit(activation(L.act, y));
    }
    return y;
  }, scales);
  // Each layer rounds its result to the dtype: the reference (float32 throughout) drifts
  // from it layer by layer.
  check_on_gpu(g, dt, spec.layers.size(), false, false, tolerance(dt) * double(spec.layers.size()));
}

TEST(CudnnGpu, DifferentialRandomGraphs) {
  // PARTITA_CUDNN_LIST=1 prints the graphs instead of running them (to reproduce a failure).
  const bool list_only = std::getenv("PARTITA_CUDNN_LIST") != nullptr;
  if (!list_only) PARTITA_REQUIRE_CUDA_DEVICE();
  const char* env = std::getenv("PARTITA_CUDNN_GRAPHS");
  const int graphs = env ? std::atoi(env) : 300;
  std::mt19937 rng(2026);
  std::vector<GraphSpec> specs;
  for (int i = 0; i < graphs; ++i) specs.push_back(draw(rng));
  int convs = 0, attentions = 0;
  for (const GraphSpec& g : specs) (g.attention ? attentions : convs) += g.attention ? 1 : int(g.layers.size());
  if (list_only) {
    for (int i = 0; i < graphs; ++i) std::printf("graph %d %s %s\n", i, specs[size_t(i)].dt.str().c_str(),
                                                 specs[size_t(i)].describe().c_str());
    return;
  }
  auto start = std::chrono::steady_clock::now();
  // PARTITA_CUDNN_SECONDS: stop starting graphs after that long (the count run is reported).
  const char* limit = std::getenv("PARTITA_CUDNN_SECONDS");
  const double max_seconds = limit ? std::atof(limit) : 1e9;
  std::atomic<int> ran{0};
  parallel_for(graphs, [&](int i) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > max_seconds) return;
    SCOPED_TRACE("graph " + std::to_string(i) + " " + specs[size_t(i)].dt.str() + " " + specs[size_t(i)].describe());
    check_spec(specs[size_t(i)], uint32_t(i));
    ++ran;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[cudnn differential] %d graphs (%d convolutions, %d attentions) in %.1f s\n", ran.load(), convs,
              attentions, seconds);
  EXPECT_EQ(ran.load(), graphs);
}

}  // namespace
}  // namespace partita::backend::cudnn::testing
