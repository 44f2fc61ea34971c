// The PrimExpr canonical-form simplifier.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "partita/ir/debug_print.h"
#include "partita/ir/structural_equal.h"

namespace partita {
namespace {

// Raw (unsimplified) constructors, so each test states exactly what simplify receives.
PrimExpr raw(PrimOp op, PrimExpr a, PrimExpr b) { return make<PrimBinaryNode>(op, std::move(a), std::move(b)); }
PrimExpr c(int64_t v) { return make<IntImmNode>(v); }
PrimExpr add(PrimExpr a, PrimExpr b) { return raw(PrimOp::Add, a, b); }
PrimExpr sub(PrimExpr a, PrimExpr b) { return raw(PrimOp::Sub, a, b); }
PrimExpr mul(PrimExpr a, PrimExpr b) { return raw(PrimOp::Mul, a, b); }
PrimExpr fdiv(PrimExpr a, PrimExpr b) { return raw(PrimOp::FloorDiv, a, b); }
PrimExpr fmod(PrimExpr a, PrimExpr b) { return raw(PrimOp::FloorMod, a, b); }
PrimExpr mn(PrimExpr a, PrimExpr b) { return raw(PrimOp::Min, a, b); }
PrimExpr mx(PrimExpr a, PrimExpr b) { return raw(PrimOp::Max, a, b); }

std::string s(const PrimExpr& e) { return prim_expr_str(simplify(e)); }

class Simplify : public ::testing::Test {
 protected:
  PrimExpr n = make<PrimVarNode>("n"), m = make<PrimVarNode>("m"), k = make<PrimVarNode>("k");
};

TEST_F(Simplify, BriefIdentities) {
  EXPECT_EQ(s(fdiv(mul(n, c(2)), c(2))), "n");
  EXPECT_EQ(s(sub(add(n, c(1)), c(1))), "n");
  EXPECT_EQ(s(fdiv(mul(n, c(4)), c(2))), "n * 2");
  EXPECT_EQ(s(fmod(mul(n, c(6)), c(3))), "0");
  EXPECT_EQ(s(sub(n, n)), "0");
  EXPECT_EQ(s(mn(c(3), c(7))), "3");
  EXPECT_EQ(s(mx(c(3), c(7))), "7");
  EXPECT_EQ(s(mn(n, n)), "n");
  EXPECT_EQ(s(mx(add(n, m), add(m, n))), "m + n");
  EXPECT_EQ(s(fdiv(n, m)), "n // m");
  EXPECT_EQ(s(fdiv(n, c(0))), "n // 0");
  EXPECT_EQ(s(fmod(c(5), c(0))), "5 % 0");
  EXPECT_EQ(s(fdiv(c(5), c(0))), "5 // 0");
}

TEST_F(Simplify, PrintsAsTvm) {
  EXPECT_EQ(s(mul(c(2), n)), "n * 2");
  EXPECT_EQ(s(add(c(1), n)), "n + 1");
  EXPECT_EQ(s(fdiv(n, c(2))), "n // 2");
  EXPECT_EQ(s(fdiv(add(n, c(1)), c(2))), "(n + 1) // 2");
  EXPECT_EQ(s(add(mul(n, c(2)), c(1))), "n * 2 + 1");
  EXPECT_EQ(s(sub(n, c(3))), "n - 3");
  EXPECT_EQ(s(sub(c(5), n)), "5 - n");
  EXPECT_EQ(s(sub(c(0), n)), "n * -1");
  EXPECT_EQ(s(mul(n, m)), "m * n");
  EXPECT_EQ(s(mn(n, m)), "T.min(n, m)");
  EXPECT_EQ(s(fmod(n, c(4))), "n % 4");
  EXPECT_EQ(s(mul(add(n, c(1)), c(2))), "n * 2 + 2");
}

TEST_F(Simplify, ConstantsFold) {
  EXPECT_EQ(s(add(c(2), c(3))), "5");
  EXPECT_EQ(s(mul(add(c(2), c(3)), sub(c(1), c(4)))), "-15");
  EXPECT_EQ(s(fdiv(c(-7), c(2))), "-4");
  EXPECT_EQ(s(fmod(c(-7), c(2))), "1");
  EXPECT_EQ(s(fdiv(c(7), c(-2))), "-4");
  EXPECT_EQ(s(fmod(c(7), c(-2))), "-1");
  EXPECT_EQ(s(mn(c(-1), c(-9))), "-9");
  EXPECT_EQ(s(mul(n, c(0))), "0");
  EXPECT_EQ(s(add(n, c(0))), "n");
  EXPECT_EQ(s(mul(n, c(1))), "n");
}

TEST_F(Simplify, SumsAndProducts) {
  EXPECT_EQ(s(add(add(n, m), sub(n, m))), "n * 2");
  EXPECT_EQ(s(sub(add(add(n, c(3)), mul(m, c(2))), add(m, c(3)))), "m + n");
  EXPECT_EQ(s(mul(add(n, c(1)), add(n, c(-1)))), "n * n - 1");
  EXPECT_EQ(s(sub(mul(n, m), mul(m, n))), "0");
  EXPECT_EQ(s(add(mul(mul(n, m), c(3)), mul(m, mul(n, c(-3))))), "0");
  EXPECT_EQ(s(sub(sub(c(0), n), m)), "m * -1 - n");
  EXPECT_EQ(s(mul(mul(k, m), n)), s(mul(n, mul(m, k))));
}

TEST_F(Simplify, DivisionAndModulo) {
  EXPECT_EQ(s(fdiv(add(mul(n, c(4)), c(8)), c(4))), "n + 2");
  EXPECT_EQ(s(fdiv(add(n, c(4)), c(2))), "n // 2 + 2");
  EXPECT_EQ(s(fdiv(add(mul(n, c(2)), c(1)), c(2))), "n");
  EXPECT_EQ(s(fdiv(add(mul(n, c(4)), c(2)), c(4))), "n");
  EXPECT_EQ(s(fdiv(mul(n, c(2)), c(4))), "n // 2");
  EXPECT_EQ(s(fdiv(fdiv(n, c(2)), c(3))), "n // 6");
  EXPECT_EQ(s(fdiv(n, c(1))), "n");
  EXPECT_EQ(s(fmod(n, c(1))), "0");
  EXPECT_EQ(s(fmod(add(n, c(3)), c(2))), "(n + 1) % 2");
  EXPECT_EQ(s(fmod(add(mul(n, c(4)), m), c(2))), "m % 2");
  EXPECT_EQ(s(fmod(fmod(n, c(6)), c(3))), "n % 3");
  EXPECT_EQ(s(fmod(fmod(n, c(3)), c(6))), "n % 3");
  EXPECT_EQ(s(fdiv(fmod(n, c(3)), c(3))), "0");
  EXPECT_EQ(s(fdiv(n, n)), "1");
  EXPECT_EQ(s(fmod(n, n)), "0");
  EXPECT_EQ(s(fdiv(add(n, m), add(m, n))), "1");
  EXPECT_EQ(s(fdiv(n, c(-2))), "n // -2");
}

TEST_F(Simplify, ExactDivisionBySymbolicMonomial) {
  // What ONNX reshape arithmetic produces: (batch * 40) // (batch * 5).
  EXPECT_EQ(s(fdiv(mul(n, c(40)), mul(n, c(5)))), "8");
  EXPECT_EQ(s(fdiv(add(mul(mul(n, m), c(6)), mul(n, c(3))), mul(n, c(3)))), "m * 2 + 1");
  EXPECT_EQ(s(fmod(mul(mul(n, m), c(4)), mul(n, c(2)))), "0");
  // Not exact: kept as written.
  EXPECT_EQ(s(fdiv(add(mul(n, c(4)), c(1)), n)), "(n * 4 + 1) // n");
  EXPECT_EQ(s(fdiv(mul(n, c(3)), mul(m, c(3)))), "n * 3 // (m * 3)");
}

TEST_F(Simplify, MinMax) {
  EXPECT_EQ(s(mn(n, add(n, c(1)))), "n");
  EXPECT_EQ(s(mx(n, add(n, c(1)))), "n + 1");
  EXPECT_EQ(s(mn(sub(n, c(2)), n)), "n - 2");
  EXPECT_EQ(s(mx(mul(n, c(2)), add(n, n))), "n * 2");
  EXPECT_EQ(s(add(mn(n, m), c(0))), "T.min(n, m)");
  EXPECT_EQ(s(sub(mx(n, m), mx(n, m))), "0");
  EXPECT_EQ(s(mn(add(n, c(1)), add(m, c(1)))), "T.min(n + 1, m + 1)");
}

TEST_F(Simplify, OperatorsSimplify) {
  EXPECT_EQ(prim_expr_str(n * int_imm(2)), "n * 2");
  EXPECT_EQ(prim_expr_str(floordiv(n * int_imm(2), int_imm(2))), "n");
  EXPECT_EQ(prim_expr_str((n + int_imm(1)) - int_imm(1)), "n");
  EXPECT_EQ(prim_expr_str(max(n, n)), "n");
  EXPECT_TRUE(prove_equal(n * int_imm(2) + m, m + n + n));
  EXPECT_FALSE(prove_equal(n * int_imm(2), n));
  EXPECT_TRUE(prove_equal(floordiv(n * int_imm(4), int_imm(2)), n + n));
}

TEST_F(Simplify, KeepsDtypeAndMakesPlainNodes) {
  PrimExpr i32 = make<PrimVarNode>("i", DataType::Int(32));
  PrimExpr e = simplify(add(mul(i32, make<IntImmNode>(2, DataType::Int(32))), make<IntImmNode>(3, DataType::Int(32))));
  EXPECT_EQ(e->dtype, DataType::Int(32));
  const auto* top = e.as<PrimBinaryNode>();
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->op, PrimOp::Add);
  EXPECT_EQ(top->b->dtype, DataType::Int(32));
  EXPECT_EQ(simplify(add(n, c(1)))->dtype, DataType::Int(64));
  // Overflowing constants are left as written rather than wrapped.
  PrimExpr big = add(c(INT64_MAX), c(1));
  EXPECT_EQ(prim_expr_str(simplify(big)), "9223372036854775807 + 1");
}

TEST_F(Simplify, DeterministicAcrossConstructionOrder) {
  PrimExpr a = add(add(k, m), n), b = add(n, add(m, k)), d = add(m, add(k, n));
  EXPECT_EQ(s(a), "k + m + n");
  EXPECT_TRUE(structural_equal(simplify(a), simplify(b), false));
  EXPECT_TRUE(structural_equal(simplify(a), simplify(d), false));
}

// ---- randomized: the simplified expression has the same value as the original ----

struct DivByZero {};

int64_t floordiv_i(int64_t a, int64_t b) {
  if (b == 0) throw DivByZero{};
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

int64_t eval(const PrimExpr& e, const std::map<const Object*, int64_t>& env) {
  if (const auto* imm = e.as<IntImmNode>()) return imm->value;
  if (e.as<PrimVarNode>()) return env.at(e.get());
  const auto* b = e.as<PrimBinaryNode>();
  int64_t x = eval(b->a, env), y = eval(b->b, env);
  switch (b->op) {
    case PrimOp::Add: return x + y;
    case PrimOp::Sub: return x - y;
    case PrimOp::Mul: return x * y;
    case PrimOp::FloorDiv: return floordiv_i(x, y);
    case PrimOp::FloorMod: return x - floordiv_i(x, y) * y;
    case PrimOp::Min: return std::min(x, y);
    case PrimOp::Max: return std::max(x, y);
  }
  return 0;
}

class RandomExpr {
 public:
  RandomExpr(uint32_t seed, const std::vector<PrimExpr>& vars) : rng_(seed), vars_(vars) {}
  PrimExpr gen(int depth) {
    int k = pick(depth > 0 ? 10 : 2);
    if (k == 0) return c(pick(13) - 6);
    if (k == 1) return vars_[pick(int(vars_.size()))];
    static const PrimOp ops[] = {PrimOp::Add, PrimOp::Add, PrimOp::Sub, PrimOp::Mul, PrimOp::Mul,
                                 PrimOp::FloorDiv, PrimOp::FloorMod, PrimOp::Min, PrimOp::Max};
    PrimOp op = ops[pick(9)];
    PrimExpr a = gen(depth - 1);
    // Mostly constant divisors (the interesting rules), sometimes symbolic ones.
    PrimExpr b = (op == PrimOp::FloorDiv || op == PrimOp::FloorMod) && pick(4) != 0 ? c(pick(9) - 2) : gen(depth - 1);
    return raw(op, a, b);
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::mt19937 rng_;
  const std::vector<PrimExpr>& vars_;
};

TEST_F(Simplify, RandomExpressionsKeepTheirValue) {
  std::vector<PrimExpr> vars{n, m, k};
  std::mt19937 values(12345);
  int checked = 0, changed = 0;
  for (uint32_t seed = 0; seed < 3000; ++seed) {
    RandomExpr gen(seed, vars);
    PrimExpr e = gen.gen(4);
    PrimExpr simple = simplify(e);
    ASSERT_EQ(simple->dtype, DataType::Int(64));
    // Idempotent and deterministic.
    ASSERT_TRUE(structural_equal(simplify(simple), simple, false))
        << prim_expr_str(e) << " -> " << prim_expr_str(simple) << " -> " << prim_expr_str(simplify(simple));
    ASSERT_TRUE(structural_equal(simplify(e), simple, false));
    changed += !structural_equal(e, simple, false);
    for (int trial = 0; trial < 8; ++trial) {
      std::map<const Object*, int64_t> env;
      for (const auto& v : vars) env[v.get()] = std::uniform_int_distribution<int64_t>(-20, 20)(values);
      int64_t expected;
      try {
        expected = eval(e, env);
      } catch (const DivByZero&) {
        continue;  // the original is undefined here
      }
      int64_t got = eval(simple, env);
      ASSERT_EQ(expected, got) << prim_expr_str(e) << "  simplified to  " << prim_expr_str(simple) << "  at n="
                               << env[n.get()] << " m=" << env[m.get()] << " k=" << env[k.get()];
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(changed, 1000);
}

}  // namespace
}  // namespace partita
