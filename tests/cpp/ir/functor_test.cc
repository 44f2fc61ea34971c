// ExprVisitor / ExprMutator: traversal order, identity preservation, rewriting and remapping.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"

namespace partita {
namespace {

const DataType f32 = DataType::Float(32);

Expr mul(Expr a, Expr b) { return op::make_call("relax.multiply", {std::move(a), std::move(b)}); }
Expr add(Expr a, Expr b) { return op::make_call("relax.add", {std::move(a), std::move(b)}); }

// main(x, y): with dataflow { lv = add(x, y); lv1 = mul(lv, y); gv = lv1 }; return gv
Function build(std::vector<PrimExpr> shape = {int_imm(4)}) {
  Var x = make<VarNode>("x", tensor_sinfo(shape, f32));
  Var y = make<VarNode>("y", tensor_sinfo(shape, f32));
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var lv = bb.emit(add(x, y));
  Var lv1 = bb.emit(mul(lv, y));
  Var gv = bb.emit_output(lv1);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  return bb.get().lookup("main").as_ref<FunctionNode>();
}

TEST(ExprVisitor, VisitsCallsDefsAndUses) {
  struct Counter : ExprVisitor {
    std::vector<std::string> ops, defs, uses;
    int dataflow_blocks = 0;
    void visit_(const CallNode* c) override {
      if (auto* o = c->op.as<OpNode>()) ops.push_back(o->name);
      ExprVisitor::visit_(c);
    }
    void visit_var_def_(const VarNode* v) override { defs.push_back(v->name_hint); }
    void visit_var_def_(const DataflowVarNode* v) override { defs.push_back("df:" + v->name_hint); }
    void visit_(const VarNode* v) override { uses.push_back(v->name_hint); }
    void visit_(const DataflowVarNode* v) override { uses.push_back("df:" + v->name_hint); }
    void visit_dataflow_block_(const BindingBlockNode* b) override {
      ++dataflow_blocks;
      ExprVisitor::visit_dataflow_block_(b);
    }
  } c;
  c.visit_expr(build());
  EXPECT_EQ(c.ops, (std::vector<std::string>{"relax.add", "relax.multiply"}));
  EXPECT_EQ(c.defs, (std::vector<std::string>{"x", "y", "df:lv", "df:lv1", "gv"}));
  EXPECT_EQ(c.uses, (std::vector<std::string>{"x", "y", "df:lv", "y", "df:lv1", "gv"}));
  EXPECT_EQ(c.dataflow_blocks, 1);
}

TEST(ExprVisitor, PostOrderVisitsChildrenFirst) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{2}, f32));
  Expr e = add(mul(x, x), x);
  std::vector<NodeKind> kinds;
  post_order_visit(e, [&](const Expr& n) { kinds.push_back(n->kind()); });
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.back(), NodeKind::Call);
  EXPECT_EQ(kinds.front(), NodeKind::Op);  // the inner call's op comes first
}

TEST(ExprVisitor, PrimExprHookSeesShapeValues) {
  struct Prims : ExprVisitor {
    int count = 0;
    void visit_prim_expr(const PrimExpr&) override { ++count; }
  } p;
  auto n = make<PrimVarNode>("n");
  p.visit_expr(make<ShapeExprNode>(std::vector<PrimExpr>{n, int_imm(3)}));
  EXPECT_EQ(p.count, 2);
}

TEST(ExprMutator, IdentityWhenNothingChanges) {
  Function f = build();
  ExprMutator m;
  Expr out = m.visit_expr(f);
  EXPECT_TRUE(out == f);
  // Also for a plain (non-dataflow) function with an If.
  Var c = make<VarNode>("c", prim_sinfo(DataType::Bool()));
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, f32));
  BlockBuilder bb;
  Expr g = bb.normalize(make<FunctionNode>(std::vector<Var>{c, x}, make<IfNode>(c, add(x, x), x), StructInfo()));
  ExprMutator m2;
  EXPECT_TRUE(m2.visit_expr(g) == g);
}

TEST(ExprMutator, RewritesCallsAndKeepsUnchangedParts) {
  struct MulToAdd : ExprMutator {
    Expr visit_(const CallNode* c) override {
      Expr e = ExprMutator::visit_(c);
      auto* call = e.as<CallNode>();
      if (auto* o = call->op.as<OpNode>(); o && o->name == "relax.multiply")
        return op::make_call("relax.add", call->args);
      return e;
    }
  };
  Function f = build();
  MulToAdd m;
  auto out = m.visit_expr(f).as_ref<FunctionNode>();
  ASSERT_TRUE(out);
  EXPECT_FALSE(out == f);
  // Parameters are reused, and the first (unchanged) binding is the same node.
  EXPECT_TRUE(out->params[0] == f->params[0]);
  auto& old_block = f->body.as<SeqExprNode>()->blocks[0];
  auto& new_block = out->body.as<SeqExprNode>()->blocks[0];
  EXPECT_TRUE(new_block->bindings[0] == old_block->bindings[0]);
  auto* second = new_block->bindings[1].as<VarBindingNode>();
  EXPECT_EQ(second->value.as<CallNode>()->op.as<OpNode>()->name, "relax.add");
  EXPECT_TRUE(second->value->struct_info_);  // normalized by the internal builder
  EXPECT_TRUE(well_formed(out));
}

TEST(ExprMutator, RedefinedVarsAreRemapped) {
  // Replacing the symbolic n by 8 changes the parameters' struct info: every use must follow.
  auto n = make<PrimVarNode>("n");
  struct Subst : ExprMutator {
    PrimVar n;
    PrimExpr visit_prim_expr(const PrimExpr& e) override {
      return e.get() == n.get() ? int_imm(8) : e;
    }
  } m;
  m.n = n;
  Function f = build({n});
  auto out = m.visit_expr(f).as_ref<FunctionNode>();
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->params[0] == f->params[0]);
  EXPECT_TRUE(structural_equal(out->params[0]->struct_info_, tensor_sinfo(std::vector<int64_t>{8}, f32)));
  // The first binding uses the new parameters.
  auto* b = out->body.as<SeqExprNode>()->blocks[0]->bindings[0].as<VarBindingNode>();
  EXPECT_TRUE(b->value.as<CallNode>()->args[0] == out->params[0]);
  EXPECT_TRUE(well_formed(out));
}

TEST(ExprMutator, NonSeqBodiesAreWrapped) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, f32));
  auto f = make<FunctionNode>(std::vector<Var>{x}, add(x, x), StructInfo());
  ExprMutator m;
  Expr res = m.visit_expr(f);
  auto* out = res.as<FunctionNode>();
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->body.as<SeqExprNode>());
}

}  // namespace
}  // namespace partita
