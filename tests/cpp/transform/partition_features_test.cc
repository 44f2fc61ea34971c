// FuseOpsByPattern / MergeCompositeFunctions features beyond the conformance cases.
#include <gtest/gtest.h>

#include <set>

#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"
#include "partita/transform/pattern_registry.h"

namespace partita::transform {
namespace {

using dpl::is_op;
using dpl::wildcard;

FusionPattern fp(std::string name, dpl::Pattern p) {
  FusionPattern f;
  f.name = std::move(name);
  f.pattern = std::move(p);
  return f;
}

const std::string T = "R.Tensor((4, 4), dtype=\"float32\")";

std::string module_of(const std::string& params, const std::string& body, const std::string& out,
                      const std::string& extra = "") {
  return "@I.ir_module\nclass Module:\n" + extra + "    @R.function\n    def main(" + params + ") -> " + T +
         ":\n        with R.dataflow():\n" + body + "            R.output(" + out + ")\n        return " + out + "\n";
}

std::vector<std::string> names(const IRModule& m) {
  std::vector<std::string> out;
  for (const auto& [n, e] : m->functions) out.push_back(n);
  return out;
}

int count_ops(const Expr& e, const std::string& op) {
  int n = 0;
  post_order_visit(e, [&](const Expr& x) {
    if (auto* c = x.as<CallNode>())
      if (auto* o = c->op.as<OpNode>()) n += o->name == op;
  });
  return n;
}

TEST(PartitionFeatures, ConvAddReluChainAndNaming) {
  std::string params = "x: R.Tensor((1, 4, 8, 8), dtype=\"float32\"), w: R.Tensor((4, 4, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 4, 1, 1), dtype=\"float32\")";
  std::string TT = "R.Tensor((1, 4, 8, 8), dtype=\"float32\")";
  std::string text = "@I.ir_module\nclass Module:\n    @R.function\n    def main(" + params + ") -> " + TT +
                     ":\n        with R.dataflow():\n"
                     "            c: " + TT + " = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"NCHW\", out_dtype=None)\n"
                     "            a: " + TT + " = R.add(c, b)\n            r: " + TT + " = R.nn.relu(a)\n            R.output(r)\n        return r\n";
  IRModule m = script::parse_module(text);
  auto pats = {fp("dnnl.cbr", dpl::make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu"))};
  IRModule out = fuse_ops_by_pattern(pats, m, true, false);
  ASSERT_TRUE(well_formed(out));
  EXPECT_EQ(names(out), (std::vector<std::string>{"fused_relax_nn_conv2d_relax_add_relax_nn_relu", "main"}));
  auto* f = out.lookup("fused_relax_nn_conv2d_relax_add_relax_nn_relu").as<FunctionNode>();
  EXPECT_EQ(*f->attr_string("Composite"), "dnnl.cbr");
  EXPECT_TRUE(std::get<bool>(f->attrs.at("Primitive")));  // a bool, as TVM sets it
  EXPECT_FALSE(f->attrs.count("global_symbol"));
}

// Two groups alike but for the device their tensors live on are two functions: the group
// fingerprint's key for a tensor's struct info includes its vdevice (it did not, and the second
// group reused the first's function, on the other device).
TEST(PartitionFeatures, GroupsOnOtherDevicesAreOtherFunctions) {
  const std::string text = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})
    @R.function
    def main(a: R.Tensor((4, 4), "float32", "llvm"), b: R.Tensor((4, 4), "float32", "llvm"), c: R.Tensor((4, 4), "float32", "cuda"), d: R.Tensor((4, 4), "float32", "cuda")):
        with R.dataflow():
            x: R.Tensor((4, 4), "float32", "llvm") = R.multiply(a, b)
            y: R.Tensor((4, 4), "float32", "cuda") = R.multiply(c, d)
            R.output(x, y)
        return (x, y)
)";
  IRModule m = script::parse_module(text);
  auto pats = {fp("example.multiply", is_op("relax.multiply")({wildcard(), wildcard()}))};
  IRModule out = fuse_ops_by_pattern(pats, m, true, false);
  ASSERT_TRUE(well_formed(out));
  EXPECT_EQ(out->functions.size(), 3u) << script::print_module(out);
}

TEST(PartitionFeatures, CheckRejectsAndLeakingHelper) {
  std::string body = "            m: " + T + " = R.matmul(x, y, out_dtype=None)\n            r: " + T +
                     " = R.nn.relu(m)\n            s: " + T + " = R.add(r, m)\n";
  IRModule m = script::parse_module(module_of("x: " + T + ", y: " + T, body, "s"));
  FusionPattern p = fp("A.mm_relu", is_op("relax.nn.relu")({is_op("relax.matmul")({wildcard(), wildcard()})}));
  int calls = 0;
  p.check = [&](const PatternCheckContext& ctx) {
    ++calls;
    EXPECT_EQ(ctx.matched_bindings.size(), 2u);
    return !has_leaking_intermediate_variables(ctx);  // m is used by s: leaking
  };
  IRModule out = fuse_ops_by_pattern({p}, m);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(out->functions.size(), 1u);  // rejected: nothing fused
  p.check = nullptr;
  IRModule out2 = fuse_ops_by_pattern({p}, m);
  ASSERT_TRUE(well_formed(out2));
  EXPECT_EQ(out2->functions.size(), 2u);  // accepted: m becomes a second output
}

TEST(PartitionFeatures, TupleProducingOpWithGetItem) {
  std::string TS = "R.Tensor((4, 2), dtype=\"float32\")";
  std::string text = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T + ") -> " + TS +
                     ":\n        with R.dataflow():\n"
                     "            s: R.Tuple(" + TS + ", " + TS + ") = R.split(x, indices_or_sections=2, axis=1)\n"
                     "            g: " + TS + " = s[0]\n            r: " + TS + " = R.nn.relu(g)\n"
                     "            R.output(r)\n        return r\n";
  IRModule m = script::parse_module(text);
  auto pat = is_op("relax.nn.relu")({dpl::is_tuple_get_item(is_op("relax.split")({wildcard()}), 0)});
  IRModule out = fuse_ops_by_pattern({fp("A.split_relu", pat)}, m);
  ASSERT_TRUE(well_formed(out));
  EXPECT_TRUE(out.contains("fused_relax_split_relax_nn_relu"));
  EXPECT_EQ(count_ops(out.lookup("main"), "relax.split"), 0);
}

TEST(PartitionFeatures, BindConstants) {
  Tensor data = Tensor::empty({4, 4}, DataType::Float(32));
  std::string body = "            a: " + T + " = R.add(x, x)\n";
  IRModule m = script::parse_module(module_of("x: " + T, body, "a"));
  // Replace the second operand with a constant.
  Function main = m.lookup("main").as_ref<FunctionNode>();
  auto* seq = main->body.as<SeqExprNode>();
  auto* vb = seq->blocks[0]->bindings[0].as<VarBindingNode>();
  Expr c = make<ConstantNode>(data);
  c->struct_info_ = tensor_sinfo(std::vector<int64_t>{4, 4}, DataType::Float(32));
  auto* call = copy_node(vb->value.as_ref<CallNode>());
  call->args[1] = c;
  Binding nb = make<VarBindingNode>(vb->var, Expr(Call(call)));
  auto* nseq = copy_node(Ref<SeqExprNode>(seq));
  nseq->blocks = {make<BindingBlockNode>(std::vector<Binding>{nb}, true)};
  auto* nf = copy_node(main);
  nf->body = SeqExpr(nseq);
  m.update(m.get_global_var("main"), Function(nf));
  auto pats = {fp("A.add", is_op("relax.add")({wildcard(), wildcard()}))};
  IRModule bound = fuse_ops_by_pattern(pats, m, /*bind_constants=*/true);
  IRModule lifted = fuse_ops_by_pattern(pats, m, /*bind_constants=*/false);
  ASSERT_TRUE(well_formed(bound));
  ASSERT_TRUE(well_formed(lifted));
  EXPECT_EQ(bound.lookup("fused_relax_add").as<FunctionNode>()->params.size(), 1u);
  auto* lf = lifted.lookup("fused_relax_add").as<FunctionNode>();
  ASSERT_EQ(lf->params.size(), 2u);
  EXPECT_EQ(lf->params[1]->name_hint, "param_0");
}

TEST(PartitionFeatures, InterleavedBackendsAndCycleFreeMerge) {
  // a(A) -> b(B) -> c(A); c also uses a: merging a with c would need b inside: not allowed.
  std::string body = "            a: " + T + " = R.nn.relu(x)\n            b: " + T + " = R.exp(a)\n            c: " + T +
                     " = R.add(a, b)\n            d: " + T + " = R.nn.relu(c)\n";
  IRModule m = script::parse_module(module_of("x: " + T, body, "d"));
  std::vector<FusionPattern> pats{fp("A.relu", is_op("relax.nn.relu")({wildcard()})), fp("B.exp", is_op("relax.exp")({wildcard()})),
                                  fp("A.add", is_op("relax.add")({wildcard(), wildcard()}))};
  IRModule out = merge_composite_functions(fuse_ops_by_pattern(pats, m, true, false));
  ASSERT_TRUE(well_formed(out));
  int a = 0, b = 0;
  for (const auto& [n, e] : out->functions) {
    auto cg = e.second.as<FunctionNode>()->attr_string("Codegen");
    a += cg && *cg == "A";
    b += cg && *cg == "B";
  }
  EXPECT_EQ(a, 2);  // {a} and {c, d}
  EXPECT_EQ(b, 1);
}

TEST(PartitionFeatures, EntryFunctionsAndSeveralFunctions) {
  std::string body = "            a: " + T + " = R.add(x, x)\n";
  std::string other = "    @R.function\n    def other(x: " + T + ") -> " + T + ":\n        with R.dataflow():\n" + body +
                      "            R.output(a)\n        return a\n";
  IRModule m = script::parse_module(module_of("x: " + T, body, "a", other));
  auto pats = {fp("A.add", is_op("relax.add")({wildcard(), wildcard()}))};
  IRModule only_main = fuse_ops_by_pattern(pats, m, true, false, {"main"});
  EXPECT_EQ(count_ops(only_main.lookup("main"), "relax.add"), 0);
  EXPECT_EQ(count_ops(only_main.lookup("other"), "relax.add"), 1);
  IRModule both = fuse_ops_by_pattern(pats, m, true, true);
  ASSERT_TRUE(well_formed(both));
  EXPECT_EQ(count_ops(both.lookup("other"), "relax.add"), 0);
  EXPECT_TRUE(both.contains("fused_relax_add_A"));  // one shared wrapper (deduplicated composite)
  EXPECT_THROW(fuse_ops_by_pattern(pats, m, true, false, {"nope"}), Error);
}

TEST(PartitionFeatures, RegistryAndPartitionFor) {
  // Patterns registered later take priority within their prefix; partition_for uses the prefix.
  register_patterns({fp("mybackend.multiply", is_op("relax.multiply")({wildcard(), wildcard()})),
                     fp("mybackend.relu", is_op("relax.nn.relu")({wildcard()}))});
  auto mine = get_patterns_with_prefix("mybackend");
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].name, "mybackend.relu");
  EXPECT_TRUE(get_pattern("mybackend.multiply"));
  EXPECT_FALSE(get_pattern("mybackend.nope"));
  std::string body = "            a: " + T + " = R.multiply(x, x)\n";
  IRModule m = script::parse_module(module_of("x: " + T, body, "a"));
  IRModule p1 = partition_for("mybackend", m, /*merge=*/false);
  IRModule p2 = partition_for("mybackend", m, /*merge=*/true);
  EXPECT_TRUE(p1.contains("fused_relax_multiply_mybackend"));
  EXPECT_TRUE(p2.contains("fused_relax_multiply1_mybackend"));
  EXPECT_THROW(partition_for("nobackend", m), Error);
  EXPECT_THROW(codegen_name_of("nodot"), Error);
}

}  // namespace
}  // namespace partita::transform
