// Specific printing cases and parse errors (line, column and message).
#include <gtest/gtest.h>

#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"

namespace partita::script {
namespace {

StructInfo t2() { return tensor_sinfo(std::vector<int64_t>{2, 3}, DataType::Float(32)); }

TEST(Printer, StructInfoForms) {
  EXPECT_EQ(print_expr(tensor_sinfo(std::vector<int64_t>{256}, DataType::Float(32))), "R.Tensor((256,), dtype=\"float32\")");
  EXPECT_EQ(print_expr(tensor_sinfo(std::vector<int64_t>{}, DataType::Int(64))), "R.Tensor((), dtype=\"int64\")");
  EXPECT_EQ(print_expr(tensor_sinfo_ndim(DataType::Float(16), 2)), "R.Tensor(dtype=\"float16\", ndim=2)");
  EXPECT_EQ(print_expr(tensor_sinfo_ndim(DataType::Void(), -1)), "R.Tensor");
  EXPECT_EQ(print_expr(tuple_sinfo({})), "R.Tuple");
  // TVM v0.26's spellings (docs/tvm-oracle.md).
  EXPECT_EQ(print_expr(object_sinfo()), "R.Any");
  EXPECT_EQ(print_expr(prim_sinfo(DataType::Int(64))), "T.int64");
  EXPECT_EQ(print_expr(make<ShapeStructInfoNode>(2)), "R.Shape(ndim=2)");
  PrimVar n = make<PrimVarNode>("n");
  EXPECT_EQ(print_expr(shape_sinfo({n, int_imm(4)})), "R.Shape([n, 4])");
  EXPECT_EQ(print_expr(make<FuncStructInfoNode>(std::nullopt, object_sinfo(), true)), "R.Callable(purity=True)");
  EXPECT_EQ(print_expr(make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false)), "R.Callable");
  EXPECT_EQ(print_expr(make<FuncStructInfoNode>(std::vector<StructInfo>{object_sinfo()}, object_sinfo(), true)),
            "R.Callable((R.Any,), R.Any, True)");
}

TEST(Printer, FloatsAndConstants) {
  auto scalar = [](float v) {
    Tensor t = Tensor::empty({}, DataType::Float(32));
    *t.data_as<float>() = v;
    return print_expr(make<ConstantNode>(t));
  };
  EXPECT_EQ(scalar(1.0f), "R.const(1.0, \"float32\")");
  EXPECT_EQ(scalar(0.5f), "R.const(0.5, \"float32\")");
  EXPECT_EQ(scalar(0.1f), "R.const(0.10000000149011612, \"float32\")");
  Call c = op::make_call("relax.nn.layer_norm",
                         {make<VarNode>("x", t2()), make<VarNode>("g", t2()), make<VarNode>("b", t2())},
                         {{"axes", std::vector<int64_t>{-1}}, {"epsilon", 1e-5}});
  std::string s = print_expr(c);
  EXPECT_NE(s.find("epsilon=1.0000000000000001e-05"), std::string::npos) << s;
}

IRModule one_function(const std::vector<Binding>& bindings, bool dataflow, Expr ret, StructInfo ret_sinfo,
                      std::vector<Var> params, DictAttrs attrs = {{"global_symbol", std::string("main")}}) {
  auto seq = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(bindings, dataflow)}, ret);
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("main"), make<FunctionNode>(params, seq, ret_sinfo, true, attrs));
  return mod;
}

TEST(Printer, MetadataRoundTrip) {
  Var x = make<VarNode>("x", t2());
  float vals[6] = {1, 2, 3, 4, 5, 6.5};
  Expr c = make<ConstantNode>(Tensor::from_bytes({2, 3}, DataType::Float(32), vals, sizeof(vals)));
  c->struct_info_ = t2();
  Call add = op::make_call("relax.add", {x, c});
  add->struct_info_ = op::infer_struct_info(*add);
  Var gv = make<VarNode>("gv", t2());
  IRModule mod = one_function({make<VarBindingNode>(gv, add)}, false, gv, t2(), {x},
                              {{"Primitive", int64_t(1)}});
  std::string text = print_module(mod);
  EXPECT_NE(text.find("R.add(x, metadata[\"relax.expr.Constant\"][0])"), std::string::npos) << text;
  EXPECT_NE(text.find("@R.function(private=True)"), std::string::npos) << text;
  EXPECT_NE(text.find("R.func_attr({\"Primitive\": 1})"), std::string::npos) << text;
  IRModule back = parse_module(text);
  EXPECT_EQ(print_module(back), text);
  const auto* f = back->functions.at("main").second.as<FunctionNode>();
  const auto* seq = f->body.as<SeqExprNode>();
  const auto* call = binding_value(*seq->blocks[0]->bindings[0]).as<CallNode>();
  const auto* k = call->args[1].as<ConstantNode>();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->data.data_as<float>()[5], 6.5f);
}

TEST(Printer, SymbolicDimsAndNaming) {
  const char* text = R"(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        R.func_attr({"Codegen": "dnnl", "flag": True})
        lv: R.Tensor((n, 4), dtype="float32") = R.add(x, y)
        lv_1: R.Tensor((n, 4), dtype="float32") = R.match_cast(lv, R.Tensor((n, 4), dtype="float32"))
        t: R.Tuple(R.Tensor((n, 4), dtype="float32"), R.Tensor((n, 4), dtype="float32")) = lv, lv_1
        s: R.Shape([n, 4]) = R.shape([n, 4])
        return (t, s)
)";
  IRModule mod = parse_module(text);
  std::string printed = print_module(mod);
  EXPECT_EQ(printed + "\n", text);
}

TEST(Printer, IfElseBranches) {
  const char* text = R"(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(c: T.bool, x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        if c:
            y_1: R.Tensor((2, 3), dtype="float32") = R.add(x, x)
            y: R.Tensor((2, 3), dtype="float32") = y_1
        else:
            y_1: R.Tensor((2, 3), dtype="float32") = R.multiply(x, x)
            y: R.Tensor((2, 3), dtype="float32") = y_1
        return y
)";
  IRModule mod = parse_module(text);
  EXPECT_EQ(print_module(mod) + "\n", text);
}

void expect_parse_error(const std::string& text, int line, int column, const std::string& fragment) {
  try {
    parse_module(text, "test.py");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ParseError");
    EXPECT_EQ(e.location().file, "test.py");
    EXPECT_EQ(e.location().line, line) << e.what();
    EXPECT_EQ(e.location().column, column) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

const char* kHead = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((2, 3), dtype=\"float32\")):\n";

TEST(ParseErrors, LineColumnAndMessage) {
  std::string h = kHead;
  expect_parse_error(h + "        y = R.foo(x)\n        return y\n", 5, 13, "unknown operator 'R.foo'");
  expect_parse_error(h + "        y = R.add(x, z)\n        return y\n", 5, 22, "undefined variable 'z'");
  expect_parse_error(h + "        y = R.add(x, x\n        return y\n", 5, 18, "never closed");
  expect_parse_error(h + "        y = R.add(x, x)\n      return y\n", 6, 7, "unindent");
  expect_parse_error(h + "        y: R.Tensor((2, 3), dtype=\"float33\") = R.add(x, x)\n        return y\n", 5, 35,
                     "unknown dtype");
  expect_parse_error(h + "        y = R.add(x, x))\n        return y\n", 5, 24, "unmatched ')'");
  expect_parse_error(h + "        y = R.add(x, x)\n", 5, 9, "no return");
  expect_parse_error("@I.ir_module\nclass Module\n", 2, 13, "expected ':', found end of line");
  expect_parse_error(h + "        y = R.add(x, metadata[\"relax.expr.Constant\"][0])\n        return y\n", 5, 54,
                     "out of range");
  expect_parse_error(h + "        y = R.nn.conv2d(x, x, stride=[1, 1])\n        return y\n", 5, 31,
                     "unknown keyword argument 'stride'");
}

// The return annotation can only use symbolic variables a parameter defines: a new one there
// would give an ill-formed function (found by the mutation fuzz test).
TEST(ParseErrors, ReturnAnnotationDefinesNoSymbolicVariable) {
  const std::string head =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((\"n\", 1), dtype=\"float32\"))";
  const std::string body = ":\n        return x\n";
  expect_parse_error(head + " -> R.Tensor((\"n\", m), dtype=\"float32\")" + body, 4, 72,
                     "symbolic variable 'm' in the return annotation is not defined by any parameter");
  expect_parse_error(head + " -> R.Tensor((\"m\", 1), dtype=\"float32\")" + body, 4, 67,
                     "symbolic variable 'm' in the return annotation");
  // Using the parameter's variable, bare or quoted, is fine.
  EXPECT_NO_THROW(parse_module(head + " -> R.Tensor((n, 1), dtype=\"float32\")" + body));
  EXPECT_NO_THROW(parse_module(head + " -> R.Tensor((\"n\", 1), dtype=\"float32\")" + body));
}

}  // namespace
}  // namespace partita::script
