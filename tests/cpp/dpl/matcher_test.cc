// Unit tests of the dataflow pattern language and matcher, one or more per pattern kind.
#include <gtest/gtest.h>

#include "partita/dpl/matcher.h"
#include "partita/ir/functor.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/support/error.h"

namespace partita::dpl {
namespace {

const char* kModule = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32"), b: R.Tensor((4,), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            m: R.Tensor((4, 4), dtype="float32") = R.matmul(x, w, out_dtype=None)
            a: R.Tensor((4, 4), dtype="float32") = R.add(m, b)
            r: R.Tensor((4, 4), dtype="float32") = R.nn.relu(a)
            s: R.Tensor((4, 4), dtype="float32") = R.add(b, r)
            t: R.Tuple(R.Tensor((4, 4), dtype="float32"), R.Tensor((4, 4), dtype="float32")) = (r, s)
            g: R.Tensor((4, 4), dtype="float32") = t[1]
            p: R.Tensor((4, 4), dtype="float32") = R.multiply(g, x)
            R.output(p)
        return p
)";

struct Fixture : ::testing::Test {
  void SetUp() override {
    IRModule mod = script::parse_module(kModule);
    func = mod.lookup("main").as_ref<FunctionNode>();
    bindings = collect_bindings(func);
    block = func->body.as<SeqExprNode>()->blocks[0];
    for (const auto& b : block->bindings) vars[b->var->name_hint] = b->var;
    x = func->params[0];
    w = func->params[1];
  }
  Expr value(const std::string& name) { return bindings.at(vars.at(name)); }
  bool m(const Pattern& p, const std::string& name) { return match_expr(p, value(name), &bindings); }

  Function func;
  VarBindings bindings;
  BindingBlock block;
  std::map<std::string, Var> vars;
  Var x, w;
};

TEST_F(Fixture, WildcardAndOp) {
  EXPECT_TRUE(m(wildcard(), "m"));
  EXPECT_TRUE(m(is_op("relax.matmul")({wildcard(), wildcard()}), "m"));
  EXPECT_FALSE(m(is_op("relax.add")({wildcard(), wildcard()}), "m"));
  EXPECT_FALSE(m(is_op("relax.matmul")({wildcard()}), "m"));  // arity must agree
  EXPECT_TRUE(m(is_op("relax.matmul")({wildcard()}, /*varg_default_wildcard=*/true), "m"));
}

TEST_F(Fixture, FollowsBindingsAndReportsMatches) {
  Pattern mm = is_op("relax.matmul")({wildcard(), wildcard()});
  Pattern bias = wildcard();
  Pattern add = is_op("relax.add")({mm, bias});
  Pattern relu = is_op("relax.nn.relu")({add});
  auto res = extract_matched_expr(relu, value("r"), &bindings);
  ASSERT_TRUE(res);
  EXPECT_TRUE(res->at(relu) == value("r"));
  EXPECT_TRUE(res->at(add) == value("a"));
  EXPECT_TRUE(res->at(mm) == value("m"));
  EXPECT_TRUE(res->at(bias) == func->params[2]);
  // Without bindings the variable `a` is not a call.
  EXPECT_FALSE(match_expr(relu, value("r")));
}

TEST_F(Fixture, CommutativeAddAndFusedBiasActivation) {
  // s = add(b, r): the pattern add(relu(*), *) matches with the operands swapped.
  EXPECT_TRUE(m(is_op("relax.add")({is_op("relax.nn.relu")({wildcard()}), wildcard()}), "s"));
  EXPECT_TRUE(m(make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.relu"), "r"));
  EXPECT_TRUE(m(make_fused_bias_activation_pattern("relax.matmul", true), "a"));
  EXPECT_FALSE(m(make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu"), "r"));
  EXPECT_FALSE(m(make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.gelu"), "r"));
}

TEST_F(Fixture, BiasAndResidualEpilogues) {
  std::string name = "matmul";
  Pattern mm = is_op("relax.matmul")({wildcard(), wildcard()});
  EXPECT_TRUE(m(with_bias_and_residual(mm, true, false, name), "a"));
  EXPECT_EQ(name, "matmul_bias");
  name = "matmul";
  EXPECT_FALSE(m(with_bias_and_residual(mm, true, true, name), "a"));
  EXPECT_EQ(name, "matmul_bias_add");
  name = "relu";
  EXPECT_TRUE(m(with_bias_and_residual(is_op("relax.nn.relu")({wildcard()}), false, true, name), "s"));
  EXPECT_EQ(name, "relu_add");
  name = "matmul";
  EXPECT_TRUE(m(with_bias_and_residual(mm, false, false, name), "m"));
  EXPECT_EQ(name, "matmul");
}

TEST_F(Fixture, Memoization) {
  // One wildcard used twice must match the same expression both times.
  Pattern same = wildcard();
  EXPECT_FALSE(m(is_op("relax.matmul")({same, same}), "m"));  // x vs w
  EXPECT_TRUE(m(is_op("relax.multiply")({wildcard(), wildcard()}), "p"));
}

TEST_F(Fixture, VarConstExprGlobal) {
  EXPECT_TRUE(match_expr(is_var("x"), x));
  EXPECT_FALSE(match_expr(is_var("y"), x));
  EXPECT_TRUE(match_expr(is_var(), x));
  EXPECT_FALSE(match_expr(is_dfv(), x));
  EXPECT_TRUE(match_expr(is_dfv("m"), vars.at("m")));
  EXPECT_TRUE(match_expr(is_expr(x), x));
  EXPECT_FALSE(match_expr(is_expr(x), w));
  EXPECT_FALSE(match_expr(is_const(), x));
  Expr c = make<ConstantNode>(Tensor::empty({2}, DataType::Float(32)));
  EXPECT_TRUE(match_expr(is_const(), c));
  GlobalVar gv = make<GlobalVarNode>("fused_relax_add");
  EXPECT_TRUE(match_expr(is_gv("relax_add"), gv));
  EXPECT_FALSE(match_expr(is_gv("conv"), gv));
  EXPECT_TRUE(match_expr(is_extern(), make<ExternFuncNode>("f")));
}

TEST_F(Fixture, TuplesAndGetItem) {
  Pattern relu = is_op("relax.nn.relu")({wildcard()});
  Pattern add = is_op("relax.add")({wildcard(), wildcard()});
  EXPECT_TRUE(m(is_tuple({relu, add}), "t"));
  EXPECT_FALSE(m(is_tuple({add, relu}), "t"));
  EXPECT_TRUE(m(is_tuple({add, relu}, /*unordered=*/true), "t"));
  EXPECT_TRUE(m(is_tuple_get_item(is_tuple({wildcard(), wildcard()}), 1), "g"));
  EXPECT_FALSE(m(is_tuple_get_item(wildcard(), 0), "g"));
  EXPECT_TRUE(m(is_tuple_get_item(wildcard()), "g"));
  EXPECT_TRUE(m(is_op("relax.multiply")({is_tuple_get_item(wildcard(), 1), wildcard()}), "p"));
}

TEST_F(Fixture, LogicalCombinators) {
  Pattern relu = is_op("relax.nn.relu")({wildcard()});
  Pattern gelu = is_op("relax.nn.gelu")({wildcard()});
  EXPECT_TRUE(m(relu | gelu, "r"));
  EXPECT_TRUE(m(gelu | relu, "r"));
  EXPECT_FALSE(m(gelu | is_op("relax.matmul")({wildcard(), wildcard()}), "r"));
  EXPECT_TRUE(m(relu & has_dtype(DataType::Float(32)), "r"));
  EXPECT_FALSE(m(relu & gelu, "r"));
  EXPECT_TRUE(m(~gelu, "r"));
  EXPECT_FALSE(m(reject(relu), "r"));
  EXPECT_TRUE(m(is_op("relax.nn.relu")({~is_op("relax.matmul")({wildcard(), wildcard()})}), "r"));
}

TEST_F(Fixture, AttrDtypeShape) {
  EXPECT_TRUE(m(is_op("relax.matmul")({wildcard(), wildcard()}).has_attr({{"out_dtype", AttrValue{}}}), "m"));
  EXPECT_FALSE(m(is_op("relax.matmul")({wildcard(), wildcard()}).has_attr({{"nope", int64_t(1)}}), "m"));
  EXPECT_TRUE(m(wildcard().has_dtype("float32"), "m"));
  EXPECT_FALSE(m(wildcard().has_dtype("float16"), "m"));
  EXPECT_TRUE(m(wildcard().has_shape({int_imm(4), int_imm(4)}), "m"));
  EXPECT_FALSE(m(wildcard().has_shape({int_imm(4)}), "m"));
  EXPECT_TRUE(m(has_shape({int_imm(4), int_imm(4)}), "r"));
  EXPECT_TRUE(match_expr(is_shape({int_imm(2), int_imm(3)}), make<ShapeExprNode>(std::vector<PrimExpr>{int_imm(2), int_imm(3)})));
  EXPECT_FALSE(match_expr(is_shape({int_imm(2)}), make<ShapeExprNode>(std::vector<PrimExpr>{int_imm(3)})));
  EXPECT_TRUE(m(wildcard().has_struct_info(tensor_sinfo_ndim(DataType::Float(32), 2)), "m"));
  EXPECT_FALSE(m(wildcard().has_struct_info(tensor_sinfo_ndim(DataType::Float(32), 3)), "m"));
}

TEST_F(Fixture, SameShapeAsAndDup) {
  Pattern lhs = wildcard();
  Pattern rhs = wildcard().same_shape_as({lhs});
  EXPECT_TRUE(m(is_op("relax.matmul")({lhs, rhs}), "m"));  // x, w are both 4x4
  Pattern bias = wildcard();
  EXPECT_FALSE(m(is_op("relax.add")({wildcard(), bias.same_shape_as({lhs})}) | is_op("relax.add")({lhs, wildcard().same_shape_as({lhs})}), "a"));
  Pattern p = is_op("relax.nn.relu")({wildcard()});
  Pattern q = p.dup();
  EXPECT_FALSE(p == q);
  EXPECT_TRUE(m(q, "r"));
  EXPECT_EQ(p.str(), q.str());
  EXPECT_EQ(p.str(), "relax.nn.relu(*)");
}

TEST_F(Fixture, GraphMatchingUsedBy) {
  Pattern mm = is_op("relax.matmul")({wildcard(), wildcard()});
  Pattern add = is_op("relax.add")({wildcard(), wildcard()});
  Pattern relu = is_op("relax.nn.relu")({wildcard()});
  PatternContext ctx;
  ctx.add(PatternSeq({mm, add, relu}, /*only_used_by=*/true));
  auto res = match_graph(ctx, block);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->at(mm)->name_hint, "m");
  EXPECT_EQ(res->at(add)->name_hint, "a");
  EXPECT_EQ(res->at(relu)->name_hint, "r");
  // r is used twice (s and t), so r ^ s fails while r >> s holds.
  PatternContext only;
  Pattern add2 = is_op("relax.add")({wildcard(), wildcard()});
  only.add(only_used_by(relu, add2));
  EXPECT_FALSE(match_graph(only, block));
  PatternContext any;
  any.add(used_by(relu, add2, /*index=*/1));
  auto r2 = match_graph(any, block);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->at(add2)->name_hint, "s");
  PatternContext wrong_index;
  wrong_index.add(used_by(relu, is_op("relax.add")({wildcard(), wildcard()}), 0));
  EXPECT_FALSE(match_graph(wrong_index, block));
}

TEST_F(Fixture, RewriteCallAndBindings) {
  // relu(add(m, b)) -> gelu(add(m, b))
  Pattern inner = wildcard();
  Pattern relu = is_op("relax.nn.relu")({inner});
  Function out = rewrite_call(relu, [&](const Expr&, const MatchMap& mm) {
    return Expr(op::make_call("relax.nn.gelu", {mm.at(inner)}));
  }, func);
  auto ob = collect_bindings(out);
  int gelus = 0, relus = 0;
  for (const auto& [v, e] : ob)
    if (auto* c = e.as<CallNode>())
      if (auto* o = c->op.as<OpNode>()) {
        gelus += o->name == "relax.nn.gelu";
        relus += o->name == "relax.nn.relu";
      }
  EXPECT_EQ(gelus, 1);
  EXPECT_EQ(relus, 0);

  Pattern mul = is_op("relax.multiply")({wildcard(), wildcard()});
  PatternContext ctx;
  ctx.add(mul);
  Function out2 = rewrite_bindings(ctx, [&](const auto& matches, const VarBindings& b) {
    std::unordered_map<Var, Expr, RefHash, RefEq> r;
    Var v = matches.at(mul);
    auto* c = b.at(v).template as<CallNode>();
    r[v] = op::make_call("relax.add", {c->args[0], c->args[1]});
    return r;
  }, func);
  bool has_mul = false;
  for (const auto& [v, e] : collect_bindings(out2))
    if (auto* c = e.as<CallNode>())
      if (auto* o = c->op.as<OpNode>()) has_mul = has_mul || o->name == "relax.multiply";
  EXPECT_FALSE(has_mul);
}

TEST(DplErrors, UndefinedPatternsAreValueErrors) {
  EXPECT_THROW(is_tuple_get_item(Pattern()), Error);
  EXPECT_THROW(make_call(Pattern(), {}), Error);
  EXPECT_THROW(is_op("relax.no_such_op"), Error);
  EXPECT_THROW(is_tuple_get_item(wildcard(), -3), Error);
}

}  // namespace
}  // namespace partita::dpl
