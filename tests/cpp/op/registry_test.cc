#include "test_helpers.h"

namespace partita::op::testing {

TEST(OpRegistry, AllRequiredOpsAreRegistered) {
  const char* names[] = {
      "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum", "equal", "not_equal",
      "less", "less_equal", "greater", "greater_equal", "where", "negative", "abs", "exp", "log", "sqrt", "rsqrt",
      "tanh", "sigmoid", "erf", "clip", "astype", "matmul", "permute_dims", "reshape", "flatten", "squeeze",
      "expand_dims", "concat", "split", "strided_slice", "take", "broadcast_to", "mean", "sum", "max", "min",
      "variance", "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu", "nn.softmax", "nn.log_softmax", "nn.conv2d",
      "nn.max_pool2d", "nn.avg_pool2d", "nn.adaptive_avg_pool2d", "nn.batch_norm", "nn.layer_norm", "nn.dropout",
      "nn.pad", "ones", "zeros", "full", "ones_like", "zeros_like"};
  for (const char* n : names) {
    std::string full = std::string("relax.") + n;
    const OpDef* def = find_op_def(full);
    ASSERT_NE(def, nullptr) << full;
    EXPECT_EQ(def->script_name, std::string("R.") + n);
    EXPECT_TRUE(bool(def->infer)) << full;
  }
  auto ops = list_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_GE(ops.size(), std::size(names));
}

TEST(OpRegistry, OpsAreInterned) {
  EXPECT_TRUE(get_op("relax.add") == get_op("relax.add"));
  EXPECT_FALSE(get_op("relax.add") == get_op("relax.multiply"));
  Call c = make_call("relax.add", {tvar("a", {2}), tvar("b", {2})});
  EXPECT_TRUE(c->op == get_op("relax.add"));
}

TEST(OpRegistry, UnknownOpSuggestsCloseNames) {
  try {
    get_op_def("relax.ad");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "KeyError");
    EXPECT_NE(e.message().find("relax.ad'"), std::string::npos);
    EXPECT_NE(e.message().find("relax.add"), std::string::npos);
  }
  EXPECT_NE(error_of([] { get_op("relax.relu"); }).find("relax.nn.relu"), std::string::npos);
  EXPECT_EQ(find_op_def("relax.nope"), nullptr);
}

TEST(OpRegistry, RegisterDuplicateFails) {
  OpDef def;
  def.name = "relax.add";
  EXPECT_NE(error_of([&] { register_op(def); }).find("already registered"), std::string::npos);
  OpDef custom;
  custom.name = "test.my_identity";
  custom.args = {{"x"}};
  custom.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  custom.fusion_kind = FusionKind::ElementWise;
  register_op(custom);
  EXPECT_EQ(get_op_def("test.my_identity").script_name, "R.test.my_identity");
  Var x = tvar("x", {3});
  EXPECT_TRUE(infer(make_call("test.my_identity", {x})) == x->struct_info_);
}

TEST(OpRegistry, MakeCallFillsDefaultsInSchemaOrder) {
  Call c = make_call("relax.nn.conv2d", {tvar("x", {1, 3, 8, 8}), tvar("w", {4, 3, 3, 3})},
                     {{"groups", int64_t(1)}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  ASSERT_TRUE(c->attrs);
  EXPECT_EQ(c->attrs->type_key, "relax.attrs.Conv2DAttrs");
  std::vector<std::string> names;
  for (const auto& [n, v] : c->attrs->values) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"strides", "padding", "dilation", "groups", "data_layout",
                                             "kernel_layout", "out_layout", "out_dtype"}));
  EXPECT_EQ(c->attrs->get<std::vector<int64_t>>("padding"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(c->attrs->get<std::vector<int64_t>>("strides"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c->attrs->get<std::string>("out_layout"), "NCHW");
  EXPECT_TRUE(c->attrs->get<DataType>("out_dtype").is_void());
  // No attributes at all: no Attrs node.
  EXPECT_FALSE(make_call("relax.add", {tvar("a", {2}), tvar("b", {2})})->attrs);
}

TEST(OpRegistry, MakeCallOutLayoutFollowsDataLayout) {
  Call c = make_call("relax.nn.max_pool2d", {tvar("x", {1, 8, 8, 3})}, {{"layout", std::string("NHWC")}});
  EXPECT_EQ(c->attrs->get<std::string>("out_layout"), "NHWC");
}

TEST(OpRegistry, MakeCallConvertsKinds) {
  Call ln = make_call("relax.nn.layer_norm", {tvar("x", {2, 4}), tvar("g", {4}), tvar("b", {4})},
                      {{"axes", int64_t(-1)}, {"epsilon", int64_t(1)}});
  EXPECT_EQ(ln->attrs->get<double>("epsilon"), 1.0);  // int -> float
  EXPECT_EQ(ln->attrs->get<std::vector<int64_t>>("axes"), (std::vector<int64_t>{-1}));  // int -> [int]
  Call m = make_call("relax.matmul", {tvar("a", {2, 2}), tvar("b", {2, 2})}, {{"out_dtype", std::string("float16")}});
  EXPECT_EQ(m->attrs->get<DataType>("out_dtype"), DataType::Float(16));  // string -> dtype
  Call none = make_call("relax.matmul", {tvar("a", {2, 2}), tvar("b", {2, 2})}, {{"out_dtype", std::monostate{}}});
  EXPECT_TRUE(none->attrs->get<DataType>("out_dtype").is_void());
}

TEST(OpRegistry, MakeCallRejectsBadAttributes) {
  Var x = tvar("x", {2, 3});
  std::string msg = error_of([&] { make_call("relax.nn.softmax", {x}, {{"dim", int64_t(1)}}); });
  EXPECT_NE(msg.find("relax.nn.softmax"), std::string::npos);
  EXPECT_NE(msg.find("unknown attribute 'dim'"), std::string::npos);
  EXPECT_NE(msg.find("valid attributes: axis"), std::string::npos);

  msg = error_of([&] { make_call("relax.nn.softmax", {x}, {{"axis", std::string("last")}}); });
  EXPECT_NE(msg.find("attribute 'axis' must be int"), std::string::npos);

  msg = error_of([&] { make_call("relax.nn.softmax", {x}, {{"axis", int64_t(0)}, {"axis", int64_t(1)}}); });
  EXPECT_NE(msg.find("given twice"), std::string::npos);

  msg = error_of([&] { make_call("relax.astype", {x}); });
  EXPECT_NE(msg.find("relax.astype: missing required attribute 'dtype'"), std::string::npos);

  msg = error_of([&] { make_call("relax.astype", {x}, {{"dtype", std::string("float7")}}); });
  EXPECT_NE(msg.find("'dtype' must be dtype"), std::string::npos);

  msg = error_of([&] { make_call("relax.add", {x, x}, {{"axis", int64_t(0)}}); });
  EXPECT_NE(msg.find("valid attributes: (none)"), std::string::npos);
}

TEST(OpRegistry, MakeCallChecksArgumentCount) {
  Var x = tvar("x", {2, 3});
  std::string msg = error_of([&] { make_call("relax.add", {x}); });
  EXPECT_NE(msg.find("relax.add: expects 2 arguments, got 1"), std::string::npos);
  msg = error_of([&] { make_call("relax.exp", {x, x}); });
  EXPECT_NE(msg.find("relax.exp: expects 1 argument, got 2"), std::string::npos);
  msg = error_of([&] { make_call("relax.strided_slice", {x}); });
  EXPECT_NE(msg.find("expects 4 to 5 arguments"), std::string::npos);
  msg = error_of([&] { make_call("relax.add", {x, Expr()}); });
  EXPECT_NE(msg.find("argument 'x2' is null"), std::string::npos);
}

TEST(OpRegistry, InferRequiresNormalizedArguments) {
  Expr unnormalized = make<CallNode>(get_op("relax.exp"), std::vector<Expr>{tvar("x", {2})});  // no sinfo
  Call c = make_call("relax.add", {unnormalized, tvar("y", {2})});
  std::string msg = error_of([&] { infer(c); });
  EXPECT_NE(msg.find("relax.add: argument 'x1' is not normalized"), std::string::npos);
}

TEST(OpRegistry, InferRejectsNonTensorArguments) {
  Var s = make<VarNode>("s", shape_sinfo({int_imm(2)}));
  std::string msg = error_of([&] { infer(op::exp(s)); });
  EXPECT_NE(msg.find("relax.exp: argument 'x' must be a Tensor, but is a Shape"), std::string::npos);
}

}  // namespace partita::op::testing
