// Structural equality, hashing and diffs.
#include <gtest/gtest.h>

#include <random>

#include "partita/ir/debug_print.h"
#include "partita/ir/dispatch.h"
#include "partita/ir/structural_equal.h"
#include "partita/support/error.h"

namespace partita {
namespace {

const DataType f32 = DataType::Float(32);

Op op(const std::string& name) { return make<OpNode>(name); }

Expr call(const std::string& name, std::vector<Expr> args, Attrs attrs = {}) {
  return make<CallNode>(op(name), std::move(args), std::move(attrs));
}

Constant constant(std::vector<float> values, DataType dtype = f32) {
  std::vector<int64_t> shape{int64_t(values.size())};
  if (dtype == f32)
    return make<ConstantNode>(Tensor::from_bytes(shape, dtype, values.data(), values.size() * sizeof(float)));
  std::vector<double> d(values.begin(), values.end());
  return make<ConstantNode>(Tensor::from_bytes(shape, dtype, d.data(), d.size() * sizeof(double)));
}

/// Knobs for building variants of one function.
struct Spec {
  std::string x = "x", y = "y", lv = "lv", gv = "gv", n = "n";
  DataType dtype = f32;
  int64_t width = 4;
  std::string op1 = "relax.add";
  bool swap_args = false;
  int64_t axis = 1;
  std::vector<float> bytes{1, 2, 3, 4};
  bool use_y_in_second = false;  // the second binding uses y where the original uses x
  std::string fn_attr = "main";
};

// fn(x: (n, width), y: (n, width)) { lv = op1(x, y); c = lv * const; gv = concat(c, x); return gv }
Function build(const Spec& s) {
  PrimVar n = make<PrimVarNode>(s.n);
  auto sinfo = [&] { return tensor_sinfo(std::vector<PrimExpr>{n, int_imm(s.width)}, s.dtype); };
  Var x = make<VarNode>(s.x, sinfo()), y = make<VarNode>(s.y, sinfo());
  Var lv = make<DataflowVarNode>(s.lv, sinfo());
  Var c = make<DataflowVarNode>("c", sinfo());
  Var gv = make<VarNode>(s.gv, tensor_sinfo(std::vector<PrimExpr>{n, int_imm(2 * s.width)}, s.dtype));
  Expr first = s.swap_args ? call(s.op1, {y, x}) : call(s.op1, {x, y});
  Attrs attrs = make<AttrsNode>("relax.attrs.ConcatAttrs",
                                std::vector<std::pair<std::string, AttrValue>>{{"axis", s.axis}});
  std::vector<Binding> bindings{
      make<VarBindingNode>(lv, first),
      make<VarBindingNode>(c, call("relax.multiply", {lv, constant(s.bytes)})),
      make<VarBindingNode>(gv, call("relax.concat", {make<TupleNode>(std::vector<Expr>{c, s.use_y_in_second ? y : x})},
                                    attrs)),
  };
  Expr body = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(bindings, true)}, gv);
  return make<FunctionNode>(std::vector<Var>{x, y}, body, gv->struct_info_, true,
                            DictAttrs{{"global_symbol", s.fn_attr}});
}

IRModule module_of(const Function& f, const std::string& name = "main") {
  IRModule m = IRModule::create();
  m.add(make<GlobalVarNode>(name), f);
  return m;
}

void expect_differs(const Spec& s, const std::string& what) {
  Function a = build(Spec{}), b = build(s);
  EXPECT_FALSE(structural_equal(a, b)) << what;
  auto diff = structural_diff(a, b);
  ASSERT_TRUE(diff.has_value()) << what;
  EXPECT_EQ(diff->rfind("root.", 0), 0u) << *diff;
  EXPECT_THROW(assert_structural_equal(a, b), Error) << what;
}

TEST(StructuralEqual, EqualUpToRenaming) {
  Spec renamed;
  renamed.x = "a", renamed.y = "b", renamed.lv = "t0", renamed.gv = "out", renamed.n = "m";
  Function a = build(Spec{}), b = build(renamed);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_EQ(structural_diff(a, b), std::nullopt);
  EXPECT_NO_THROW(assert_structural_equal(a, b));
  EXPECT_TRUE(structural_equal(module_of(a), module_of(b)));
  EXPECT_EQ(structural_hash(module_of(a)), structural_hash(module_of(b)));
}

TEST(StructuralEqual, EachKindOfDifference) {
  Spec s;
  s = Spec{}; s.dtype = DataType::Float(16); expect_differs(s, "dtype");
  s = Spec{}; s.width = 5; expect_differs(s, "shape");
  s = Spec{}; s.axis = 0; expect_differs(s, "attr value");
  s = Spec{}; s.op1 = "relax.subtract"; expect_differs(s, "op");
  s = Spec{}; s.swap_args = true; expect_differs(s, "arg order");
  s = Spec{}; s.use_y_in_second = true; expect_differs(s, "var used in a different position");
  s = Spec{}; s.bytes = {1, 2, 3, 5}; expect_differs(s, "constant bytes");
  s = Spec{}; s.fn_attr = "other"; expect_differs(s, "function attribute");
}

TEST(StructuralEqual, DiffPathNamesTheFirstDifference) {
  Spec s;
  s.swap_args = true;
  auto diff = structural_diff(module_of(build(Spec{})), module_of(build(s)));
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "root.functions[\"main\"].body.blocks[0].bindings[0].value.args[0]: lhs Var x vs rhs Var y "
                   "(lhs Var x is bound to rhs Var x)");
  s = Spec{};
  s.bytes = {1, 2, 3, 5};
  diff = structural_diff(module_of(build(Spec{})), module_of(build(s)));
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "root.functions[\"main\"].body.blocks[0].bindings[1].value.args[1].data: "
                   "lhs Tensor(shape=[4], dtype=float32) vs rhs Tensor(shape=[4], dtype=float32) (bytes differ)");
  s = Spec{};
  s.axis = 2;
  diff = structural_diff(build(Spec{}), build(s));
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "root.body.blocks[0].bindings[2].value.attrs.values[\"axis\"]: lhs 1 vs rhs 2");
}

TEST(StructuralEqual, DiffVarVersusConstant) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, f32));
  Var lv = make<VarNode>("lv", tensor_sinfo(std::vector<int64_t>{4}, f32));
  Var gv = make<VarNode>("gv", tensor_sinfo(std::vector<int64_t>{4}, f32));
  auto fn = [&](Expr arg) {
    std::vector<Binding> bs{make<VarBindingNode>(lv, call("relax.exp", {x})),
                            make<VarBindingNode>(gv, call("relax.add", {arg, lv}))};
    return make<FunctionNode>(std::vector<Var>{x},
                              make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(bs, false)}, gv),
                              gv->struct_info_);
  };
  auto diff = structural_diff(module_of(fn(x)), module_of(fn(constant({1, 2, 3, 4}))));
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "root.functions[\"main\"].body.blocks[0].bindings[1].value.args[0]: lhs Var x vs rhs Constant "
                   "Tensor(shape=[4], dtype=float32)");
  try {
    assert_structural_equal(fn(x), fn(constant({1, 2, 3, 4})));
    FAIL() << "expected a ValueError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(std::string(e.what()).find("root.body.blocks[0].bindings[1].value.args[0]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("lhs part:\nVar x"), std::string::npos) << e.what();
  }
}

TEST(StructuralEqual, VarsAreBijective) {
  auto sinfo = tensor_sinfo(std::vector<int64_t>{2}, f32);
  Var a = make<VarNode>("a", sinfo), b = make<VarNode>("b", sinfo), c = make<VarNode>("c", sinfo);
  // add(a, a) vs add(b, c): a cannot map to both b and c.
  EXPECT_FALSE(structural_equal(call("relax.add", {a, a}), call("relax.add", {b, c})));
  // add(a, b) vs add(c, c): c cannot be the image of both a and b.
  EXPECT_FALSE(structural_equal(call("relax.add", {a, b}), call("relax.add", {c, c})));
  EXPECT_TRUE(structural_equal(call("relax.add", {a, b}), call("relax.add", {b, a})));  // free vars map
  EXPECT_FALSE(structural_equal(call("relax.add", {a, b}), call("relax.add", {b, a}), false));
  EXPECT_TRUE(structural_equal(call("relax.add", {a, b}), call("relax.add", {a, b}), false));
  // Var vs DataflowVar, and a var's struct info.
  EXPECT_FALSE(structural_equal(a, make<DataflowVarNode>("a", sinfo)));
  EXPECT_FALSE(structural_equal(a, make<VarNode>("a", tensor_sinfo(std::vector<int64_t>{3}, f32))));
  // Names of local variables do not matter; names of globals and ops do.
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_FALSE(structural_equal(make<GlobalVarNode>("f"), make<GlobalVarNode>("g")));
  EXPECT_TRUE(structural_equal(make<GlobalVarNode>("f"), make<GlobalVarNode>("f")));
  EXPECT_FALSE(structural_equal(op("relax.add"), op("relax.subtract")));
}

TEST(StructuralEqual, MapFreeVarsOffStillMapsDefinitions) {
  Spec renamed;
  renamed.x = "p", renamed.n = "k";
  EXPECT_TRUE(structural_equal(build(Spec{}), build(renamed), /*map_free_vars=*/false));
  // A free symbolic variable in a bare struct info is not a definition.
  PrimVar n = make<PrimVarNode>("n"), m = make<PrimVarNode>("n");
  EXPECT_FALSE(structural_equal(tensor_sinfo(std::vector<PrimExpr>{n}, f32),
                                tensor_sinfo(std::vector<PrimExpr>{m}, f32), false));
  EXPECT_TRUE(structural_equal(tensor_sinfo(std::vector<PrimExpr>{n}, f32),
                               tensor_sinfo(std::vector<PrimExpr>{m}, f32), true));
}

TEST(StructuralEqual, ExprStructInfoIsNotCompared) {
  Expr a = call("relax.exp", {constant({1})}), b = call("relax.exp", {constant({1})});
  a->struct_info_ = tensor_sinfo(std::vector<int64_t>{1}, f32);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, Modules) {
  Function f = build(Spec{});
  IRModule a = module_of(f), b = module_of(f, "other");
  auto diff = structural_diff(a, b);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "root.functions: lhs has key \"main\" where rhs has key \"other\"");

  IRModule c = module_of(f), d = module_of(build(Spec{}));
  float v1[2] = {1, 2}, v2[2] = {1, 3};
  c.cow()->const_name_to_constant["w"] = Tensor::from_bytes({2}, f32, v1, sizeof v1);
  EXPECT_FALSE(structural_equal(c, d));
  d.cow()->const_name_to_constant["w"] = Tensor::from_bytes({2}, f32, v2, sizeof v2);
  EXPECT_EQ(*structural_diff(c, d),
            "root.const_name_to_constant[\"w\"]: lhs Tensor(shape=[2], dtype=float32) vs rhs "
            "Tensor(shape=[2], dtype=float32) (bytes differ)");
  d.cow()->const_name_to_constant["w"] = Tensor::from_bytes({2}, f32, v1, sizeof v1);
  EXPECT_TRUE(structural_equal(c, d));
  EXPECT_EQ(structural_hash(c), structural_hash(d));
  d.cow()->attrs["external_mods"] = make<StringImmNode>("x");
  EXPECT_FALSE(structural_equal(c, d));
  // Extra function.
  IRModule e = module_of(f);
  e.add(make<GlobalVarNode>("zzz"), make<ExternFuncNode>("zzz"));
  EXPECT_EQ(*structural_diff(module_of(f), e), "root.functions: rhs has key \"zzz\" missing in lhs");
}

// ---- random small expressions: equality implies equal hashes ----

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  // Builds a random expression; the same seed gives the same structure with fresh variables.
  Expr expr(int depth) {
    vars_.clear();
    pvars_.clear();
    for (int i = 0; i < 3; ++i) pvars_.push_back(make<PrimVarNode>("n" + std::to_string(i)));
    for (int i = 0; i < 3; ++i) vars_.push_back(make<VarNode>("v" + std::to_string(i), sinfo()));
    return node(depth);
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  PrimExpr prim(int depth) {
    int k = pick(depth > 0 ? 4 : 2);
    if (k == 0) return make<IntImmNode>(pick(3));
    if (k == 1) return pvars_[pick(3)];
    static const PrimOp ops[] = {PrimOp::Add, PrimOp::Mul, PrimOp::FloorDiv, PrimOp::Min};
    return make<PrimBinaryNode>(ops[pick(4)], prim(depth - 1), prim(depth - 1));
  }
  StructInfo sinfo() {
    switch (pick(3)) {
      case 0: return tensor_sinfo(std::vector<PrimExpr>{prim(1), int_imm(pick(3))}, pick(2) ? f32 : DataType::Int(32));
      case 1: return tensor_sinfo_ndim(f32, pick(3));
      default: return prim_sinfo(DataType::Int(64));
    }
  }
  Expr node(int depth) {
    int k = pick(depth > 0 ? 7 : 3);
    switch (k) {
      case 0: return vars_[pick(3)];
      case 1: return make<PrimValueNode>(prim(1));
      case 2: return constant({float(pick(3))});
      case 3: return make<TupleNode>(std::vector<Expr>{node(depth - 1), node(depth - 1)});
      case 4: return call(pick(2) ? "relax.add" : "relax.multiply", {node(depth - 1), node(depth - 1)});
      case 5: return make<TupleGetItemNode>(node(depth - 1), pick(2));
      default: {
        Var bound = make<VarNode>("b", sinfo());
        std::vector<Binding> bs{make<VarBindingNode>(bound, node(depth - 1))};
        Expr body = pick(2) ? Expr(bound) : node(depth - 1);
        return make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(bs, pick(2))}, body);
      }
    }
  }
  std::mt19937 rng_;
  std::vector<PrimVar> pvars_;
  std::vector<Var> vars_;
};

TEST(StructuralHash, ConsistentWithEqualityOnRandomExpressions) {
  std::vector<Expr> exprs;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    Gen g1(seed), g2(seed);
    Expr a = g1.expr(4), b = g2.expr(4);  // same structure, different variable objects
    ASSERT_TRUE(structural_equal(a, b)) << *structural_diff(a, b);
    ASSERT_EQ(structural_hash(a), structural_hash(b)) << debug_print(a);
    exprs.push_back(a);
  }
  int equal_pairs = 0, collisions = 0;
  for (size_t i = 0; i < exprs.size(); ++i) {
    for (size_t j = i + 1; j < exprs.size(); ++j) {
      bool eq = structural_equal(exprs[i], exprs[j]);
      bool heq = structural_hash(exprs[i]) == structural_hash(exprs[j]);
      EXPECT_EQ(eq, !structural_diff(exprs[i], exprs[j]).has_value());
      if (eq) {
        ++equal_pairs;
        EXPECT_TRUE(heq) << debug_print(exprs[i]) << "\n---\n" << debug_print(exprs[j]);
      } else if (heq) {
        ++collisions;
      }
    }
  }
  EXPECT_LT(collisions, 3);  // out of ~45k unequal pairs
  (void)equal_pairs;
}

TEST(StructuralHash, DistinguishesSmallChanges) {
  Function base = build(Spec{});
  size_t h = structural_hash(base);
  Spec s;
  s = Spec{}; s.dtype = DataType::Float(16); EXPECT_NE(structural_hash(build(s)), h);
  s = Spec{}; s.swap_args = true; EXPECT_NE(structural_hash(build(s)), h);
  s = Spec{}; s.use_y_in_second = true; EXPECT_NE(structural_hash(build(s)), h);
  s = Spec{}; s.bytes = {1, 2, 3, 5}; EXPECT_NE(structural_hash(build(s)), h);
  s = Spec{}; s.axis = 3; EXPECT_NE(structural_hash(build(s)), h);
}

// ---- scale ----

Expr long_chain(int n, const std::string& prefix) {
  auto sinfo = tensor_sinfo(std::vector<int64_t>{16, 16}, f32);
  Var x = make<VarNode>(prefix + "x", sinfo);
  Op add = op("relax.add");
  std::vector<Binding> bs;
  bs.reserve(n);
  Var prev = x;
  for (int i = 0; i < n; ++i) {
    Var v = make<DataflowVarNode>(prefix + std::to_string(i), sinfo);
    bs.push_back(make<VarBindingNode>(v, make<CallNode>(add, std::vector<Expr>{prev, x})));
    prev = v;
  }
  return make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(std::move(bs), true)}, prev);
}

// Deep graphs: 100k chained bindings compare and hash without recursing per binding (no stack
// overflow), and a difference in the last binding is still found. Speed is measured in
// benchmarks, not asserted here.
TEST(StructuralEqual, HundredThousandBindings) {
  Expr a = long_chain(100000, "a"), b = long_chain(100000, "b");
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  Expr c = long_chain(100001, "c");
  EXPECT_FALSE(structural_equal(a, c));
  EXPECT_NE(structural_hash(a), structural_hash(c));
}

TEST(DebugPrint, OneLinePerField) {
  std::string text = debug_print(build(Spec{}));
  EXPECT_EQ(text.rfind("Function\n  params: [\n    [0] Var x\n      struct_info: TensorStructInfo\n"
                       "        shape: [n, 4]\n        dtype: float32\n        vdevice: null\n        ndim: 2\n", 0),
            0u)
      << text;
  EXPECT_NE(text.find("attrs: {\n    \"global_symbol\": \"main\"\n  }"), std::string::npos) << text;
  EXPECT_EQ(short_print(make<PrimBinaryNode>(PrimOp::Mul, make<PrimVarNode>("n"), int_imm(2))),
            "PrimBinary (n * 2)");
  EXPECT_EQ(prim_expr_str(make<PrimBinaryNode>(
                PrimOp::FloorDiv, make<PrimBinaryNode>(PrimOp::Add, make<PrimVarNode>("n"), int_imm(1)), int_imm(2))),
            "(n + 1) // 2");
}

}  // namespace
}  // namespace partita
