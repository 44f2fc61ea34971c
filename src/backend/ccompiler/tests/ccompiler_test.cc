// The ccompiler backend: generated C compiled with the Target's compiler; the runtime module
// computes correct results (seed multiply, matmul/add/relu chains with symbolic dims and named
// constants), survives save/load, and refuses what it cannot compile.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "random_tensor.h"
#include "partita/backend/registry.h"
#include "partita/codegen/codegen.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/basic.h"
#include "partita/transform/pattern_registry.h"

namespace partita::codegen {
namespace {

const DataType F32 = DataType::Float(32);

using partita::testing::random_tensor;

IRModule seed_module() {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{10, 10}, F32));
  Var y = make<VarNode>("y", tensor_sinfo(std::vector<int64_t>{10, 10}, F32));
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var lv = bb.emit(op::make_call("relax.multiply", {x, y}));
  Var gv = bb.emit_output(lv);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  return transform::CanonicalizeBindings()(bb.get());
}

// x: (n, 8) @ w (8, 4) + b (4,) -> relu, with w and b constants.
IRModule mlp_module(const Tensor& w, const Tensor& b) {
  PrimVar n = make<PrimVarNode>("n");
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<PrimExpr>{n, int_imm(8)}, F32));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var lv = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)}));
  Var lv1 = bb.emit(op::make_call("relax.add", {lv, make<ConstantNode>(b)}));
  Var lv2 = bb.emit(op::make_call("relax.nn.relu", {lv1}));
  Var gv = bb.emit_output(lv2);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  return bb.get();
}

runtime::ModulePtr only_module(const IRModule& mod) {
  auto mods = external_mods_of(mod);
  EXPECT_EQ(mods.size(), 1u);
  return mods.empty() ? nullptr : mods[0];
}

class SeedMultiply : public ::testing::TestWithParam<bool> {};

TEST_P(SeedMultiply, ComputesXTimesYExactly) {
  IRModule parted = transform::partition_for("ccompiler", seed_module(), GetParam());
  IRModule out = RunCodegen()(parted);
  auto m = only_module(out);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type_key(), "ccompiler");
  ASSERT_EQ(m->function_names().size(), 1u);
  auto fn = m->get_function(m->function_names()[0]);
  ASSERT_TRUE(fn);
  Tensor x = random_tensor({10, 10}, 1), y = random_tensor({10, 10}, 2);
  Tensor o = Tensor::empty({10, 10}, F32);
  std::vector<Tensor> in{x, y}, outs{o};
  fn(in, outs);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(o.data_as<float>()[i], x.data_as<float>()[i] * y.data_as<float>()[i]);
  // The source is kept with the code.
  EXPECT_NE(m->get_source("c").find("PT_BINARY(pt_mul_f32, float, x * y)"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Paths, SeedMultiply, ::testing::Bool());

void expect_mlp(runtime::RuntimeModule& m, const std::string& symbol, const Tensor& w, const Tensor& b, int64_t n) {
  Tensor x = random_tensor({n, 8}, 7 + uint32_t(n));
  Tensor o = Tensor::empty({n, 4}, F32);
  std::vector<Tensor> in{x}, outs{o};
  m.get_function(symbol)(in, outs);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 4; ++j) {
      float acc = 0;
      for (int k = 0; k < 8; ++k) acc += x.data_as<float>()[i * 8 + k] * w.data_as<float>()[k * 4 + j];
      acc += b.data_as<float>()[j];
      EXPECT_NEAR(o.data_as<float>()[i * 4 + j], std::max(acc, 0.0f), 1e-5) << i << "," << j;
    }
}

TEST(CCompiler, MatmulAddReluWithSymbolicDimsAndNamedConstants) {
  Tensor w = random_tensor({8, 4}, 3), b = random_tensor({4}, 4);
  IRModule parted = transform::partition_for("ccompiler", mlp_module(w, b), /*merge=*/true);
  IRModule named = NameCodegenConstants()(parted);
  ASSERT_EQ(named->const_name_to_constant.size(), 2u);
  IRModule out = RunCodegen({{"ccompiler", {{"cflags", std::vector<std::string>{"-O1"}}}}})(named);
  EXPECT_EQ(out->const_name_to_constant.size(), 2u);  // stored once: the pass named them already
  auto m = only_module(out);
  ASSERT_TRUE(m);
  std::string symbol = m->function_names().at(0);
  EXPECT_EQ(m->const_names().size(), 2u);
  m->init_constants(out->const_name_to_constant);
  for (int64_t n : {1, 3, 17}) expect_mlp(*m, symbol, w, b, n);
  // A wrong runtime shape is a clean error naming the function.
  Tensor bad = random_tensor({3, 7}, 9), o = Tensor::empty({3, 4}, F32);
  std::vector<Tensor> in{bad}, outs{o};
  try {
    m->get_function(symbol)(in, outs);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 1 is 7, expected 8"), std::string::npos) << e.what();
  }
  // Save and load through the loader registry: the compiled code travels with the module.
  std::string blob;
  m->save_to_binary(blob);
  auto loaded = runtime::load_module_from_binary("ccompiler", blob);
  loaded->init_constants(out->const_name_to_constant);
  expect_mlp(*loaded, symbol, w, b, 5);
  EXPECT_THROW(runtime::load_module_from_binary("ccompiler", blob.substr(0, blob.size() / 2)), Error);
}

TEST(CCompiler, PathOneSeparateFunctionsShareOneSharedObject) {
  Tensor w = random_tensor({8, 4}, 5), b = random_tensor({4}, 6);
  IRModule parted = transform::partition_for("ccompiler", mlp_module(w, b), /*merge=*/false);
  IRModule out = RunCodegen()(parted);
  auto m = only_module(out);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->function_names().size(), 3u);  // matmul, add, relu: one module for all
  EXPECT_EQ(out->const_name_to_constant.size(), 2u);
}

TEST(CCompiler, BadCompilerIsACompileError) {
  IRModule parted = transform::partition_for("ccompiler", seed_module(), true);
  try {
    RunCodegen({{"ccompiler", {{"cc", "/nonexistent/cc"}}}})(parted);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "CompileError");
    EXPECT_NE(e.message().find("ccompiler -cc=/nonexistent/cc"), std::string::npos) << e.message();
  }
}

TEST(CCompiler, RefusesUnsupportedDtypeAndFallsBack) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(16)));
  BlockBuilder bb;
  bb.begin_function("main", {x, x});
  bb.begin_dataflow();
  Var gv = bb.emit_output(bb.emit(op::make_call("relax.add", {x, x})));
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule parted = transform::partition_for("ccompiler", bb.get(), true);
  try {
    RunCodegen()(parted);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "UnsupportedFunction");
    EXPECT_NE(e.message().find("dtype float16 is not supported"), std::string::npos) << e.message();
  }
  std::vector<std::string> warnings;
  RunCodegenOptions opts;
  opts.fallback = true;
  opts.warn = [&](const std::string& w) { warnings.push_back(w); };
  IRModule out = run_codegen(parted, opts);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(external_mods_of(out).empty());
  EXPECT_EQ(out.functions().size(), 1u);
}

}  // namespace
}  // namespace partita::codegen

namespace partita::codegen {
namespace {

TEST(CCompiler, RegistersItsRecordAndPatterns) {
  auto info = backend::find_backend("ccompiler");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->runtime_plugin, "ccompiler");
  EXPECT_EQ(info->colour.size(), 7u);
  std::set<std::string> names;
  for (const auto& p : transform::get_patterns_with_prefix("ccompiler.")) names.insert(p.name);
  EXPECT_EQ(names, (std::set<std::string>{"ccompiler.add", "ccompiler.subtract", "ccompiler.multiply",
                                          "ccompiler.divide", "ccompiler.relu", "ccompiler.matmul"}));
  EXPECT_EQ(Target("ccompiler").str(), "ccompiler -cc=gcc -cflags=-O2");
}

}  // namespace
}  // namespace partita::codegen
