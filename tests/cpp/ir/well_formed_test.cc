// well_formed: one test per kind of malformation, each asserting it is detected.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"

namespace partita {
namespace {

const DataType f32 = DataType::Float(32);

StructInfo t4() { return tensor_sinfo(std::vector<int64_t>{4}, f32); }
Var tvar(const std::string& name) { return make<VarNode>(name, t4()); }
DataflowVar dfvar(const std::string& name) { return make<DataflowVarNode>(name, t4()); }
Expr add(Expr a, Expr b) { return op::make_call("relax.add", {std::move(a), std::move(b)}); }

// A normalized call (struct info filled).
Expr nadd(Expr a, Expr b) {
  BlockBuilder bb;
  return bb.normalize(add(std::move(a), std::move(b)));
}

BindingBlock block(std::vector<Binding> bindings, bool dataflow = false) {
  return make<BindingBlockNode>(std::move(bindings), dataflow);
}
Binding bind(Var v, Expr e) { return make<VarBindingNode>(std::move(v), std::move(e)); }

Expr seq(std::vector<BindingBlock> blocks, Expr body) {
  auto s = make<SeqExprNode>(std::move(blocks), body);
  s->struct_info_ = body->struct_info_ ? body->struct_info_ : t4();
  return s;
}

Function func(std::vector<Var> params, Expr body, const std::string& name = "main") {
  DictAttrs attrs;
  attrs["global_symbol"] = name;
  auto f = make<FunctionNode>(std::move(params), std::move(body), t4(), true, attrs);
  std::vector<StructInfo> ps;
  for (auto& p : f->params) ps.push_back(p->struct_info_);
  f->struct_info_ = make<FuncStructInfoNode>(ps, t4());
  return f;
}

IRModule module_of(const Function& f, const std::string& name = "main") {
  IRModule m = IRModule::create();
  auto gv = make<GlobalVarNode>(name);
  gv->struct_info_ = f->struct_info_;
  m.add(gv, f);
  return m;
}

// True when some reason mentions `needle`.
bool reports(const IRModule& m, const std::string& needle) {
  for (auto& e : well_formed_errors(m))
    if (e.find(needle) != std::string::npos) return true;
  return false;
}

TEST(WellFormed, BuilderModuleIsWellFormed) {
  Var x = tvar("x"), y = tvar("y");
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var lv = bb.emit(add(x, y));
  Var gv = bb.emit_output(lv);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  EXPECT_TRUE(well_formed_errors(bb.get()).empty());
  EXPECT_TRUE(well_formed(bb.get()));
}

TEST(WellFormed, UndefinedVar) {
  Var x = tvar("x"), ghost = tvar("ghost"), a = tvar("a");
  auto m = module_of(func({x}, seq({block({bind(a, nadd(x, ghost))})}, a)));
  EXPECT_TRUE(reports(m, "'ghost' is used but not defined"));
  EXPECT_FALSE(well_formed(m));
}

TEST(WellFormed, VarDefinedTwice) {
  Var x = tvar("x"), a = tvar("a");
  auto m = module_of(func({x}, seq({block({bind(a, nadd(x, x)), bind(a, nadd(x, x))})}, a)));
  EXPECT_TRUE(reports(m, "'a' is defined more than once"));
}

TEST(WellFormed, DataflowVarUsedOutsideItsBlock) {
  Var x = tvar("x");
  DataflowVar lv = dfvar("lv");
  auto m = module_of(func({x}, seq({block({bind(lv, nadd(x, x))}, true)}, lv)));
  EXPECT_TRUE(reports(m, "DataflowVar 'lv' is used outside its dataflow block"));
}

TEST(WellFormed, DataflowVarAsParameter) {
  DataflowVar p = dfvar("p");
  Var a = tvar("a");
  auto m = module_of(func({p}, seq({block({bind(a, nadd(p, p))})}, a)));
  EXPECT_TRUE(reports(m, "DataflowVar 'p' is used as a function parameter"));
}

TEST(WellFormed, DataflowVarDefinedOutsideDataflowBlock) {
  Var x = tvar("x"), a = tvar("a");
  DataflowVar lv = dfvar("lv");
  auto m = module_of(func({x}, seq({block({bind(lv, nadd(x, x)), bind(a, lv)})}, a)));
  EXPECT_TRUE(reports(m, "DataflowVar 'lv' is defined outside a dataflow block"));
}

TEST(WellFormed, MissingStructInfo) {
  Var x = tvar("x");
  Var a = make<VarNode>("a", StructInfo());
  Expr raw = add(x, x);  // never normalized
  auto m = module_of(func({x}, seq({block({bind(a, raw)})}, a)));
  EXPECT_TRUE(reports(m, "'a' has no struct info"));
  EXPECT_TRUE(reports(m, "a Call has no struct info"));
  EXPECT_TRUE(well_formed_errors(m, /*check_struct_info=*/false).empty());
}

TEST(WellFormed, CallArityMismatchWithGlobalCallee) {
  Var p = tvar("p");
  Function callee = func({p}, seq({}, p), "callee");
  IRModule m = module_of(callee, "callee");
  Var x = tvar("x"), a = tvar("a");
  auto call = make<CallNode>(m.get_global_var("callee"), std::vector<Expr>{x, x});
  call->struct_info_ = t4();
  m.add(make<GlobalVarNode>("main"), func({x}, seq({block({bind(a, call)})}, a)));
  EXPECT_TRUE(reports(m, "call of function 'callee' has 2 argument(s) but its signature takes 1"));
}

TEST(WellFormed, CallArgumentStructInfoMismatch) {
  Var p = tvar("p");
  Function callee = func({p}, seq({}, p), "callee");
  IRModule m = module_of(callee, "callee");
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, DataType::Int(32)));
  Var a = tvar("a");
  auto call = make<CallNode>(m.get_global_var("callee"), std::vector<Expr>{x});
  call->struct_info_ = t4();
  m.add(make<GlobalVarNode>("main"), func({x}, seq({block({bind(a, call)})}, a)));
  EXPECT_TRUE(reports(m, "call of function 'callee': argument 0"));
}

TEST(WellFormed, CallOfLocalVarWithWrongArity) {
  Var fvar = make<VarNode>("f", make<FuncStructInfoNode>(std::vector<StructInfo>{t4()}, t4()));
  Var x = tvar("x"), a = tvar("a");
  auto call = make<CallNode>(fvar, std::vector<Expr>{});
  call->struct_info_ = t4();
  auto m = module_of(func({fvar, x}, seq({block({bind(a, call)})}, a)));
  EXPECT_TRUE(reports(m, "call of variable 'f' has 0 argument(s)"));
}

TEST(WellFormed, SymbolicVarUsedBeforeDefinition) {
  auto n = make<PrimVarNode>("n");
  Var x = tvar("x");
  Var s = make<VarNode>("s", shape_sinfo({n}));
  auto shape = make<ShapeExprNode>(std::vector<PrimExpr>{n});
  shape->struct_info_ = shape_sinfo({n});
  auto m = module_of(func({x}, seq({block({bind(s, shape)})}, x)));
  EXPECT_TRUE(reports(m, "symbolic variable 'n' is used before it is defined"));

  // Defined by a match_cast first: fine.
  Var y = make<VarNode>("y", tensor_sinfo(std::vector<PrimExpr>{n}, f32));
  Var s2 = make<VarNode>("s2", shape_sinfo({n}));
  auto shape2 = make<ShapeExprNode>(std::vector<PrimExpr>{n});
  shape2->struct_info_ = shape_sinfo({n});
  auto ok = module_of(func({x}, seq({block({make<MatchCastNode>(y, x, y->struct_info_), bind(s2, shape2)})}, x)));
  EXPECT_TRUE(well_formed_errors(ok).empty());
}

TEST(WellFormed, GlobalVarNotInModule) {
  Var x = tvar("x"), a = tvar("a");
  auto gv = make<GlobalVarNode>("missing");
  gv->struct_info_ = make<FuncStructInfoNode>(std::vector<StructInfo>{t4()}, t4());
  auto call = make<CallNode>(gv, std::vector<Expr>{x});
  call->struct_info_ = t4();
  auto m = module_of(func({x}, seq({block({bind(a, call)})}, a)));
  EXPECT_TRUE(reports(m, "GlobalVar 'missing' is not a function of the module"));
}

TEST(WellFormed, GlobalSymbolDiffersFromName) {
  Var x = tvar("x");
  auto m = module_of(func({x}, seq({}, x), "other"), "main");
  EXPECT_TRUE(reports(m, "\"global_symbol\" 'other'"));
}

TEST(WellFormed, FunctionBodyNotSeqExpr) {
  Var x = tvar("x");
  auto m = module_of(func({x}, nadd(x, x)));
  EXPECT_TRUE(reports(m, "function body is not a SeqExpr"));
}

TEST(WellFormed, SeqExprBodyNotLeaf) {
  Var x = tvar("x");
  auto m = module_of(func({x}, seq({}, nadd(x, x))));
  EXPECT_TRUE(reports(m, "SeqExpr body is a Call, not a leaf"));
}

TEST(WellFormed, NestedCallArgument) {
  Var x = tvar("x"), a = tvar("a");
  Expr inner = nadd(x, x);
  auto outer = make<CallNode>(op::get_op("relax.add"), std::vector<Expr>{inner, x});
  outer->struct_info_ = t4();
  auto m = module_of(func({x}, seq({block({bind(a, outer)})}, a)));
  EXPECT_TRUE(reports(m, "call argument is a Call"));
}

TEST(WellFormed, LogsReasonsAndNeverThrows) {
  Var x = tvar("x"), ghost = tvar("ghost");
  auto m = module_of(func({x}, seq({}, ghost)));
  ::testing::internal::CaptureStderr();
  bool ok = true;
  EXPECT_NO_THROW(ok = well_formed(m));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(ok);
  EXPECT_NE(err.find("well_formed: function 'main': variable 'ghost'"), std::string::npos);
  // Null pieces are reported, not crashed on.
  auto broken = module_of(func({x}, seq({block({bind(tvar("a"), Expr())})}, x)));
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(ok = well_formed(broken));
  ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace partita

namespace partita {
namespace {

TEST(WellFormed, VarDefinedInBranchIsNotVisibleAfterIf) {
  Var c = make<VarNode>("c", prim_sinfo(DataType::Bool()));
  Var x = tvar("x"), inner = tvar("inner"), r = tvar("r");
  Expr then_b = seq({block({bind(inner, nadd(x, x))})}, inner);
  Expr else_b = seq({}, x);
  auto iff = make<IfNode>(c, then_b, else_b);
  iff->struct_info_ = t4();
  Var after = tvar("after");
  auto m = module_of(func({c, x}, seq({block({bind(r, iff), bind(after, nadd(inner, r))})}, after)));
  EXPECT_TRUE(reports(m, "'inner' is used but not defined"));
}

TEST(WellFormed, IfBranchNotSeqExpr) {
  Var c = make<VarNode>("c", prim_sinfo(DataType::Bool()));
  Var x = tvar("x"), r = tvar("r");
  auto iff = make<IfNode>(c, x, seq({}, x));
  iff->struct_info_ = t4();
  auto m = module_of(func({c, x}, seq({block({bind(r, iff)})}, r)));
  EXPECT_TRUE(reports(m, "an If branch is not a SeqExpr"));
}

TEST(WellFormed, NestedFunctionMayCaptureOuterVars) {
  Var x = tvar("x"), p = tvar("p"), a = tvar("a"), inner_result = tvar("ir");
  Function inner = func({p}, seq({block({bind(inner_result, nadd(p, x))})}, inner_result), "inner");
  Var fv = make<VarNode>("local", inner->struct_info_);
  auto call = make<CallNode>(fv, std::vector<Expr>{x});
  call->struct_info_ = t4();
  auto m = module_of(func({x}, seq({block({bind(fv, inner), bind(a, call)})}, a)));
  EXPECT_TRUE(well_formed_errors(m).empty());
}

}  // namespace
}  // namespace partita
