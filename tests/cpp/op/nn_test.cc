#include "test_helpers.h"

namespace partita::op::testing {

TEST(Conv2d, ConformanceShapes) {
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {1, 3, 32, 32}), tvar("w", {16, 3, 3, 3}), {1, 1}, {1, 1, 1, 1}))),
            "(1, 16, 32, 32) float32");
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {1, 64, 56, 56}), tvar("w", {64, 64, 3, 3}), {1, 1}, {1}))),
            "(1, 64, 56, 56) float32");
}

TEST(Conv2d, StridesPaddingDilationGroups) {
  // (224 + 6 - 7) // 2 + 1 = 112
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {1, 3, 224, 224}), tvar("w", {64, 3, 7, 7}), {2, 2}, {3, 3}))),
            "(1, 64, 112, 112) float32");
  // dilation 2: effective kernel 5 -> 10 - 5 + 1 = 6; asymmetric padding (top 1, left 0, bottom 0, right 2)
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {2, 4, 10, 10}), tvar("w", {8, 4, 3, 3}), {1, 1}, {1, 0, 0, 2},
                                          {2, 2}))),
            "(2, 8, 7, 8) float32");
  // depthwise: groups = channels
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {1, 32, 8, 8}), tvar("w", {32, 1, 3, 3}), {1, 1}, {1, 1}, {1, 1},
                                          32))),
            "(1, 32, 8, 8) float32");
  EXPECT_NE(error_of([] {
              infer(op::nn::conv2d(tvar("x", {1, 32, 8, 8}), tvar("w", {32, 2, 3, 3}), {1, 1}, {0}, {1, 1}, 8));
            }).find("relax.nn.conv2d: data has 32 input channels but weight (32, 2, 3, 3) expects 16"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              infer(op::nn::conv2d(tvar("x", {1, 4, 8, 8}), tvar("w", {6, 1, 3, 3}), {1, 1}, {0}, {1, 1}, 4));
            }).find("not divisible by groups 4"),
            std::string::npos);
}

TEST(Conv2d, LayoutsSymbolicAndErrors) {
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {1, 32, 32, 3}), tvar("w", {3, 3, 3, 16}), {1, 1}, {1}, {1, 1}, 1,
                                          "NHWC", "HWIO"))),
            "(1, 32, 32, 16) float32");
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {1, 3, 8, 8}), tvar("w", {4, 3, 3, 3}), {1, 1}, {0}, {1, 1}, 1,
                                          "NCHW", "OIHW", std::string("NHWC")))),
            "(1, 6, 6, 4) float32");
  EXPECT_NE(error_of([] {
              infer(op::nn::conv2d(tvar("x", {1, 3, 8, 8}), tvar("w", {4, 3, 3, 3}), {1, 1}, {0}, {1, 1}, 1, "NCHW4c"));
            }).find("relax.nn.conv2d: unsupported data_layout \"NCHW4c\""),
            std::string::npos);
  PrimExpr n = make<PrimVarNode>("n");
  EXPECT_EQ(describe(infer(op::nn::conv2d(svar("x", {n, int_imm(3), int_imm(8), int_imm(8)}),
                                          tvar("w", {4, 3, 3, 3}), {1, 1}, {1}))),
            "(n, 4, 8, 8) float32");
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar_ndim("x", 4), tvar("w", {4, 3, 3, 3})))), "ndim=4 float32");
  EXPECT_NE(error_of([] { infer(op::nn::conv2d(tvar("x", {3, 8, 8}), tvar("w", {4, 3, 3, 3}))); }).find("4-D"),
            std::string::npos);
  EXPECT_NE(error_of([] { infer(op::nn::conv2d(tvar("x", {1, 3, 2, 2}), tvar("w", {4, 3, 3, 3}))); })
                .find("window is larger"),
            std::string::npos);
  EXPECT_EQ(describe(infer(op::nn::conv2d(tvar("x", {1, 3, 8, 8}, DataType::Int(8)), tvar("w", {4, 3, 3, 3}, DataType::Int(8)),
                                          {1, 1}, {0}, {1, 1}, 1, "NCHW", "OIHW", std::nullopt, DataType::Int(32)))),
            "(1, 4, 6, 6) int32");
}

TEST(Pool2d, ShapesCeilModeAndLayouts) {
  EXPECT_EQ(describe(infer(op::nn::max_pool2d(tvar("r", {1, 16, 32, 32}), {2, 2}, {2, 2}))), "(1, 16, 16, 16) float32");
  // floor((7 - 3) / 2) + 1 = 3; ceil mode: ceil((7 - 3) / 2) + 1 = 3; with 8: 3 vs 4
  EXPECT_EQ(describe(infer(op::nn::max_pool2d(tvar("x", {1, 1, 8, 8}), {3, 3}, {2, 2}))), "(1, 1, 3, 3) float32");
  EXPECT_EQ(describe(infer(op::nn::max_pool2d(tvar("x", {1, 1, 8, 8}), {3, 3}, {2, 2}, {0}, {1, 1}, true))),
            "(1, 1, 4, 4) float32");
  EXPECT_EQ(describe(infer(op::nn::avg_pool2d(tvar("x", {1, 1, 8, 8}), {3, 3}, {1, 1}, {1}, {2, 2}))),
            "(1, 1, 6, 6) float32");
  EXPECT_EQ(describe(infer(op::nn::avg_pool2d(tvar("x", {2, 9, 9, 5}), {3, 3}, {3, 3}, {0}, {1, 1}, false, false,
                                              "NHWC"))),
            "(2, 3, 3, 5) float32");
  Expr p = op::nn::max_pool2d(tvar("r", {1, 16, 32, 32}), {2, 2}, {2, 2});
  std::vector<std::string> names;
  for (const auto& [k, v] : p.as<CallNode>()->attrs->values) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"pool_size", "strides", "dilation", "padding", "ceil_mode",
                                             "count_include_pad", "layout", "out_layout"}));
  EXPECT_EQ(p.as<CallNode>()->attrs->get<std::vector<int64_t>>("padding"), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(AdaptivePool2d, OutputSize) {
  EXPECT_EQ(describe(infer(op::nn::adaptive_avg_pool2d(tvar("x", {1, 512, 7, 7}), IntList{1, 1}))),
            "(1, 512, 1, 1) float32");
  EXPECT_EQ(describe(infer(op::nn::adaptive_avg_pool2d(tvar("x", {1, 512, 7, 7})))), "(1, 512, 7, 7) float32");
}

TEST(Softmax, AxisChecks) {
  EXPECT_EQ(describe(infer(op::nn::softmax(tvar("m", {1, 10})))), "(1, 10) float32");
  EXPECT_EQ(describe(infer(op::nn::log_softmax(tvar("m", {1, 10}), 0))), "(1, 10) float32");
  EXPECT_EQ(error_of([] { infer(op::nn::softmax(tvar("m", {1, 10}), 2)); }),
            "relax.nn.softmax: axis 2 is out of range for a tensor of ndim 2");
  EXPECT_NE(error_of([] { infer(op::nn::softmax(tvar("m", {3}, DataType::Int(32)))); }).find("float"),
            std::string::npos);
}

TEST(BatchNorm, TupleResultAndChecks) {
  EXPECT_EQ(describe(infer(op::nn::batch_norm(tvar("x", {2, 4, 3, 3}), tvar("g", {4}), tvar("b", {4}), tvar("m", {4}),
                                              tvar("v", {4})))),
            "[(2, 4, 3, 3) float32; (4) float32; (4) float32]");
  EXPECT_EQ(error_of([] {
              infer(op::nn::batch_norm(tvar("x", {2, 4, 3, 3}), tvar("g", {5}), tvar("b", {4}), tvar("m", {4}),
                                       tvar("v", {4})));
            }),
            "relax.nn.batch_norm: argument 'gamma' has shape (5,) but (4,) is required");
}

TEST(LayerNorm, ShapesAndChecks) {
  Expr c = op::nn::layer_norm(tvar("o", {4, 256}), tvar("g", {256}), tvar("b", {256}));
  EXPECT_EQ(describe(infer(c)), "(4, 256) float32");
  EXPECT_EQ(c.as<CallNode>()->attrs->get<double>("epsilon"), 1e-5);
  EXPECT_NE(error_of([] { infer(op::nn::layer_norm(tvar("o", {4, 256}), tvar("g", {128}), tvar("b", {256}))); })
                .find("argument 'gamma' has shape (128,)"),
            std::string::npos);
  EXPECT_EQ(describe(infer(op::nn::layer_norm(tvar_ndim("o", 2), tvar("g", {256}), tvar("b", {256})))),
            "ndim=2 float32");
}

TEST(Dropout, TupleOfOutputAndMask) {
  EXPECT_EQ(describe(infer(op::nn::dropout(tvar("x", {2, 3})))), "[(2, 3) float32; (2, 3) float32]");
  EXPECT_NE(error_of([] { infer(op::nn::dropout(tvar("x", {2}), 1.5)); }).find("rate"), std::string::npos);
}

TEST(Pad, Widths) {
  EXPECT_EQ(describe(infer(op::nn::pad(tvar("x", {2, 128, 28}), {0, 0, 1, 1, 1, 1}))), "(2, 130, 30) float32");
  EXPECT_NE(error_of([] { infer(op::nn::pad(tvar("x", {2, 3}), {1, 1})); }).find("needs 4"), std::string::npos);
  EXPECT_NE(error_of([] { infer(op::nn::pad(tvar("x", {2}), {1, 1}, 0.0, "wrap")); }).find("pad_mode"),
            std::string::npos);
}

}  // namespace partita::op::testing
