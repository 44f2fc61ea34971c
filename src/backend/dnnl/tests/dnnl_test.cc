// The oneDNN backend: each pattern family, partitioned for dnnl, built with codegen::build and
// run, agrees with the same module on the host VM; fusion and blocked layouts show in the
// serialized graph; weights live in const_name_to_constant only; refusals are clear errors and
// fall back to the host when fallback is on.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "random_tensor.h"
#include "verbose_log.h"
#include "../runtime/dnnl_runtime.h"
#include "partita/codegen/build.h"
#include "partita/codegen/codegen.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/op/ops.h"
#include "partita/runtime/vm.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend::dnnl {
namespace {

using json = nlohmann::json;
const DataType F32 = DataType::Float(32);

using partita::testing::random_tensor;

Expr cst(const Tensor& t) { return make<ConstantNode>(t); }

Call conv(Expr x, Expr w, std::vector<int64_t> pad = {1, 1, 1, 1}, int64_t groups = 1,
          std::vector<int64_t> strides = {1, 1}) {
  return op::make_call("relax.nn.conv2d", {std::move(x), std::move(w)},
                       {{"strides", strides}, {"padding", pad}, {"groups", groups}});
}

// Builds main(params) whose body is produced by `body` inside one dataflow block.
IRModule module_of(std::vector<Var> params, const std::function<Expr(BlockBuilder&)>& body) {
  BlockBuilder bb;
  bb.begin_function("main", params);
  bb.begin_dataflow();
  Expr r = body(bb);
  Var gv = bb.emit_output(r);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  return bb.get();
}

Var param(const std::string& name, std::vector<int64_t> shape) {
  return make<VarNode>(name, tensor_sinfo(std::move(shape), F32));
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  double max_ref = 1.0;
  for (int64_t i = 0; i < want.numel(); ++i) max_ref = std::max(max_ref, double(std::fabs(want.data_as<float>()[i])));
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, double(std::fabs(got.data_as<float>()[i] - want.data_as<float>()[i])));
  EXPECT_LE(worst, 1e-4 * max_ref) << what << ": max abs error " << worst;
}

struct Built {
  IRModule partitioned;
  std::shared_ptr<runtime::Executable> exec;
};

// Partitions for dnnl, builds, runs, compares with the host; returns the dnnl graph.
json check_against_host(const IRModule& mod, const std::vector<Tensor>& inputs, const std::string& what,
                        bool merge = true) {
  std::vector<Tensor> want = runtime::VirtualMachine(codegen::build(mod)).invoke("main", inputs);
  IRModule parted = transform::partition_for("dnnl", mod, merge);
  codegen::BuildOptions opts;
  opts.targets.push_back(codegen::Target("dnnl", {{"num_threads", 2}}));
  auto exec = codegen::build(parted, opts);
  runtime::VirtualMachine vm(exec);
  for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the built primitives
    std::vector<Tensor> got = vm.invoke("main", inputs);
    EXPECT_EQ(got.size(), want.size());
    for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) expect_close(got[k], want[k], what);
  }
  // The offloaded part is in one dnnl module.
  IRModule lowered = codegen::run_codegen(codegen::name_codegen_constants(parted));
  auto mods = codegen::external_mods_of(lowered);
  EXPECT_EQ(mods.size(), 1u) << what;
  if (mods.empty()) return json();
  EXPECT_EQ(mods[0]->type_key(), "dnnl");
  return json::parse(mods[0]->get_source());
}

int count_ops(const json& g, const std::string& op) {
  int n = 0;
  for (const auto& f : g["functions"])
    for (const auto& node : f["nodes"]) n += node["op"] == op;
  return n;
}

TEST(Dnnl, ConvBiasReluThenConvStaysOneBlockedPartition) {
  Tensor w1 = random_tensor({16, 8, 3, 3}, 1, 0.3f), b1 = random_tensor({1, 16, 1, 1}, 2);
  Tensor w2 = random_tensor({16, 16, 3, 3}, 3, 0.3f);
  Var x = param("x", {1, 8, 14, 14});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(conv(x, cst(w1)));
    Var a = bb.emit(op::make_call("relax.add", {c, cst(b1)}));
    Var r = bb.emit(op::make_call("relax.nn.relu", {a}));
    return bb.emit(conv(r, cst(w2)));
  });
  json g = check_against_host(mod, {random_tensor({1, 8, 14, 14}, 4)}, "conv chain");
  ASSERT_EQ(g["functions"].size(), 1u);  // merged: one partition
  EXPECT_EQ(count_ops(g, "conv2d"), 2);
  EXPECT_EQ(count_ops(g, "eltwise"), 0);  // relu fused as a post-op
  EXPECT_EQ(count_ops(g, "binary"), 0);   // bias fused
  const json& first = g["functions"][0]["nodes"][0];
  EXPECT_TRUE(first["has_bias"].get<bool>());
  ASSERT_EQ(first["post"].size(), 1u);
  EXPECT_EQ(first["post"][0]["alg"], "relu");
}

TEST(Dnnl, DepthwiseConvWithRelu6) {
  Tensor w = random_tensor({16, 1, 3, 3}, 5), b = random_tensor({1, 16, 1, 1}, 6);
  Var x = param("x", {1, 16, 10, 10});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(conv(x, cst(w), {1, 1, 1, 1}, 16, {2, 2}));
    Var a = bb.emit(op::make_call("relax.add", {c, cst(b)}));
    return bb.emit(op::make_call("relax.clip", {a, make<PrimValueNode>(make<FloatImmNode>(0.0, DataType::Float(64))),
                                                 make<PrimValueNode>(make<FloatImmNode>(6.0, DataType::Float(64)))}));
  });
  json g = check_against_host(mod, {random_tensor({1, 16, 10, 10}, 7, 4.0f)}, "depthwise");
  EXPECT_EQ(count_ops(g, "conv2d"), 1);
  EXPECT_EQ(g["functions"][0]["nodes"][0]["groups"], 16);
  EXPECT_EQ(g["functions"][0]["nodes"][0]["post"][0]["alg"], "clip");
}

TEST(Dnnl, ResidualAddFusedAsSum) {
  Tensor w1 = random_tensor({8, 8, 3, 3}, 8, 0.3f), b1 = random_tensor({1, 8, 1, 1}, 9);
  Tensor w2 = random_tensor({8, 8, 3, 3}, 10, 0.3f), b2 = random_tensor({1, 8, 1, 1}, 11);
  Var x = param("x", {1, 8, 12, 12});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c1 = bb.emit(conv(x, cst(w1)));
    Var a1 = bb.emit(op::make_call("relax.add", {c1, cst(b1)}));
    Var r1 = bb.emit(op::make_call("relax.nn.relu", {a1}));
    Var c2 = bb.emit(conv(r1, cst(w2)));
    Var a2 = bb.emit(op::make_call("relax.add", {c2, cst(b2)}));
    Var s = bb.emit(op::make_call("relax.add", {a2, x}));
    return bb.emit(op::make_call("relax.nn.relu", {s}));
  });
  json g = check_against_host(mod, {random_tensor({1, 8, 12, 12}, 12)}, "residual");
  EXPECT_EQ(count_ops(g, "conv2d"), 2);
  EXPECT_EQ(count_ops(g, "binary"), 0);
  const json& second = g["functions"][0]["nodes"][1];
  ASSERT_EQ(second["post"].size(), 2u);
  EXPECT_EQ(second["post"][0]["kind"], "sum");
}

// The weight is a parameter: partition_for folds a transpose of a constant weight into the
// constant before partitioning, so only a run-time weight reaches the product transposed.
TEST(Dnnl, DenseBiasGeluAndMatmul3d) {
  Tensor b = random_tensor({64}, 14);
  Tensor w2 = random_tensor({64, 16}, 15, 0.2f);
  Var x = param("x", {2, 5, 32}), w = param("w", {64, 32});
  IRModule mod = module_of({x, w}, [&](BlockBuilder& bb) -> Expr {
    Var wt = bb.emit(op::make_call("relax.permute_dims", {w}));
    Var m = bb.emit(op::make_call("relax.matmul", {x, wt}));
    Var a = bb.emit(op::make_call("relax.add", {m, cst(b)}));
    Var gl = bb.emit(op::make_call("relax.nn.gelu", {a}));
    return bb.emit(op::make_call("relax.matmul", {gl, cst(w2)}));
  });
  json g = check_against_host(mod, {random_tensor({2, 5, 32}, 16), random_tensor({64, 32}, 13, 0.2f)}, "dense");
  EXPECT_EQ(count_ops(g, "matmul"), 2);
  EXPECT_EQ(count_ops(g, "permute"), 0);
  EXPECT_TRUE(g["functions"][0]["nodes"][0]["transpose_b"].get<bool>());
}

// Non-constant operands: a 3-d by 2-d product folded into one 2-d product, its bias viewed
// (not copied) as (1, N), then a batched 3-d by 3-d product.
TEST(Dnnl, Matmul3dWithParameterWeightsAndBias) {
  Var x = param("x", {4, 3, 8}), w = param("w", {8, 6}), b = param("b", {6}), y = param("y", {4, 6, 5});
  IRModule mod = module_of({x, w, b, y}, [&](BlockBuilder& bb) -> Expr {
    Var m = bb.emit(op::make_call("relax.matmul", {x, w}));
    Var a = bb.emit(op::make_call("relax.add", {m, b}));
    return bb.emit(op::make_call("relax.matmul", {a, y}));
  });
  json g = check_against_host(
      mod, {random_tensor({4, 3, 8}, 31), random_tensor({8, 6}, 32), random_tensor({6}, 33), random_tensor({4, 6, 5}, 34)},
      "matmul");
  EXPECT_EQ(count_ops(g, "matmul"), 2);
}

// Channel counts that are not multiples of oneDNN's block (8) leave padding in blocked
// layouts; intermediates share arena memory, so stale bytes must never leak into results;
// residuals accumulate in place only when nothing else reads them. One VM, several inputs.
TEST(Dnnl, ArenaSharedIntermediatesWithPaddedBlockedLayouts) {
  Tensor w1 = random_tensor({12, 5, 3, 3}, 41, 0.3f), b1 = random_tensor({1, 12, 1, 1}, 42);
  Tensor w2 = random_tensor({12, 12, 3, 3}, 43, 0.2f), w3 = random_tensor({5, 12, 1, 1}, 44, 0.3f);
  Var x = param("x", {1, 5, 9, 9});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    auto conv = [&](Expr in, Tensor w, int64_t pad) {
      return bb.emit(op::make_call("relax.nn.conv2d", {in, cst(w)}, {{"padding", std::vector<int64_t>{pad, pad, pad, pad}}}));
    };
    Var c1 = conv(x, w1, 1);
    Var r1 = bb.emit(op::make_call("relax.nn.relu", {bb.emit(op::make_call("relax.add", {c1, cst(b1)}))}));
    Var c2 = conv(r1, w2, 1);
    Var r2 = bb.emit(op::make_call("relax.nn.relu", {bb.emit(op::make_call("relax.add", {c2, r1}))}));
    Var c4 = conv(r2, w2, 1);  // r1's last use, as a residual only: accumulated in place
    Var r3 = bb.emit(op::make_call("relax.nn.relu", {bb.emit(op::make_call("relax.add", {c4, r1}))}));
    Var c3 = conv(r3, w3, 0);
    Var s = bb.emit(op::make_call("relax.add", {c3, x}));
    return bb.emit(op::make_call("relax.nn.max_pool2d", {s}, {{"pool_size", std::vector<int64_t>{2, 2}},
                                                               {"strides", std::vector<int64_t>{2, 2}}}));
  });
  IRModule parted = transform::partition_for("dnnl", mod);
  codegen::BuildOptions opts;
  opts.targets.push_back(codegen::Target("dnnl", {{"num_threads", 2}}));
  runtime::VirtualMachine host(codegen::build(mod)), vm(codegen::build(parted, opts));
  for (uint32_t seed : {51u, 52u, 53u}) {
    Tensor in = random_tensor({1, 5, 9, 9}, seed);
    expect_close(vm.invoke("main", {in})[0], host.invoke("main", {in})[0], "seed " + std::to_string(seed));
  }
}

TEST(Dnnl, PoolingAfterConvAndAlone) {
  Tensor w = random_tensor({8, 3, 3, 3}, 17, 0.3f);
  Var x = param("x", {2, 3, 15, 15});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(conv(x, cst(w)));
    Var r = bb.emit(op::make_call("relax.nn.relu", {c}));
    Var p = bb.emit(op::make_call("relax.nn.max_pool2d", {r},
                                  {{"pool_size", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                                   {"padding", std::vector<int64_t>{1, 1, 1, 1}}}));
    return bb.emit(op::make_call("relax.nn.avg_pool2d", {p},
                                 {{"pool_size", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
                                  {"ceil_mode", true}}));
  });
  json g = check_against_host(mod, {random_tensor({2, 3, 15, 15}, 18)}, "pooling");
  EXPECT_EQ(count_ops(g, "pool"), 2);
}

// Global average pooling (a CNN's head) and any output size dividing the input are offloaded;
// others stay on the host.
TEST(Dnnl, AdaptiveAveragePooling) {
  Var x = param("x", {1, 6, 12, 8});
  for (const auto& [size_, offloaded] : {std::pair{std::vector<int64_t>{1, 1}, true}, {{3, 4}, true}, {{5, 3}, false}}) {
    const std::vector<int64_t>& size = size_;  // a lambda cannot capture a structured binding in clang 14
    IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
      Var r = bb.emit(op::make_call("relax.nn.relu", {x}));
      return bb.emit(op::make_call("relax.nn.adaptive_avg_pool2d", {r}, {{"output_size", size}}));
    });
    if (offloaded) {
      json g = check_against_host(mod, {random_tensor({1, 6, 12, 8}, 35)}, "adaptive pooling");
      EXPECT_EQ(count_ops(g, "pool"), 1);
    } else {
      EXPECT_EQ(transform::partition_for("dnnl", mod)->functions.size(), 2u);  // main + the relu alone
    }
  }
}

// convnext's block: a depthwise convolution in NCHW, a permute to NHWC, a layer norm over the
// channels, a permute back and the residual add, all in one partition (the permutes are
// reorders; on the host they split it in three).
TEST(Dnnl, PermutesAroundAChannelsLastNormStayInThePartition) {
  Tensor w = random_tensor({8, 1, 7, 7}, 31, 0.3f), gamma = random_tensor({8}, 32), beta = random_tensor({8}, 33);
  Var x = param("x", {1, 8, 9, 11});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(conv(x, cst(w), {3, 3, 3, 3}, 8));
    Var nhwc = bb.emit(op::make_call("relax.permute_dims", {c}, {{"axes", std::vector<int64_t>{0, 2, 3, 1}}}));
    Var ln = bb.emit(op::make_call("relax.nn.layer_norm", {nhwc, cst(gamma), cst(beta)},
                                   {{"axes", std::vector<int64_t>{-1}}}));
    Var nchw = bb.emit(op::make_call("relax.permute_dims", {ln}, {{"axes", std::vector<int64_t>{0, 3, 1, 2}}}));
    return bb.emit(op::make_call("relax.add", {nchw, x}));
  });
  json g = check_against_host(mod, {random_tensor({1, 8, 9, 11}, 34)}, "permutes around a layer norm");
  ASSERT_EQ(g["functions"].size(), 1u);
  EXPECT_EQ(count_ops(g, "permute"), 2);
  EXPECT_EQ(count_ops(g, "layer_norm"), 1);
}

TEST(Dnnl, SoftmaxLayerNormEltwiseBinary) {
  Tensor gamma = random_tensor({16}, 19), beta = random_tensor({16}, 20), bias = random_tensor({16}, 21);
  Var x = param("x", {4, 16});
  Var y = param("y", {4, 16});
  IRModule mod = module_of({x, y}, [&](BlockBuilder& bb) -> Expr {
    Var ln = bb.emit(op::make_call("relax.nn.layer_norm", {x, cst(gamma), cst(beta)},
                                   {{"axes", std::vector<int64_t>{-1}}}));
    Var m = bb.emit(op::make_call("relax.multiply", {ln, y}));
    Var a = bb.emit(op::make_call("relax.add", {m, cst(bias)}));
    Var t = bb.emit(op::make_call("relax.tanh", {a}));
    Var s = bb.emit(op::make_call("relax.sigmoid", {t}));
    Var e = bb.emit(op::make_call("relax.exp", {s}));
    return bb.emit(op::make_call("relax.nn.softmax", {e}, {{"axis", int64_t(-1)}}));
  });
  json g = check_against_host(mod, {random_tensor({4, 16}, 22), random_tensor({4, 16}, 23)}, "softmax/layer_norm");
  EXPECT_EQ(count_ops(g, "layer_norm"), 1);
  EXPECT_EQ(count_ops(g, "softmax"), 1);
  EXPECT_EQ(count_ops(g, "binary"), 2);
  EXPECT_EQ(count_ops(g, "eltwise"), 3);
}

TEST(Dnnl, UnmergedPathAlsoMatches) {
  Tensor w = random_tensor({8, 4, 1, 1}, 24);
  Var x = param("x", {1, 4, 6, 6});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(conv(x, cst(w), {0, 0, 0, 0}));
    return bb.emit(op::make_call("relax.nn.relu", {c}));
  });
  check_against_host(mod, {random_tensor({1, 4, 6, 6}, 25)}, "path 1", /*merge=*/false);
}

TEST(Dnnl, WeightsAreNamedConstantsNotInTheModule) {
  Tensor w = random_tensor({64, 64, 3, 3}, 26);  // 147 KB
  Var x = param("x", {1, 64, 8, 8});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr { return bb.emit(conv(x, cst(w))); });
  IRModule lowered = codegen::run_codegen(codegen::name_codegen_constants(transform::partition_for("dnnl", mod)));
  ASSERT_EQ(lowered->const_name_to_constant.size(), 1u);
  EXPECT_TRUE(lowered->const_name_to_constant.begin()->second.content_equal(w));
  auto mods = codegen::external_mods_of(lowered);
  ASSERT_EQ(mods.size(), 1u);
  std::string blob;
  mods[0]->save_to_binary(blob);
  EXPECT_LT(blob.size(), 4096u);
  EXPECT_EQ(mods[0]->const_names(), std::vector<std::string>{lowered->const_name_to_constant.begin()->first});
  // The whole artifact stores the weight once; it survives save/load.
  auto exec = codegen::build(transform::partition_for("dnnl", mod));
  std::string bytes;
  exec->save(bytes);
  EXPECT_LT(bytes.size(), w.nbytes() + 64 * 1024);
  EXPECT_GT(bytes.size(), w.nbytes());
  auto loaded = runtime::Executable::load(bytes);
  Tensor in = random_tensor({1, 64, 8, 8}, 27);
  auto want = runtime::VirtualMachine(codegen::build(mod)).invoke("main", {in});
  auto got = runtime::VirtualMachine(loaded).invoke("main", {in});
  expect_close(got.at(0), want.at(0), "reloaded");
}

Call nhwc_conv(const Var& x, const Tensor& w) {
  return op::make_call("relax.nn.conv2d", {x, cst(w)},
                       {{"data_layout", std::string("NHWC")}, {"kernel_layout", std::string("HWIO")},
                        {"out_layout", std::string("NHWC")}});
}

TEST(Dnnl, PatternsRejectWhatTheCodegenCannotLower) {
  Var x = param("x", {1, 6, 6, 4});
  Tensor w = random_tensor({3, 3, 4, 8}, 28);
  IRModule plain = module_of({x}, [&](BlockBuilder& bb) -> Expr { return bb.emit(nhwc_conv(x, w)); });
  IRModule parted = transform::partition_for("dnnl", plain);
  EXPECT_EQ(parted.functions().size(), 1u);  // nothing offloaded
  // Layouts other than NCHW for pooling, other dtypes, a layer norm over a leading axis, an
  // empty tensor: the host's (the random graphs of the differential test cover the rest).
  auto stays_on_host = [](const std::string& what, const std::vector<Var>& params,
                          const std::function<Expr(BlockBuilder&)>& body) {
    SCOPED_TRACE(what);
    EXPECT_EQ(transform::partition_for("dnnl", module_of(params, body)).functions().size(), 1u);
  };
  stays_on_host("NHWC pooling", {x}, [&](BlockBuilder& bb) -> Expr {
    return bb.emit(op::make_call("relax.nn.max_pool2d", {x},
                                 {{"pool_size", std::vector<int64_t>{2, 2}}, {"layout", std::string("NHWC")}}));
  });
  stays_on_host("NHWC adaptive pooling", {x}, [&](BlockBuilder& bb) -> Expr {
    return bb.emit(op::make_call("relax.nn.adaptive_avg_pool2d", {x}, {{"layout", std::string("NHWC")}}));
  });
  Var h = make<VarNode>("h", tensor_sinfo(std::vector<int64_t>{4, 8}, DataType::Float(16)));
  stays_on_host("float16", {h}, [&](BlockBuilder& bb) -> Expr { return bb.emit(op::make_call("relax.nn.relu", {h})); });
  Var i = make<VarNode>("i", tensor_sinfo(std::vector<int64_t>{4, 8}, DataType::Int(32)));
  stays_on_host("int32", {i}, [&](BlockBuilder& bb) -> Expr { return bb.emit(op::make_call("relax.add", {i, i})); });
  Var y = param("y", {4, 8});
  stays_on_host("layer norm over axis 0", {y}, [&](BlockBuilder& bb) -> Expr {
    return bb.emit(op::make_call("relax.nn.layer_norm", {y, cst(random_tensor({4}, 29)), cst(random_tensor({4}, 30))},
                                 {{"axes", std::vector<int64_t>{0}}}));
  });
  Var e = param("e", {0, 8});
  stays_on_host("empty", {e}, [&](BlockBuilder& bb) -> Expr { return bb.emit(op::make_call("relax.nn.relu", {e})); });
}

// A dilated max pool forced into a dnnl function (a test pattern without a check): the host
// runs it, the dnnl codegen does not.
IRModule forced_dilated_pool_module() {
  Var x = param("x", {1, 4, 9, 9});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    return bb.emit(op::make_call("relax.nn.max_pool2d", {x},
                                 {{"pool_size", std::vector<int64_t>{3, 3}}, {"dilation", std::vector<int64_t>{2, 2}}}));
  });
  transform::FusionPattern p;
  p.name = "dnnl.test_forced_pool";
  p.pattern = dpl::is_op("relax.nn.max_pool2d")({dpl::wildcard()});
  return transform::fuse_ops_by_pattern({p}, mod, true, /*annotate_codegen=*/true);
}

TEST(Dnnl, UnsupportedFunctionIsRefusedOrFallsBack) {
  IRModule mod = forced_dilated_pool_module();
  try {
    codegen::run_codegen(mod);
    FAIL() << "expected UnsupportedFunction";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("UnsupportedFunction"), std::string::npos) << what;
    EXPECT_NE(what.find("dilated pooling"), std::string::npos) << what;
  }
  codegen::BuildOptions opts;
  opts.fallback = true;
  auto exec = codegen::build(mod, opts);
  Tensor in = random_tensor({1, 4, 9, 9}, 29);
  auto got = runtime::VirtualMachine(exec).invoke("main", {in});
  ASSERT_EQ(got.at(0).shape(), (std::vector<int64_t>{1, 4, 5, 5}));
  // Spot check one window: out[0,0,0,0] = max of x[0,0,{0,2,4},{0,2,4}].
  float m = -INFINITY;
  for (int i : {0, 2, 4})
    for (int j : {0, 2, 4}) m = std::max(m, in.data_as<float>()[i * 9 + j]);
  EXPECT_EQ(got[0].data_as<float>()[0], m);
}

// A transformer's attention as ONNX exports it: 4-d products (the key transposed by
// permute_dims), scaled by a 0-d constant, softmax, and a 0-d epsilon in a hand-written norm.
// The 0-d constants used to compile and then fail at run time ("tensors of 0 dimensions are
// not supported"); now everything runs in one dnnl partition.
TEST(Dnnl, AttentionWithScalarConstantsRunsInOnePartition) {
  Var q = param("q", {1, 4, 16, 8}), k = param("k", {1, 4, 16, 8}), v = param("v", {1, 4, 16, 8});
  Tensor scale = Tensor::empty({}, F32), eps = Tensor::empty({}, F32);
  scale.data_as<float>()[0] = 0.353553f;
  eps.data_as<float>()[0] = 1e-6f;
  IRModule mod = module_of({q, k, v}, [&](BlockBuilder& bb) -> Expr {
    Var kt = bb.emit(op::make_call("relax.permute_dims", {k}, {{"axes", std::vector<int64_t>{0, 1, 3, 2}}}));
    Var s = bb.emit(op::make_call("relax.matmul", {q, kt}));
    Var scaled = bb.emit(op::make_call("relax.multiply", {s, cst(scale)}));
    Var p = bb.emit(op::make_call("relax.nn.softmax", {scaled}, {{"axis", int64_t(-1)}}));
    Var o = bb.emit(op::make_call("relax.matmul", {p, v}));
    return bb.emit(op::make_call("relax.add", {o, cst(eps)}));
  });
  json g = check_against_host(mod, {random_tensor({1, 4, 16, 8}, 91), random_tensor({1, 4, 16, 8}, 92),
                                    random_tensor({1, 4, 16, 8}, 93)},
                              "attention");
  ASSERT_EQ(g["functions"].size(), 1u);
  EXPECT_EQ(count_ops(g, "matmul"), 2);
  EXPECT_EQ(count_ops(g, "permute"), 0);  // folded into the product
  EXPECT_EQ(count_ops(g, "softmax"), 1);
  // The scalings by 0-d constants are eltwise linear post-ops of the products.
  EXPECT_EQ(count_ops(g, "binary"), 0);
  int linear_post_ops = 0;
  for (const auto& n : g["functions"][0]["nodes"])
    for (const auto& p : n["post"]) linear_post_ops += p["alg"] == "linear";
  EXPECT_EQ(linear_post_ops, 2);
}

// An error that reaches run time names the module, the function, the graph node and the Relax
// operators lowered into it: here a convolution whose strides no longer fit its shapes.
TEST(Dnnl, RunTimeErrorsNameTheFunctionNodeAndOperators) {
  Tensor w = random_tensor({8, 4, 3, 3}, 81, 0.3f), b = random_tensor({1, 8, 1, 1}, 82);
  Var x = param("x", {1, 4, 10, 10});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(conv(x, cst(w)));
    return bb.emit(op::make_call("relax.nn.relu", {bb.emit(op::make_call("relax.add", {c, cst(b)}))}));
  });
  IRModule lowered = codegen::run_codegen(codegen::name_codegen_constants(transform::partition_for("dnnl", mod)));
  auto mods = codegen::external_mods_of(lowered);
  ASSERT_EQ(mods.size(), 1u);
  json g = json::parse(mods[0]->get_source());
  const std::string symbol = g["functions"][0]["symbol"];
  ASSERT_EQ(g["functions"][0]["nodes"].size(), 1u);
  EXPECT_EQ(g["functions"][0]["nodes"][0]["from"], json({"relax.nn.conv2d", "relax.add", "relax.nn.relu"}));
  g["functions"][0]["nodes"][0]["strides"] = {3, 3};
  auto broken = make_dnnl_module(g.dump());
  broken->init_constants(lowered->const_name_to_constant);
  std::vector<Tensor> in = {random_tensor({1, 4, 10, 10}, 83)}, out = {Tensor::empty({1, 8, 10, 10}, F32)};
  try {
    broken->get_function(symbol)(in, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(e.message().find("dnnl module, function '" + symbol +
                               "', node 0 (conv2d, from relax.nn.conv2d + relax.add + relax.nn.relu): "
                               "oneDNN rejected it"),
              std::string::npos)
        << e.message();
  }
  // A tensor of the wrong shape is refused by name too.
  std::vector<Tensor> wrong = {random_tensor({1, 4, 9, 10}, 84)};
  try {
    mods[0]->init_constants(lowered->const_name_to_constant);
    mods[0]->get_function(symbol)(wrong, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("function '" + symbol +
                               "': argument 0 must be a float32 tensor of shape (1, 4, 10, 10)"),
              std::string::npos)
        << e.message();
  }
}

TEST(Dnnl, TargetOptionsAndCorruptModules) {
  EXPECT_EQ(codegen::Target("dnnl").get_int("num_threads"), 0);
  EXPECT_THROW(codegen::Target("dnnl", {{"threads", 2}}), Error);
  EXPECT_THROW(runtime::load_module_from_binary("dnnl", "garbage"), Error);
  EXPECT_THROW(make_dnnl_module("{not json"), Error);
}

}  // namespace
}  // namespace partita::backend::dnnl

namespace partita::backend::dnnl {
namespace {

// RegNet's squeeze-excitation: a blocked activation times a per-channel gate of (N, C, 1, 1).
IRModule squeeze_excitation_module(int64_t n, int64_t c, int64_t hw) {
  // RegNet-Y's 3x3 convolution: groups of 8 channels.
  Tensor w1 = random_tensor({c, 8, 3, 3}, 61, 0.2f), b1 = random_tensor({1, c, 1, 1}, 62);
  Tensor w2 = random_tensor({c / 4, c, 1, 1}, 63, 0.2f), b2 = random_tensor({1, c / 4, 1, 1}, 64);
  Tensor w3 = random_tensor({c, c / 4, 1, 1}, 65, 0.3f), b3 = random_tensor({1, c, 1, 1}, 66);
  Tensor w4 = random_tensor({c, c, 1, 1}, 67, 0.2f);
  Var x = param("x", {n, c, hw, hw});
  return module_of({x}, [&](BlockBuilder& bb) -> Expr {
    // act(conv(in) + bias)
    auto block = [&](Expr in, const Tensor& w, std::vector<int64_t> pad, int64_t groups, const Tensor& b,
                     const char* act) {
      Var conv_out = bb.emit(conv(std::move(in), cst(w), std::move(pad), groups));
      return bb.emit(op::make_call(act, {bb.emit(op::make_call("relax.add", {conv_out, cst(b)}))}));
    };
    Var y = block(x, w1, {1, 1, 1, 1}, c / 8, b1, "relax.nn.relu");
    Var p = bb.emit(op::make_call("relax.nn.adaptive_avg_pool2d", {y}, {{"output_size", std::vector<int64_t>{1, 1}}}));
    Var s1 = block(p, w2, {0, 0, 0, 0}, 1, b2, "relax.nn.relu");
    Var s2 = block(s1, w3, {0, 0, 0, 0}, 1, b3, "relax.sigmoid");
    Var m = bb.emit(op::make_call("relax.multiply", {y, s2}));
    return bb.emit(conv(m, cst(w4), {0, 0, 0, 0}));
  });
}

// The gate multiply of a squeeze-excitation block behind RegNet-Y's grouped convolution, for
// which oneDNN picks a blocked layout (nChw8c): with the gate left plain, oneDNN ran it on its
// reference kernel ("binary,ref:any,...src_f32::blocked:aBcd8b src_f32::blocked:acdb"); the gate
// is now reordered into the activation's layout (C values, once per call) and the jit kernel
// runs. Batch 2 (a per-sample gate) runs the jit kernel on plain memory. Where the 1x1
// convolution after the gate has fewer weights than the gated map has values (2 C < H W, batch
// 1), the gate is folded into them ("scale_in": the weights are scaled per call) and that
// scaling is the binary that runs.
TEST(Dnnl, SqueezeExcitationGateRunsOnTheJitKernel) {
  for (const auto& dims : {std::tuple<int64_t, int64_t, int64_t>{1, 104, 28}, {1, 440, 7}, {1, 40, 9}, {2, 208, 14}}) {
    const int64_t n = std::get<0>(dims), c = std::get<1>(dims), hw = std::get<2>(dims);  // not a binding: clang 14
    SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(hw));
    IRModule mod = squeeze_excitation_module(n, c, hw);
    json g;
    auto lines = verbose_exec_lines([&] { g = check_against_host(mod, {random_tensor({n, c, hw, hw}, 68)}, "se"); });
    const bool folded = n == 1 && 2 * c < hw * hw;
    ASSERT_EQ(count_ops(g, "binary"), folded ? 0 : 1);  // the gate (the other adds are biases)
    int scaled = 0;
    for (const auto& node : g["functions"][0]["nodes"]) scaled += node.contains("scale_in");
    EXPECT_EQ(scaled, folded ? 1 : 0);
    int binaries = 0;
    for (const auto& line : lines) {
      EXPECT_FALSE(is_reference_kernel(line)) << line;
      if (line.find(",binary,") != std::string::npos) {
        ++binaries;
        EXPECT_NE(line.find(",jit:"), std::string::npos) << line;
      }
    }
    EXPECT_EQ(binaries, 2);  // two runs
  }
}

// The gate folds into the next 1x1 convolution only when the gated map has no other use, the
// convolution is 1x1, stride 1, unpadded and ungrouped: each variant matches the host.
TEST(Dnnl, SqueezeExcitationGateFoldsOnlyIntoAPlainPointwiseConvolution) {
  struct Variant {
    const char* what;
    std::vector<int64_t> kernel, strides, padding;
    bool reused, folded;
  };
  for (const Variant& v : {Variant{"1x1", {1, 1}, {1, 1}, {0, 0, 0, 0}, false, true},
                           Variant{"gated map reused", {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false},
                           Variant{"3x3", {3, 3}, {1, 1}, {1, 1, 1, 1}, false, false},
                           Variant{"stride 2", {1, 1}, {2, 2}, {0, 0, 0, 0}, false, false}}) {
    SCOPED_TRACE(v.what);
    Tensor w = random_tensor({8, 32, v.kernel[0], v.kernel[1]}, 141, 0.2f);
    Var x = param("x", {1, 32, 12, 12}), gate = param("gate", {1, 32, 1, 1});
    IRModule mod = module_of({x, gate}, [&](BlockBuilder& bb) -> Expr {
      Var r = bb.emit(op::make_call("relax.nn.relu", {x}));
      Var m = bb.emit(op::make_call("relax.multiply", {r, gate}));
      Var c = bb.emit(op::make_call("relax.nn.conv2d", {m, cst(w)},
                                    {{"strides", v.strides}, {"padding", v.padding}}));
      if (!v.reused) return c;
      return bb.emit(make<TupleNode>(std::vector<Expr>{c, m}));
    });
    json g = check_against_host(mod, {random_tensor({1, 32, 12, 12}, 142), random_tensor({1, 32, 1, 1}, 143)}, v.what);
    EXPECT_EQ(count_ops(g, "binary"), v.folded ? 0 : 1);
  }
}

// Broadcasts oneDNN runs on its jit kernel are offloaded (viewed as their runs of dims); the
// others stay on the host.
TEST(Dnnl, BroadcastsRunOnTheJitKernelOrStayOnTheHost) {
  using Shape = std::vector<int64_t>;
  struct Case {
    Shape x, y;
    bool offloaded;
  };
  const Shape t = {2, 8, 5, 7};
  for (const Case& cs : {Case{t, t, true}, Case{t, {}, true}, Case{t, {1}, true}, Case{t, {1, 8, 1, 1}, true},
                         Case{t, {8, 1, 1}, true}, Case{t, {1, 8, 5, 1}, true}, Case{t, {2, 1, 5, 7}, true},
                         Case{t, {7}, true}, Case{t, {2, 8, 1, 1}, true}, Case{t, {5, 7}, true},
                         Case{{4, 6}, {4, 1}, true}, Case{{4, 6}, {6}, true}, Case{t, {1, 8, 1, 7}, false},
                         Case{t, {2, 1, 5, 1}, false}, Case{{2, 1, 5}, {1, 8, 1}, false}}) {
    std::string what;
    for (auto d : cs.y) what += std::to_string(d) + " ";
    SCOPED_TRACE("operand " + what);
    Var x = param("x", cs.x), y = param("y", cs.y);
    IRModule mod = module_of({x, y}, [&](BlockBuilder& bb) -> Expr {
      Var r = bb.emit(op::make_call("relax.nn.relu", {x}));
      return bb.emit(op::make_call("relax.multiply", {y, r}));  // the broadcast operand first
    });
    std::vector<Tensor> in = {random_tensor(cs.x, 71), random_tensor(cs.y, 72)};
    if (!cs.offloaded) {
      codegen::BuildOptions opts;
      auto kernels = codegen::build(transform::partition_for("dnnl", mod), opts)->kernel_names;
      EXPECT_EQ(kernels, std::vector<std::string>{"relax.multiply"});
      continue;
    }
    json g;
    auto lines = verbose_exec_lines([&] { g = check_against_host(mod, in, "broadcast " + what); });
    EXPECT_EQ(count_ops(g, "binary"), 1);
    for (const auto& line : lines) EXPECT_FALSE(is_reference_kernel(line)) << line;
  }
}

}  // namespace
}  // namespace partita::backend::dnnl

namespace partita::backend::dnnl {
namespace {

// How many concat primitives a verbose log ran; none of its primitives may be a reference kernel.
int concat_primitives(const std::vector<std::string>& lines, const std::string& what) {
  int concats = 0;
  for (const auto& line : lines) {
    EXPECT_FALSE(is_reference_kernel(line)) << what << ": " << line;
    concats += line.find(",concat,") != std::string::npos;
  }
  return concats;
}

// DenseNet's block: convolutions whose outputs are concatenated with the block's input, then
// batch_norm + ReLU (not foldable: it follows the concat) and a convolution: one partition (the
// concat's tuple merges with its fields' producers), the ReLU fused into the batch_norm,
// nothing on a reference kernel. The concatenation is in place (batch 1, 16-channel multiples):
// no concat primitive runs; the convolution writes into the result's channels, the block's
// input is reordered into its own.
TEST(Dnnl, ConcatAndBatchNormKeepADenseBlockInOneBlockedPartition) {
  Tensor w1 = random_tensor({32, 64, 1, 1}, 101, 0.2f), w2 = random_tensor({32, 32, 3, 3}, 102, 0.1f);
  Tensor w3 = random_tensor({16, 96, 1, 1}, 103, 0.1f);
  Tensor g = random_tensor({96}, 104), b = random_tensor({96}, 105), mean = random_tensor({96}, 106);
  Tensor var = random_tensor({96}, 107);
  for (int64_t i = 0; i < 96; ++i) var.data_as<float>()[i] = std::fabs(var.data_as<float>()[i]) + 0.5f;
  Var x = param("x", {1, 64, 14, 14});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var r = bb.emit(op::make_call("relax.nn.relu", {x}));
    Var c1 = bb.emit(conv(r, cst(w1), {0, 0, 0, 0}));
    Var r1 = bb.emit(op::make_call("relax.nn.relu", {c1}));
    Var c2 = bb.emit(conv(r1, cst(w2)));
    Var cat = bb.emit(op::concat({x, c2}, 1));
    Var bn = bb.emit(op::nn::batch_norm(cat, cst(g), cst(b), cst(mean), cst(var), 1, 1e-5, true, true, 0.1, false));
    Var y = bb.emit(make<TupleGetItemNode>(bn, 0));
    Var ry = bb.emit(op::make_call("relax.nn.relu", {y}));
    return bb.emit(conv(ry, cst(w3), {0, 0, 0, 0}));
  });
  json graph;
  auto lines = verbose_exec_lines([&] { graph = check_against_host(mod, {random_tensor({1, 64, 14, 14}, 108)}, "dense"); });
  ASSERT_EQ(graph["functions"].size(), 1u);
  EXPECT_EQ(count_ops(graph, "concat"), 1);
  EXPECT_EQ(count_ops(graph, "batch_norm"), 1);
  EXPECT_EQ(count_ops(graph, "eltwise"), 1);  // the input's ReLU; the others are fused
  for (const auto& n : graph["functions"][0]["nodes"])
    if (n["op"] == "batch_norm") {
      EXPECT_TRUE(n["relu"].get<bool>());
    }
  EXPECT_EQ(concat_primitives(lines, "dense"), 0);
}

// DenseNet's layers concatenate the block's whole list of feature maps again each time (one
// buffer for the block: each result is the front of the last), and a concatenation of a
// concatenation (the inner result held in the outer one), its parts read again after it:
// numbers match the host's and no concat primitive runs.
TEST(Dnnl, RepeatedAndNestedConcatenationsShareOneBuffer) {
  Var x = param("x", {1, 16, 9, 9});
  std::vector<Tensor> ws;
  for (int k = 0; k < 6; ++k) ws.push_back(random_tensor({16, 16 * (k < 3 ? k + 1 : 1), 3, 3}, 131 + uint32_t(k), 0.1f));
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    auto layer = [&](Expr in, const Tensor& w) {
      return bb.emit(op::make_call("relax.nn.relu", {bb.emit(conv(in, cst(w)))}));
    };
    Var f1 = layer(x, ws[0]);
    Var cat1 = bb.emit(op::concat({x, f1}, 1));
    Var f2 = layer(cat1, ws[1]);
    Var cat2 = bb.emit(op::concat({x, f1, f2}, 1));
    Var f3 = layer(cat2, ws[2]);
    Var cat3 = bb.emit(op::concat({x, f1, f2, f3}, 1));
    // Nested: (g1, g2) is held in ((g1, g2), g3).
    Var g1 = layer(f3, ws[3]), g2 = layer(f3, ws[4]), g3 = layer(f3, ws[5]);
    Var inner = bb.emit(op::concat({g1, g2}, 1));
    Var outer = bb.emit(op::concat({inner, g3}, 1));
    Var again = bb.emit(op::add(inner, bb.emit(op::concat({g3, g1}, 1))));  // read after the outer one
    return bb.emit(make<TupleNode>(std::vector<Expr>{cat1, cat2, cat3, outer, again}));
  });
  json graph;
  auto lines = verbose_exec_lines([&] { graph = check_against_host(mod, {random_tensor({1, 16, 9, 9}, 137)}, "dense list"); });
  EXPECT_EQ(count_ops(graph, "concat"), 6);
  EXPECT_EQ(concat_primitives(lines, "dense"), 0);
}

// SqueezeNet's fire module, with the results of both branches read again after the
// concatenation (they live inside the result's bytes, which must stay intact): in place at
// batch 1; at batch 2 (a channel range is not dense) and with 12-channel branches (not whole
// channel blocks, of 16 with AVX-512, 8 without) a concat primitive copies them. Numbers match
// the host's in all three.
TEST(Dnnl, FireModuleConcatenatesInPlaceWhereTheChannelsAreDenseBlocks) {
  for (auto shape : {std::pair<int64_t, int64_t>{1, 32}, {2, 32}, {1, 12}}) {
    const int64_t batch = shape.first, expand = shape.second;  // not a structured binding: clang 14 cannot capture those
    Tensor ws = random_tensor({16, 24, 1, 1}, 121, 0.3f), we1 = random_tensor({expand, 16, 1, 1}, 122, 0.3f);
    Tensor we3 = random_tensor({expand, 16, 3, 3}, 123, 0.1f), wo = random_tensor({16, 2 * expand, 1, 1}, 124, 0.2f);
    Var x = param("x", {batch, 24, 13, 13});
    IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
      Var s = bb.emit(op::make_call("relax.nn.relu", {bb.emit(conv(x, cst(ws), {0, 0, 0, 0}))}));
      Var e1 = bb.emit(op::make_call("relax.nn.relu", {bb.emit(conv(s, cst(we1), {0, 0, 0, 0}))}));
      Var e3 = bb.emit(op::make_call("relax.nn.relu", {bb.emit(conv(s, cst(we3)))}));
      Var cat = bb.emit(op::concat({e1, e3}, 1));
      Var o = bb.emit(conv(cat, cst(wo), {0, 0, 0, 0}));
      Var again = bb.emit(op::add(e1, e3));  // both branches read after the concatenation
      return bb.emit(make<TupleNode>(std::vector<Expr>{o, again}));
    });
    const std::string what = "fire, batch " + std::to_string(batch) + ", expand " + std::to_string(expand);
    json graph;
    auto lines = verbose_exec_lines([&] { graph = check_against_host(mod, {random_tensor({batch, 24, 13, 13}, 125)}, what); });
    EXPECT_EQ(concat_primitives(lines, what), batch == 1 && expand == 32 ? 0 : 2) << what;  // two runs
  }
}

// ShuffleNet's unit: two branches concatenated, the channel shuffle (a reshape splitting the
// channels into two groups, the groups swapped, a reshape merging them) and the split into two
// halves (unit-stride slices), one half convolved: one function, one partition. The reshapes
// are views of channels-last memory but for the merge after the swap: the shuffle is a single
// copy (one 5-d reorder per call), each slice a copy of its channel window; nothing on a
// reference kernel and no detour through plain (NCHW) memory.
TEST(Dnnl, ChannelShuffleAndSplitStayInOnePartitionAsThreeCopies) {
  Tensor wa = random_tensor({8, 16, 1, 1}, 141, 0.3f), wb = random_tensor({8, 16, 3, 3}, 142, 0.1f);
  Tensor wc = random_tensor({8, 8, 1, 1}, 143, 0.3f);
  Var x = param("x", {1, 16, 10, 10});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var a = bb.emit(op::make_call("relax.nn.relu", {bb.emit(conv(x, cst(wa), {0, 0, 0, 0}))}));
    Var b = bb.emit(op::make_call("relax.nn.relu", {bb.emit(conv(x, cst(wb)))}));
    Var cat = bb.emit(op::concat({a, b}, 1));
    auto dims = [](std::vector<int64_t> d) {
      std::vector<PrimExpr> e;
      for (int64_t v : d) e.push_back(int_imm(v));
      return e;
    };
    Var split = bb.emit(op::reshape(cat, dims({1, 2, 8, 10, 10})));
    Var swapped = bb.emit(op::permute_dims(split, std::vector<int64_t>{0, 2, 1, 3, 4}));
    Var shuffled = bb.emit(op::reshape(swapped, dims({1, 16, 10, 10})));
    Var left = bb.emit(op::strided_slice(shuffled, {1}, dims({0}), dims({8})));
    Var right = bb.emit(op::strided_slice(shuffled, {1}, dims({8}), dims({16})));
    Var c = bb.emit(conv(right, cst(wc), {0, 0, 0, 0}));
    return bb.emit(op::add(left, c));
  });
  json graph;
  auto lines = verbose_exec_lines([&] { graph = check_against_host(mod, {random_tensor({1, 16, 10, 10}, 144)}, "shuffle"); });
  EXPECT_EQ(count_ops(graph, "reshape"), 2);
  EXPECT_EQ(count_ops(graph, "slice"), 2);
  int shuffles = 0, slices = 0, to_plain = 0;
  for (const auto& line : lines) {
    EXPECT_FALSE(is_reference_kernel(line)) << line;
    if (line.find(",reorder,") == std::string::npos) continue;
    shuffles += line.find("1x8x2x10x10") != std::string::npos;
    slices += line.find("src_f32::blocked:acdb:f0 dst_f32::blocked:acdb:f0,,,1x8x10x10") != std::string::npos;
    to_plain += line.find("dst_f32::blocked:abcd") != std::string::npos;
  }
  // Per call (two calls): the shuffle, two slices, the result to the caller's NCHW. (With
  // AVX2 oneDNN's convolutions here write 8-channel blocks, which a reshape first reorders to
  // plain memory: only the shuffle's count holds there.)
  EXPECT_EQ(shuffles, 2);
  const int isa = int(::dnnl::get_effective_cpu_isa()), avx512 = int(::dnnl::cpu_isa::avx512_core);
  if ((isa & avx512) == avx512) {
    EXPECT_EQ(slices, 4);
    EXPECT_EQ(to_plain, 2);
  }
}

// SiLU after a convolution (EfficientNet's blocks) and alone, GELU after a product (a
// transformer's MLP) run on the plug-in's vector kernels (runtime/activations.h), not as
// oneDNN's post-ops or primitives: the numbers match the host's and no oneDNN primitive
// computes swish or GELU.
TEST(Dnnl, SiluAndGeluRunOnTheVectorKernels) {
  Tensor w = random_tensor({24, 8, 1, 1}, 151, 0.3f), m = random_tensor({7, 40}, 153, 0.3f);
  Var x = param("x", {1, 8, 15, 15});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(op::make_call("relax.nn.silu", {bb.emit(conv(x, cst(w), {0, 0, 0, 0}))}));
    Var p = bb.emit(op::make_call("relax.nn.silu", {bb.emit(op::nn::max_pool2d(c, {2, 2}, {2, 2}))}));
    return bb.emit(op::make_call("relax.nn.gelu", {bb.emit(op::matmul(p, cst(m)))}));
  });
  auto lines = verbose_exec_lines([&] { check_against_host(mod, {random_tensor({1, 8, 15, 15}, 152)}, "silu"); });
  for (const auto& line : lines) {
    EXPECT_EQ(line.find("swish"), std::string::npos) << line;
    EXPECT_EQ(line.find("gelu"), std::string::npos) << line;
  }
}

// The importer's HardSwish (x * clip(x / 6 + 0.5, 0, 1)) and HardSigmoid (clip(x / 5 + 0.5,
// 0, 1)) after convolutions become post-ops of the convolutions (hardswish; linear + clip):
// MobileNetV3's blocks are convolutions only.
TEST(Dnnl, HardSwishAndHardSigmoidBecomePostOpsOfTheConvolution) {
  Tensor w1 = random_tensor({16, 8, 1, 1}, 111, 0.3f), w2 = random_tensor({16, 16, 1, 1}, 112, 0.3f);
  auto scalar = [](float v) {
    Tensor t = Tensor::empty({}, F32);
    t.data_as<float>()[0] = v;
    return cst(t);
  };
  Var x = param("x", {1, 8, 9, 9});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c = bb.emit(conv(x, cst(w1), {0, 0, 0, 0}));
    Var h = bb.emit(op::make_call("relax.multiply", {c, scalar(1.0f / 6.0f)}));
    h = bb.emit(op::make_call("relax.add", {h, scalar(0.5f)}));
    h = bb.emit(op::clip(h, 0.0, 1.0));
    Var hs = bb.emit(op::make_call("relax.multiply", {c, h}));
    Var c2 = bb.emit(conv(hs, cst(w2), {0, 0, 0, 0}));
    Var s = bb.emit(op::make_call("relax.multiply", {c2, scalar(0.2f)}));
    s = bb.emit(op::make_call("relax.add", {s, scalar(0.5f)}));
    return bb.emit(op::clip(s, 0.0, 1.0));
  });
  json graph = check_against_host(mod, {random_tensor({1, 8, 9, 9}, 113, 4.0f)}, "hard");
  ASSERT_EQ(graph["functions"].size(), 1u);
  const json& nodes = graph["functions"][0]["nodes"];
  ASSERT_EQ(nodes.size(), 2u) << nodes.dump();
  EXPECT_EQ(nodes[0]["post"], json::parse(R"([{"kind": "eltwise", "alg": "hardswish", "alpha": 0.0, "beta": 0.0}])"));
  ASSERT_EQ(nodes[1]["post"].size(), 2u);
  EXPECT_EQ(nodes[1]["post"][0]["alg"], "linear");
  EXPECT_NEAR(nodes[1]["post"][0]["alpha"].get<double>(), 0.2, 1e-7);
  EXPECT_EQ(nodes[1]["post"][1]["alg"], "clip");
}

}  // namespace
}  // namespace partita::backend::dnnl
