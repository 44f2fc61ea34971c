// RunCodegen: module-at-a-time invocation, printed results for both composite paths, named
// constants accumulating, fallback on and off, unknown codegens.
#include <gtest/gtest.h>

#include <set>

#include "partita/codegen/codegen.h"
#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"

namespace partita::codegen {
namespace {

using dpl::is_op;
using dpl::wildcard;

// The test codegen: records each invocation, refuses symbols in `refuse`, names constants.
struct TestCodegen {
  std::vector<std::vector<std::string>> calls;
  std::vector<std::string> targets;
  std::set<std::string> refuse;
};
TestCodegen& state() {
  static TestCodegen s;
  return s;
}

const bool registered = [] {
  register_target_kind({"testcg", {{"level", TargetOptionType::Int, 1, ""}}});
  register_codegen("testcg", [](const std::vector<CodegenFunction>& fns, const Target& target,
                                const std::map<std::string, Tensor>& consts) {
    std::vector<std::string> names;
    for (const auto& f : fns) names.push_back(f.symbol);
    state().calls.push_back(names);
    state().targets.push_back(target.str());
    for (const auto& f : fns)
      if (state().refuse.count(f.symbol)) throw UnsupportedFunction(f.symbol, "refused by the test");
    ConstantNamer namer(consts);
    std::map<std::string, runtime::PackedFunc> funcs;
    for (const auto& f : fns) {
      post_order_visit(f.func, [&](const Expr& e) {
        if (auto* c = e.as<ConstantNode>()) namer.name_for(c->data, f.symbol);
      });
      funcs[f.symbol] = [](std::span<const Tensor>, std::span<Tensor>) {};
    }
    CodegenResult r;
    r.modules.push_back(runtime::make_function_module("testcg", funcs));
    r.constants = namer.added();
    return r;
  });
  return true;
}();

transform::FusionPattern fp(std::string name, dpl::Pattern p) {
  transform::FusionPattern f;
  f.name = std::move(name);
  f.pattern = std::move(p);
  return f;
}

std::vector<transform::FusionPattern> patterns() {
  return {fp("testcg.multiply", is_op("relax.multiply")({wildcard(), wildcard()})),
          fp("testcg.add", is_op("relax.add")({wildcard(), wildcard()}))};
}

const char* kModule = R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            lv1: R.Tensor((10, 10), dtype="float32") = R.nn.relu(lv)
            gv: R.Tensor((10, 10), dtype="float32") = R.add(lv1, y)
            R.output(gv)
        return gv)";

IRModule path(bool merge) {
  IRModule mod = script::parse_module(kModule);
  IRModule out = transform::fuse_ops_by_pattern(patterns(), mod, true, !merge);
  return merge ? transform::merge_composite_functions(out) : out;
}

TEST(RunCodegen, PathOneResult) {
  state() = {};
  IRModule out = RunCodegen()(path(false));
  ASSERT_EQ(state().calls.size(), 1u);  // module-at-a-time: one call with both functions
  EXPECT_EQ(state().calls[0].size(), 2u);
  EXPECT_EQ(state().targets[0], "testcg -level=1");
  EXPECT_TRUE(well_formed(out));
  EXPECT_EQ(script::print_module(out), R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((10, 10), dtype="float32") = R.call_packed("fused_relax_multiply_testcg", x, y, ty_args=(R.Tensor((10, 10), dtype="float32"),))
            lv1: R.Tensor((10, 10), dtype="float32") = R.nn.relu(lv)
            gv: R.Tensor((10, 10), dtype="float32") = R.call_packed("fused_relax_add_testcg", lv1, y, ty_args=(R.Tensor((10, 10), dtype="float32"),))
            R.output(gv)
        return gv)");
  auto mods = external_mods_of(out);
  ASSERT_EQ(mods.size(), 1u);
  EXPECT_EQ(mods[0]->type_key(), "testcg");
}

TEST(RunCodegen, PathTwoFeedsTheSameWay) {
  state() = {};
  IRModule out = RunCodegen({{"testcg", {{"level", 3}}}})(path(true));
  ASSERT_EQ(state().calls.size(), 1u);
  EXPECT_EQ(state().targets[0], "testcg -level=3");
  EXPECT_TRUE(well_formed(out));
  std::string text = script::print_module(out);
  EXPECT_EQ(text.find("Codegen"), std::string::npos) << text;
  EXPECT_NE(text.find("R.call_packed(\"fused_relax_multiply"), std::string::npos) << text;
  EXPECT_EQ(out.functions().size(), 1u);
}

TEST(RunCodegen, ExistingExternalModulesAreKept) {
  state() = {};
  IRModule once = RunCodegen()(path(false));
  IRModule again = RunCodegen()(once);  // nothing left to offload: same modules
  EXPECT_EQ(external_mods_of(again).size(), 1u);
}

IRModule with_constants() {
  Tensor c = Tensor::empty({10, 10}, DataType::Float(32));
  for (int i = 0; i < 100; ++i) c.data_as<float>()[i] = float(i);
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{10, 10}, DataType::Float(32)));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var a = bb.emit(op::make_call("relax.multiply", {x, make<ConstantNode>(c)}));
  Var r = bb.emit(op::make_call("relax.nn.relu", {a}));
  Var b = bb.emit(op::make_call("relax.add", {r, make<ConstantNode>(c)}));  // same tensor again
  bb.emit_func_output(bb.emit_output(b));
  return transform::fuse_ops_by_pattern(patterns(), bb.get(), true, true);
}

TEST(RunCodegen, NamedConstantsAccumulateOnce) {
  state() = {};
  IRModule mod = with_constants();
  // A constant already named by an earlier pass keeps its name; the tensor is stored once.
  IRModule named = NameCodegenConstants()(mod);
  ASSERT_EQ(named->const_name_to_constant.size(), 1u);
  std::string first = named->const_name_to_constant.begin()->first;
  EXPECT_NE(first.find("_const_0"), std::string::npos) << first;
  IRModule out = RunCodegen()(named);
  EXPECT_EQ(out->const_name_to_constant.size(), 1u);
  EXPECT_EQ(out->const_name_to_constant.begin()->first, first);
  // Without the pass, the codegen names it itself, the same way.
  IRModule direct = RunCodegen()(mod);
  ASSERT_EQ(direct->const_name_to_constant.size(), 1u);
  EXPECT_EQ(direct->const_name_to_constant.begin()->first, first);
  // Pre-existing entries are kept.
  IRModule pre = mod;
  pre.cow()->const_name_to_constant["other"] = Tensor::empty({1}, DataType::Float(32));
  EXPECT_EQ(RunCodegen()(pre)->const_name_to_constant.size(), 2u);
}

TEST(RunCodegen, FallbackOffFailsNamingTheFunction) {
  state() = {};
  state().refuse = {"fused_relax_add_testcg"};
  try {
    RunCodegen()(path(false));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "UnsupportedFunction");
    EXPECT_NE(e.message().find("cannot compile function 'fused_relax_add_testcg': refused by the test"),
              std::string::npos)
        << e.message();
  }
}

TEST(RunCodegen, FallbackOnInlinesAndWarns) {
  state() = {};
  state().refuse = {"fused_relax_add_testcg"};
  transform::PassContext ctx;
  ctx.config[kRunCodegenFallbackConfig] = true;
  testing::internal::CaptureStderr();
  IRModule out;
  {
    transform::PassContext::Scope scope(ctx);
    out = RunCodegen()(path(false));
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot compile function 'fused_relax_add_testcg'"), std::string::npos) << err;
  ASSERT_EQ(state().calls.size(), 2u);  // asked again without the refused function
  EXPECT_EQ(state().calls[1], std::vector<std::string>{"fused_relax_multiply_testcg"});
  EXPECT_TRUE(well_formed(out));
  std::string text = script::print_module(out);
  EXPECT_NE(text.find("gv: R.Tensor((10, 10), dtype=\"float32\") = R.add(lv1, y)"), std::string::npos) << text;
  EXPECT_EQ(out.functions().size(), 1u) << text;
}

TEST(RunCodegen, UnknownCodegenIsAnError) {
  IRModule mod = script::parse_module(kModule);
  IRModule parted = transform::fuse_ops_by_pattern(
      {fp("nosuchcg.add", is_op("relax.add")({wildcard(), wildcard()}))}, mod, true, true);
  try {
    RunCodegen()(parted);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("no codegen registered for 'nosuchcg'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("testcg"), std::string::npos) << e.message();
  }
}

TEST(RunCodegen, EntryFunctionsRestrictWhatIsCompiled) {
  state() = {};
  EXPECT_THROW(RunCodegen({}, {"nosuch"})(path(false)), Error);
  IRModule out = RunCodegen({}, {"main"})(path(false));
  EXPECT_EQ(state().calls.size(), 1u);
  EXPECT_EQ(out.functions().size(), 1u);
}

}  // namespace
}  // namespace partita::codegen
