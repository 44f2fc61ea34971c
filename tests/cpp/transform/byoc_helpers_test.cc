// InlineCompilerFunctions / OutlineCompilerFunctions / MarkCompilerFunctionsAsExtern.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/byoc_helpers.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"

namespace partita::transform {
namespace {

namespace fs = std::filesystem;
using dpl::is_op;
using dpl::make_fused_bias_activation_pattern;
using dpl::wildcard;

fs::path cases_dir() { return fs::path(PARTITA_SOURCE_DIR) / ".." / "shared" / "conformance" / "cases"; }

IRModule parse_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return script::parse_module(ss.str(), p.string());
}

FusionPattern fp(std::string name, dpl::Pattern p) {
  FusionPattern f;
  f.name = std::move(name);
  f.pattern = std::move(p);
  return f;
}

std::vector<FusionPattern> patterns_for(const std::string& c) {
  if (c.rfind("seed", 0) == 0) return {fp("cutlass.multiply", is_op("relax.multiply")({wildcard(), wildcard()}))};
  return {fp("dnnl.conv2d_bias_relu", make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu")),
          fp("dnnl.add", is_op("relax.add")({wildcard(), wildcard()}))};
}

class InlineRoundTrip : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

// Partition (path 1 or path 2), inline everything back: structurally equal to before.py.
TEST_P(InlineRoundTrip, UndoesPartitioningAndCompositing) {
  auto [name, merge] = GetParam();
  IRModule before = parse_file(cases_dir() / name / "before.py");
  IRModule parted = fuse_ops_by_pattern(patterns_for(name), before, true, !merge);
  if (merge) parted = merge_composite_functions(parted);
  ASSERT_FALSE(structural_equal(parted, before));
  IRModule back = InlineCompilerFunctions()(parted);
  EXPECT_TRUE(well_formed(back));
  EXPECT_EQ(structural_diff(back, before), std::nullopt) << script::print_module(back);
}

INSTANTIATE_TEST_SUITE_P(Cases, InlineRoundTrip,
                         ::testing::Combine(::testing::Values("seed-path1", "cnn-path1"), ::testing::Bool()));

const char* kTwoCalls = R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((4, 4), dtype="float32") = R.multiply(x, y)
            lv1: R.Tensor((4, 4), dtype="float32") = R.add(lv, y)
            gv: R.Tensor((4, 4), dtype="float32") = R.multiply(lv1, x)
            R.output(gv)
        return gv
)";

std::vector<FusionPattern> mul_add() {
  return {fp("cutlass.multiply", is_op("relax.multiply")({wildcard(), wildcard()})),
          fp("dnnl.add", is_op("relax.add")({wildcard(), wildcard()}))};
}

TEST(InlineCompilerFunctions, SelectsByBackendAndName) {
  IRModule before = script::parse_module(kTwoCalls);
  IRModule parted = fuse_ops_by_pattern(mul_add(), before, true, true);
  size_t codegen_fns = 0;
  for (const auto& [gv, f] : parted.functions())
    if (f.as<FunctionNode>()->attrs.count("Codegen")) ++codegen_fns;
  ASSERT_EQ(codegen_fns, 2u);  // the two multiply partitions share one definition
  // Only dnnl inlined: the cutlass functions stay.
  IRModule only_dnnl = inline_compiler_functions(parted, {{"dnnl"}, {}});
  int cutlass = 0, dnnl = 0;
  for (const auto& [gv, f] : only_dnnl.functions()) {
    auto cg = f.as<FunctionNode>()->attr_string("Codegen");
    cutlass += cg == "cutlass";
    dnnl += cg == "dnnl";
  }
  EXPECT_EQ(cutlass, 1);
  EXPECT_EQ(dnnl, 0);
  EXPECT_TRUE(well_formed(only_dnnl));
  // Then the rest, by function names: back to the original.
  std::vector<std::string> names;
  for (const auto& [gv, f] : only_dnnl.functions())
    if (f.as<FunctionNode>()->attrs.count("Codegen")) names.push_back(gv->name_hint);
  IRModule back = inline_compiler_functions(only_dnnl, {{}, names});
  EXPECT_EQ(structural_diff(back, before), std::nullopt) << script::print_module(back);
}

TEST(OutlineCompilerFunctions, SharesStructurallyEqualPartitions) {
  IRModule parted = fuse_ops_by_pattern(mul_add(), script::parse_module(kTwoCalls), true, true);
  // The BlockBuilder shares equal partitions; make a second, equal copy called from main (as
  // partitioning without de-duplication would) and check Outline folds it back.
  std::vector<std::pair<GlobalVar, Expr>> cutlass;
  for (const auto& [gv, f] : parted.functions())
    if (f.as<FunctionNode>()->attr_string("Codegen") == "cutlass") cutlass.emplace_back(gv, f);
  ASSERT_EQ(cutlass.size(), 1u);
  std::string dup = cutlass[0].first->name_hint + "_copy";
  auto orig = cutlass[0].second.as_ref<FunctionNode>();
  DictAttrs attrs = orig->attrs;
  attrs["global_symbol"] = dup;
  auto copy = make<FunctionNode>(orig->params, orig->body, orig->ret_struct_info, orig->is_pure, attrs);
  copy->struct_info_ = orig->struct_info_;
  auto dup_gv = make<GlobalVarNode>(dup);
  dup_gv->struct_info_ = cutlass[0].first->struct_info_;
  parted.add(dup_gv, copy);
  {
    // Redirect the last call of the original to the copy.
    auto main = parted.lookup("main").as_ref<FunctionNode>();
    auto* seq = main->body.as<SeqExprNode>();
    std::vector<Binding> bs = seq->blocks[0]->bindings;
    for (auto it = bs.rbegin(); it != bs.rend(); ++it) {
      auto* call = (*it).as<VarBindingNode>()->value.as<CallNode>();
      if (call && call->op == Expr(cutlass[0].first)) {
        auto c = make<CallNode>(dup_gv, call->args, call->attrs, call->sinfo_args);
        c->struct_info_ = call->struct_info_;
        *it = make<VarBindingNode>((*it)->var, c);
        break;
      }
    }
    auto body = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(bs, true)}, seq->body);
    body->struct_info_ = seq->struct_info_;
    auto nm = make<FunctionNode>(main->params, body, main->ret_struct_info, main->is_pure, main->attrs);
    nm->struct_info_ = main->struct_info_;
    parted.update(parted.get_global_var("main"), nm);
  }
  ASSERT_TRUE(well_formed(parted));
  IRModule out = outline_compiler_functions(parted);
  EXPECT_FALSE(out.contains(dup));
  int remaining = 0;
  for (const auto& [gv, f] : out.functions()) {
    auto* fn = f.as<FunctionNode>();
    if (fn->attr_string("Codegen") == "cutlass") {
      ++remaining;
      EXPECT_EQ(fn->attr_string("global_symbol"), gv->name_hint);
    }
  }
  EXPECT_EQ(remaining, 1);
  EXPECT_TRUE(well_formed(out));
  // Both call sites now go through the one definition.
  std::string text = script::print_module(out);
  std::string name = cutlass[0].first->name_hint;
  size_t calls = 0;
  for (size_t pos = 0; (pos = text.find("cls." + name + "(", pos)) != std::string::npos; ++pos) ++calls;
  EXPECT_EQ(calls, 2u) << text;
}

TEST(OutlineCompilerFunctions, LiftsLocalCodegenFunctions) {
  IRModule parted = fuse_ops_by_pattern(mul_add(), script::parse_module(kTwoCalls), true, true);
  // Inline one codegen function's definition into main as a local binding.
  auto main = parted.lookup("main").as_ref<FunctionNode>();
  std::string callee;
  for (const auto& g : all_global_vars(main))
    if (parted.lookup(g->name_hint).as<FunctionNode>()->attr_string("Codegen") == "dnnl") callee = g->name_hint;
  ASSERT_FALSE(callee.empty());
  Function local = without_attrs(parted.lookup(callee).as_ref<FunctionNode>(), {"global_symbol"});
  auto* seq = main->body.as<SeqExprNode>();
  Var fvar = make<VarNode>("local_cg", local->struct_info_ ? local->struct_info_ : func_struct_info_of(*local));
  std::vector<Binding> bindings{make<VarBindingNode>(fvar, local)};
  for (const auto& b : seq->blocks[0]->bindings) {
    auto* vb = b.as<VarBindingNode>();
    auto* call = vb->value.as<CallNode>();
    if (call && call->op.as<GlobalVarNode>() && call->op.as<GlobalVarNode>()->name_hint == callee) {
      auto c = make<CallNode>(fvar, call->args, call->attrs, call->sinfo_args);
      c->struct_info_ = call->struct_info_;
      bindings.push_back(make<VarBindingNode>(vb->var, c));
    } else {
      bindings.push_back(b);
    }
  }
  std::vector<BindingBlock> blocks{make<BindingBlockNode>(std::vector<Binding>{bindings[0]}, false),
                                   make<BindingBlockNode>(std::vector<Binding>(bindings.begin() + 1, bindings.end()), true)};
  auto body = make<SeqExprNode>(blocks, seq->body);
  body->struct_info_ = seq->struct_info_;
  IRModule with_local = parted;
  with_local.remove(callee);
  auto new_main = make<FunctionNode>(main->params, body, main->ret_struct_info, main->is_pure, main->attrs);
  new_main->struct_info_ = main->struct_info_;
  with_local.update(parted.get_global_var("main"), new_main);
  IRModule out = outline_compiler_functions(with_local, nullptr, "dnnl");
  int dnnl = 0;
  for (const auto& [gv, f] : out.functions()) dnnl += f.as<FunctionNode>()->attr_string("Codegen") == "dnnl";
  EXPECT_EQ(dnnl, 1);
  EXPECT_TRUE(well_formed(out)) << script::print_module(out);
}

TEST(MarkCompilerFunctionsAsExtern, AddsExternAttribute) {
  IRModule parted = fuse_ops_by_pattern(mul_add(), script::parse_module(kTwoCalls), true, true);
  IRModule out = MarkCompilerFunctionsAsExtern("dnnl")(parted);
  for (const auto& [gv, f] : out.functions()) {
    auto* fn = f.as<FunctionNode>();
    bool dnnl = fn->attr_string("Codegen") == "dnnl";
    auto it = fn->attrs.find("Extern");
    EXPECT_EQ(it != fn->attrs.end(), dnnl) << gv->name_hint;
    if (dnnl) {
      EXPECT_EQ(std::get<int64_t>(it->second), 1);
    }
  }
  IRModule all = MarkCompilerFunctionsAsExtern()(parted);
  int marked = 0;
  for (const auto& [gv, f] : all.functions()) marked += f.as<FunctionNode>()->attrs.count("Extern");
  EXPECT_EQ(marked, 2);
}

}  // namespace
}  // namespace partita::transform
