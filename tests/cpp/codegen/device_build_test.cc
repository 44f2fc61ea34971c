// build() with functions compiled for a device (the fake device of runtime/fake_device.h, no GPU
// needed): PlaceDeviceCopies copies only where data crosses devices, the copies at the edges are
// left to the VM (inputs and results stay where the user's tensors are), constants copied to the
// device are uploaded once when the VM is made, and the device intermediates of a run share one
// planned arena (one device allocation per run).
#include <gtest/gtest.h>

#include <cmath>

#include "../runtime/fake_device.h"
#include "partita/codegen/build.h"
#include "partita/codegen/codegen.h"
#include "partita/runtime/kernel.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"

namespace partita::codegen {
namespace {

using partita::testing::FakeDeviceAPI;


using runtime::VirtualMachine;

/// Runs each offloaded function (one operator) with the host kernel on host copies of its
/// device tensors, as a device backend would run its own kernel.
class FakeDeviceOpModule : public runtime::RuntimeModule {
 public:
  explicit FakeDeviceOpModule(std::map<std::string, std::string> op_of) : op_of_(std::move(op_of)) {}
  std::string type_key() const override { return "fake_device_ops"; }
  DeviceKind device_kind() const override { return FakeDeviceAPI::kKind; }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> out;
    for (const auto& [s, op] : op_of_) out.push_back(s);
    return out;
  }
  runtime::PackedFunc get_function(const std::string& symbol) override {
    auto it = op_of_.find(symbol);
    if (it == op_of_.end()) return {};
    runtime::KernelFn kernel = runtime::find_kernel(it->second);
    return [kernel](std::span<const Tensor> ins, std::span<Tensor> outs) {
      std::vector<Tensor> host_in, host_out;
      for (const Tensor& t : ins) {
        EXPECT_EQ(t.device(), FakeDeviceAPI::device());
        host_in.push_back(t.to(Device::cpu()));
      }
      for (const Tensor& t : outs) host_out.push_back(Tensor::empty(t.shape(), t.dtype()));
      kernel(host_in, runtime::KernelAttrs{}, host_out);
      for (size_t i = 0; i < outs.size(); ++i) outs[i].copy_from(host_out[i]);
    };
  }

 private:
  std::map<std::string, std::string> op_of_;
};

const bool registered = [] {
  register_codegen("fakedev", [](const std::vector<CodegenFunction>& fns, const Target&,
                                 const std::map<std::string, Tensor>&) {
    std::map<std::string, std::string> op_of;
    for (const auto& f : fns) {
      const auto* seq = f.func->body.as<SeqExprNode>();
      const auto* vb = seq->blocks.at(0)->bindings.at(0).as<VarBindingNode>();
      op_of[f.symbol] = vb->value.as<CallNode>()->op.as<OpNode>()->name;
    }
    CodegenResult r;
    r.modules.push_back(std::make_shared<FakeDeviceOpModule>(op_of));
    return r;
  });
  return true;
}();

// Four device functions in a row, a constant operand, one host operator at the end.
const char* kModule = R"(
@I.ir_module
class Module:
    @R.function
    def fd_exp(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"Codegen": "fakedev", "global_symbol": "fd_exp"})
        y = R.exp(x)
        return y

    @R.function
    def fd_add(x: R.Tensor((2, 3), "float32"), w: R.Tensor((), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"Codegen": "fakedev", "global_symbol": "fd_add"})
        y = R.add(x, w)
        return y

    @R.function
    def fd_mul(x: R.Tensor((2, 3), "float32"), w: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"Codegen": "fakedev", "global_symbol": "fd_mul"})
        y = R.multiply(x, w)
        return y

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        with R.dataflow():
            a = cls.fd_exp(x)
            b = cls.fd_add(a, R.const(0.5, "float32"))
            c = cls.fd_exp(b)
            d = cls.fd_mul(c, a)
            R.output(d)
        return d

    @R.function
    def with_host(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        with R.dataflow():
            a = cls.fd_exp(x)
            b = R.nn.relu(a)
            c = cls.fd_exp(b)
            R.output(c)
        return c
)";

std::vector<float> values(const Tensor& t) {
  Tensor h = t.to(Device::cpu());
  return std::vector<float>(h.data_as<float>(), h.data_as<float>() + h.numel());
}

Tensor input() {
  Tensor t = Tensor::empty({2, 3}, DataType::Float(32));
  for (int i = 0; i < 6; ++i) t.data_as<float>()[i] = 0.1f * float(i) - 0.2f;
  return t;
}

std::vector<float> expected_main() {
  std::vector<float> out;
  for (float v : values(input())) out.push_back(std::exp(std::exp(v) + 0.5f) * std::exp(v));
  return out;
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << i;
}

TEST(DeviceBuild, CopiesOnlyWhereDataCrossesDevices) {
  auto ex = build(script::parse_module(kModule));
  const runtime::VMFunction& main = ex->functions.at(size_t(ex->function_index("main")));
  int copies = 0, device_constants = 0;
  for (const auto& in : main.code) {
    if (in.op == runtime::Opcode::CallKernel && ex->kernel_names[size_t(in.index)] == "relax.to_vdevice") ++copies;
    if (in.op == runtime::Opcode::LoadConst && !in.outs.empty()) {
      ++device_constants;
      EXPECT_EQ(in.outs[0].device, FakeDeviceAPI::device());
    }
  }
  // The input's copy to the device only: no copies between the four device functions, the
  // constant is the device's own (LoadConst on the device), and the result is not sent back
  // to the host (the VM returns it on the user's device).
  EXPECT_EQ(copies, 1) << ex->as_text();
  EXPECT_EQ(device_constants, 1) << ex->as_text();
  // A host operator between device functions: its operand comes to the host and its result
  // goes back, once each.
  const runtime::VMFunction& with_host = ex->functions.at(size_t(ex->function_index("with_host")));
  copies = 0;
  for (const auto& in : with_host.code)
    if (in.op == runtime::Opcode::CallKernel && ex->kernel_names[size_t(in.index)] == "relax.to_vdevice") ++copies;
  EXPECT_EQ(copies, 3) << ex->as_text();
}

TEST(DeviceBuild, InputsAndResultsStayOnTheUsersDeviceAndConstantsUploadOnce) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto ex = build(script::parse_module(kModule));
  fake.reset_counts();
  VirtualMachine vm(ex, FakeDeviceAPI::device());
  // The constant went to the device when the VM was made.
  ASSERT_EQ(fake.copies.size(), 1u);
  EXPECT_EQ(fake.copies[0], std::make_pair(Device::cpu(), FakeDeviceAPI::device()));
  Tensor x = input().to(FakeDeviceAPI::device());
  for (int call = 0; call < 3; ++call) {
    fake.reset_counts();
    Tensor out = vm.invoke("main", {x})[0];
    EXPECT_EQ(out.device(), FakeDeviceAPI::device());
    // Copies the VM made: none (the modules' own host round trips are theirs: 2 per input, 1
    // per output, of 4 functions with 1 + 2 + 1 + 2 inputs).
    int vm_copies = int(fake.copies.size()) - (6 + 4);
    EXPECT_EQ(vm_copies, 0) << call;
    // One arena for the three intermediates, one buffer for the result.
    EXPECT_EQ(fake.allocs, 2) << call;
    fake.reset_counts();
    expect_near(values(out), expected_main());
  }
  // Per run: the input's copy (used when the input is on the host) and a, b, c.
  EXPECT_EQ(vm.memory_stats().planned, 12);
  // A host input is copied in once; the result still comes back on the VM's device.
  fake.reset_counts();
  Tensor out = vm.invoke("main", {input()})[0];
  EXPECT_EQ(int(fake.copies.size()) - (6 + 4), 1);
  EXPECT_EQ(out.device(), FakeDeviceAPI::device());
  expect_near(values(out), expected_main());
}

TEST(DeviceBuild, HostOperatorsBetweenDeviceFunctionsRunOnTheHost) {
  FakeDeviceAPI::get();  // registers the fake device
  auto ex = build(script::parse_module(kModule));
  VirtualMachine vm(ex, FakeDeviceAPI::device());
  Tensor out = vm.invoke("with_host", {input().to(FakeDeviceAPI::device())})[0];
  std::vector<float> want;
  for (float v : values(input())) want.push_back(std::exp(std::max(std::exp(v), 0.0f)));
  expect_near(values(out), want);
}

TEST(DeviceBuild, HostOnlyBuildsAreUnchanged) {
  // No device module: no placement, no copies, no device constants.
  const char* host = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.add(x, R.const(0.5, "float32"))
        return y
)";
  auto ex = build(script::parse_module(host));
  for (const auto& in : ex->functions[0].code) {
    EXPECT_FALSE(in.op == runtime::Opcode::LoadConst && !in.outs.empty());
    if (in.op == runtime::Opcode::CallKernel) EXPECT_EQ(ex->kernel_names[size_t(in.index)], "relax.add");
  }
}

}  // namespace
}  // namespace partita::codegen
