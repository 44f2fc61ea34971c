// CanonicalizeBindings: before/after pairs, including the seed tutorial's first step.
#include <fstream>
#include <sstream>

#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/transform/basic.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::plain_module;
using partita::testing::dataflow_module;
using partita::testing::modules_equal;
using partita::testing::parse;

const DataType f32 = DataType::Float(32);

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The conformance case seed-builder: build with the BlockBuilder, canonicalize, print.
TEST(CanonicalizeBindings, SeedBuilderConformance) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{10, 10}, f32));
  Var y = make<VarNode>("y", tensor_sinfo(std::vector<int64_t>{10, 10}, f32));
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var lv0 = bb.emit(op::make_call("relax.multiply", {x, y}));
  Var gv = bb.emit_output(lv0);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule mod = CanonicalizeBindings()(bb.get());
  EXPECT_TRUE(well_formed(mod));
  std::string expected =
      read_file(std::string(PARTITA_SOURCE_DIR) + "/../shared/conformance/cases/seed-builder/expected.py");
  ASSERT_FALSE(expected.empty());
  std::string printed = script::print_module(mod);
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  };
  EXPECT_EQ(trim(printed), trim(expected));
  EXPECT_TRUE(modules_equal(mod, parse(expected)));
  // The output var keeps its name and now holds the multiply directly.
  auto f = mod.lookup("main").as_ref<FunctionNode>();
  auto* b = f->body.as<SeqExprNode>()->blocks.at(0)->bindings.at(0).as<VarBindingNode>();
  EXPECT_EQ(b->var->name_hint, "gv");
  EXPECT_FALSE(b->var.as<DataflowVarNode>());
}

TEST(CanonicalizeBindings, ChainsOfVarBindings) {
  const std::string sig = R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  check_pass(CanonicalizeBindings(), plain_module(sig, R"(
y: R.Tensor((4,), dtype="float32") = x
z: R.Tensor((4,), dtype="float32") = y
w: R.Tensor((4,), dtype="float32") = R.add(z, y))", "w"),
             plain_module(sig, R"(
w: R.Tensor((4,), dtype="float32") = R.add(x, x))", "w"));
}

TEST(CanonicalizeBindings, TrivialBindingAsReturnValue) {
  const std::string sig = R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  check_pass(CanonicalizeBindings(), plain_module(sig, R"(
y: R.Tensor((4,), dtype="float32") = R.add(x, x)
z: R.Tensor((4,), dtype="float32") = y)", "z"),
             plain_module(sig, R"(
y: R.Tensor((4,), dtype="float32") = R.add(x, x))", "y"));
}

TEST(CanonicalizeBindings, ConstantsArePropagated) {
  const std::string sig = R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  check_pass(CanonicalizeBindings(), plain_module(sig, R"(
c: R.Tensor((), dtype="float32") = R.const(1.0, "float32")
a: R.Tensor((4,), dtype="float32") = R.add(x, c))", "a"),
             plain_module(sig, R"(
c: R.Tensor((), dtype="float32") = R.const(1.0, "float32")
a: R.Tensor((4,), dtype="float32") = R.add(x, R.const(1.0, "float32")))", "a"));
}

TEST(CanonicalizeBindings, TrivialMatchCastIsRemoved) {
  const std::string sig = R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  check_pass(CanonicalizeBindings(), plain_module(sig, R"(
y: R.Tensor((4,), dtype="float32") = R.match_cast(x, R.Tensor((4,), dtype="float32"))
z: R.Tensor((4,), dtype="float32") = R.add(y, y))", "z"),
             plain_module(sig, R"(
z: R.Tensor((4,), dtype="float32") = R.add(x, x))", "z"));
}

TEST(CanonicalizeBindings, RefiningMatchCastIsKept) {
  const std::string text = plain_module(R"(main(x: R.Tensor(dtype="float32", ndim=1)) -> R.Tensor(dtype="float32", ndim=1))", R"(
n = T.int64()
y: R.Tensor((n,), dtype="float32") = R.match_cast(x, R.Tensor((n,), dtype="float32"))
z: R.Tensor((n,), dtype="float32") = R.add(y, y))", "z");
  check_pass(CanonicalizeBindings(), text, text);
}

TEST(CanonicalizeBindings, SymbolicVarKnownFromMatchCast) {
  const std::string sig = R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  check_pass(CanonicalizeBindings(), plain_module(sig, R"(
n = T.int64()
y: R.Tensor((n,), dtype="float32") = R.match_cast(x, R.Tensor((n,), dtype="float32"))
z: R.Tensor((n,), dtype="float32") = R.add(y, y))", "z"),
             plain_module(sig, R"(
z: R.Tensor((4,), dtype="float32") = R.add(x, x))", "z"));
}

TEST(CanonicalizeBindings, OutputOfDataflowVarChain) {
  const std::string sig = R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  // gv = lv1 where lv1 = lv: both trivial; the output takes the real value.
  check_pass(CanonicalizeBindings(), dataflow_module(sig, R"(
lv: R.Tensor((4,), dtype="float32") = R.add(x, x)
lv1: R.Tensor((4,), dtype="float32") = lv
gv: R.Tensor((4,), dtype="float32") = lv1)", "gv"),
             dataflow_module(sig, R"(
gv: R.Tensor((4,), dtype="float32") = R.add(x, x))", "gv"));
}

TEST(CanonicalizeBindings, OutputVarUsedOnlyInsideBecomesDataflowVar) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, f32));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var a = bb.emit_output(op::make_call("relax.add", {x, x}), "a");  // only used in the block
  Var b = bb.emit_output(op::make_call("relax.multiply", {a, a}), "b");
  bb.end_dataflow();
  bb.emit_func_output(b);
  IRModule after = CanonicalizeBindings()(bb.get());
  EXPECT_TRUE(modules_equal(after, parse(dataflow_module(R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))", R"(
a: R.Tensor((4,), dtype="float32") = R.add(x, x)
b: R.Tensor((4,), dtype="float32") = R.multiply(a, a))", "b"))));
  auto f = after.lookup("main").as_ref<FunctionNode>();
  EXPECT_TRUE(f->body.as<SeqExprNode>()->blocks[0]->bindings[0]->var.as<DataflowVarNode>());
  EXPECT_TRUE(well_formed(after));
}

TEST(CanonicalizeBindings, ItemsOfKnownTuples) {
  const std::string sig = R"(main(x: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  check_pass(CanonicalizeBindings(), plain_module(sig, R"(
t: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, y)
a: R.Tensor((4,), dtype="float32") = t[1]
b: R.Tensor((4,), dtype="float32") = R.add(a, x))", "b"),
             plain_module(sig, R"(
t: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, y)
b: R.Tensor((4,), dtype="float32") = R.add(y, x))", "b"));
}

TEST(CanonicalizeBindings, UnchangedModuleKeepsFunctions) {
  IRModule mod = parse(plain_module(R"(main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))", R"(
y: R.Tensor((4,), dtype="float32") = R.add(x, x))", "y"));
  IRModule after = CanonicalizeBindings()(mod);
  EXPECT_TRUE(after.lookup("main") == mod.lookup("main"));
}

}  // namespace
}  // namespace partita::transform
