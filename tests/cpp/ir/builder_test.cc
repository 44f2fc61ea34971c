// BlockBuilder: naming, normalization, misuse errors, module-level helpers.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita {
namespace {

const DataType f32 = DataType::Float(32);

Var tvar(const std::string& name, std::vector<int64_t> shape) {
  return make<VarNode>(name, tensor_sinfo(std::move(shape), f32));
}
Expr mul(Expr a, Expr b) { return op::make_call("relax.multiply", {std::move(a), std::move(b)}); }
Expr add(Expr a, Expr b) { return op::make_call("relax.add", {std::move(a), std::move(b)}); }

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(BlockBuilder, SeedProgramNamesAndShape) {
  Var x = tvar("x", {10, 10}), y = tvar("y", {10, 10});
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var lv0 = bb.emit(mul(x, y));
  Var gv = bb.emit_output(lv0);
  bb.end_dataflow();
  GlobalVar main = bb.emit_func_output(gv);
  IRModule mod = bb.get();

  EXPECT_EQ(lv0->name_hint, "lv");
  EXPECT_TRUE(lv0.as<DataflowVarNode>());
  EXPECT_EQ(gv->name_hint, "gv");
  EXPECT_FALSE(gv.as<DataflowVarNode>());
  EXPECT_EQ(main->name_hint, "main");
  ASSERT_TRUE(mod.contains("main"));
  auto f = mod.lookup("main").as_ref<FunctionNode>();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->attr_string("global_symbol"), std::optional<std::string>("main"));
  auto seq = f->body.as_ref<SeqExprNode>();
  ASSERT_TRUE(seq);
  ASSERT_EQ(seq->blocks.size(), 1u);
  EXPECT_TRUE(seq->blocks[0]->is_dataflow);
  EXPECT_EQ(seq->blocks[0]->bindings.size(), 2u);
  EXPECT_TRUE(seq->body == gv);
  EXPECT_TRUE(structural_equal(f->ret_struct_info, tensor_sinfo(std::vector<int64_t>{10, 10}, f32)));
  ASSERT_TRUE(f->struct_info_);
  EXPECT_TRUE(f->struct_info_.as<FuncStructInfoNode>());
  EXPECT_TRUE(main->struct_info_.as<FuncStructInfoNode>());
  EXPECT_TRUE(well_formed(mod));
}

TEST(BlockBuilder, NameSupplyFollowsTvm) {
  Var x = tvar("x", {4});
  BlockBuilder bb;
  bb.begin_function("f", {x});
  Var a = bb.emit(add(x, x));
  Var b = bb.emit(add(x, x));
  Var c = bb.emit(add(x, x), "gv");
  Var d = bb.emit(add(x, x), "relax.out");
  Var e = bb.emit(add(x, x), "relax.out");
  bb.begin_dataflow();
  Var l0 = bb.emit(add(x, x));
  Var l1 = bb.emit(add(x, x));
  Var o = bb.emit_output(l1);
  bb.end_dataflow();
  bb.emit_func_output(o);
  EXPECT_EQ(a->name_hint, "gv");
  EXPECT_EQ(b->name_hint, "gv1");
  EXPECT_EQ(c->name_hint, "gv2");
  EXPECT_EQ(d->name_hint, "relax_out");
  EXPECT_EQ(e->name_hint, "relax_out1");
  EXPECT_EQ(l0->name_hint, "lv");
  EXPECT_EQ(l1->name_hint, "lv1");
  EXPECT_EQ(o->name_hint, "gv3");
  EXPECT_EQ(bb.get_unique_name("lv"), "lv2");
}

TEST(BlockBuilder, NestedCallsAreBoundInOrder) {
  Var x = tvar("x", {2, 3}), y = tvar("y", {2, 3});
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var v = bb.emit(mul(add(x, y), y));
  Var out = bb.emit_output(v);
  bb.end_dataflow();
  bb.emit_func_output(out);
  auto f = bb.get().lookup("main").as_ref<FunctionNode>();
  auto block = f->body.as<SeqExprNode>()->blocks.at(0);
  ASSERT_EQ(block->bindings.size(), 3u);
  // The inner add is bound first, to a fresh dataflow var, and the outer call uses it.
  auto first = block->bindings[0].as_ref<VarBindingNode>();
  EXPECT_EQ(first->var->name_hint, "lv");
  EXPECT_EQ(first->value.as<CallNode>()->op.as<OpNode>()->name, "relax.add");
  auto second = block->bindings[1].as_ref<VarBindingNode>();
  EXPECT_EQ(second->var->name_hint, "lv1");
  EXPECT_TRUE(second->value.as<CallNode>()->args[0] == first->var);
  for (auto& b : block->bindings) {
    EXPECT_TRUE(b->var->struct_info_);
    EXPECT_TRUE(binding_value(*b)->struct_info_);
  }
  EXPECT_TRUE(well_formed(bb.get()));
}

TEST(BlockBuilder, NormalizeFillsStructInfo) {
  BlockBuilder bb;
  Expr shape = bb.normalize(make<ShapeExprNode>(std::vector<PrimExpr>{int_imm(2), int_imm(3)}));
  EXPECT_TRUE(structural_equal(shape->struct_info_, shape_sinfo({int_imm(2), int_imm(3)})));
  Expr pv = bb.normalize(make<PrimValueNode>(int_imm(7)));
  EXPECT_TRUE(pv->struct_info_.as<PrimStructInfoNode>());
  Expr s = bb.normalize(make<StringImmNode>("hi"));
  EXPECT_TRUE(s->struct_info_.as<ObjectStructInfoNode>());
  Expr c = bb.normalize(make<ConstantNode>(Tensor::empty({3}, f32)));
  EXPECT_TRUE(structural_equal(c->struct_info_, tensor_sinfo(std::vector<int64_t>{3}, f32)));
  Var x = tvar("x", {3});
  Expr t = bb.normalize(make<TupleNode>(std::vector<Expr>{x, c}));
  auto* ts = t->struct_info_.as<TupleStructInfoNode>();
  ASSERT_TRUE(ts);
  EXPECT_EQ(ts->fields.size(), 2u);
  Expr item = bb.normalize(make<TupleGetItemNode>(t, 1));
  EXPECT_TRUE(structural_equal(item->struct_info_, c->struct_info_));
  EXPECT_NE(error_of([&] { bb.normalize(make<TupleGetItemNode>(t, 5)); }), "");
  EXPECT_NE(error_of([&] { bb.normalize(make<VarNode>("nosinfo", StructInfo())); }), "");
}

TEST(BlockBuilder, NormalizeFunctionWrapsBodyInSeqExpr) {
  Var x = tvar("x", {4});
  // The body is a nested call, not yet in normal form.
  auto f = make<FunctionNode>(std::vector<Var>{x}, add(mul(x, x), x), StructInfo());
  BlockBuilder bb;
  Expr n = bb.normalize(f);
  auto* fn = n.as<FunctionNode>();
  ASSERT_TRUE(fn);
  auto* seq = fn->body.as<SeqExprNode>();
  ASSERT_TRUE(seq);
  ASSERT_EQ(seq->blocks.size(), 1u);
  EXPECT_FALSE(seq->blocks[0]->is_dataflow);
  EXPECT_EQ(seq->blocks[0]->bindings.size(), 2u);
  EXPECT_TRUE(seq->body.as<VarNode>());
  EXPECT_TRUE(structural_equal(fn->ret_struct_info, tensor_sinfo(std::vector<int64_t>{4}, f32)));
  EXPECT_TRUE(fn->struct_info_.as<FuncStructInfoNode>());
  // A normalized function normalizes to itself.
  EXPECT_TRUE(bb.normalize(n) == n);
}

TEST(BlockBuilder, NormalizeIfBranchesAndLca) {
  Var c = make<VarNode>("c", prim_sinfo(DataType::Bool()));
  Var x = tvar("x", {4}), y = tvar("y", {5});
  auto iff = make<IfNode>(c, add(x, x), y);
  auto f = make<FunctionNode>(std::vector<Var>{c, x, y}, iff, StructInfo());
  BlockBuilder bb;
  Expr nf = bb.normalize(f);
  auto* fn = nf.as<FunctionNode>();
  ASSERT_TRUE(fn);
  auto* seq = fn->body.as<SeqExprNode>();
  ASSERT_TRUE(seq);
  // The If itself is bound to a var; its branches are SeqExprs.
  auto* b = seq->blocks.at(0)->bindings.at(0).as<VarBindingNode>();
  auto* nif = b->value.as<IfNode>();
  ASSERT_TRUE(nif);
  EXPECT_TRUE(nif->true_branch.as<SeqExprNode>());
  EXPECT_TRUE(nif->false_branch.as<SeqExprNode>());
  // (4,) vs (5,): same ndim and dtype, different shape.
  EXPECT_TRUE(structural_equal(nif->struct_info_, tensor_sinfo_ndim(f32, 1)));
}

TEST(BlockBuilder, FlattensNestedSeqExprAndMergesBlocks) {
  Var x = tvar("x", {4});
  Var a = make<VarNode>("a", StructInfo());
  Var b = make<VarNode>("b", StructInfo());
  auto inner = make<SeqExprNode>(
      std::vector<BindingBlock>{make<BindingBlockNode>(std::vector<Binding>{make<VarBindingNode>(a, add(x, x))}, false)},
      a);
  auto outer = make<SeqExprNode>(
      std::vector<BindingBlock>{
          make<BindingBlockNode>(std::vector<Binding>{make<VarBindingNode>(b, inner)}, false),
          make<BindingBlockNode>(std::vector<Binding>{}, true)},
      b);
  BlockBuilder bb;
  Expr ns = bb.normalize(outer);
  auto* seq = ns.as<SeqExprNode>();
  ASSERT_TRUE(seq);
  ASSERT_EQ(seq->blocks.size(), 1u);
  ASSERT_EQ(seq->blocks[0]->bindings.size(), 2u);
  EXPECT_TRUE(seq->blocks[0]->bindings[0]->var == a);
  EXPECT_TRUE(seq->blocks[0]->bindings[1].as<VarBindingNode>()->value == a);
}

TEST(BlockBuilder, MisuseErrors) {
  Var x = tvar("x", {4});
  {
    BlockBuilder bb;
    EXPECT_NE(error_of([&] { bb.emit(add(x, x)); }).find("outside"), std::string::npos);
    EXPECT_NE(error_of([&] { bb.emit_func_output(x); }), "");
    EXPECT_NE(error_of([&] { bb.begin_dataflow(); }), "");
    EXPECT_NE(error_of([&] { bb.end_block(); }), "");
  }
  {
    BlockBuilder bb;
    bb.begin_function("f", {x});
    EXPECT_NE(error_of([&] { bb.emit_output(x); }).find("dataflow"), std::string::npos);
    EXPECT_NE(error_of([&] { bb.begin_function("g", {}); }), "");
    EXPECT_NE(error_of([&] { bb.end_dataflow(); }), "");
    bb.begin_dataflow();
    Var lv = bb.emit(add(x, x));
    EXPECT_NE(error_of([&] { bb.emit_func_output(lv); }).find("DataflowVar"), std::string::npos);
    EXPECT_NE(error_of([&] { bb.emit_match_cast(x, tuple_sinfo({})); }), "");
  }
  {
    BlockBuilder bb;
    Var bad = make<VarNode>("p", StructInfo());
    EXPECT_NE(error_of([&] { bb.begin_function("f", {bad}); }).find("'p'"), std::string::npos);
  }
}

TEST(BlockBuilder, MatchCastDefinesStructInfo) {
  Var x = make<VarNode>("x", tensor_sinfo_ndim(f32, 1));
  auto n = make<PrimVarNode>("n");
  BlockBuilder bb;
  bb.begin_function("f", {x});
  Var y = bb.emit_match_cast(x, tensor_sinfo(std::vector<PrimExpr>{n}, f32));
  Var z = bb.emit(add(y, y));
  bb.emit_func_output(z);
  EXPECT_TRUE(structural_equal(y->struct_info_, tensor_sinfo(std::vector<PrimExpr>{n}, f32)));
  EXPECT_TRUE(structural_equal(z->struct_info_, tensor_sinfo(std::vector<PrimExpr>{n}, f32)));
  // n is not defined by the signature, so the return type is erased to what is known.
  auto f = bb.get().lookup("f").as_ref<FunctionNode>();
  EXPECT_TRUE(structural_equal(f->ret_struct_info, tensor_sinfo_ndim(f32, 1)));
  EXPECT_TRUE(bb.lookup_binding(z));
  EXPECT_FALSE(bb.lookup_binding(y));  // match_cast is not a plain binding
  EXPECT_TRUE(well_formed(bb.get()));
}

TEST(BlockBuilder, SymbolicShapesFlowThroughCallsOfGlobals) {
  auto n = make<PrimVarNode>("n");
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<PrimExpr>{n, int_imm(4)}, f32));
  BlockBuilder bb;
  bb.begin_function("inner", {x}, {}, true, /*is_private=*/true);
  Var r = bb.emit(add(x, x));
  GlobalVar inner = bb.emit_func_output(r);
  EXPECT_FALSE(bb.get().lookup("inner").as<FunctionNode>()->attrs.count("global_symbol"));

  Var a = tvar("a", {7, 4});
  bb.begin_function("main", {a});
  Var out = bb.emit(make<CallNode>(inner, std::vector<Expr>{a}));
  bb.emit_func_output(out);
  // n is bound to 7 at the call site.
  EXPECT_TRUE(structural_equal(out->struct_info_, tensor_sinfo(std::vector<int64_t>{7, 4}, f32)));
  EXPECT_TRUE(well_formed(bb.get()));
  // Wrong arity is a TypeError.
  BlockBuilder bb2(bb.get());
  bb2.begin_function("bad", {a});
  EXPECT_NE(error_of([&] { bb2.emit(make<CallNode>(inner, std::vector<Expr>{a, a})); }), "");
}

TEST(BlockBuilder, AddFunctionPicksFreshNames) {
  Var x = tvar("x", {4});
  BlockBuilder bb;
  bb.begin_function("f", {x});
  bb.emit_func_output(x);
  Var y = tvar("y", {4});
  Expr g = bb.normalize(make<FunctionNode>(std::vector<Var>{y}, y, StructInfo()));
  GlobalVar g1 = bb.add_function(g, "f");
  EXPECT_EQ(g1->name_hint, "f1");
  EXPECT_TRUE(bb.add_function(g, "f") == g1);  // the same function is not added twice
  // Nor is a structurally equal one (TVM's de-duplication).
  Var z = tvar("z", {4});
  EXPECT_TRUE(bb.add_function(bb.normalize(make<FunctionNode>(std::vector<Var>{z}, z, StructInfo())), "g") == g1);
  GlobalVar g2 = bb.add_function(bb.normalize(make<FunctionNode>(std::vector<Var>{y}, add(y, y), StructInfo())), "f");
  EXPECT_EQ(g2->name_hint, "f2");
  EXPECT_EQ(bb.get()->functions.size(), 3u);
  bb.update_function(g2, g);
  EXPECT_TRUE(bb.get().lookup("f2") == g);
}

}  // namespace
}  // namespace partita

namespace partita {
namespace {

TEST(BlockBuilder, UsableAfterAFailedFunction) {
  Var x = tvar("x", {4});
  BlockBuilder bb;
  bb.begin_function("bad", {x});
  Var unknown = make<VarNode>("nosinfo", StructInfo());
  EXPECT_NE(error_of([&] { bb.emit_func_output(unknown); }), "");
  bb.begin_function("good", {x});
  bb.emit_func_output(x);
  EXPECT_TRUE(bb.get().contains("good"));
  EXPECT_FALSE(bb.get().contains("bad"));
}

}  // namespace
}  // namespace partita
