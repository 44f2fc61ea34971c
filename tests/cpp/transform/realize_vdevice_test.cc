// RealizeVDevice: the cases of TVM's tests/python/relax/test_transform_realize_vdevice.py as
// before/after text (their I.module_attrs lines dropped: Partita's text has no module attributes),
// plus the newer TVM rules (memory scope in hints, scalars not co-located), errors, and a run of
// the result on the host VM.
#include <cmath>

#include "partita/codegen/vm_lowering.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"
#include "partita/transform/realize_vdevice.h"
#include "pass_test_util.h"

namespace partita::testing {
namespace {

const char* kFourDevices = R"(
    I.module_global_infos(
        {
            "vdevice": [
                I.vdevice("llvm"),
                I.vdevice("cuda", 0),
                I.vdevice("metal", 0, "global"),
                I.vdevice({"kind": "cuda", "arch": "sm_80"}, 0),
            ]
        }
    )
)";

std::string module(const std::string& infos, const std::string& body) {
  return "@I.ir_module\nclass Module:\n" + infos + "\n" + body;
}

void check(const std::string& infos, const std::string& before, const std::string& after) {
  check_pass(transform::RealizeVDevice(), module(infos, before), module(infos, after));
}

TEST(RealizeVDevice, DataflowBinding) {
  check(kFourDevices, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), z: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            x1 = x
            y1 = y
            x2 = x1
            y2 = y1
            x2 = R.hint_on_device(x2, tvm.cpu())
            lv0 = R.add(x2, y2)
            gv = R.multiply(lv0, z)
            R.output(gv)
        return gv
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "llvm"), y: R.Tensor((2, 3), "float32", "llvm"), z: R.Tensor((2, 3), "float32", "llvm")) -> R.Tensor((2, 3), "float32", "llvm"):
        with R.dataflow():
            x1: R.Tensor((2, 3), "float32", "llvm") = x
            y1: R.Tensor((2, 3), "float32", "llvm") = y
            x2: R.Tensor((2, 3), "float32", "llvm") = x1
            y2: R.Tensor((2, 3), "float32", "llvm") = y1
            x2: R.Tensor((2, 3), "float32", "llvm") = x2
            lv0: R.Tensor((2, 3), "float32", "llvm") = R.add(x2, y2)
            gv: R.Tensor((2, 3), "float32", "llvm") = R.multiply(lv0, z)
            R.output(gv)
        return gv
)");
}

const char* kLlvm = R"(
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})
)";
const char* kCuda = R"(
    I.module_global_infos({"vdevice": [I.vdevice("cuda")]})
)";

TEST(RealizeVDevice, Binding) {
  check(kLlvm, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), z: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        x1 = x
        y1 = y
        x2 = x1
        y2 = y1
        x2 = R.hint_on_device(x2, tvm.cpu())
        s = R.add(x2, y2)
        m = R.multiply(s, z)
        return m
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "llvm"), y: R.Tensor((2, 3), "float32", "llvm"), z: R.Tensor((2, 3), "float32", "llvm")) -> R.Tensor((2, 3), "float32", "llvm"):
        x1: R.Tensor((2, 3), "float32", "llvm") = x
        y1: R.Tensor((2, 3), "float32", "llvm") = y
        x2: R.Tensor((2, 3), "float32", "llvm") = x1
        y2: R.Tensor((2, 3), "float32", "llvm") = y1
        x2: R.Tensor((2, 3), "float32", "llvm") = x2
        s: R.Tensor((2, 3), "float32", "llvm") = R.add(x2, y2)
        m: R.Tensor((2, 3), "float32", "llvm") = R.multiply(s, z)
        return m
)");
}

TEST(RealizeVDevice, FunctionReturn) {
  check(kCuda, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), z: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32", "cuda"):
        with R.dataflow():
            lv0 = R.add(x, y)
            gv = R.multiply(lv0, z)
            R.output(gv)
        return gv
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "cuda"), y: R.Tensor((2, 3), "float32", "cuda"), z: R.Tensor((2, 3), "float32", "cuda")) -> R.Tensor((2, 3), "float32", "cuda"):
        with R.dataflow():
            lv0: R.Tensor((2, 3), "float32", "cuda") = R.add(x, y)
            gv: R.Tensor((2, 3), "float32", "cuda") = R.multiply(lv0, z)
            R.output(gv)
        return gv
)");
}

TEST(RealizeVDevice, TupleFunctionReturn) {
  check(kCuda, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), z: R.Tensor((2, 3), "float32")) -> R.Tuple([R.Tensor((2, 3), "float32", "cuda"), R.Tensor((2, 3), "float32", "cuda")]):
        with R.dataflow():
            lv0 = R.add(x, y)
            gv = R.multiply(lv0, z)
            R.output(gv)
        return (gv, gv)
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "cuda"), y: R.Tensor((2, 3), "float32", "cuda"), z: R.Tensor((2, 3), "float32", "cuda")) -> R.Tuple([R.Tensor((2, 3), "float32", "cuda"), R.Tensor((2, 3), "float32", "cuda")]):
        with R.dataflow():
            lv0: R.Tensor((2, 3), "float32", "cuda") = R.add(x, y)
            gv: R.Tensor((2, 3), "float32", "cuda") = R.multiply(lv0, z)
            R.output(gv)
        return (gv, gv)
)");
}

TEST(RealizeVDevice, TupleReturnedThroughAVariable) {
  // The returned tuple is found through the variable bound to it; building the tuple co-locates
  // its fields (TVM links every variable a binding uses), so x follows y.
  check(kCuda, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "float32", "cuda")):
        t = (x, y)
        u = t
        return u
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "cuda"), y: R.Tensor((2, 3), "float32", "cuda")) -> R.Tuple(R.Tensor((2, 3), "float32", "cuda"), R.Tensor((2, 3), "float32", "cuda")):
        t: R.Tuple(R.Tensor((2, 3), "float32", "cuda"), R.Tensor((2, 3), "float32", "cuda")) = (x, y)
        u: R.Tuple(R.Tensor((2, 3), "float32", "cuda"), R.Tensor((2, 3), "float32", "cuda")) = t
        return u
)");
}

TEST(RealizeVDevice, MultiDevice) {
  check(kFourDevices, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), z: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32", "cuda"):
        with R.dataflow():
            lv0 = R.add(x, y)
            lv0 = R.hint_on_device(lv0, tvm.cpu())
            lv1 = R.to_vdevice(lv0, "cuda")
            lv2 = R.add(z, z)
            gv = R.multiply(lv1, lv2)
            R.output(gv)
        return gv
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "llvm"), y: R.Tensor((2, 3), "float32", "llvm"), z: R.Tensor((2, 3), "float32", "cuda")) -> R.Tensor((2, 3), "float32", "cuda"):
        with R.dataflow():
            lv0: R.Tensor((2, 3), "float32", "llvm") = R.add(x, y)
            lv0: R.Tensor((2, 3), "float32", "llvm") = lv0
            lv1: R.Tensor((2, 3), "float32", "cuda") = R.to_vdevice(lv0, "cuda")
            lv2: R.Tensor((2, 3), "float32", "cuda") = R.add(z, z)
            gv: R.Tensor((2, 3), "float32", "cuda") = R.multiply(lv1, lv2)
            R.output(gv)
        return gv
)");
}

TEST(RealizeVDevice, InsertToVDevice) {
  check(kFourDevices, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), z: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            lv0 = R.hint_on_device(y, tvm.cpu())
            lv1 = R.add(x, lv0)
            lv2 = R.hint_on_device(lv1, tvm.cuda())
            lv3 = R.add(lv2, lv2)
            lv4 = R.hint_on_device(z, tvm.cuda())
            gv = R.multiply(lv3, lv4)
            R.output(gv)
        return gv
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "llvm"), y: R.Tensor((2, 3), "float32", "llvm"), z: R.Tensor((2, 3), "float32", "cuda")) -> R.Tensor((2, 3), "float32", "cuda"):
        with R.dataflow():
            lv0: R.Tensor((2, 3), "float32", "llvm") = y
            lv1: R.Tensor((2, 3), "float32", "llvm") = R.add(x, lv0)
            lv2: R.Tensor((2, 3), "float32", "cuda") = R.to_vdevice(lv1, "cuda")
            lv3: R.Tensor((2, 3), "float32", "cuda") = R.add(lv2, lv2)
            lv4: R.Tensor((2, 3), "float32", "cuda") = z
            gv: R.Tensor((2, 3), "float32", "cuda") = R.multiply(lv3, lv4)
            R.output(gv)
        return gv
)");
}

TEST(RealizeVDevice, InputModuleIsUnmodified) {
  std::string text = module(kLlvm, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), z: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        x1 = x
        y1 = y
        x2 = x1
        y2 = y1
        s: R.Tensor((2, 3), "float32", "llvm") = R.add(x2, y2)
        m = R.multiply(s, z)
        return m
)");
  IRModule original = parse(text);
  std::string printed = script::print_module(original);
  IRModule after = transform::RealizeVDevice()(original);
  EXPECT_TRUE(modules_equal(original, parse(text)));
  EXPECT_EQ(script::print_module(original), printed);
  EXPECT_FALSE(structural_equal(after, original));  // the pass did change its own result
}

// ---- beyond TVM's test file --------------------------------------------------------------------

TEST(RealizeVDevice, HintMatchesMemoryScope) {
  // Newer TVM: a hint's memory scope selects among vdevices of one device.
  const char* infos = R"(
    I.module_global_infos({"vdevice": [I.vdevice("opencl", 0, "global.texture"), I.vdevice("opencl", 0, "global")]})
)";
  check(infos, R"(
    @R.function
    def foo(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.hint_on_device(x, R.device("opencl", 0), "global")
        b = R.exp(a)
        c = R.hint_on_device(b, R.opencl(0), "global.texture")
        return c
)",
        R"(
    @R.function
    def foo(x: R.Tensor((4,), "float32", "opencl:1:global")) -> R.Tensor((4,), "float32", "opencl:0:global.texture"):
        a: R.Tensor((4,), "float32", "opencl:1:global") = x
        b: R.Tensor((4,), "float32", "opencl:1:global") = R.exp(a)
        c: R.Tensor((4,), "float32", "opencl:0:global.texture") = R.to_vdevice(b, "opencl:0:global.texture")
        return c
)");
}

TEST(RealizeVDevice, ScalarsAreNotCoLocated) {
  // Two clips share their R.Prim bounds but no tensor: only the annotated one is placed.
  check(kCuda, R"(
    @R.function
    def foo(x: R.Tensor((4,), "float32", "cuda"), y: R.Tensor((4,), "float32"), lo: R.Prim("float32"), hi: R.Prim("float32")) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32")):
        a = R.clip(x, lo, hi)
        b = R.clip(y, lo, hi)
        return (a, b)
)",
        R"(
    @R.function
    def foo(x: R.Tensor((4,), "float32", "cuda"), y: R.Tensor((4,), "float32"), lo: R.Prim("float32"), hi: R.Prim("float32")) -> R.Tuple(R.Tensor((4,), "float32", "cuda"), R.Tensor((4,), "float32")):
        a: R.Tensor((4,), "float32", "cuda") = R.clip(x, lo, hi)
        b: R.Tensor((4,), "float32") = R.clip(y, lo, hi)
        return (a, b)
)");
}

TEST(RealizeVDevice, ExplicitAnnotationBeatsHint) {
  // The hint's input already has a device: it stays there and the hint becomes a copy.
  check(kFourDevices, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "cuda")) -> R.Tensor((2, 3), "float32"):
        y = R.hint_on_device(x, tvm.cpu())
        z = R.exp(y)
        return z
)",
        R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "cuda")) -> R.Tensor((2, 3), "float32", "llvm"):
        y: R.Tensor((2, 3), "float32", "llvm") = R.to_vdevice(x, "llvm")
        z: R.Tensor((2, 3), "float32", "llvm") = R.exp(y)
        return z
)");
}

TEST(RealizeVDevice, NothingToDoLeavesTheModule) {
  IRModule mod = parse(module(kLlvm, R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.exp(x)
        return y
)"));
  IRModule after = transform::RealizeVDevice()(mod);
  EXPECT_EQ(after.get(), mod.get());
}

std::string error_of(const std::string& text) {
  try {
    transform::RealizeVDevice()(parse(text));
  } catch (const Error& e) {
    return e.kind() + ": " + e.message();
  }
  return "";
}

TEST(RealizeVDevice, Errors) {
  const char* body = R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.hint_on_device(x, tvm.cuda(1))
        return y
)";
  EXPECT_NE(error_of(module(kFourDevices, body))
                .find("ValueError: RealizeVDevice: R.hint_on_device names device cuda:1 with "
                      "memory scope \"global\", "
                      "which is not among the module's vdevices: cpu:0 \"global\" (llvm), cuda:0 "
                      "\"global\" (cuda)"),
            std::string::npos)
      << error_of(module(kFourDevices, body));
  EXPECT_NE(error_of(module("", body)).find("needs the module's vdevices, but it declares none"),
            std::string::npos);
  const char* tuple = R"(
    @R.function
    def foo(x: R.Tensor((2, 3), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32", "cuda")):
        return (x, x)
)";
  // The parser accepts the mismatching annotation; the pass names the problem.
  EXPECT_NE(error_of(module(kCuda, tuple))
                .find("returns a tuple of 2 elements but is annotated as returning 1"),
            std::string::npos);
}

TEST(RealizeVDevice, ResultRunsOnTheHost) {
  // Two CPU vdevices: the copy between them is a host copy.
  IRModule mod = transform::RealizeVDevice()(parse(module(R"(
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("llvm", 1)]})
)",
                                                          R"(
    @R.function
    def main(x: R.Tensor((3,), "float32", "llvm")) -> R.Tensor((3,), "float32"):
        a = R.exp(x)
        b = R.hint_on_device(a, R.cpu(1))
        c = R.add(b, b)
        return c
)")));
  std::string text = script::print_module(mod);
  EXPECT_NE(text.find("R.to_vdevice(a, dst_vdevice=\"llvm:1:global\")"), std::string::npos) << text;
  runtime::VirtualMachine vm(codegen::build_vm_executable(mod));
  Tensor x = Tensor::empty({3}, DataType::Float(32));
  for (int i = 0; i < 3; ++i) x.data_as<float>()[i] = float(i);
  std::vector<Tensor> out = vm.invoke("main", {x});
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < 3; ++i)
    EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], 2.0f * std::exp(float(i)));

  // A copy to a GPU vdevice is refused by a host VM (when it is made) instead of being faked.
  IRModule gpu = transform::RealizeVDevice()(parse(module(kFourDevices, R"(
    @R.function
    def main(x: R.Tensor((3,), "float32", "llvm")) -> R.Tensor((3,), "float32"):
        b = R.hint_on_device(x, R.cuda(0))
        return b
)")));
  try {
    runtime::VirtualMachine vm2(codegen::build_vm_executable(gpu));
    vm2.invoke("main", {x});
    ADD_FAILURE() << "the copy to cuda ran on the host";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("is placed on cuda:0, but the VM runs on cpu:0"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace partita::testing
