// The BLAS backend: matmul / dense (+ bias + activation), 2-d and batched, partitioned for
// cblas, built and run, agrees with the host VM; weights stay named constants; OpenBLAS's core
// is reported.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "random_tensor.h"
#include "../runtime/cblas_runtime.h"
#include "../runtime/openblas.h"
#include "partita/codegen/build.h"
#include "partita/codegen/codegen.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/runtime/vm.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend::cblas {
namespace {

const DataType F32 = DataType::Float(32);

using partita::testing::random_tensor;

Var param(const std::string& name, std::vector<int64_t> shape) {
  return make<VarNode>(name, tensor_sinfo(std::move(shape), F32));
}

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

void check(const IRModule& mod, const std::vector<Tensor>& inputs, size_t expected_mods = 1, int threads = 2) {
  auto want = runtime::VirtualMachine(codegen::build(mod)).invoke("main", inputs);
  IRModule parted = transform::partition_for("cblas", mod);
  IRModule lowered = codegen::run_codegen(codegen::name_codegen_constants(parted));
  auto mods = codegen::external_mods_of(lowered);
  ASSERT_EQ(mods.size(), expected_mods);
  if (!mods.empty()) {
    EXPECT_EQ(mods[0]->type_key(), "cblas");
  }
  codegen::BuildOptions opts;
  opts.targets.push_back(codegen::Target("cblas", {{"num_threads", threads}}));
  auto got = runtime::VirtualMachine(codegen::build(parted, opts)).invoke("main", inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    double max_ref = 1, worst = 0;
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      max_ref = std::max(max_ref, double(std::fabs(want[k].data_as<float>()[i])));
      worst = std::max(worst, double(std::fabs(got[k].data_as<float>()[i] - want[k].data_as<float>()[i])));
    }
    EXPECT_LE(worst, 1e-4 * max_ref);
  }
}

TEST(Cblas, MlpWithBiasAndRelu) {
  Tensor w1 = random_tensor({32, 64}, 1), b1 = random_tensor({64}, 2), w2 = random_tensor({64, 8}, 3);
  Var x = param("x", {16, 32});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var m = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w1)}));
    Var a = bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b1)}));
    Var r = bb.emit(op::make_call("relax.nn.relu", {a}));
    return bb.emit(op::make_call("relax.matmul", {r, make<ConstantNode>(w2)}));
  });
  check(mod, {random_tensor({16, 32}, 4)});
}

TEST(Cblas, DenseTransposed3dBy2dAndBatched) {
  Tensor w = random_tensor({24, 16}, 5), b = random_tensor({1, 24}, 6);
  Var x = param("x", {3, 7, 16});
  Var y = param("y", {3, 24, 5});
  IRModule mod = module_of({x, y}, [&](BlockBuilder& bb) -> Expr {
    Var wt = bb.emit(op::make_call("relax.permute_dims", {make<ConstantNode>(w)}));
    Var m = bb.emit(op::make_call("relax.matmul", {x, wt}));
    Var a = bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b)}));
    return bb.emit(op::make_call("relax.matmul", {a, y}));
  });
  check(mod, {random_tensor({3, 7, 16}, 7), random_tensor({3, 24, 5}, 8)});
}

TEST(Cblas, NonBiasAddIsNotOffloadedWithTheMatmul) {
  Var x = param("x", {4, 8});
  Var w = param("w", {8, 6});
  Var z = param("z", {4, 6});
  IRModule mod = module_of({x, w, z}, [&](BlockBuilder& bb) -> Expr {
    Var m = bb.emit(op::make_call("relax.matmul", {x, w}));
    return bb.emit(op::make_call("relax.add", {m, z}));  // a full (4, 6) add: not a bias
  });
  check(mod, {random_tensor({4, 8}, 9), random_tensor({8, 6}, 10), random_tensor({4, 6}, 11)});
}

// Products split into blocks of columns (and batch entries) over threads: widths that are not
// multiples of the block, a transposed weight, the bias and activation applied per block.
TEST(Cblas, ColumnBlocksOverThreadsAgree) {
  Tensor w = random_tensor({70, 40}, 30), b = random_tensor({70}, 31);
  Var x = param("x", {3, 5, 40});
  Var y = param("y", {3, 70, 53});
  IRModule mod = module_of({x, y}, [&](BlockBuilder& bb) -> Expr {
    Var wt = bb.emit(op::make_call("relax.permute_dims", {make<ConstantNode>(w)}));
    Var m = bb.emit(op::make_call("relax.matmul", {x, wt}));
    Var a = bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b)}));
    Var g = bb.emit(op::make_call("relax.nn.gelu", {a}));
    return bb.emit(op::make_call("relax.matmul", {g, y}));  // batched: 3 x (5 x 70) * (70 x 53)
  });
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(threads);
    check(mod, {random_tensor({3, 5, 40}, 32), random_tensor({3, 70, 53}, 33)}, 1, threads);
  }
}

// Constant weights run on the packed micro-kernel (6 x 16 tiles): row counts that leave a
// tail of 1..11 rows, column counts that end in a partial panel, short and long k.
TEST(Cblas, PackedWeightEdges) {
  struct Case {
    int64_t m, k, n;
  };
  for (Case cs : {Case{13, 5, 24}, Case{7, 33, 17}, Case{1, 16, 40}, Case{64, 64, 130}, Case{11, 300, 8}}) {
    SCOPED_TRACE(std::to_string(cs.m) + "x" + std::to_string(cs.k) + "x" + std::to_string(cs.n));
    Tensor w = random_tensor({cs.k, cs.n}, 40), b = random_tensor({cs.n}, 41);
    Var x = param("x", {cs.m, cs.k});
    IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
      Var m = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)}));
      Var a = bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b)}));
      return bb.emit(op::make_call("relax.nn.relu", {a}));
    });
    for (int threads : {1, 2, 5}) check(mod, {random_tensor({cs.m, cs.k}, 42)}, 1, threads);
  }
}

// Operators the host VM still runs after partitioning for cblas.
std::vector<std::string> host_ops(const IRModule& mod) {
  codegen::BuildOptions opts;
  opts.targets.push_back(codegen::Target("cblas", {}));
  return codegen::build(transform::partition_for("cblas", mod), opts)->kernel_names;
}

TEST(Cblas, ActivationsAreFusedAfterTheBias) {
  for (const char* act : {"relax.nn.relu", "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.silu", "relax.sigmoid",
                          "relax.tanh"}) {
    SCOPED_TRACE(act);
    Tensor w = random_tensor({12, 20}, 21), b = random_tensor({20}, 22);
    Var x = param("x", {2, 5, 12});
    IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
      Var m = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)}));
      Var a = bb.emit(op::make_call("relax.add", {make<ConstantNode>(b), m}));  // bias first: add commutes
      return bb.emit(op::make_call(act, {a}));
    });
    EXPECT_TRUE(host_ops(mod).empty());
    check(mod, {random_tensor({2, 5, 12}, 23)});
  }
}

TEST(Cblas, ActivationWithoutBiasAndUnfusableOnesStayApart) {
  Tensor w = random_tensor({8, 8}, 24);
  Var x = param("x", {4, 8});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var m = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)}));
    Var t = bb.emit(op::make_call("relax.tanh", {m}));
    Var e = bb.emit(op::make_call("relax.exp", {t}));  // not an epilogue: stays on the host
    return bb.emit(op::make_call("relax.nn.relu", {e}));  // follows no matmul: stays on the host
  });
  EXPECT_EQ(host_ops(mod), (std::vector<std::string>{"relax.exp", "relax.nn.relu"}));
  check(mod, {random_tensor({4, 8}, 25)});
}

// A single row runs as a matrix-vector product: weight stored (K, N) and transposed (N, K).
TEST(Cblas, SingleRowClassifier) {
  Tensor w = random_tensor({40, 24}, 26), wt = random_tensor({24, 40}, 27), b = random_tensor({24}, 28);
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed);
    Var x = param("x", {1, 40});
    IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
      Expr weight = transposed ? Expr(bb.emit(op::make_call("relax.permute_dims", {make<ConstantNode>(wt)})))
                               : Expr(make<ConstantNode>(w));
      Var m = bb.emit(op::make_call("relax.matmul", {x, weight}));
      return bb.emit(op::make_call("relax.nn.relu", {bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b)}))}));
    });
    EXPECT_TRUE(host_ops(mod).empty());
    check(mod, {random_tensor({1, 40}, 29)});
  }
}

// OpenBLAS runs the kernels of this CPU without the user's help: with OPENBLAS_CORETYPE unset,
// libpartita_runtime sets it from cpuid when it is loaded, before main (setenv is unsafe once
// other threads may read the environment, so nothing sets it at the plug-in's first use), and
// OpenBLAS reports that core (on this machine's Sapphire Rapids VM OpenBLAS 0.3.21 would pick
// SkylakeX by itself, and Prescott on CPUs it does not know). The check runs in a child process
// started with the variable removed, so it holds whatever the environment of the test run.
TEST(Cblas, OpenBlasRunsThisCpusKernels) {
  if (std::getenv("PARTITA_CBLAS_CORE_CHILD")) {
    const char* before = std::getenv("OPENBLAS_CORETYPE");  // before any cblas module or OpenBLAS
    const std::string at_start = before ? before : "";
    OpenBlasCore core = openblas_core();
    std::printf("at_start=%s requested=%s set_by_partita=%d reported=%s warning=%s\n", at_start.c_str(),
                core.requested.c_str(), int(core.set_by_partita), core.reported.c_str(),
                openblas_core_warning().c_str());
    return;
  }
  const std::string preferred = preferred_openblas_core();
  if (preferred.empty()) GTEST_SKIP() << "a CPU without AVX: OpenBLAS's own choice is kept";
  auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  // The variable removed, and set but empty (which setenv without overwrite would keep).
  for (const char* env : {"env -u OPENBLAS_CORETYPE", "env OPENBLAS_CORETYPE="}) {
    SCOPED_TRACE(env);
    std::string cmd = std::string(env) + " PARTITA_CBLAS_CORE_CHILD=1 /proc/" + std::to_string(getpid()) +
                      "/exe --gtest_filter=Cblas.OpenBlasRunsThisCpusKernels 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ASSERT_EQ(pclose(p), 0) << out;
    EXPECT_NE(out.find("at_start=" + preferred + " requested=" + preferred + " set_by_partita=1"), std::string::npos)
        << out;
    auto at = out.find("reported=");
    ASSERT_NE(at, std::string::npos) << out;
    std::string reported = out.substr(at + 9, out.find(' ', at) - at - 9);
    EXPECT_EQ(lower(reported), lower(preferred)) << out;
    for (const char* slow : {"prescott", "generic", "core2", "nehalem", "unknown"}) EXPECT_NE(lower(reported), slow);
    EXPECT_NE(out.find("warning=\n"), std::string::npos) << "no warning expected: " << out;
  }
}

// Errors name the module, the function, the product and the Relax operators it computes (a
// graph whose first product reads the second one's result is refused when the module loads);
// a tensor of the wrong shape at run time names the function and the argument.
TEST(Cblas, ErrorsNameTheFunctionNodeAndOperators) {
  Tensor w1 = random_tensor({6, 6}, 51), b1 = random_tensor({6}, 52), w2 = random_tensor({6, 6}, 53);
  Var x = param("x", {3, 6});
  IRModule mod = module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var m = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w1)}));
    Var r = bb.emit(op::make_call("relax.nn.relu", {bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b1)}))}));
    return bb.emit(op::make_call("relax.matmul", {r, make<ConstantNode>(w2)}));
  });
  IRModule lowered = codegen::run_codegen(codegen::name_codegen_constants(transform::partition_for("cblas", mod)));
  auto mods = codegen::external_mods_of(lowered);
  ASSERT_EQ(mods.size(), 1u);
  nlohmann::json g = nlohmann::json::parse(mods[0]->get_source());
  const std::string symbol = g["functions"][0]["symbol"];
  auto& nodes = g["functions"][0]["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]["from"], nlohmann::json({"relax.matmul", "relax.add", "relax.nn.relu"}));
  nodes[0]["a"] = nodes[1]["out"];  // (3, 6): the shapes still agree
  try {
    make_cblas_module(g.dump());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cblas module, function '" + symbol +
                               "', node 0 (from relax.matmul + relax.add + relax.nn.relu): it reads value"),
              std::string::npos)
        << e.message();
  }
  mods[0]->init_constants(lowered->const_name_to_constant);
  std::vector<Tensor> wrong = {random_tensor({3, 5}, 54)}, out = {Tensor::empty({3, 6}, F32)};
  try {
    mods[0]->get_function(symbol)(wrong, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cblas module, function '" + symbol + "': argument 0 has another dtype or shape"),
              std::string::npos)
        << e.message();
  }
}

TEST(Cblas, MalformedModuleBytesAreCleanErrors) {
  try {
    runtime::load_module_from_binary("cblas", "bad");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(std::string(e.what()).find("cblas module"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_cblas_module("{not json"), Error);
}

}  // namespace
}  // namespace partita::backend::cblas
