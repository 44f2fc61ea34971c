#include <gtest/gtest.h>

#include "partita/ir/dispatch.h"

namespace partita {

TEST(Node, RefCountingAndDowncast) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{10, 10}, DataType::Float(32)));
  Expr e = x;
  EXPECT_EQ(x->use_count(), 2u);
  EXPECT_NE(e.as<VarNode>(), nullptr);
  EXPECT_EQ(e.as<DataflowVarNode>(), nullptr);
  EXPECT_EQ(e.as<CallNode>(), nullptr);
  Expr dv = make<DataflowVarNode>("lv", object_sinfo());
  EXPECT_NE(dv.as<VarNode>(), nullptr);
  EXPECT_STREQ(node_kind_name(dv->kind()), "DataflowVar");
}

TEST(Node, DispatchSeesConcreteType) {
  Expr c = make<CallNode>(make<OpNode>("relax.add"), std::vector<Expr>{});
  const char* name = dispatch_node(*c, []<class T>(const T&) { return node_kind_name(T::kKind); });
  EXPECT_STREQ(name, "Call");
}

TEST(Module, UniqueGlobalNamesFollowTvm) {
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("fused_relax_multiply"), make<ExternFuncNode>("f"));
  EXPECT_EQ(mod.unique_global_name("fused_relax_multiply"), "fused_relax_multiply1");
  EXPECT_EQ(mod.unique_global_name("main"), "main");
  IRModule copy = mod;
  copy.remove("fused_relax_multiply");
  EXPECT_TRUE(mod.contains("fused_relax_multiply"));  // copy-on-write left the original alone
  EXPECT_FALSE(copy.contains("fused_relax_multiply"));
}

}  // namespace partita
