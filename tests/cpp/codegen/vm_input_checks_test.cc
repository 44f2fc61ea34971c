// The VM's checks of its inputs (src/runtime/vm_arguments.h) on functions built from text: a
// wrong count, dtype, rank or dimension, a symbolic dimension contradicting an earlier one, a
// tuple or nothing where a tensor is expected, and tensors on devices the VM cannot take. Each
// is an Error naming the function, the parameter and what was expected; after one, the same
// VM still computes the right answer.
#include <gtest/gtest.h>

#include <string>

#include "../runtime/fake_device.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

const DataType f32 = DataType::Float(32);

const char* kAdd = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            z: R.Tensor((n, 4), dtype="float32") = R.add(x, y)
            R.output(z)
        return z
)";

std::shared_ptr<Executable> build(const char* text) {
  return codegen::build_vm_executable(script::parse_module(text), {});
}

Tensor iota(std::vector<int64_t> shape, DataType dtype = f32) {
  Tensor t = Tensor::empty(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == f32) t.data_as<float>()[i] = float(i);
    else if (dtype == DataType::Float(64)) t.data_as<double>()[i] = double(i);
    else if (dtype == DataType::Int(32)) t.data_as<int32_t>()[i] = int32_t(i);
  }
  return t;
}

/// The message of the Error that `f` throws (its kind first), or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind() + ": " + e.message();
  }
  return "";
}

/// The VM still adds correctly: a failed call left nothing behind.
void expect_adds(VirtualMachine& vm) {
  auto out = vm.invoke("main", {iota({2, 4}), iota({2, 4})});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{2, 4}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(out[0].data_as<float>()[i], 2.f * float(i));
}

}  // namespace

TEST(VMInputChecks, WrongNumberOfInputsNamesTheParameters) {
  VirtualMachine vm(build(kAdd));
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2, 4})}); }),
            "TypeError: function 'main' takes 2 arguments (x, y), but 1 was given");
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2, 4}), iota({2, 4}), iota({2, 4})}); }),
            "TypeError: function 'main' takes 2 arguments (x, y), but 3 were given");
  EXPECT_EQ(error_of([&] { vm.invoke("main", {}); }),
            "TypeError: function 'main' takes 2 arguments (x, y), but 0 were given");
  expect_adds(vm);
}

TEST(VMInputChecks, WrongDtype) {
  VirtualMachine vm(build(kAdd));
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2, 4}), iota({2, 4}, DataType::Float(64))}); }),
            "TypeError: argument 'y' of function 'main' must have dtype float32, but has float64");
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2, 4}, DataType::Int(32)), iota({2, 4})}); }),
            "TypeError: argument 'x' of function 'main' must have dtype float32, but has int32");
  expect_adds(vm);
}

TEST(VMInputChecks, WrongRank) {
  VirtualMachine vm(build(kAdd));
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2, 4}), iota({8})}); }),
            "ValueError: argument 'y' of function 'main' must have 2 dimensions, but has 1 (shape (8,))");
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({1, 2, 4}), iota({2, 4})}); }),
            "ValueError: argument 'x' of function 'main' must have 2 dimensions, but has 3 (shape (1, 2, 4))");
  expect_adds(vm);
}

TEST(VMInputChecks, WrongStaticDimension) {
  VirtualMachine vm(build(kAdd));
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2, 5}), iota({2, 4})}); }),
            "ValueError: argument 'x' of function 'main': dimension 1 must be 4, but is 5 (shape (2, 5))");
  expect_adds(vm);
}

TEST(VMInputChecks, SymbolicDimensionContradictingAnEarlierOne) {
  VirtualMachine vm(build(kAdd));
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({3, 4}), iota({2, 4})}); }),
            "ValueError: argument 'y' of function 'main': dimension 0 must be 3 (the same symbolic variable as "
            "dimension 0 of argument 'x'), but is 2 (shape (2, 4))");
  expect_adds(vm);
  // Within one parameter.
  VirtualMachine square(build(R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", "n"), dtype="float32")) -> R.Tensor(("n", "n"), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            b: R.Tensor((n, n), dtype="float32") = R.add(a, a)
            R.output(b)
        return b
)"));
  EXPECT_EQ(error_of([&] { square.invoke("main", {iota({3, 4})}); }),
            "ValueError: argument 'a' of function 'main': dimension 1 must be 3 (the same symbolic variable as "
            "dimension 0 of argument 'a'), but is 4 (shape (3, 4))");
  EXPECT_EQ(square.invoke("main", {iota({3, 3})})[0].data_as<float>()[8], 16.f);
}

TEST(VMInputChecks, ComputedDimensionOfAMatchCast) {
  VirtualMachine vm(build(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32"), y: R.Tensor(("m",), dtype="float32")) -> R.Tensor(("m",), dtype="float32"):
        n = T.int64()
        m = T.int64()
        z = R.match_cast(y, R.Tensor((n * 2,), dtype="float32"))
        return y
)"));
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({3}), iota({5})}); }),
            "ValueError: match_cast of 'z' of function 'main': dimension 0 must be 6 (computed from the symbolic "
            "dimensions bound earlier), but is 5 (shape (5,))");
  EXPECT_EQ(vm.invoke("main", {iota({3}), iota({6})})[0].shape(), (std::vector<int64_t>{6}));
}

TEST(VMInputChecks, TupleOrNothingWhereATensorIsExpected) {
  VirtualMachine vm(build(kAdd));
  std::vector<Value> args = {Value::make_tuple({Value(iota({2, 4}))}), Value(iota({2, 4}))};
  EXPECT_EQ(error_of([&] { vm.invoke_value("main", args); }),
            "TypeError: argument 'x' of function 'main' must be a tensor, but got a tuple");
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2, 4}), Tensor()}); }),
            "TypeError: argument 'y' of function 'main' must be a tensor, but got nothing");
  EXPECT_EQ(error_of([&] { vm.invoke("nope", {}); }), "KeyError: the executable has no function 'nope'");
  expect_adds(vm);
}

TEST(VMInputChecks, ZeroSizedDimensionsRun) {
  VirtualMachine vm(build(kAdd));
  auto out = vm.invoke("main", {iota({0, 4}), iota({0, 4})});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{0, 4}));
}

TEST(VMInputChecks, TensorsOnDevicesTheVMCannotTake) {
  using partita::testing::FakeDeviceAPI;
  FakeDeviceAPI::get();
  auto ex = build(kAdd);
  Tensor host = iota({2, 4});
  // Another ordinal of the VM's own kind: refused, never copied across devices silently.
  VirtualMachine on_fake(ex, FakeDeviceAPI::device());
  Tensor elsewhere = Tensor::from_buffer({2, 4}, f32, host.buffer(), Device{FakeDeviceAPI::kKind, 1});
  EXPECT_EQ(error_of([&] { on_fake.invoke("main", {host, elsewhere}); }),
            "ValueError: argument 'y' of function 'main' is on vulkan:1, but the VM runs on vulkan:0: expected a "
            "tensor on the host or on vulkan:0 (move it with tensor.to(device))");
  // A device the process cannot reach (no device API for the kind; an ordinal that is absent).
  VirtualMachine on_cpu(ex);
  Tensor rocm = Tensor::from_buffer({2, 4}, f32, host.buffer(), Device{DeviceKind::kROCM, 0});
  std::string msg = error_of([&] { on_cpu.invoke("main", {rocm, host}); });
  EXPECT_EQ(msg.rfind("ValueError: argument 'x' of function 'main' is on rocm:0, which this process cannot reach (", 0),
            0u) << msg;
  EXPECT_NE(msg.find("expected a tensor on the host (move it with tensor.to(device))"), std::string::npos) << msg;
  msg = error_of([&] { on_cpu.invoke("main", {host, elsewhere}); });
  EXPECT_NE(msg.find("argument 'y' of function 'main' is on vulkan:1, which this process cannot reach"),
            std::string::npos) << msg;
  // Tuples are looked into.
  std::vector<Value> args = {Value(host), Value::make_tuple({Value(rocm)})};
  msg = error_of([&] { on_cpu.invoke_value("main", args); });
  EXPECT_NE(msg.find("argument 'y' of function 'main' (field 0) is on rocm:0"), std::string::npos) << msg;
  // The host and the VM's own device are taken (and copied where needed).
  Tensor on_device = iota({2, 4}).to(FakeDeviceAPI::device());
  auto out = on_fake.invoke("main", {host, on_device});
  EXPECT_EQ(out[0].to(Device::cpu()).data_as<float>()[7], 14.f);
  expect_adds(on_cpu);
}

TEST(VMInputChecks, TupleParameters) {
  // Before: a tuple parameter was not checked at all, and a symbolic dimension only inside one
  // could not be built (found by the vm_inputs fuzzer).
  VirtualMachine vm(build(R"(
@I.ir_module
class Module:
    @R.function
    def main(t: R.Tuple(R.Tensor((2,), dtype="float32"), R.Tensor(("k",), dtype="int64"))) -> R.Tensor(("k",), dtype="int64"):
        k = T.int64()
        b: R.Tensor((k,), dtype="int64") = t[1]
        c: R.Tensor((k,), dtype="int64") = R.add(b, b)
        return c
)"));
  Tensor ints = Tensor::empty({3}, DataType::Int(64));
  for (int64_t i = 0; i < 3; ++i) ints.data_as<int64_t>()[i] = i;
  auto pair = [](std::vector<Tensor> fields) {
    std::vector<Value> v(fields.begin(), fields.end());
    return std::vector<Value>{Value::make_tuple(std::move(v))};
  };
  Value out = vm.invoke_value("main", pair({iota({2}), ints}));
  EXPECT_EQ(out.tensor.data_as<int64_t>()[2], 4);
  EXPECT_EQ(error_of([&] { vm.invoke("main", {iota({2})}); }),
            "TypeError: argument 't' of function 'main' must be a tuple of 2 fields, but got a tensor");
  EXPECT_EQ(error_of([&] { vm.invoke_value("main", pair({iota({2})})); }),
            "ValueError: argument 't' of function 'main' must be a tuple of 2 fields, but has 1");
  EXPECT_EQ(error_of([&] { vm.invoke_value("main", pair({iota({2}), ints, ints})); }),
            "ValueError: argument 't' of function 'main' must be a tuple of 2 fields, but has 3");
  // A field of another dtype would have been read as int64 by the kernel.
  EXPECT_EQ(error_of([&] { vm.invoke_value("main", pair({iota({2}), iota({3}, DataType::Int(32))})); }),
            "TypeError: field 1 of argument 't' of function 'main' must have dtype int64, but has int32");
  EXPECT_EQ(error_of([&] { vm.invoke_value("main", pair({iota({3}), ints})); }),
            "ValueError: field 0 of argument 't' of function 'main': dimension 0 must be 2, but is 3 (shape (3,))");
}
