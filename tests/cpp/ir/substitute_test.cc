// The shared utilities of the IR: substitution (Substitutor, substitute_vars, copy_with_new_vars),
// the name supply and the PrimExpr printer.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/name_supply.h"
#include "partita/ir/structural_equal.h"
#include "partita/ir/substitute.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

namespace partita {
namespace {

const char* kModule = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.add(x, y)
            t: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (a, x)
            b: R.Tensor((4,), dtype="float32") = t[0]
            c: R.Tensor((4,), dtype="float32") = R.multiply(b, R.const(2, "float32"))
            R.output(c)
        return c
)";

Function main_of(const IRModule& mod) { return mod.lookup("main").as_ref<FunctionNode>(); }

// The value bound to `name` in `f`.
Expr bound(const Function& f, const std::string& name) {
  for (const auto& blk : f->body.as<SeqExprNode>()->blocks)
    for (const auto& b : blk->bindings)
      if (b->var->name_hint == name) return binding_value(*b);
  return Expr();
}

TEST(Substitute, ReplacesUsesAndKeepsWhatDoesNotChange) {
  Function f = main_of(script::parse_module(kModule));
  Var x = f->params[0], y = f->params[1];
  Var z = make<VarNode>("z", y->struct_info_);
  Expr add = bound(f, "a");
  Expr out = substitute_vars(add, {{y, z}});
  ASSERT_FALSE(out.get() == add.get());
  EXPECT_EQ(script::print_expr(out), "R.add(x, z)");
  // The operands' struct info did not change, so neither did the call's (kept, not derived again).
  EXPECT_EQ(out->struct_info_.get(), add->struct_info_.get());
  // Nothing of `remap` in it: the same node.
  Expr tuple = bound(f, "t");
  EXPECT_EQ(substitute_vars(tuple, {{y, z}}).get(), tuple.get());
  // A replacement of another struct info: the call's is derived from it.
  Var w = make<VarNode>("w", tensor_sinfo(std::vector<int64_t>{1}, DataType::Float(32)));
  Expr broadcast = substitute_vars(add, {{x, w}});
  EXPECT_TRUE(structural_equal(broadcast->struct_info_,
                               tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32))));
}

TEST(Substitute, ReplacesAnyNodeByIdentity) {
  Function f = main_of(script::parse_module(kModule));
  Expr mul = bound(f, "c");
  Expr constant = mul.as<CallNode>()->args[1];
  Var p = make<VarNode>("p", constant->struct_info_);
  PtrMap<Expr> remap;
  remap.emplace(constant.get(), p);
  EXPECT_EQ(script::print_expr(Substitutor(std::move(remap))(mul)), "R.multiply(b, p)");
  // Another constant of the same value is another node: left alone.
  Expr other = make<ConstantNode>(constant.as<ConstantNode>()->data);
  PtrMap<Expr> by_other;
  by_other.emplace(other.get(), p);
  EXPECT_EQ(Substitutor(std::move(by_other))(mul).get(), mul.get());
}

TEST(Substitute, DefinitionsOfMappedVariablesAreRenamed) {
  Function f = main_of(script::parse_module(kModule));
  Function copy = copy_with_new_vars(f);
  EXPECT_TRUE(structural_equal(copy, f));
  EXPECT_EQ(script::print_expr(copy), script::print_expr(f));
  // No variable of the copy is one of the original's.
  std::set<const Object*> original;
  for (const auto& v : all_vars(f)) original.insert(v.get());
  for (const auto& v : all_vars(copy)) EXPECT_FALSE(original.count(v.get())) << v->name_hint;
  EXPECT_FALSE(copy.get() == f.get());
  // A function with nothing to rename is still copied.
  Function empty = make<FunctionNode>(std::vector<Var>{}, make<TupleNode>(std::vector<Expr>{}),
                                      tuple_sinfo({}), true, DictAttrs{});
  EXPECT_FALSE(copy_with_new_vars(empty).get() == empty.get());
}

TEST(NameSupply, FollowsTvm) {
  NameSupply names;
  EXPECT_EQ(names.fresh("lv"), "lv");
  EXPECT_EQ(names.fresh("lv"), "lv1");
  EXPECT_EQ(names.fresh("lv2"), "lv2");
  EXPECT_EQ(names.fresh("lv"), "lv3");  // lv2 is taken
  EXPECT_EQ(names.fresh("relax.add"), "relax_add");
  EXPECT_EQ(names.fresh("relax_add"), "relax_add1");
}

TEST(PrimExprPrinter, InfixWithTheParenthesesPrecedenceNeeds) {
  PrimExpr n = make<PrimVarNode>("n", DataType::Int(64)),
           m = make<PrimVarNode>("m", DataType::Int(64));
  auto bin = [](PrimOp op, PrimExpr a, PrimExpr b) {
    return PrimExpr(make<PrimBinaryNode>(op, a, b));
  };
  PrimExpr e = bin(PrimOp::Mul, bin(PrimOp::Add, n, int_imm(1)),
                   bin(PrimOp::Sub, m, bin(PrimOp::Sub, n, int_imm(2))));
  EXPECT_EQ(prim_expr_str(e), "(n + 1) * (m - (n - 2))");
  EXPECT_EQ(prim_expr_str(bin(PrimOp::Sub, bin(PrimOp::Sub, n, m), int_imm(2))), "n - m - 2");
  EXPECT_EQ(prim_expr_str(bin(PrimOp::FloorDiv, bin(PrimOp::Min, n, m), int_imm(2))),
            "T.min(n, m) // 2");
  EXPECT_EQ(prim_expr_str(PrimExpr()), "null");
  // A hook spells what it knows and leaves the rest.
  std::string out;
  print_prim_expr(bin(PrimOp::Add, n, m), out, [](const PrimExpr& x, std::string& o) {
    auto* v = x.as<PrimVarNode>();
    if (!v || v->name != "n") return false;
    o += "N";
    return true;
  });
  EXPECT_EQ(out, "N + m");
}

}  // namespace
}  // namespace partita
