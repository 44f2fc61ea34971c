// Small analyses: is_plain_function (the program's own functions against the groups passes
// make), call_of, and linear_in.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/script/parser.h"

namespace partita {
namespace {

const char* kModule = R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def composite(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "mine.relu", "Primitive": True})
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
            R.output(gv)
        return gv

    @R.function
    def offloaded(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Codegen": "mine"})
        y: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
        return y

    @R.function(private=True)
    def primitive(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Primitive": True})
        y: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
        return y

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"num_input": 1})
        y: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
        z: R.Tensor((4,), dtype="float32") = R.add(y, x)
        return z
)";

const FunctionNode& fn(const IRModule& mod, const std::string& name) {
  return *mod.lookup(name).as<FunctionNode>();
}

TEST(FunctionKinds, OnlyFunctionsWithoutGroupAttributesArePlain) {
  IRModule mod = script::parse_module(kModule);
  EXPECT_TRUE(is_plain_function(fn(mod, "main")));  // other attributes do not count
  EXPECT_FALSE(is_plain_function(fn(mod, "composite")));
  EXPECT_FALSE(is_plain_function(fn(mod, "offloaded")));
  EXPECT_FALSE(is_plain_function(fn(mod, "primitive")));
}

TEST(FunctionKinds, CallOfNamesTheOperator) {
  IRModule mod = script::parse_module(kModule);
  const auto& bindings = fn(mod, "main").body.as<SeqExprNode>()->blocks[0]->bindings;
  const Expr& relu = bindings[0].as<VarBindingNode>()->value;
  EXPECT_EQ(call_of(relu, "relax.nn.relu"), relu.as<CallNode>());
  EXPECT_EQ(call_of(relu, "relax.add"), nullptr);
  EXPECT_NE(call_of(bindings[1].as<VarBindingNode>()->value, "relax.add"), nullptr);
  EXPECT_EQ(call_of(fn(mod, "main").params[0], "relax.nn.relu"), nullptr);  // not a call
  EXPECT_EQ(call_of(Expr(), "relax.nn.relu"), nullptr);
}

TEST(LinearIn, SolvesFlattenedDimensionsOnly) {
  PrimVar n = make<PrimVarNode>("n"), m = make<PrimVarNode>("m");
  using AB = std::optional<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(linear_in(n, n.get()), (AB{{1, 0}}));
  EXPECT_EQ(linear_in(n * int_imm(8), n.get()), (AB{{8, 0}}));
  EXPECT_EQ(linear_in(n * int_imm(8) + int_imm(3), n.get()), (AB{{8, 3}}));
  EXPECT_EQ(linear_in(floordiv(n * int_imm(4), int_imm(2)), n.get()), (AB{{2, 0}}));
  EXPECT_EQ(linear_in(n * n, n.get()), std::nullopt);              // not linear
  EXPECT_EQ(linear_in(floordiv(n, int_imm(2)), n.get()), std::nullopt);
  EXPECT_EQ(linear_in(min(n, int_imm(4)), n.get()), std::nullopt);  // linear only below 4
  EXPECT_EQ(linear_in(int_imm(5), n.get()), std::nullopt);          // no dependence on n
  EXPECT_EQ(linear_in(n + m, n.get()), std::nullopt);               // another variable
}

}  // namespace
}  // namespace partita
