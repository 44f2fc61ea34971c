#include "test_helpers.h"

namespace partita::op::testing {

static std::vector<PrimExpr> dims(std::vector<int64_t> v) {
  std::vector<PrimExpr> out;
  for (int64_t d : v) out.push_back(int_imm(d));
  return out;
}

TEST(Matmul, TwoDAndBatched) {
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {1, 1024}), tvar("b", {1024, 10})))), "(1, 10) float32");
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {5, 1, 2, 3}), tvar("b", {4, 3, 7})))), "(5, 4, 2, 7) float32");
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {2, 3}), tvar("b", {6, 3, 4})))), "(6, 2, 4) float32");
}

TEST(Matmul, OneDimensionalOperands) {
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {3}), tvar("b", {3, 4})))), "(4) float32");
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {2, 3}), tvar("b", {3})))), "(2) float32");
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {3}), tvar("b", {3})))), "() float32");
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {5, 2, 3}), tvar("b", {3})))), "(5, 2) float32");
}

TEST(Matmul, DtypesUnknownsAndErrors) {
  EXPECT_EQ(describe(infer(op::matmul(tvar("a", {2, 3}, DataType::Float(16)), tvar("b", {3, 4}, DataType::Float(16)),
                                      DataType::Float(32)))),
            "(2, 4) float32");
  EXPECT_EQ(describe(infer(op::matmul(tvar_ndim("a", 3), tvar("b", {3, 4})))), "ndim=3 float32");
  EXPECT_EQ(describe(infer(op::matmul(tvar_ndim("a", -1), tvar("b", {3, 4})))), "ndim=-1 float32");
  EXPECT_EQ(error_of([] { infer(op::matmul(tvar("a", {2, 3}), tvar("b", {4, 5}))); }),
            "relax.matmul: reduction dimensions differ: x1 (2, 3) has 3 columns but x2 (4, 5) has 4 rows");
  EXPECT_NE(error_of([] { infer(op::matmul(tvar("a", {2, 3}), tvar("b", {3, 4}, DataType::Int(32)))); })
                .find("same dtype"),
            std::string::npos);
  PrimExpr n = make<PrimVarNode>("n");
  EXPECT_EQ(describe(infer(op::matmul(svar("a", {n, int_imm(3)}), svar("b", {int_imm(3), int_imm(4)})))),
            "(n, 4) float32");
}

TEST(Reshape, StaticMinusOneAndErrors) {
  EXPECT_EQ(describe(infer(op::reshape(tvar("p", {1, 16, 16, 16}), dims({1, 4096})))), "(1, 4096) float32");
  // -1 resolved by the constructor (x has a known shape) ...
  Expr c = op::reshape(tvar("p", {2, 3, 4}), dims({-1, 4}));
  EXPECT_EQ(*as_const_int(c.as<CallNode>()->args[1].as<ShapeExprNode>()->values[0]), 6);
  EXPECT_EQ(describe(infer(c)), "(6, 4) float32");
  // ... and by inference when the call was built with a literal -1.
  Call raw = make_call("relax.reshape", {tvar("p", {2, 3, 4}), make<ShapeExprNode>(dims({2, -1}))});
  EXPECT_EQ(describe(infer(raw)), "(2, 12) float32");
  EXPECT_EQ(error_of([] { infer(op::reshape(tvar("p", {2, 3}), dims({4, 2}))); }),
            "relax.reshape: cannot reshape (2, 3) (6 elements) into (4, 2) (8 elements)");
  Call bad = make_call("relax.reshape", {tvar("p", {2, 3}), make<ShapeExprNode>(dims({-1, 4}))});
  EXPECT_NE(error_of([&] { infer(bad); }).find("not divisible by 4"), std::string::npos);
  Call two = make_call("relax.reshape", {tvar("p", {2, 3}), make<ShapeExprNode>(dims({-1, -1}))});
  EXPECT_NE(error_of([&] { infer(two); }).find("more than one -1"), std::string::npos);
}

TEST(Reshape, Symbolic) {
  PrimExpr n = make<PrimVarNode>("n");
  EXPECT_EQ(describe(infer(op::reshape(svar("x", {n, int_imm(4)}), {n * int_imm(2), int_imm(2)}))).substr(0, 1), "(");
  EXPECT_EQ(describe(infer(op::reshape(tvar_ndim("x", 2), dims({8})))), "(8) float32");
  Var s = make<VarNode>("s", make<ShapeStructInfoNode>(3));
  EXPECT_EQ(describe(infer(op::reshape(tvar("x", {2, 3}), Expr(s)))), "ndim=3 float32");
}

TEST(PermuteDims, DefaultReversesAndAxes) {
  EXPECT_EQ(describe(infer(op::permute_dims(tvar("x", {1, 2, 3})))), "(3, 2, 1) float32");
  EXPECT_EQ(describe(infer(op::permute_dims(tvar("x", {1, 2, 3}), IntList{0, -1, 1}))), "(1, 3, 2) float32");
  EXPECT_NE(error_of([] { infer(op::permute_dims(tvar("x", {1, 2, 3}), IntList{0, 1})); }).find("ndim 3"),
            std::string::npos);
  EXPECT_NE(error_of([] { infer(op::permute_dims(tvar("x", {1, 2}), IntList{0, 0})); }).find("more than once"),
            std::string::npos);
}

// The permutation backends and the VM read from a call: the one definition of its axes.
TEST(PermuteDims, AxesOfACall) {
  auto axes_of = [](Expr call) { return op::permute_dims_axes(*call.as<CallNode>(), 3); };
  EXPECT_EQ(axes_of(op::permute_dims(tvar("x", {1, 2, 3}))), (IntList{2, 1, 0}));
  EXPECT_EQ(axes_of(op::permute_dims(tvar("x", {1, 2, 3}), IntList{0, -1, 1})), (IntList{0, 2, 1}));
}

TEST(Flatten, SqueezeExpandDims) {
  EXPECT_EQ(describe(infer(op::flatten(tvar("x", {2, 3, 4})))), "(24) float32");
  EXPECT_EQ(describe(infer(op::squeeze(tvar("x", {1, 3, 1, 4})))), "(3, 4) float32");
  EXPECT_EQ(describe(infer(op::squeeze(tvar("x", {1, 3, 1, 4}), IntList{-2}))), "(1, 3, 4) float32");
  EXPECT_EQ(error_of([] { infer(op::squeeze(tvar("x", {1, 3}), IntList{1})); }),
            "relax.squeeze: cannot squeeze axis 1 of shape (1, 3): its size is 3, not 1");
  EXPECT_EQ(describe(infer(op::expand_dims(tvar("x", {3, 4}), {0, -1}))), "(1, 3, 4, 1) float32");
  EXPECT_NE(error_of([] { infer(op::expand_dims(tvar("x", {3}), {3})); }).find("axis 3 is out of range"),
            std::string::npos);
}

TEST(Concat, AxisAndErrors) {
  Expr c = op::concat({tvar("a", {2, 3}), tvar("b", {4, 3})}, 0);
  // The tensors operand is a Tuple; give it struct info as normalization would.
  const Expr& tup = c.as<CallNode>()->args[0];
  tup->struct_info_ = tuple_sinfo({tensor_sinfo(std::vector<int64_t>{2, 3}, f32), tensor_sinfo(std::vector<int64_t>{4, 3}, f32)});
  EXPECT_EQ(describe(infer(c)), "(6, 3) float32");

  Var t = make<VarNode>("t", tuple_sinfo({tensor_sinfo(std::vector<int64_t>{2, 3}, f32),
                                          tensor_sinfo(std::vector<int64_t>{2, 5}, f32)}));
  EXPECT_EQ(describe(infer(make_call("relax.concat", {t}, {{"axis", int64_t(-1)}}))), "(2, 8) float32");
  EXPECT_NE(error_of([&] { infer(make_call("relax.concat", {t}, {{"axis", int64_t(0)}})); })
                .find("relax.concat: tensor 1 has shape (2, 5)"),
            std::string::npos);
  EXPECT_EQ(describe(infer(make_call("relax.concat", {t}, {{"axis", std::monostate{}}}))), "(16) float32");
}

TEST(Split, SectionsAndIndices) {
  EXPECT_EQ(describe(infer(op::split(tvar("x", {6, 4}), int64_t(3)))), "[(2, 4) float32; (2, 4) float32; (2, 4) float32]");
  EXPECT_EQ(describe(infer(op::split(tvar("x", {6, 10}), IntList{2, 7}, 1))),
            "[(6, 2) float32; (6, 5) float32; (6, 3) float32]");
  EXPECT_NE(error_of([] { infer(op::split(tvar("x", {7}), int64_t(3))); }).find("into 3 equal sections"),
            std::string::npos);
  EXPECT_EQ(describe(infer(op::split(tvar_ndim("x", 2), int64_t(2)))), "[ndim=2 float32; ndim=2 float32]");
}

TEST(StridedSlice, ConformanceCaseAndClamping) {
  // R.strided_slice(f, (1,), (0,), (1024,), assume_inbound=False)
  Expr c = op::strided_slice(tvar("f", {1, 4096}), {1}, {int_imm(0)}, {int_imm(1024)});
  const auto* call = c.as<CallNode>();
  ASSERT_EQ(call->args.size(), 4u);
  const auto* axes = call->args[1].as<TupleNode>();
  ASSERT_TRUE(axes && axes->fields.size() == 1);
  EXPECT_EQ(*as_const_int(axes->fields[0].as<PrimValueNode>()->value), 1);
  EXPECT_FALSE(call->attrs->get<bool>("assume_inbound"));
  EXPECT_EQ(describe(infer(c)), "(1, 1024) float32");
  EXPECT_EQ(describe(infer(op::strided_slice(tvar("x", {10, 10}), {0, 1}, {int_imm(-3), int_imm(2)},
                                             {int_imm(100), int_imm(9)}, std::vector<PrimExpr>{int_imm(1), int_imm(3)}))),
            "(3, 3) float32");
  EXPECT_EQ(describe(infer(op::strided_slice(tvar("x", {10}), {0}, {int_imm(8)}, {int_imm(1)},
                                             std::vector<PrimExpr>{int_imm(-3)}))),
            "(3) float32");
  EXPECT_NE(error_of([] {
              infer(op::strided_slice(tvar("x", {10}), {0, 0}, {int_imm(0)}, {int_imm(1)}));
            }).find("same length"),
            std::string::npos);
}

// Where a unit-stride slice starts along each axis (what the host's view offset and a backend's
// copy read): negative starts count from the end, starts clamp; other strides or symbolic starts
// give nothing.
TEST(StridedSlice, UnitSliceBegin) {
  auto begin = [](const Expr& e) { return op::unit_slice_begin(*e.as<CallNode>()); };
  EXPECT_EQ(begin(op::strided_slice(tvar("x", {1, 6, 4, 4}), {1}, {int_imm(3)}, {int_imm(6)})), (IntList{0, 3, 0, 0}));
  EXPECT_EQ(begin(op::strided_slice(tvar("x", {10, 10}), {-1, 0}, {int_imm(-3), int_imm(20)}, {int_imm(10), int_imm(30)},
                                    std::vector<PrimExpr>{int_imm(1), int_imm(1)})),
            (IntList{10, 7}));
  EXPECT_EQ(begin(op::strided_slice(tvar("x", {10}), {0}, {int_imm(0)}, {int_imm(9)}, std::vector<PrimExpr>{int_imm(2)})),
            std::nullopt);
  EXPECT_EQ(begin(op::strided_slice(tvar("x", {10}), {0}, {make<PrimVarNode>("s")}, {int_imm(9)})), std::nullopt);
}

TEST(Take, AxisAndIndices) {
  EXPECT_EQ(describe(infer(op::take(tvar("x", {5, 6}), tvar("i", {2, 3}, i64), 1))), "(5, 2, 3) float32");
  EXPECT_EQ(describe(infer(op::take(tvar("x", {5}), tvar("i", {4}, i64)))), "(4) float32");
  EXPECT_NE(error_of([] { infer(op::take(tvar("x", {5, 6}), tvar("i", {4}, i64))); }).find("must be 1-D"),
            std::string::npos);
  EXPECT_NE(error_of([] { infer(op::take(tvar("x", {5}), tvar("i", {4}))); }).find("integer dtype"), std::string::npos);
}

TEST(BroadcastTo, ShapesAndErrors) {
  EXPECT_EQ(describe(infer(op::broadcast_to(tvar("x", {3, 1}), dims({2, 3, 4})))), "(2, 3, 4) float32");
  EXPECT_EQ(error_of([] { infer(op::broadcast_to(tvar("x", {3}), dims({4}))); }),
            "relax.broadcast_to: cannot broadcast shape (3,) to (4,): dimension 0 is 3 vs 4");
}

TEST(Reduction, AxesKeepdimsAndUnknown) {
  for (auto fn : {op::sum, op::mean, op::max, op::min, op::variance}) {
    EXPECT_EQ(describe(infer(fn(tvar("x", {2, 3, 4}), IntList{1}, false))), "(2, 4) float32");
    EXPECT_EQ(describe(infer(fn(tvar("x", {2, 3, 4}), IntList{-1, 0}, true))), "(1, 3, 1) float32");
  }
  EXPECT_EQ(describe(infer(op::sum(tvar("x", {2, 3})))), "() float32");
  EXPECT_EQ(describe(infer(op::sum(tvar("x", {2, 3}), std::nullopt, true))), "(1, 1) float32");
  EXPECT_EQ(describe(infer(op::mean(tvar_ndim("x", -1)))), "() float32");
  EXPECT_EQ(describe(infer(op::mean(tvar_ndim("x", 3), IntList{0}))), "ndim=2 float32");
  EXPECT_EQ(error_of([] { infer(op::sum(tvar("x", {2, 3}), IntList{2})); }),
            "relax.sum: axis 2 is out of range for a tensor of ndim 2");
}

TEST(Creation, ShapesAndDtypes) {
  EXPECT_EQ(describe(infer(op::ones(dims({256}), f32))), "(256) float32");
  EXPECT_EQ(describe(infer(op::zeros(dims({2, 3}), i64))), "(2, 3) int64");
  Var v = tvar("v", std::vector<int64_t>{}, DataType::Int(32));
  EXPECT_EQ(describe(infer(op::full(dims({2}), v))), "(2) int32");
  EXPECT_EQ(describe(infer(op::full(dims({2}), v, f32))), "(2) float32");
  EXPECT_NE(error_of([] { infer(op::full(dims({2}), tvar("v", {3}))); }).find("scalar"), std::string::npos);
  EXPECT_EQ(describe(infer(op::ones_like(tvar("x", {4, 5})))), "(4, 5) float32");
  EXPECT_EQ(describe(infer(op::zeros_like(tvar("x", {4, 5}), i64))), "(4, 5) int64");
  EXPECT_NE(error_of([] { infer(op::ones(dims({2, -3}), f32)); }).find("negative"), std::string::npos);
}

}  // namespace partita::op::testing
