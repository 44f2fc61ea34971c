#include <random>

#include "test_helpers.h"

namespace partita::op::testing {

TEST(Binary, StaticBroadcasting) {
  EXPECT_EQ(describe(infer(op::add(tvar("a", {10, 3}), tvar("b", {3})))), "(10, 3) float32");
  EXPECT_EQ(describe(infer(op::multiply(tvar("a", {1, 64, 1, 1}), tvar("b", {1, 64, 56, 56})))),
            "(1, 64, 56, 56) float32");
  EXPECT_EQ(describe(infer(op::subtract(tvar("a", {4, 1}), tvar("b", {1, 5})))), "(4, 5) float32");
  EXPECT_EQ(describe(infer(op::power(tvar("a", std::vector<int64_t>{}), tvar("b", {2, 2})))), "(2, 2) float32");
}

TEST(Binary, SymbolicBroadcasting) {
  PrimExpr n = make<PrimVarNode>("n"), m = make<PrimVarNode>("m");
  EXPECT_EQ(describe(infer(op::add(svar("a", {n, int_imm(4)}), svar("b", {int_imm(4)})))), "(n, 4) float32");
  EXPECT_EQ(describe(infer(op::add(svar("a", {n, int_imm(1)}), svar("b", {int_imm(1), m})))), "(n, m) float32");
  EXPECT_EQ(describe(infer(op::add(svar("a", {n}), svar("b", {n})))), "(n) float32");
  // n vs 4 and n vs m can only be decided at run time: the shape degrades to its ndim.
  EXPECT_EQ(describe(infer(op::add(svar("a", {int_imm(2), n}), svar("b", {int_imm(4)})))), "ndim=2 float32");
  EXPECT_EQ(describe(infer(op::add(svar("a", {n}), svar("b", {m})))), "ndim=1 float32");
}

TEST(Binary, UnknownShapesDegrade) {
  EXPECT_EQ(describe(infer(op::add(tvar_ndim("a", 2), tvar("b", {3})))), "ndim=2 float32");
  EXPECT_EQ(describe(infer(op::add(tvar_ndim("a", -1), tvar("b", {3})))), "ndim=-1 float32");
  EXPECT_EQ(describe(infer(op::add(tvar_ndim("a", 3, DataType::Void()), tvar("b", {3})))), "ndim=3 void");
}

TEST(Binary, ErrorsNameOpAndProblem) {
  std::string msg = error_of([] { infer(op::add(tvar("a", {10, 3}), tvar("b", {4}))); });
  EXPECT_EQ(msg, "relax.add: cannot broadcast shapes (10, 3) and (4,): dimension 1 is 3 vs 4");
  msg = error_of([] { infer(op::multiply(tvar("a", {2}), tvar("b", {2}, DataType::Int(32)))); });
  EXPECT_EQ(msg, "relax.multiply: operands must have the same dtype, but got float32 and int32");
  try {
    infer(op::add(tvar("a", {2}), tvar("b", {3})));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
  }
}

TEST(Binary, ComparisonsReturnBool) {
  for (auto fn : {op::equal, op::not_equal, op::less, op::less_equal, op::greater, op::greater_equal})
    EXPECT_EQ(describe(infer(fn(tvar("a", {2, 3}), tvar("b", {3})))), "(2, 3) bool");
  EXPECT_NE(error_of([] { infer(op::less(tvar("a", {2}), tvar("b", {2}, DataType::Int(64)))); }).find("relax.less"),
            std::string::npos);
}

TEST(Binary, AllArithmeticOpsInfer) {
  for (auto fn : {op::add, op::subtract, op::multiply, op::divide, op::floor_divide, op::power, op::maximum,
                  op::minimum})
    EXPECT_EQ(describe(infer(fn(tvar("a", {2, 1}), tvar("b", {1, 3})))), "(2, 3) float32");
}

TEST(Binary, ScalarPrimOperand) {
  Var s = make<VarNode>("s", prim_sinfo(f32));
  EXPECT_EQ(describe(infer(op::add(tvar("a", {2, 3}), s))), "(2, 3) float32");
}

TEST(Where, BroadcastsAllThree) {
  EXPECT_EQ(describe(infer(op::where(tvar("c", {2, 1}, DataType::Bool()), tvar("a", {3}), tvar("b", {1, 3})))),
            "(2, 3) float32");
  std::string msg = error_of([] { infer(op::where(tvar("c", {2}), tvar("a", {2}), tvar("b", {2}))); });
  EXPECT_EQ(msg, "relax.where: argument 'condition' must have dtype bool, but has float32");
}

TEST(Unary, KeepStructInfo) {
  PrimExpr n = make<PrimVarNode>("n");
  for (auto fn : {op::negative, op::abs, op::exp, op::log, op::sqrt, op::rsqrt, op::tanh, op::sigmoid, op::erf,
                  op::nn::relu, op::nn::gelu, op::nn::gelu_tanh, op::nn::silu})
    EXPECT_EQ(describe(infer(fn(svar("x", {n, int_imm(4)})))), "(n, 4) float32");
  EXPECT_EQ(describe(infer(op::nn::relu(tvar("x", {2}, DataType::Int(32))))), "(2) int32");
  EXPECT_EQ(describe(infer(op::abs(tvar("x", {2}, DataType::Int(32))))), "(2) int32");
  EXPECT_EQ(error_of([] { infer(op::exp(tvar("x", {2}, DataType::Int(32)))); }),
            "relax.exp: requires a float tensor, but the input has dtype int32");
  EXPECT_EQ(describe(infer(op::sqrt(tvar_ndim("x", -1)))), "ndim=-1 float32");
}

TEST(Unary, ClipAndAstype) {
  // clip's bounds are PrimValue arguments; give them struct info as normalization would.
  Expr lo = make<PrimValueNode>(make<FloatImmNode>(0.0, DataType::Float(64)));
  Expr hi = make<PrimValueNode>(make<FloatImmNode>(6.0, DataType::Float(64)));
  lo->struct_info_ = prim_sinfo(DataType::Float(64));
  hi->struct_info_ = prim_sinfo(DataType::Float(64));
  EXPECT_EQ(describe(infer(op::clip(tvar("x", {2, 3}), lo, hi))), "(2, 3) float32");
  EXPECT_NE(error_of([] { infer(op::clip(tvar("x", {2}), tvar("l", {1}), tvar("h", {1}))); })
                .find("relax.clip: argument 'min' must be a scalar"),
            std::string::npos);
  EXPECT_EQ(describe(infer(op::astype(tvar("x", {2, 3}), DataType::Float(16)))), "(2, 3) float16");
}

// ---- randomized broadcasting against a reference rule ----

namespace {
/// numpy's rule on constant shapes: nullopt when incompatible.
std::optional<std::vector<int64_t>> reference_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t da = k < n - a.size() ? 1 : a[k - (n - a.size())];
    int64_t db = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[k] = std::max(da, db) == 1 ? 1 : (da == 1 ? db : da);
  }
  return out;
}
}  // namespace

TEST(Binary, RandomBroadcastingMatchesReference) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> ndim(0, 4), dim(1, 4);
  int compatible = 0, incompatible = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int64_t> a(ndim(rng)), b(ndim(rng));
    for (auto& d : a) d = dim(rng);
    for (auto& d : b) d = dim(rng);
    // Make about half the pairs compatible by copying dims across.
    if (trial % 2) {
      for (size_t k = 0; k < std::min(a.size(), b.size()); ++k)
        if (rng() % 2) b[b.size() - 1 - k] = a[a.size() - 1 - k];
    }
    auto expected = reference_broadcast(a, b);
    Expr call = op::add(tvar("a", a), tvar("b", b));
    if (expected) {
      ++compatible;
      StructInfo s = infer(call);
      const auto* t = s.as<TensorStructInfoNode>();
      ASSERT_TRUE(t && t->shape);
      std::vector<int64_t> got;
      for (const auto& d : *t->shape) got.push_back(*as_const_int(d));
      EXPECT_EQ(got, *expected);
    } else {
      ++incompatible;
      EXPECT_NE(error_of([&] { infer(call); }).find("relax.add: cannot broadcast"), std::string::npos);
    }
  }
  EXPECT_GT(compatible, 300);
  EXPECT_GT(incompatible, 300);
}

}  // namespace partita::op::testing
