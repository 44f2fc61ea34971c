// The parser gives expressions the struct info BlockBuilder's normalizer gives them. A call of a
// module function with a symbolic signature takes the callee's return specialized to the
// arguments (before, the parser took the callee's declared return, with the callee's symbolic
// variables, which are undefined in the caller).
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/structural_equal.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"

namespace partita::script {
namespace {

const char* kCallee = R"(
    @R.function
    def double(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        y: R.Tensor((n,), dtype="float32") = R.add(x, x)
        return y
)";

const char* kCaller = R"(
    @R.function
    def main(a: R.Tensor((4,), dtype="float32"), b: R.Tensor(("m",), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        m = T.int64()
        cls = Module
        c = cls.double(a)
        d = cls.double(b)
        e = (c, d)
        f = e[1]
        return c
)";

// The value bound to `name` in main.
Expr bound(const IRModule& mod, const std::string& name) {
  for (const auto& blk : mod.lookup("main").as<FunctionNode>()->body.as<SeqExprNode>()->blocks)
    for (const auto& b : blk->bindings)
      if (b->var->name_hint == name) return binding_value(*b);
  return Expr();
}

TEST(ParserStructInfo, CallsOfModuleFunctionsAreSpecialized) {
  // The callee before the caller, and after it (a call parsed before its callee).
  for (bool callee_first : {true, false}) {
    std::string text = std::string("@I.ir_module\nclass Module:") +
                       (callee_first ? kCallee : kCaller) + (callee_first ? kCaller : kCallee);
    IRModule mod = parse_module(text);
    EXPECT_TRUE(well_formed(mod)) << text;
    auto* main = mod.lookup("main").as<FunctionNode>();
    auto* m =
        main->params[1]->struct_info_.as<TensorStructInfoNode>()->shape->at(0).as<PrimVarNode>();
    ASSERT_TRUE(m);
    StructInfo four = tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32));
    StructInfo of_m = tensor_sinfo(std::vector<PrimExpr>{PrimExpr(m)}, DataType::Float(32));
    EXPECT_TRUE(structural_equal(bound(mod, "c")->struct_info_, four))
        << print_expr(bound(mod, "c")->struct_info_);
    EXPECT_TRUE(structural_equal(bound(mod, "d")->struct_info_, of_m, false))
        << print_expr(bound(mod, "d")->struct_info_);
    // A call parsed before its callee gets its struct info once the callee is parsed; what was
    // made of it meanwhile (the tuple e, unannotated variables) keeps the placeholder R.Object.
    if (callee_first) {
      EXPECT_TRUE(structural_equal(bound(mod, "f")->struct_info_, of_m, false));
    }
    // Exactly what the normalizer gives the same expressions.
    BlockBuilder bb(mod);
    for (const char* name : {"c", "d", "e", "f"}) {
      if (!callee_first && (name[0] == 'e' || name[0] == 'f')) continue;
      Expr value = bound(mod, name), fresh;
      if (auto* c = value.as<CallNode>())
        fresh = make<CallNode>(c->op, c->args, c->attrs, c->sinfo_args);
      if (auto* t = value.as<TupleNode>()) fresh = make<TupleNode>(t->fields);
      if (auto* g = value.as<TupleGetItemNode>())
        fresh = make<TupleGetItemNode>(g->tuple, g->index);
      EXPECT_TRUE(structural_equal(bb.normalize(fresh)->struct_info_, value->struct_info_, false))
          << name;
    }
  }
}

TEST(ParserStructInfo, ErrorsOfTheNormalizerAreParseErrors) {
  std::string text = std::string("@I.ir_module\nclass Module:") + kCallee + R"(
    @R.function
    def main(a: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        c = cls.double(a, a)
        return c
)";
  try {
    parse_module(text);
    FAIL() << "a call with the wrong number of arguments was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ParseError");
    EXPECT_NE(std::string(e.what()).find("argument"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace partita::script
