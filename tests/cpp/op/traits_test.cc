// Operator traits in the registry: fusion kind (declared by every operator), commutativity,
// view-like, purity (also as the IR sees it through ir/op_interface.h), and the FLOP and byte
// counts against hand counts, with static, symbolic and unknown shapes.
#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/op_interface.h"
#include "test_helpers.h"

namespace partita::op::testing {
namespace {

const OpDef& def(const std::string& name) { return get_op_def("relax." + name); }

/// `e` normalized: struct info on the call and its tuple arguments (the cost traits read them).
Call typed(const Expr& e) {
  BlockBuilder bb;
  Call c = bb.normalize(e).as_ref<CallNode>();
  PARTITA_ICHECK(c);
  return c;
}

/// A constant cost; fails the test when the cost is unknown or symbolic.
int64_t constant(const std::optional<PrimExpr>& cost) {
  EXPECT_TRUE(cost.has_value());
  if (!cost) return -1;
  auto c = as_const_int(*cost);
  EXPECT_TRUE(c.has_value()) << "the cost is not a constant";
  return c.value_or(-1);
}

int64_t flops(const Expr& e) { return constant(call_flops(*typed(e))); }
int64_t bytes(const Expr& e) { return constant(call_bytes(*typed(e))); }

// A new operator registered without a fusion kind makes this fail: the kind is what a fusing
// code generator decides by, so "unset" is a registration mistake.
TEST(OpTraits, EveryRegisteredOperatorDeclaresAFusionKind) {
  std::vector<std::string> unset;
  for (const std::string& name : list_ops())
    if (get_op_def(name).fusion_kind == FusionKind::Unset) unset.push_back(name);
  EXPECT_TRUE(unset.empty()) << "operators without a fusion kind: "
                             << ::testing::PrintToString(unset);
  EXPECT_GE(list_ops().size(), 60u);
}

TEST(OpTraits, FusionKindsFollowTvm) {
  // TVM's OpPatternKind numbering, so that comparisons such as "<= Injective" carry over.
  EXPECT_EQ(int(FusionKind::ElementWise), 0);
  EXPECT_EQ(int(FusionKind::Broadcast), 1);
  EXPECT_EQ(int(FusionKind::Injective), 2);
  EXPECT_EQ(int(FusionKind::CommReduce), 3);
  EXPECT_EQ(int(FusionKind::OutEWiseFusable), 4);
  EXPECT_EQ(int(FusionKind::Tuple), 7);
  EXPECT_EQ(int(FusionKind::Opaque), 8);
  const std::vector<std::pair<FusionKind, std::vector<const char*>>> expected = {
      {FusionKind::ElementWise,
       {"exp", "negative", "nn.relu", "nn.gelu", "astype", "clip", "zeros", "ones_like"}},
      {FusionKind::Broadcast, {"add", "multiply", "less", "where", "broadcast_to"}},
      {FusionKind::Injective,
       {"reshape", "permute_dims", "squeeze", "concat", "split", "strided_slice", "take", "nn.pad"}},
      {FusionKind::CommReduce, {"sum", "mean", "max", "variance"}},
      {FusionKind::OutEWiseFusable,
       {"matmul", "nn.conv2d", "nn.max_pool2d", "nn.adaptive_avg_pool2d", "nn.softmax",
        "nn.layer_norm", "nn.batch_norm"}},
      {FusionKind::Opaque, {"nn.dropout"}},
  };
  for (const auto& [kind, names] : expected)
    for (const char* n : names) EXPECT_EQ(def(n).fusion_kind, kind) << n;
  EXPECT_STREQ(fusion_kind_name(FusionKind::OutEWiseFusable), "out_elemwise_fusable");
  EXPECT_STREQ(fusion_kind_name(FusionKind::CommReduce), "comm_reduce");
  EXPECT_STREQ(fusion_kind_name(FusionKind::Unset), "unset");
}

TEST(OpTraits, CommutativeOperators) {
  // As TVM's matcher: operands are tried swapped for add and multiply only.
  for (const char* n : {"add", "multiply"}) EXPECT_TRUE(def(n).commutative) << n;
  for (const char* n : {"maximum", "minimum", "equal", "not_equal", "subtract", "divide",
                        "floor_divide", "power", "less", "greater_equal", "matmul", "where"})
    EXPECT_FALSE(def(n).commutative) << n;
}

TEST(OpTraits, ViewLikeOperators) {
  for (const char* n : {"reshape", "flatten", "squeeze", "expand_dims"})
    EXPECT_EQ(def(n).view, ViewKind::Always) << n;
  // Sometimes: the call decides, through view_offset (codegen tests check which calls).
  for (const char* n : {"permute_dims", "strided_slice"}) {
    EXPECT_EQ(def(n).view, ViewKind::Sometimes) << n;
    EXPECT_TRUE(bool(def(n).view_offset)) << n;
  }
  for (const char* n : {"add", "concat", "split", "broadcast_to", "astype"})
    EXPECT_EQ(def(n).view, ViewKind::None) << n;
}

TEST(OpTraits, ScalarOperandsAsTensors) {
  for (const char* n : {"add", "subtract", "less", "where"})
    EXPECT_TRUE(def(n).scalar_operands_as_tensors) << n;
  for (const char* n : {"exp", "clip", "matmul"})
    EXPECT_FALSE(def(n).scalar_operands_as_tensors) << n;
}

TEST(OpTraits, PurityAsTheIrSeesIt) {
  for (const std::string& name : list_ops()) EXPECT_TRUE(get_op_def(name).pure) << name;
  EXPECT_FALSE(is_impure_op("relax.add"));
  EXPECT_TRUE(is_impure_op("relax.no_such_op"));  // nothing is known of it

  OpDef effect;
  effect.name = "test.traits.emit_event";
  effect.args = {{"x"}};
  effect.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  effect.pure = false;
  effect.fusion_kind = FusionKind::Opaque;
  register_op(effect);
  EXPECT_TRUE(is_impure_op("test.traits.emit_event"));
  const OpInterface* iface = find_op_interface("test.traits.emit_event");
  ASSERT_NE(iface, nullptr);
  EXPECT_FALSE(iface->pure);
}

TEST(OpTraits, InterfaceArityAndInference) {
  const OpInterface* add = find_op_interface("relax.add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->min_args, 2u);
  EXPECT_EQ(add->max_args, 2u);
  const OpInterface* slice = find_op_interface("relax.strided_slice");
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->min_args, 4u);  // strides is optional
  EXPECT_EQ(slice->max_args, 5u);
  Call c = make_call("relax.add", {tvar("a", {2, 3}), tvar("b", {3})});
  EXPECT_EQ(describe(add->infer_struct_info(*c)), "(2, 3) float32");
  EXPECT_EQ(find_op_interface("relax.no_such_op"), nullptr);

  OpDef variadic;
  variadic.name = "test.traits.pack";
  variadic.args = {{"first"}, {"rest", false, true}};
  variadic.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  variadic.fusion_kind = FusionKind::Tuple;
  register_op(variadic);
  const OpInterface* pack = find_op_interface("test.traits.pack");
  ASSERT_NE(pack, nullptr);
  EXPECT_EQ(pack->min_args, 1u);
  EXPECT_EQ(pack->max_args, OpInterface::kVariadic);
}

TEST(OpTraits, MatmulFlops) {
  // (2, 3, 4) x (4, 5) -> (2, 3, 5): 30 outputs, each 4 multiply-adds.
  EXPECT_EQ(flops(matmul(tvar("a", {2, 3, 4}), tvar("b", {4, 5}))), 2 * 30 * 4);
  // A vector times a matrix: (4) x (4, 5) -> (5).
  EXPECT_EQ(flops(matmul(tvar("v", {4}), tvar("b", {4, 5}))), 2 * 5 * 4);
}

TEST(OpTraits, Conv2dFlopsInEveryLayout) {
  // (1, 3, 8, 8) * (4, 3, 3, 3), padding 1: 256 outputs, each 3 * 3 * 3 multiply-adds.
  EXPECT_EQ(flops(nn::conv2d(tvar("x", {1, 3, 8, 8}), tvar("w", {4, 3, 3, 3}), {1, 1}, {1, 1})),
            2 * 256 * 27);
  // The same in NHWC / HWIO: the weight's dimensions are read in its layout.
  EXPECT_EQ(flops(nn::conv2d(tvar("x", {1, 8, 8, 3}), tvar("w", {3, 3, 3, 4}), {1, 1}, {1, 1},
                             {1, 1}, 1, "NHWC", "HWIO")),
            2 * 256 * 27);
  // Two groups: (1, 4, 6, 6) * (8, 2, 3, 3) -> (1, 8, 4, 4), 2 * 9 multiply-adds per output.
  EXPECT_EQ(flops(nn::conv2d(tvar("x", {1, 4, 6, 6}), tvar("w", {8, 2, 3, 3}), {1, 1}, {0, 0},
                             {1, 1}, 2)),
            2 * 128 * 18);
}

TEST(OpTraits, SoftmaxAndNormalizationFlops) {
  // Per element: max, subtract, exp, sum, divide; log_softmax adds a log per row.
  EXPECT_EQ(flops(nn::softmax(tvar("x", {2, 10}))), 5 * 20);
  EXPECT_EQ(flops(nn::log_softmax(tvar("x", {2, 10}))), 5 * 20 + 2);
  EXPECT_EQ(flops(nn::log_softmax(tvar("x", {2, 10}), 0)), 5 * 20 + 10);
  // layer_norm per element: statistics (the sum for the mean, the squared deviation and its
  // sum: 3), normalization (subtract the mean, multiply by 1/sqrt(var + eps): 2), gamma, beta.
  Var g = tvar("g", {8}), beta = tvar("b", {8});
  EXPECT_EQ(flops(nn::layer_norm(tvar("x", {2, 8}), g, beta)), 7 * 16);
  EXPECT_EQ(flops(nn::layer_norm(tvar("x", {2, 8}), g, beta, {-1}, 1e-5, false, false)), 5 * 16);
  // batch_norm at inference uses the moving statistics: normalization, gamma and beta.
  Var c = tvar("c", {4});
  EXPECT_EQ(flops(nn::batch_norm(tvar("x", {1, 4, 2, 2}), c, c, c, c, 1, 1e-5, true, true, 0.1,
                                 /*training=*/false)),
            4 * 16);
  EXPECT_EQ(flops(nn::batch_norm(tvar("x", {1, 4, 2, 2}), c, c, c, c)), 7 * 16);
  // max_pool2d 2x2: a comparison per window element.
  EXPECT_EQ(flops(nn::max_pool2d(tvar("x", {1, 1, 4, 4}), {2, 2}, {2, 2})), 4 * 4);
}

TEST(OpTraits, DefaultFlopsByFusionKind) {
  EXPECT_EQ(flops(add(tvar("a", {2, 3}), tvar("b", {3}))), 6);   // broadcast: per output element
  EXPECT_EQ(flops(nn::relu(tvar("a", {2, 3}))), 6);              // element-wise
  EXPECT_EQ(flops(sum(tvar("a", {2, 3}), IntList{1})), 6);       // reduction: per input element
  EXPECT_EQ(flops(variance(tvar("a", {2, 3}))), 4 * 6);
  EXPECT_EQ(flops(permute_dims(tvar("a", {2, 3}))), 0);          // injective: data movement
  EXPECT_EQ(flops(zeros({int_imm(2), int_imm(3)}, f32)), 0);     // creation computes nothing
  EXPECT_EQ(flops(astype(tvar("a", {2, 3}), i64)), 0);
  EXPECT_EQ(flops(broadcast_to(tvar("a", {3}), {int_imm(2), int_imm(3)})), 0);
}

TEST(OpTraits, BytesMoved) {
  // Each tensor argument read once, the result written once (float32: 4 bytes).
  EXPECT_EQ(bytes(add(tvar("a", {2, 3}), tvar("b", {3}))), 4 * (6 + 3 + 6));
  EXPECT_EQ(bytes(matmul(tvar("a", {2, 3, 4}), tvar("b", {4, 5}))), 4 * (24 + 20 + 30));
  EXPECT_EQ(bytes(concat({tvar("a", {2, 3}), tvar("b", {2, 3})}, 0)), 4 * (6 + 6 + 12));
  // A gather reads only what it writes (and its indices).
  EXPECT_EQ(bytes(take(tvar("x", {10, 4}), tvar("i", {3}, i64), int64_t(0))), 2 * 4 * 12 + 8 * 3);
  EXPECT_EQ(bytes(strided_slice(tvar("x", {10, 4}), {0}, {int_imm(0)}, {int_imm(5)})), 2 * 4 * 20);
  // Creation writes only (zeros_like does not read its argument's data).
  EXPECT_EQ(bytes(zeros({int_imm(2), int_imm(3)}, f32)), 4 * 6);
  EXPECT_EQ(bytes(zeros_like(tvar("x", {2, 3}))), 4 * 6);
  // A tuple result counts every field: dropout's output and mask.
  EXPECT_EQ(bytes(nn::dropout(tvar("x", {2, 3}))), 4 * (6 + 6 + 6));
}

TEST(OpTraits, SymbolicAndUnknownShapes) {
  PrimExpr n = make<PrimVarNode>("n");
  Call mm = typed(matmul(svar("a", {n, int_imm(768)}), tvar("w", {768, 64})));
  auto f = call_flops(*mm);
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(as_const_int(*f).has_value());
  EXPECT_TRUE(prove_equal(*f, n * int_imm(2 * 64 * 768)));
  auto b = call_bytes(*mm);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(
      prove_equal(*b, int_imm(4) * (n * int_imm(768) + int_imm(768 * 64) + n * int_imm(64))));

  auto sm = call_flops(*typed(nn::softmax(svar("x", {n, int_imm(10)}, DataType::Float(16)))));
  ASSERT_TRUE(sm.has_value());
  EXPECT_TRUE(prove_equal(*sm, n * int_imm(50)));
  auto half = call_bytes(*typed(add(svar("x", {n, int_imm(4)}, DataType::Float(16)),
                                    svar("y", {n, int_imm(4)}, DataType::Float(16)))));
  ASSERT_TRUE(half.has_value());
  EXPECT_TRUE(prove_equal(*half, n * int_imm(3 * 4 * 2)));

  // Only the rank known: the cost cannot be written down.
  Call unknown = typed(matmul(tvar_ndim("a", 2), tvar("w", {4, 4})));
  EXPECT_FALSE(call_flops(*unknown).has_value());
  EXPECT_FALSE(call_bytes(*unknown).has_value());
  EXPECT_FALSE(call_flops(*typed(nn::relu(tvar_ndim("a", 3)))).has_value());
}

TEST(OpTraits, CallsOfNonOperatorsHaveNoCost) {
  Var f = make<VarNode>("f", make<ObjectStructInfoNode>());
  Call c = make<CallNode>(f, std::vector<Expr>{tvar("x", {2})});
  EXPECT_EQ(callee_op_def(*c), nullptr);
  EXPECT_FALSE(call_flops(*c).has_value());
  EXPECT_FALSE(call_bytes(*c).has_value());
}

TEST(OpTraits, OwnCostFunctionsOverrideTheDefaults) {
  OpDef def;
  def.name = "test.traits.costly";
  def.args = {{"x"}};
  def.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  def.fusion_kind = FusionKind::ElementWise;
  def.flops = [](const CallNode&) -> std::optional<PrimExpr> { return int_imm(1000); };
  register_op(def);
  Expr x = tvar("x", {2, 3});
  EXPECT_EQ(flops(make_call("test.traits.costly", {x})), 1000);
  EXPECT_EQ(bytes(make_call("test.traits.costly", {x})), 4 * 12);  // the default
}

}  // namespace
}  // namespace partita::op::testing
