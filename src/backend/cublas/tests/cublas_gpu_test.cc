// On the GPU: every pattern for every dtype it takes against the float32 model on the host
// kernels (16-bit inputs are exact in float32, int8 products exact), plus what the runtime adds:
// symbolic M with plans cached per shape, batch folding / strided / broadcast, CUDA Graph
// capture, TF32 and autotuning options, named constants, merged partitions. Skipped, saying
// why, without a device (everything up to running is still built here).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cublas_gpu_util.h"
#include "partita/codegen/collage.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/script/printer.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend::cublas::test {
namespace {

std::string T(const std::string& shape, const std::string& dtype) { return tensor(shape, dtype); }

struct GpuCase {
  std::string name;
  std::string params;
  std::vector<std::string> body;
  std::string ret;
  std::vector<std::vector<int64_t>> inputs;
  std::string composite;
  double tol_scale = 1;  // > 1: a gelu (cuBLASLt's uses a fast tanh: ~2.5e-4 |x| off in float32)
};

// The pattern cases with dtype placeholder @ (inputs) and @O (result).
std::vector<GpuCase> pattern_cases() {
  std::string x = "x: " + T("(64, 96)", "@"), w = "w: " + T("(96, 40)", "@"), wt = "w: " + T("(40, 96)", "@"),
              b = "b: " + T("(40,)", "@O"), r = T("(64, 40)", "@O");
  std::string perm = "wt: " + T("(96, 40)", "@") + " = R.permute_dims(w, axes=None)";
  std::string mm = "R.matmul(x, w, out_dtype=\"@O\")", mmt = "R.matmul(x, wt, out_dtype=\"@O\")";
  std::vector<int64_t> X = {64, 96}, W = {96, 40}, WT = {40, 96}, B = {40};
  std::vector<GpuCase> out;
  out.push_back({"matmul", x + ", " + w, {"gv: " + r + " = " + mm}, r, {X, W}, "cublas.matmul"});
  out.push_back({"matmul_bias", x + ", " + w + ", " + b, {"m: " + r + " = " + mm, "gv: " + r + " = R.add(m, b)"}, r, {X, W, B},
                 "cublas.matmul_bias"});
  out.push_back({"matmul_bias_relu", x + ", " + w + ", " + b,
                 {"m: " + r + " = " + mm, "a: " + r + " = R.add(m, b)", "gv: " + r + " = R.nn.relu(a)"}, r, {X, W, B},
                 "cublas.matmul_bias_relu"});
  out.push_back({"matmul_bias_gelu", x + ", " + w + ", " + b,
                 {"m: " + r + " = " + mm, "a: " + r + " = R.add(m, b)", "gv: " + r + " = R.nn.gelu(a)"}, r, {X, W, B},
                 "cublas.matmul_bias_gelu", 10});
  out.push_back({"matmul_transposed", x + ", " + wt, {perm, "gv: " + r + " = " + mmt}, r, {X, WT}, "cublas.matmul_transposed"});
  out.push_back({"matmul_transposed_bias", x + ", " + wt + ", " + b, {perm, "m: " + r + " = " + mmt, "gv: " + r + " = R.add(b, m)"},
                 r, {X, WT, B}, "cublas.matmul_transposed_bias"});
  out.push_back({"matmul_transposed_bias_relu", x + ", " + wt + ", " + b,
                 {perm, "m: " + r + " = " + mmt, "a: " + r + " = R.add(m, b)", "gv: " + r + " = R.nn.relu(a)"}, r, {X, WT, B},
                 "cublas.matmul_transposed_bias_relu"});
  out.push_back({"matmul_transposed_bias_gelu", x + ", " + wt + ", " + b,
                 {perm, "m: " + r + " = " + mmt, "a: " + r + " = R.add(m, b)", "gv: " + r + " = R.nn.gelu(a)"}, r, {X, WT, B},
                 "cublas.matmul_transposed_bias_gelu", 10});
  std::string one = T("(1,)", "@O");
  out.push_back({"matmul_transposed_multiply", x + ", " + wt + ", sa: " + one + ", sb: " + one,
                 {perm, "m: " + r + " = " + mmt, "s: " + one + " = R.multiply(sa, sb)", "p: " + r + " = R.multiply(m, s)",
                  "gv: " + T("(64, 40)", "float32") + " = R.astype(p, dtype=\"float32\")"},
                 T("(64, 40)", "float32"), {X, WT, {1}, {1}}, "cublas.matmul_transposed_multiply"});
  // Beyond TVM: a residual of the product's shape, alone and under relu.
  out.push_back({"matrix_bias", x + ", " + w + ", z: " + r, {"m: " + r + " = " + mm, "gv: " + r + " = R.add(m, z)"}, r,
                 {X, W, {64, 40}}, "cublas.matmul_bias"});
  out.push_back({"matrix_bias_relu", x + ", " + w + ", z: " + r,
                 {"m: " + r + " = " + mm, "a: " + r + " = R.add(z, m)", "gv: " + r + " = R.nn.relu(a)"}, r, {X, W, {64, 40}},
                 "cublas.matmul_bias_relu"});
  return out;
}

struct DtypeCase {
  size_t index;
  std::string in, out;
};

std::vector<DtypeCase> all_pattern_dtypes() {
  std::vector<DtypeCase> out;
  auto cases = pattern_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    // A GELU with a float32 result is not fused (patterns.cc: the epilogue's tanh form).
    const bool gelu = cases[i].name.find("gelu") != std::string::npos;
    for (const char* dt : {"float32", "float16", "bfloat16"})
      if (!gelu || std::string(dt) != "float32") out.push_back({i, dt, dt});
    if (cases[i].name.find("multiply") == std::string::npos && !gelu) {
      out.push_back({i, "float16", "float32"});  // 16-bit inputs, float32 product
    }
    if (cases[i].name == "matmul" || cases[i].name == "matmul_transposed") out.push_back({i, "int8", "int32"});
  }
  return out;
}

double tolerance(const std::string& dtype) {
  if (dtype == "float16") return 2e-3;
  if (dtype == "bfloat16") return 1.6e-2;
  if (dtype == "int32") return 0;
  return 2e-5;
}

class CublasPattern : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(CublasPattern, MatchesTheHostKernels) {
  const GpuCase c = pattern_cases()[GetParam().index];
  const std::string in_dt = GetParam().in, out_dt = GetParam().out;
  auto text_for = [&](const std::string& i, const std::string& o) {
    std::string s = module_text(c.params, c.body, c.ret);
    s = replace_all(s, "\"@O\"", "\"" + o + "\"");
    return replace_all(s, "\"@\"", "\"" + i + "\"");
  };
  IRModule mod = script::parse_module(text_for(in_dt, out_dt));
  // The reference: the float32 model on the host kernels (the cast of the scaled case stays).
  // cuBLASLt's GELU epilogue is the tanh form (relax.nn.gelu with a 16-bit result goes to it,
  // as in TVM): the reference computes that form.
  IRModule ref = script::parse_module(replace_all(text_for("float32", "float32"), "R.nn.gelu(", "R.nn.gelu_tanh("));
  std::vector<Tensor> in, ref_in;
  auto* main_fn = mod.lookup("main").as<FunctionNode>();
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    DataType dt = main_fn->params[k]->struct_info_.as<TensorStructInfoNode>()->dtype;
    in.push_back(random_input(c.inputs[k], dt, uint32_t(17 * k + 3)));
    ref_in.push_back(as_f32(in.back()));
  }
  IRModule parted = partition_for_cublas(mod);
  ASSERT_EQ(cublas_composites(parted), std::vector<std::string>{c.composite}) << script::print_module(parted);
  auto ex = codegen::build(parted, codegen::BuildOptions({cuda_target()}, false));
  EXPECT_EQ(count_modules(*ex, "cublas"), 1u);
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(ex, Device::cuda(0));
  auto got = run_gpu(vm, in);
  auto want = run_host(ref, ref_in);
  ASSERT_EQ(got.size(), 1u);
  double tol = std::max(tolerance(out_dt == "float32" ? in_dt : out_dt), c.tol_scale > 1 ? 1e-3 : 0.0);
  EXPECT_TRUE(close(got[0], want[0], tol)) << c.name << " " << in_dt << " -> " << out_dt;
}

INSTANTIATE_TEST_SUITE_P(EveryPatternAndDtype, CublasPattern, ::testing::ValuesIn(all_pattern_dtypes()),
                         [](const ::testing::TestParamInfo<DtypeCase>& info) {
                           return pattern_cases()[info.param.index].name + "_" + info.param.in + "_" + info.param.out;
                         });

// A module's GEMM plans so far, per function: [plans, heuristic queries] of its first GEMM.
std::pair<int, int> plans_of(const runtime::Executable& ex) {
  for (const auto& m : ex.external_modules)
    if (m->type_key() == "cublas") {
      auto j = nlohmann::json::parse(m->get_source("plans"));
      for (const auto& [symbol, steps] : j.items()) return {steps[0]["plans"].get<int>(), steps[0]["heuristic_queries"].get<int>()};
    }
  return {-1, -1};
}

TEST(CublasGpu, SymbolicMWithPlansCachedPerShape) {
  std::string f16 = "float16";
  IRModule mod = script::parse_module(module_text(
      "x: " + T("(\"m\", 64)", f16) + ", w: " + T("(48, 64)", f16) + ", b: " + T("(48,)", f16),
      {"wt: " + T("(64, 48)", f16) + " = R.permute_dims(w, axes=None)", "mm: " + T("(\"m\", 48)", f16) + " = R.matmul(x, wt, out_dtype=\"void\")",
       "gv: " + T("(\"m\", 48)", f16) + " = R.add(mm, b)"},
      T("(\"m\", 48)", f16)));
  auto ex = codegen::build(partition_for_cublas(mod), codegen::BuildOptions({cuda_target()}, false));
  EXPECT_EQ(plans_of(*ex), std::make_pair(0, 0));
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(ex, Device::cuda(0));
  vm.set_graph_capture(false);
  IRModule ref = script::parse_module(replace_all(script::print_module(mod), "float16", "float32"));
  int round = 0;
  for (int64_t m : {5, 37, 5, 37, 128}) {
    std::vector<Tensor> in = {random_input({m, 64}, DataType::Float(16), uint32_t(m)), random_input({48, 64}, DataType::Float(16), 2),
                              random_input({48}, DataType::Float(16), 3)};
    std::vector<Tensor> ref_in;
    for (const auto& t : in) ref_in.push_back(as_f32(t));
    auto got = run_gpu(vm, in);
    EXPECT_TRUE(close(got[0], run_host(ref, ref_in)[0], 2e-3)) << "m = " << m;
    ++round;
    // A shape seen before makes no plan and asks the heuristic nothing.
    int distinct = round <= 1 ? 1 : round <= 4 ? 2 : 3;
    EXPECT_EQ(plans_of(*ex), std::make_pair(distinct, distinct)) << "after m = " << m;
  }
}

struct BatchCase {
  std::vector<int64_t> a, b;
};

TEST(CublasGpu, BatchesFoldedStridedAndBroadcast) {
  std::vector<BatchCase> cases = {{{3, 16, 32}, {32, 24}},          // folded into M
                                  {{2, 3, 16, 32}, {1, 32, 24}},    // folded (a batch-1 rhs)
                                  {{4, 16, 32}, {4, 32, 24}},       // strided batched
                                  {{1, 16, 32}, {3, 32, 24}},       // broadcast lhs (TVM refuses)
                                  {{2, 1, 16, 32}, {1, 3, 32, 24}}, // broadcast both
                                  {{16, 32}, {5, 32, 24}}};         // 2-d lhs, batched rhs
  for (const auto& c : cases) {
    auto dims = [](const std::vector<int64_t>& s) {
      std::string out = "(";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
      return out + ")";
    };
    std::vector<int64_t> batch;
    size_t nb = std::max(c.a.size(), c.b.size()) - 2;
    for (size_t d = 0; d < nb; ++d) {
      int64_t da = d + c.a.size() >= nb + 2 ? c.a[d + c.a.size() - nb - 2] : 1;
      int64_t db = d + c.b.size() >= nb + 2 ? c.b[d + c.b.size() - nb - 2] : 1;
      batch.push_back(std::max(da, db));
    }
    std::vector<int64_t> o = batch;
    o.push_back(16);
    o.push_back(24);
    std::string text = module_text("x: " + T(dims(c.a), "float32") + ", y: " + T(dims(c.b), "float32"),
                                   {"gv: " + T(dims(o), "float32") + " = R.matmul(x, y, out_dtype=\"void\")"}, T(dims(o), "float32"));
    SCOPED_TRACE(text);
    IRModule mod = script::parse_module(text);
    IRModule parted = partition_for_cublas(mod);
    ASSERT_EQ(cublas_composites(parted), std::vector<std::string>{"cublas.matmul"});
    auto ex = codegen::build(parted, codegen::BuildOptions({cuda_target()}, false));
    std::vector<Tensor> in = {random_input(c.a, DataType::Float(32), 1), random_input(c.b, DataType::Float(32), 2)};
    if (!gpu_here()) continue;
    runtime::VirtualMachine vm(ex, Device::cuda(0));
    EXPECT_TRUE(close(run_gpu(vm, in)[0], run_host(mod, in)[0], 2e-5));
  }
  PARTITA_REQUIRE_CUDA_DEVICE();
}

// Two products and a bias in one merged partition (MergeCompositeFunctions, the seed's path 2):
// the intermediate lives in device memory of the runtime's allocator.
TEST(CublasGpu, MergedPartitionOfChainedProducts) {
  std::string f32 = "float32";
  IRModule mod = script::parse_module(module_text(
      "x: " + T("(32, 64)", f32) + ", w1: " + T("(64, 48)", f32) + ", b1: " + T("(48,)", f32) + ", w2: " + T("(16, 48)", f32),
      {"m1: " + T("(32, 48)", f32) + " = R.matmul(x, w1, out_dtype=\"void\")", "a1: " + T("(32, 48)", f32) + " = R.add(m1, b1)",
       "r1: " + T("(32, 48)", f32) + " = R.nn.relu(a1)", "w2t: " + T("(48, 16)", f32) + " = R.permute_dims(w2, axes=None)",
       "gv: " + T("(32, 16)", f32) + " = R.matmul(r1, w2t, out_dtype=\"void\")"},
      T("(32, 16)", f32)));
  IRModule merged = transform::partition_for("cublas", mod, /*merge=*/true, /*bind_constants=*/false);
  auto ex = codegen::build(merged, codegen::BuildOptions({cuda_target()}, false));
  ASSERT_EQ(count_modules(*ex, "cublas"), 1u);
  auto program = nlohmann::json::parse(ex->external_modules[0]->get_source());
  ASSERT_EQ(program["functions"].size(), 1u);
  EXPECT_EQ(program["functions"][0]["gemms"].size(), 2u);
  PARTITA_REQUIRE_CUDA_DEVICE();
  std::vector<Tensor> in = {random_input({32, 64}, DataType::Float(32), 1), random_input({64, 48}, DataType::Float(32), 2),
                            random_input({48}, DataType::Float(32), 3), random_input({16, 48}, DataType::Float(32), 4)};
  runtime::VirtualMachine vm(ex, Device::cuda(0));
  EXPECT_TRUE(close(run_gpu(vm, in)[0], run_host(mod, in)[0], 2e-5));
}

// Collage on the GPU (what `partita compile --target cuda --backends auto:cublas` does): the
// candidates — cuBLAS's matches and generated CUDA for every operator — are built for the
// cuda target and measured on cuda:0, the placement is validated against cuBLAS's fixed one
// end to end there, and the chosen module runs on the GPU with the host's results.
TEST(CublasGpu, CollagePlacesByMeasurementOnTheGpu) {
  std::string f32 = "float32";
  IRModule mod = script::parse_module(module_text(
      "x: " + T("(64, 128)", f32) + ", w1: " + T("(128, 256)", f32) + ", b1: " + T("(256,)", f32) + ", w2: " + T("(256, 32)", f32),
      {"m1: " + T("(64, 256)", f32) + " = R.matmul(x, w1, out_dtype=\"void\")", "a1: " + T("(64, 256)", f32) + " = R.add(m1, b1)",
       "r1: " + T("(64, 256)", f32) + " = R.nn.relu(a1)", "gv: " + T("(64, 32)", f32) + " = R.matmul(r1, w2, out_dtype=\"void\")"},
      T("(64, 32)", f32)));
  PARTITA_REQUIRE_CUDA_DEVICE();
  codegen::CollageOptions o;
  o.backends = {"cublas"};
  o.targets = {cuda_target()};
  o.device = Device::cuda(0);
  o.cost_cache = "none";
  o.repeats = 5;
  codegen::CollageResult placed = codegen::collage_partition(mod, o);
  EXPECT_GT(placed.measured, 0u);
  EXPECT_TRUE(std::isfinite(placed.estimated_us));
  ASSERT_NE(placed.chosen_placement(), nullptr);
  for (const auto& p : placed.placements) EXPECT_TRUE(std::isfinite(p.measured_us) && p.measured_us > 0) << p.name;
  std::cerr << placed.summary();
  auto ex = codegen::build(placed.mod, codegen::BuildOptions({cuda_target()}, false));
  std::vector<Tensor> in = {random_input({64, 128}, DataType::Float(32), 1), random_input({128, 256}, DataType::Float(32), 2),
                            random_input({256}, DataType::Float(32), 3), random_input({256, 32}, DataType::Float(32), 4)};
  runtime::VirtualMachine vm(ex, Device::cuda(0));
  EXPECT_TRUE(close(run_gpu(vm, in)[0], run_host(mod, in)[0], 2e-5));
}

// A run of cuBLAS calls only is captured as a CUDA Graph on its second call and replayed.
TEST(CublasGpu, CapturedAsACudaGraph) {
  std::string f16 = "float16";
  IRModule mod = script::parse_module(module_text(
      "x: " + T("(64, 128)", f16) + ", w: " + T("(256, 128)", f16) + ", b: " + T("(256,)", f16),
      {"wt: " + T("(128, 256)", f16) + " = R.permute_dims(w, axes=None)", "mm: " + T("(64, 256)", f16) + " = R.matmul(x, wt, out_dtype=\"void\")",
       "a: " + T("(64, 256)", f16) + " = R.add(mm, b)", "gv: " + T("(64, 256)", f16) + " = R.nn.relu(a)"},
      T("(64, 256)", f16)));
  auto ex = codegen::build(partition_for_cublas(mod), codegen::BuildOptions({cuda_target()}, false));
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(ex, Device::cuda(0));
  IRModule ref = script::parse_module(replace_all(script::print_module(mod), "float16", "float32"));
  for (int i = 0; i < 4; ++i) {
    std::vector<Tensor> in = {random_input({64, 128}, DataType::Float(16), uint32_t(i)), random_input({256, 128}, DataType::Float(16), 9),
                              random_input({256}, DataType::Float(16), 10)};
    std::vector<Tensor> ref_in;
    for (const auto& t : in) ref_in.push_back(as_f32(t));
    EXPECT_TRUE(close(run_gpu(vm, in)[0], run_host(ref, ref_in)[0], 2e-3)) << "call " << i;
  }
  EXPECT_EQ(vm.graph_stats().captures, 1);
  EXPECT_EQ(vm.graph_stats().fallbacks, 0);
  EXPECT_GE(vm.graph_stats().launches, 3);
}

// allow_tf32 trades float32 accuracy for TF32 tensor cores: off by default (float32 exact to
// ~1e-6 here), on it is visibly coarser; autotuning picks among the heuristic's top k.
TEST(CublasGpu, Tf32AndAutotuneOptions) {
  std::string f32 = "float32";
  IRModule mod = script::parse_module(module_text("x: " + T("(128, 512)", f32) + ", w: " + T("(512, 128)", f32),
                                                  {"gv: " + T("(128, 128)", f32) + " = R.matmul(x, w, out_dtype=\"void\")"},
                                                  T("(128, 128)", f32)));
  IRModule parted = partition_for_cublas(mod);
  auto build_with = [&](codegen::TargetOptionMap opts) {
    return codegen::build(parted, codegen::BuildOptions({cuda_target(), codegen::Target("cublas", opts)}, false));
  };
  auto plain = build_with({});
  auto tf32 = build_with({{"allow_tf32", true}});
  auto tuned = build_with({{"autotune_top_k", int64_t(8)}});
  PARTITA_REQUIRE_CUDA_DEVICE();
  // Inputs with many significant bits, so TF32's 10-bit mantissa shows.
  Tensor x = Tensor::empty({128, 512}, DataType::Float(32)), w = Tensor::empty({512, 128}, DataType::Float(32));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (Tensor* t : {&x, &w})
    for (int64_t i = 0; i < t->numel(); ++i) t->data_as<float>()[i] = dist(rng);
  Tensor want = run_host(mod, {x, w})[0];
  auto max_error = [&](const std::shared_ptr<runtime::Executable>& ex) {
    runtime::VirtualMachine vm(ex, Device::cuda(0));
    Tensor got = run_gpu(vm, {x, w})[0];
    double worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      worst = std::max(worst, double(std::fabs(got.data_as<float>()[i] - want.data_as<float>()[i])));
    return worst;
  };
  double e_plain = max_error(plain), e_tf32 = max_error(tf32), e_tuned = max_error(tuned);
  EXPECT_LT(e_plain, 1e-4);
  EXPECT_LT(e_tuned, 1e-4);
  EXPECT_GT(e_tf32, 10 * e_plain) << "TF32 was not used: errors " << e_tf32 << " and " << e_plain;
  EXPECT_LT(e_tf32, 0.1);
}

// Weights as named constants inside the function (bind_constants=True): uploaded once by the
// module; and as constants of main (the default), uploaded by the VM.
TEST(CublasGpu, WeightsAsConstants) {
  Tensor w = random_input({64, 32}, DataType::Float(32), 7), b = random_input({32}, DataType::Float(32), 8);
  BlockBuilder bb;
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{16, 64}, DataType::Float(32)));
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var m = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)}));
  Var gv = bb.emit_output(bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b)})));
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule mod = bb.get();
  for (bool bind : {false, true}) {
    auto ex = codegen::build(partition_for_cublas(mod, bind), codegen::BuildOptions({cuda_target()}, false));
    auto program = nlohmann::json::parse(ex->external_modules.at(0)->get_source());
    EXPECT_EQ(program["functions"][0]["constants"].size(), bind ? 2u : 0u);
    if (!gpu_here()) continue;
    runtime::VirtualMachine vm(ex, Device::cuda(0));
    std::vector<Tensor> in = {random_input({16, 64}, DataType::Float(32), 9)};
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(close(run_gpu(vm, in)[0], run_host(mod, in)[0], 2e-5)) << "bind " << bind;
  }
  PARTITA_REQUIRE_CUDA_DEVICE();
}

// Shapes are checked at run time: a wrong input is an error naming the function, not a crash.
TEST(CublasGpu, WrongInputsAreErrors) {
  IRModule mod = script::parse_module(module_text("x: " + T("(\"m\", 32)", "float32") + ", w: " + T("(32, 8)", "float32"),
                                                  {"gv: " + T("(\"m\", 8)", "float32") + " = R.matmul(x, w, out_dtype=\"void\")"},
                                                  T("(\"m\", 8)", "float32")));
  auto ex = codegen::build(partition_for_cublas(mod), codegen::BuildOptions({cuda_target()}, false));
  runtime::ModulePtr m = ex->external_modules.at(0);
  auto fn = m->get_function(m->function_names().at(0));
  Tensor x = Tensor::empty({4, 32}, DataType::Float(32)), w = Tensor::empty({32, 8}, DataType::Float(32));
  std::vector<Tensor> out = {Tensor::empty({4, 8}, DataType::Float(32))};
  try {
    fn(std::vector<Tensor>{x, w}, out);
    ADD_FAILURE() << "host tensors were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run it with a VM on a CUDA device"), std::string::npos) << e.what();
  }
  PARTITA_REQUIRE_CUDA_DEVICE();
  Tensor wrong = Tensor::empty({16, 8}, DataType::Float(32), Device::cuda(0));
  std::vector<Tensor> dout = {Tensor::empty({4, 8}, DataType::Float(32), Device::cuda(0))};
  try {
    fn(std::vector<Tensor>{x.to(Device::cuda(0)), wrong}, dout);
    ADD_FAILURE() << "a wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit (32, 8)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace partita::backend::cublas::test
