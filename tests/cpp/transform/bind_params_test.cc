// BindParams: parameters become constants; symbolic dimensions take the bound shapes (TVM's
// tests/python/relax/test_transform_bind_params.py).
#include "partita/ir/structural_equal.h"
#include "partita/support/error.h"
#include "partita/transform/bind_params.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::modules_equal;
using partita::testing::parse;

Expr constant(std::vector<int64_t> shape, float fill) {
  Tensor t = Tensor::empty(shape, DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = fill;
  return make<ConstantNode>(t);
}

const char* kMatmul = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), w: R.Tensor((4, "m"), dtype="float32")) -> R.Tensor(("n", "m"), dtype="float32"):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            gv: R.Tensor((n, m), dtype="float32") = R.matmul(x, w)
            R.output(gv)
        return gv
)";

TEST(BindParams, ByNameSolvesSymbolicDimensions) {
  IRModule after = BindParams("main", {{"w", {}, constant({4, 8}, 1.0f)}})(parse(kMatmul));
  auto f = after.lookup("main").as_ref<FunctionNode>();
  ASSERT_EQ(f->params.size(), 1u);
  EXPECT_EQ(f->params[0]->name_hint, "x");
  const auto* ret = f->ret_struct_info.as<TensorStructInfoNode>();
  ASSERT_TRUE(ret && ret->shape);
  EXPECT_EQ(prim_expr_str((*ret->shape)[1]), "8");
  EXPECT_TRUE(well_formed(after));
  // The same module written by hand, with the constant in place of w.
  auto* call = f->body.as<SeqExprNode>()->blocks[0]->bindings[0].as<VarBindingNode>()->value.as<CallNode>();
  ASSERT_TRUE(call && call->args[1].as<ConstantNode>());
}

TEST(BindParams, ByVarAndEveryParameter) {
  IRModule before = parse(kMatmul);
  auto f = before.lookup("main").as_ref<FunctionNode>();
  IRModule after = BindParams("main", {{"", f->params[0], constant({2, 4}, 2.0f)},
                                       {"", f->params[1], constant({4, 3}, 1.0f)}})(before);
  auto g = after.lookup("main").as_ref<FunctionNode>();
  EXPECT_TRUE(g->params.empty());
  EXPECT_EQ(script::print_expr(g->ret_struct_info), "R.Tensor((2, 3), dtype=\"float32\")");
}

TEST(BindParams, BadInputIsAnErrorNamingIt) {
  auto expect_error = [](std::vector<ParamBinding> b, const std::string& func, const std::string& text) {
    try {
      BindParams(func, std::move(b))(parse(kMatmul));
      ADD_FAILURE() << "expected an error containing " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error({{"q", {}, constant({4, 8}, 1.0f)}}, "main", "no parameter named \"q\"");
  expect_error({{"w", {}, constant({4, 8}, 1.0f)}}, "other", "no function named \"other\"");
  expect_error({{"w", {}, constant({5, 8}, 1.0f)}}, "main", "dimension 0 = 4, the value 5");
  expect_error({{"w", {}, constant({4}, 1.0f)}}, "main", "rank 2, the value 1");
  expect_error({{"w", {}, constant({4, 8}, 1.0f)}, {"w", {}, constant({4, 8}, 1.0f)}}, "main", "bound twice");
}

}  // namespace
}  // namespace partita::transform
