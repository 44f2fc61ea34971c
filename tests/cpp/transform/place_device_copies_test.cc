// PlaceDeviceCopies: offloaded functions on their codegen's device, host functions on the host,
// copies only where data crosses devices; and a partitioned model that runs with the copies.
#include <cmath>

#include "../random_tensor.h"
#include "partita/codegen/build.h"
#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"
#include "partita/transform/pattern_registry.h"
#include "partita/transform/place_device_copies.h"
#include "pass_test_util.h"

namespace partita::testing {
namespace {

transform::Pass cuda_placement() {
  return transform::PlaceDeviceCopies({{"cuda", make_vdevice("cuda")}});
}

const char* kOffloaded = R"(
    @R.function
    def fused_a(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"Codegen": "cuda"})
        y = R.exp(x)
        return y

    @R.function
    def fused_b(x: R.Tensor((4,), "float32"), w: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"Codegen": "cuda"})
        y = R.add(x, w)
        return y

    @R.function
    def fused_dnnl(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"Codegen": "dnnl"})
        y = R.nn.relu(x)
        return y
)";

// The same functions once placed (dnnl has no device of its own: the host).
const char* kOffloadedPlaced = R"(
    @R.function
    def fused_a(x: R.Tensor((4,), "float32", "cuda")) -> R.Tensor((4,), "float32", "cuda"):
        R.func_attr({"Codegen": "cuda"})
        y = R.exp(x)
        return y

    @R.function
    def fused_b(x: R.Tensor((4,), "float32", "cuda"), w: R.Tensor((4,), "float32", "cuda")) -> R.Tensor((4,), "float32", "cuda"):
        R.func_attr({"Codegen": "cuda"})
        y = R.add(x, w)
        return y

    @R.function
    def fused_dnnl(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        R.func_attr({"Codegen": "dnnl"})
        y = R.nn.relu(x)
        return y
)";

const char* kPlacedInfos = R"(
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda")]})
)";

std::string module(const std::string& infos, const std::string& funcs, const std::string& main) {
  return "@I.ir_module\nclass Module:\n" + infos + funcs + main;
}

TEST(PlaceDeviceCopies, ConsecutivePartitionsKeepTensorsOnTheDevice) {
  check_pass(cuda_placement(), module("", kOffloaded, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32"), w: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        with R.dataflow():
            a = cls.fused_a(x)
            b = cls.fused_b(a, w)
            c = cls.fused_a(b)
            R.output(c)
        return c
)"),
             module(kPlacedInfos, kOffloadedPlaced, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm"), w: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        cls = Module
        with R.dataflow():
            lv = R.to_vdevice(x, "cuda")
            a = cls.fused_a(lv)
            lv1 = R.to_vdevice(w, "cuda")
            b = cls.fused_b(a, lv1)
            c = cls.fused_a(b)
            R.output(c)
        lv2 = R.to_vdevice(c, "llvm")
        return lv2
)"));
}

TEST(PlaceDeviceCopies, HostOperatorsAndHostBackendsGetHostCopies) {
  // One copy per value and device within a block: `a` is copied back once for relu and dnnl.
  check_pass(cuda_placement(), module("", kOffloaded, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        a = cls.fused_a(x)
        b = R.nn.relu(a)
        c = cls.fused_a(b)
        d = cls.fused_dnnl(a)
        e = R.add(c, d)
        return e
)"),
             module(kPlacedInfos, kOffloadedPlaced, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        cls = Module
        lv = R.to_vdevice(x, "cuda")
        a = cls.fused_a(lv)
        lv1 = R.to_vdevice(a, "llvm")
        b = R.nn.relu(lv1)
        lv2 = R.to_vdevice(b, "cuda")
        c = cls.fused_a(lv2)
        d = cls.fused_dnnl(lv1)
        lv3 = R.to_vdevice(c, "llvm")
        e = R.add(lv3, d)
        return e
)"));
}

// A view (a reshape the fusion left alone between two GPU partitions: BERT's heads split and
// joined around cuDNN's attention) stays with its operand, on whichever device that is; it once
// ran on the host, with a copy each way.
TEST(PlaceDeviceCopies, ViewsStayWithTheirOperand) {
  check_pass(cuda_placement(), module("", kOffloaded, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        with R.dataflow():
            a = cls.fused_a(x)
            r = R.reshape(a, R.shape([2, 2]))
            f = R.reshape(r, R.shape([4]))
            c = cls.fused_a(f)
            h = R.reshape(x, R.shape([2, 2]))
            g = R.flatten(h)
            d = cls.fused_b(c, g)
            R.output(d)
        return d
)"),
             module(kPlacedInfos, kOffloadedPlaced, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        cls = Module
        with R.dataflow():
            lv = R.to_vdevice(x, "cuda")
            a = cls.fused_a(lv)
            r = R.reshape(a, R.shape([2, 2]))
            f = R.reshape(r, R.shape([4]))
            c = cls.fused_a(f)
            h = R.reshape(x, R.shape([2, 2]))
            g = R.flatten(h)
            lv1 = R.to_vdevice(g, "cuda")
            d = cls.fused_b(c, lv1)
            R.output(d)
        lv2 = R.to_vdevice(d, "llvm")
        return lv2
)"));
}

TEST(PlaceDeviceCopies, CompiledFunctionsByTheirSymbols) {
  // After RunCodegen: calls of compiled functions by symbol (a GPU kernel, and a host library
  // function that is not listed) are placed as offloaded functions are.
  check_pass(transform::PlaceDeviceCopiesOfExterns({{"gpu_exp", make_vdevice("cuda")}}), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.call_packed("gpu_exp", x, sinfo_args=(R.Tensor((4,), "float32"),))
        b = R.call_packed("gpu_exp", a, sinfo_args=(R.Tensor((4,), "float32"),))
        c = R.call_packed("host_relu", b, sinfo_args=(R.Tensor((4,), "float32"),))
        return c
)",
             R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda")]})
    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        lv = R.to_vdevice(x, "cuda")
        a = R.call_packed("gpu_exp", lv, sinfo_args=(R.Tensor((4,), "float32", "cuda"),))
        b = R.call_packed("gpu_exp", a, sinfo_args=(R.Tensor((4,), "float32", "cuda"),))
        lv1 = R.to_vdevice(b, "llvm")
        c = R.call_packed("host_relu", lv1, sinfo_args=(R.Tensor((4,), "float32", "llvm"),))
        return c
)");
  EXPECT_THROW(transform::PlaceDeviceCopiesOfExterns({{"gpu_exp", VDevice()}}), Error);
}

TEST(PlaceDeviceCopies, InputsAndOutputsStayWhereTheUserSaysTheyAre) {
  // Annotated on the GPU in and out: no copy at all.
  check_pass(cuda_placement(), module(kPlacedInfos, kOffloaded, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32", "cuda")) -> R.Tensor((4,), "float32", "cuda"):
        cls = Module
        a = cls.fused_a(x)
        return a
)"),
             module(kPlacedInfos, kOffloadedPlaced, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32", "cuda")) -> R.Tensor((4,), "float32", "cuda"):
        cls = Module
        a = cls.fused_a(x)
        return a
)"));
  // A tuple result: each field where its declaration puts it.
  check_pass(cuda_placement(), module(kPlacedInfos, kOffloaded, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32", "cuda")):
        cls = Module
        a = cls.fused_a(x)
        b = cls.fused_a(a)
        return (a, b)
)"),
             module(kPlacedInfos, kOffloadedPlaced, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tuple(R.Tensor((4,), "float32", "llvm"), R.Tensor((4,), "float32", "cuda")):
        cls = Module
        lv = R.to_vdevice(x, "cuda")
        a = cls.fused_a(lv)
        b = cls.fused_a(a)
        lv1 = R.to_vdevice(a, "llvm")
        return (lv1, b)
)"));
}

TEST(PlaceDeviceCopies, TupleResultsOfPartitionsMoveFieldByField) {
  const char* funcs = R"(
    @R.function
    def fused_split(x: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((2,), "float32"), R.Tensor((2,), "float32")):
        R.func_attr({"Codegen": "cuda"})
        y = R.split(x, indices_or_sections=2, axis=0)
        return y
)";
  check_pass(cuda_placement(), module("", funcs, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        t = cls.fused_split(x)
        c = R.concat(t, axis=0)
        return c
)"),
             module(kPlacedInfos, R"(
    @R.function
    def fused_split(x: R.Tensor((4,), "float32", "cuda")) -> R.Tuple(R.Tensor((2,), "float32", "cuda"), R.Tensor((2,), "float32", "cuda")):
        R.func_attr({"Codegen": "cuda"})
        y = R.split(x, indices_or_sections=2, axis=0)
        return y
)",
                    R"(
    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        cls = Module
        lv = R.to_vdevice(x, "cuda")
        t = cls.fused_split(lv)
        lv1 = t[0]
        lv2 = R.to_vdevice(lv1, "llvm")
        lv3 = t[1]
        lv4 = R.to_vdevice(lv3, "llvm")
        c = R.concat((lv2, lv4), axis=0)
        return c
)"));
}

TEST(PlaceDeviceCopies, ReusesTheModulesVDevices) {
  IRModule mod = parse(module(R"(
    I.module_global_infos({"vdevice": [I.vdevice("metal"), I.vdevice("cuda")]})
)",
                              kOffloaded, R"(
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        a = cls.fused_a(x)
        return a
)"));
  VDevice cuda = mod.vdevices()[1];
  IRModule out = cuda_placement()(mod);
  std::vector<VDevice> v = out.vdevices();
  ASSERT_EQ(v.size(), 3u);  // metal, cuda (the module's own), llvm added for the host
  EXPECT_EQ(v[1].get(), cuda.get());
  EXPECT_EQ(v[2]->target->kind, "llvm");
  const auto* fused = out->functions.at("fused_a").second.as<FunctionNode>();
  EXPECT_EQ(fused->params[0]->struct_info_.as<TensorStructInfoNode>()->vdevice.get(), cuda.get());
  EXPECT_TRUE(well_formed(out));
  EXPECT_NE(script::print_module(out).find("R.to_vdevice(x, dst_vdevice=\"cuda:0:global\")"),
            std::string::npos);
  EXPECT_THROW(transform::PlaceDeviceCopies({{"cuda", VDevice()}}), Error);
}

TEST(PlaceDeviceCopies, PartitionedModelRunsWithTheCopies) {
  // ccompiler's functions declared on a second CPU device: every crossing is a host copy, so
  // the whole placed module runs on the host VM.
  DataType f32 = DataType::Float(32);
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{8}, f32));
  Var y = make<VarNode>("y", tensor_sinfo(std::vector<int64_t>{8}, f32));
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var m = bb.emit(op::multiply(x, y));
  Var r = bb.emit(op::exp(m));
  Var gv = bb.emit_output(op::multiply(r, x));
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule parted = transform::partition_for("ccompiler", bb.get(), true);
  IRModule placed = transform::PlaceDeviceCopies({{"ccompiler", make_vdevice("llvm", 1)}})(parted);
  std::string text = script::print_module(placed);
  EXPECT_NE(text.find("dst_vdevice=\"llvm:1:global\""), std::string::npos) << text;
  EXPECT_NE(text.find("dst_vdevice=\"llvm:0:global\""), std::string::npos) << text;
  EXPECT_TRUE(well_formed(placed));
  runtime::VirtualMachine vm(codegen::build(placed));
  Tensor xv = random_tensor({8}, 3), yv = random_tensor({8}, 4);
  std::vector<Tensor> out = vm.invoke("main", {xv, yv});
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < 8; ++i) {
    float a = xv.data_as<float>()[i], b = yv.data_as<float>()[i];
    EXPECT_NEAR(out[0].data_as<float>()[i], std::exp(a * b) * a,
                1e-5f * (1 + std::abs(std::exp(a * b) * a)));
  }
}

}  // namespace
}  // namespace partita::testing
