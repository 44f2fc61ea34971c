// Struct-info inference of the operators ONNX imports needed beyond the first set: search
// (argmax, argmin, topk), element-wise indexing (gather / scatter), flip, tile, tril / triu,
// cumsum, conv2d_transpose, image.resize2d, and the new element-wise ones.
#include "test_helpers.h"

namespace partita::op::testing {
namespace {

Call call(const std::string& op, std::vector<Expr> args, std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
  return make_call(op, std::move(args), std::move(attrs));
}

Expr shape(std::vector<int64_t> v) {
  std::vector<PrimExpr> d;
  for (int64_t x : v) d.push_back(int_imm(x));
  return make<ShapeExprNode>(d);
}

TEST(SearchOps, ArgmaxArgminAndTopk) {
  Var x = tvar("x", {2, 5, 3});
  EXPECT_EQ(describe(infer(call("relax.argmax", {x}, {{"axis", int64_t(1)}}))), "(2, 3) int64");
  EXPECT_EQ(describe(infer(call("relax.argmin", {x}, {{"axis", int64_t(-1)}, {"keepdims", true}}))), "(2, 5, 1) int64");
  EXPECT_EQ(describe(infer(call("relax.argmax", {x}))), "() int64");
  Call t = call("relax.topk", {x}, {{"k", int64_t(2)}, {"axis", int64_t(1)}, {"dtype", DataType::Int(64)}});
  StructInfo both = infer(t);
  const auto* tup = both.as<TupleStructInfoNode>();
  ASSERT_NE(tup, nullptr);
  EXPECT_EQ(describe(tup->fields[0]), "(2, 2, 3) float32");
  EXPECT_EQ(describe(tup->fields[1]), "(2, 2, 3) int64");
  EXPECT_EQ(describe(infer(call("relax.topk", {x}, {{"k", int64_t(3)}, {"ret_type", std::string("indices")}}))),
            "(2, 5, 3) int32");
  EXPECT_NE(error_of([&] { infer(call("relax.topk", {x}, {{"k", int64_t(6)}, {"axis", int64_t(1)}})); }).find("exceeds"),
            std::string::npos);
  EXPECT_NE(error_of([&] { infer(call("relax.argmax", {x}, {{"axis", int64_t(3)}})); }).find("out of range"),
            std::string::npos);
}

TEST(ScatterGatherOps, Shapes) {
  Var data = tvar("data", {4, 5, 6});
  EXPECT_EQ(describe(infer(call("relax.gather_elements", {data, tvar("i", {4, 2, 6}, i64)}, {{"axis", int64_t(1)}}))),
            "(4, 2, 6) float32");
  // gather_nd: indices (4, 3, 1) after one batch dimension pick rows of (5, 6).
  EXPECT_EQ(describe(infer(call("relax.gather_nd", {data, tvar("i", {4, 3, 1}, i64)}, {{"batch_dims", int64_t(1)}}))),
            "(4, 3, 6) float32");
  EXPECT_EQ(describe(infer(call("relax.gather_nd", {data, tvar("i", {7, 3}, i64)}))), "(7) float32");
  EXPECT_NE(error_of([&] { infer(call("relax.gather_nd", {data, tvar("i", {7, 4}, i64)})); }).find("rank 3"),
            std::string::npos);
  EXPECT_EQ(describe(infer(call("relax.scatter_nd", {data, tvar("i", {2, 2}, i64), tvar("u", {2, 6})},
                                {{"reduction", std::string("add")}}))),
            "(4, 5, 6) float32");
  EXPECT_NE(error_of([&] {
              infer(call("relax.scatter_elements", {data, tvar("i", {4, 5, 6}, i64), tvar("u", {4, 5, 6})},
                         {{"reduction", std::string("mean")}}));
            }).find("reduction must be"),
            std::string::npos);
  EXPECT_NE(error_of([&] { infer(call("relax.gather_elements", {data, tvar("i", {4, 5, 6})})); }).find("integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              infer(call("relax.scatter_nd", {data, tvar("i", {2, 2}, i64), tvar("u", {2, 6}, DataType::Float(64))}));
            }).find("dtype"),
            std::string::npos);
}

TEST(ArrayOps, FlipTileTriangleCumsum) {
  Var x = tvar("x", {2, 3});
  EXPECT_EQ(describe(infer(call("relax.flip", {x}, {{"axis", int64_t(-1)}}))), "(2, 3) float32");
  EXPECT_EQ(describe(infer(call("relax.tile", {x}, {{"repeats", std::vector<int64_t>{2, 2}}}))), "(4, 6) float32");
  EXPECT_EQ(describe(infer(call("relax.tile", {x}, {{"repeats", std::vector<int64_t>{3}}}))), "(2, 9) float32");
  EXPECT_EQ(describe(infer(call("relax.tile", {x}, {{"repeats", std::vector<int64_t>{2, 1, 1}}}))), "(2, 2, 3) float32");
  EXPECT_EQ(describe(infer(call("relax.triu", {x}, {{"k", int64_t(1)}}))), "(2, 3) float32");
  EXPECT_NE(error_of([] { infer(call("relax.tril", {tvar("v", {3})})); }).find("rank >= 2"), std::string::npos);
  EXPECT_EQ(describe(infer(call("relax.cumsum", {x}))), "(6) float32");
  EXPECT_EQ(describe(infer(call("relax.cumsum", {x}, {{"axis", int64_t(1)}, {"dtype", DataType::Float(64)}}))),
            "(2, 3) float64");
}

TEST(ElementwiseOps, NewUnaryBinaryAndPredicates) {
  Var x = tvar("x", {2, 3});
  Var b = tvar("b", {1, 3}, DataType::Bool());
  EXPECT_EQ(describe(infer(call("relax.sin", {x}))), "(2, 3) float32");
  EXPECT_EQ(describe(infer(call("relax.floor", {tvar("i", {4}, i64)}))), "(4) int64");
  EXPECT_EQ(describe(infer(call("relax.isnan", {x}))), "(2, 3) bool");
  EXPECT_EQ(describe(infer(call("relax.logical_and", {b, tvar("c", {2, 1}, DataType::Bool())}))), "(2, 3) bool");
  EXPECT_EQ(describe(infer(call("relax.floor_mod", {x, x}))), "(2, 3) float32");
  EXPECT_NE(error_of([&] { infer(call("relax.logical_or", {x, x})); }).find("bool"), std::string::npos);
  EXPECT_NE(error_of([&] { infer(call("relax.cos", {tvar("i", {4}, i64)})); }).find("float"), std::string::npos);
}

TEST(Conv2dTranspose, OutputSize) {
  // (H - 1) * stride - pads + dilation * (k - 1) + output_padding + 1
  Var x = tvar("x", {1, 4, 5, 5});
  Var w = tvar("w", {4, 3, 3, 3});
  EXPECT_EQ(describe(infer(call("relax.nn.conv2d_transpose", {x, w},
                                {{"strides", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{1, 1, 1, 1}},
                                 {"output_padding", std::vector<int64_t>{1, 0}}}))),
            "(1, 3, 10, 9) float32");
  EXPECT_EQ(describe(infer(call("relax.nn.conv2d_transpose", {x, tvar("w", {4, 2, 1, 1})}, {{"groups", int64_t(2)}}))),
            "(1, 4, 5, 5) float32");
  EXPECT_NE(error_of([&] { infer(call("relax.nn.conv2d_transpose", {x, tvar("w", {3, 3, 3, 3})})); }).find("channels"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              infer(call("relax.nn.conv2d_transpose", {x, w}, {{"kernel_layout", std::string("OIHW")}}));
            }).find("IOHW"),
            std::string::npos);
}

TEST(Resize2d, SizeLayoutAndErrors) {
  Var x = tvar("x", {1, 3, 8, 8});
  EXPECT_EQ(describe(infer(call("relax.image.resize2d", {x, shape({16, 12})}))), "(1, 3, 16, 12) float32");
  EXPECT_EQ(describe(infer(call("relax.image.resize2d", {tvar("y", {1, 8, 8, 3}), shape({4, 4})},
                                {{"layout", std::string("NHWC")}, {"method", std::string("nearest_neighbor")}}))),
            "(1, 4, 4, 3) float32");
  EXPECT_NE(error_of([&] { infer(call("relax.image.resize2d", {x, shape({4, 4})}, {{"method", std::string("area")}})); })
                .find("method"),
            std::string::npos);
  EXPECT_NE(error_of([&] { infer(call("relax.image.resize2d", {x, shape({4})})); }).find("2 values"), std::string::npos);
}

}  // namespace
}  // namespace partita::op::testing
