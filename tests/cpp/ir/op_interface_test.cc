// The IR's operator interface (ir/op_interface.h) on its own: an operator known only through an
// interface entry — no op registry definition — is normalized by BlockBuilder, checked by
// well_formed and judged by the purity analysis, which is all the IR needs of operators.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/op_interface.h"
#include "partita/support/error.h"

namespace partita {
namespace {

StructInfo t4() { return tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32)); }

// "test.ir.halve": one or two arguments, the first one's struct info; impure.
Op halve_op() {
  static Op op = [] {
    OpInterface iface;
    iface.infer_struct_info = [](const CallNode& call) { return call.args[0]->struct_info_; };
    iface.min_args = 1;
    iface.max_args = 2;
    iface.pure = false;
    register_op_interface("test.ir.halve", std::move(iface));
    return make<OpNode>("test.ir.halve");
  }();
  return op;
}

TEST(OpInterface, NormalizerInfersThroughTheInterface) {
  Var x = make<VarNode>("x", t4());
  Expr call = BlockBuilder().normalize(make<CallNode>(halve_op(), std::vector<Expr>{x}));
  ASSERT_TRUE(call->struct_info_);
  EXPECT_TRUE(call->struct_info_ == x->struct_info_);
  // An operator without an interface cannot be normalized.
  Expr unknown = make<CallNode>(make<OpNode>("test.ir.nobody"), std::vector<Expr>{x});
  try {
    BlockBuilder().normalize(unknown);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("unknown operator 'test.ir.nobody'"), std::string::npos)
        << e.message();
  }
}

TEST(OpInterface, WellFormedChecksArityAndPurityIsRead) {
  Var x = make<VarNode>("x", t4());
  auto check = [&](std::vector<Expr> args) {
    BlockBuilder bb;
    bb.begin_function("main", {x}, {}, /*is_pure=*/false);
    Var y = bb.emit(make<CallNode>(halve_op(), std::move(args)));
    bb.emit_func_output(y);
    return well_formed_errors(bb.get());
  };
  EXPECT_TRUE(check({x}).empty());
  EXPECT_TRUE(check({x, x}).empty());
  std::vector<std::string> errors = check({x, x, x});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("'test.ir.halve' has 3 argument(s)"), std::string::npos) << errors[0];

  EXPECT_TRUE(is_impure_op("test.ir.halve"));
  EXPECT_TRUE(contains_impure_call(make<CallNode>(halve_op(), std::vector<Expr>{x})));
}

TEST(OpInterface, NamesAreRegisteredOnce) {
  halve_op();
  EXPECT_THROW(register_op_interface("test.ir.halve", OpInterface{}), Error);
  EXPECT_EQ(find_op_interface("test.ir.never_registered"), nullptr);
}

}  // namespace
}  // namespace partita
