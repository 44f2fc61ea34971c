// FuseOpsByKind: before/after pairs for each fusion rule (injective chains, reduction prologues
// and epilogues, matmul epilogues, one anchor per group, outputs of anchored groups, tuple ops,
// views left alone, shape arguments put back, refused calls left on the host).
#include "partita/transform/fuse_ops_by_kind.h"

#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::dataflow_module;
using partita::testing::parse;

Pass fuse() { return FuseOpsByKind(); }

TEST(FuseOpsByKind, ElementwiseChainIsOneFunction) {
  check_pass(fuse(), dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"))", R"(
lv = R.add(x, y)
lv1 = R.exp(lv)
gv = R.multiply(lv1, x))", "gv"),
             R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_add_relax_exp_relax_multiply(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            lv = R.add(x, y)
            lv1 = R.exp(lv)
            gv = R.multiply(lv1, x)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = cls.fused_relax_add_relax_exp_relax_multiply(x, y)
            R.output(gv)
        return gv
)");
}

// The reduction takes its elementwise producer (used by it alone) and its epilogue; the second
// reduction is another anchor, so it starts another function.
TEST(FuseOpsByKind, ReductionTakesPrologueAndEpilogue) {
  check_pass(fuse(), dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((), dtype="float32"))", R"(
lv = R.multiply(x, x)
lv1 = R.mean(lv, axis=[1], keepdims=True)
lv2 = R.rsqrt(lv1)
gv = R.sum(lv2))", "gv"),
             R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_multiply_relax_mean_relax_rsqrt(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 1), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            lv = R.multiply(x, x)
            lv1 = R.mean(lv, axis=[1], keepdims=True)
            gv = R.rsqrt(lv1)
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_relax_sum(lv2: R.Tensor((4, 1), dtype="float32")) -> R.Tensor((), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            gv = R.sum(lv2)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_multiply_relax_mean_relax_rsqrt(x)
            gv = cls.fused_relax_sum(lv)
            R.output(gv)
        return gv
)");
}

// A producer read elsewhere too would become an output of the anchored function; it is left
// in its own function, which the reduction reads.
TEST(FuseOpsByKind, SharedProducerIsNotAPrologue) {
  check_pass(fuse(), dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4, 8), dtype="float32")))", R"(
lv = R.exp(x)
lv1 = R.sum(lv, axis=[1])
gv = (lv1, lv))", "gv"),
             R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_exp(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_relax_sum(lv: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            gv = R.sum(lv, axis=[1])
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4, 8), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_exp(x)
            lv1 = cls.fused_relax_sum(lv)
            gv = (lv1, lv)
            R.output(gv)
        return gv
)");
}

// matmul takes a transposed operand (prologue) and bias + relu (epilogue); the permute after it
// is not elementwise, so it starts the next function, which the softmax cannot join.
TEST(FuseOpsByKind, MatmulEpilogueAndInjectiveAfterIt) {
  check_pass(fuse(), dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((6, 8), dtype="float32"), b: R.Tensor((6,), dtype="float32")) -> R.Tensor((6, 4), dtype="float32"))", R"(
lv = R.permute_dims(w, axes=[1, 0])
lv1 = R.matmul(x, lv)
lv2 = R.add(lv1, b)
lv3 = R.nn.relu(lv2)
lv4 = R.permute_dims(lv3, axes=[1, 0])
gv = R.nn.softmax(lv4, axis=-1))", "gv"),
             R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_permute_dims_relax_matmul_relax_add_relax_nn_relu(w: R.Tensor((6, 8), dtype="float32"), x: R.Tensor((4, 8), dtype="float32"), b: R.Tensor((6,), dtype="float32")) -> R.Tensor((4, 6), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            lv = R.permute_dims(w, axes=[1, 0])
            lv1 = R.matmul(x, lv, out_dtype=None)
            lv2 = R.add(lv1, b)
            gv = R.nn.relu(lv2)
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_relax_permute_dims_relax_nn_softmax(lv3: R.Tensor((4, 6), dtype="float32")) -> R.Tensor((6, 4), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            lv4 = R.permute_dims(lv3, axes=[1, 0])
            gv = R.nn.softmax(lv4, axis=-1)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((6, 8), dtype="float32"), b: R.Tensor((6,), dtype="float32")) -> R.Tensor((6, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_permute_dims_relax_matmul_relax_add_relax_nn_relu(w, x, b)
            gv = cls.fused_relax_permute_dims_relax_nn_softmax(lv)
            R.output(gv)
        return gv
)");
}

// An epilogue may not broadcast the anchor's value: the add of a reduced value to the full tensor
// is not fused into the reduction, and the exp joins the add.
TEST(FuseOpsByKind, BroadcastOfTheAnchorIsNotAnEpilogue) {
  IRModule out = fuse()(parse(dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"))", R"(
lv = R.max(x, axis=[1], keepdims=True)
lv1 = R.subtract(x, lv)
gv = R.exp(lv1))", "gv")));
  EXPECT_TRUE(out.contains("fused_relax_max"));
  EXPECT_TRUE(out.contains("fused_relax_subtract_relax_exp"));
  EXPECT_TRUE(well_formed(out));
}

TEST(FuseOpsByKind, SplitFieldsConcatAndViews) {
  check_pass(fuse(), dataflow_module(R"(main(x: R.Tensor((6, 4), dtype="float32")) -> R.Tensor((24,), dtype="float32"))", R"(
lv = R.split(x, indices_or_sections=2, axis=0)
lv1 = lv[0]
lv2 = lv[1]
lv3 = R.negative(lv2)
lv4 = R.concat((lv3, lv1), axis=0)
gv = R.reshape(lv4, R.shape([24])))", "gv"),
             R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_split_relax_negative_relax_concat_relax_reshape(x: R.Tensor((6, 4), dtype="float32")) -> R.Tensor((24,), dtype="float32"):
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            lv = R.split(x, indices_or_sections=2, axis=0)
            lv1 = lv[0]
            lv2 = lv[1]
            lv3 = R.negative(lv2)
            lv4 = R.concat((lv3, lv1), axis=0)
            gv = R.reshape(lv4, R.shape([24]))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((6, 4), dtype="float32")) -> R.Tensor((24,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = cls.fused_relax_split_relax_negative_relax_concat_relax_reshape(x)
            R.output(gv)
        return gv
)");
}

// A reshape with symbolic dims fused after a matmul: the shape stays in the function (no shape
// parameter), the call passes tensors only.
TEST(FuseOpsByKind, SymbolicShapeArgumentsStayInside) {
  check_pass(fuse(), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor(("n", 2, 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            lv = R.matmul(x, w)
            gv = R.reshape(lv, R.shape([n, 2, 4]))
            R.output(gv)
        return gv
)",
             R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_matmul_relax_reshape(x: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor(("n", 2, 4), dtype="float32"):
        n = T.int64()
        R.func_attr({"Codegen": "cuda", "Primitive": True})
        with R.dataflow():
            lv = R.matmul(x, w, out_dtype=None)
            gv = R.reshape(lv, R.shape([n, 2, 4]))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor(("n", 2, 4), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            gv: R.Tensor((n, 2, 4), dtype="float32") = cls.fused_relax_matmul_relax_reshape(x, w)
            R.output(gv)
        return gv
)");
}

// A flattened symbolic dim (n * 8) cannot be bound from the callee's signature alone; the pass
// derives the call's result in the caller's variables (the VM needs external results' shapes).
TEST(FuseOpsByKind, CallResultsKeepCompoundSymbolicShapes) {
  IRModule out = fuse()(parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32")) -> R.Tensor(("n * 8",), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            lv1 = R.nn.relu(x)
            lv2 = R.reshape(lv1, R.shape([n * 8]))
            gv = R.nn.softmax(lv2, axis=0)
            R.output(gv)
        return gv
)"));
  EXPECT_TRUE(well_formed(out));
  auto* fn = out.lookup("main").as<FunctionNode>();
  const auto& bindings = fn->body.as<SeqExprNode>()->blocks[0]->bindings;
  const auto* last = bindings.back()->var->struct_info_.as<TensorStructInfoNode>();
  ASSERT_TRUE(last && last->shape) << script::print_module(out);
  const PrimVar n = fn->params[0]->struct_info_.as<TensorStructInfoNode>()->shape->at(0).as_ref<PrimVarNode>();
  EXPECT_TRUE(prove_equal(last->shape->at(0), n * int_imm(8))) << script::print_module(out);
}

TEST(FuseOpsByKind, ViewsAloneAndRefusedCallsStay) {
  const std::string text = dataflow_module(R"(main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"))", R"(
lv = R.reshape(x, R.shape([8, 4]))
lv1 = R.reshape(lv, R.shape([4, 8]))
gv = R.exp(lv1))", "gv");
  // Refusing exp leaves only views: nothing is grouped.
  FuseOpsByKindOptions options;
  options.accepts = [](const CallNode& call) { return call.op.as<OpNode>()->name != "relax.exp"; };
  check_pass(FuseOpsByKind(options), text, text);
  // With exp accepted, the views fuse into its function.
  IRModule out = fuse()(parse(text));
  EXPECT_TRUE(out.contains("fused_relax_reshape_relax_reshape_relax_exp"));
}

// The code generator's check and kinds: a refused call stays; an opaque one is a group of its
// own; a kind refined to broadcast joins an epilogue.
TEST(FuseOpsByKind, ChecksAndKindsOfTheCodeGenerator) {
  const std::string text = dataflow_module(R"(main(x: R.Tensor((1, 3, 4, 4), dtype="float32"), w: R.Tensor((3, 3, 1, 1), dtype="float32"), g: R.Tensor((3,), dtype="float32")) -> R.Tensor((1, 3, 4, 4), dtype="float32"))", R"(
lv = R.nn.conv2d(x, w)
lv1 = R.nn.batch_norm(lv, g, g, g, g, axis=1, training=False)
lv2 = lv1[0]
lv3 = R.nn.dropout(lv2, rate=0.5)
lv4 = lv3[0]
gv = R.exp(lv4))", "gv");
  auto calls_in_main = [](const IRModule& m) {
    std::vector<std::string> callees;
    for (const auto& b : m.lookup("main").as<FunctionNode>()->body.as<SeqExprNode>()->blocks[0]->bindings)
      if (auto* c = b.as<VarBindingNode>()->value.as<CallNode>()) {
        if (auto* gv = c->op.as<GlobalVarNode>()) callees.push_back(gv->name_hint);
        else if (auto* op = c->op.as<OpNode>()) callees.push_back(op->name);
      }
    return callees;
  };
  FuseOpsByKindOptions plain;
  plain.codegen = "test_fusion";
  plain.accepts = [](const CallNode&) { return true; };
  // batch_norm's trait makes it an anchor (out-elementwise-fusable): it cannot join the conv.
  // dropout is opaque: a function of its own.
  IRModule a = FuseOpsByKind(plain)(parse(text));
  EXPECT_EQ(calls_in_main(a), (std::vector<std::string>{"fused_relax_nn_conv2d", "fused_relax_nn_batch_norm",
                                                        "fused_relax_nn_dropout", "fused_relax_exp"}));
  FuseOpsByKindOptions refined = plain;
  refined.fusion_kind = [](const CallNode& call) {
    if (call.op.as<OpNode>()->name == "relax.nn.batch_norm") return op::FusionKind::Broadcast;
    return fusion_kind_of(call);
  };
  refined.accepts = [](const CallNode& call) { return call.op.as<OpNode>()->name != "relax.exp"; };
  IRModule b = FuseOpsByKind(refined)(parse(text));
  EXPECT_EQ(calls_in_main(b), (std::vector<std::string>{"fused_relax_nn_conv2d_relax_nn_batch_norm",
                                                        "fused_relax_nn_dropout", "relax.exp"}));
  EXPECT_TRUE(well_formed(b));
  // Registered under the codegen's name, the same callbacks are found without options.
  register_kind_fusion("test_fusion_registered", {refined.accepts, refined.fusion_kind});
  FuseOpsByKindOptions by_name;
  by_name.codegen = "test_fusion_registered";
  EXPECT_EQ(calls_in_main(FuseOpsByKind(by_name)(parse(text))), calls_in_main(b));
}

TEST(FuseOpsByKind, ChainsAreCappedByInlineCost) {
  // 100 transposes in a row: each evaluates its operand at a new index, so the group is capped.
  std::string text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            lv0 = R.permute_dims(x, axes=[1, 0])
)";
  for (int i = 1; i < 100; ++i)
    text += "            lv" + std::to_string(i) + " = R.permute_dims(lv" + std::to_string(i - 1) + ", axes=[1, 0])\n";
  text += "            gv = R.exp(lv99)\n            R.output(gv)\n        return gv\n";
  FuseOpsByKindOptions options;
  options.max_inline_cost = 10;
  IRModule out = FuseOpsByKind(options)(parse(text));
  // Ten calls (the nine equal chains share one function).
  int calls = 0;
  for (const auto& b : out.lookup("main").as<FunctionNode>()->body.as<SeqExprNode>()->blocks[0]->bindings)
    if (auto* c = b.as<VarBindingNode>()->value.as<CallNode>(); c && c->op.as<GlobalVarNode>()) ++calls;
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(out.functions().size(), 3u);
  EXPECT_TRUE(well_formed(out));
}

}  // namespace
}  // namespace partita::transform
