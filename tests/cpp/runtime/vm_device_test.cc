// The VM and devices, on the fake device of fake_device.h (no GPU needed): arguments moved to
// where a function expects them, host kernels fed host tensors, results on the user's device,
// device-copy kernels (R.to_vdevice), external modules on a device with the VM's stream,
// constants uploaded once, placement errors at construction, and the artifact format's devices.
#include <gtest/gtest.h>

#include <cstring>

#include "fake_device.h"
#include "partita/runtime/serialize.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;
using partita::testing::FakeDeviceAPI;

namespace {

const DataType f32 = DataType::Float(32);
const Device kFake = FakeDeviceAPI::device();

Tensor iota(std::vector<int64_t> shape, float scale = 1) {
  Tensor t = Tensor::empty(std::move(shape), f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = float(i) * scale;
  return t;
}

std::vector<float> values(const Tensor& t) {
  Tensor h = t.to(Device::cpu());
  return std::vector<float>(h.data_as<float>(), h.data_as<float>() + h.numel());
}

TensorSpec spec(std::vector<int64_t> shape, Device device = Device::cpu()) {
  TensorSpec s{f32, true, std::move(shape), {}, {}};
  s.device = device;
  return s;
}

Instruction call(Opcode op, int32_t index, std::vector<int32_t> args, int32_t dst, std::vector<TensorSpec> outs) {
  Instruction in;
  in.op = op;
  in.index = index;
  in.args = std::move(args);
  in.dst = dst;
  in.outs = std::move(outs);
  return in;
}

Instruction ret(int32_t reg) {
  Instruction in;
  in.op = Opcode::Ret;
  in.args = {reg};
  return in;
}

VMFunction function(std::vector<std::string> params, int32_t registers, std::vector<Instruction> code) {
  VMFunction f;
  f.name = "main";
  f.param_names = std::move(params);
  f.num_registers = registers;
  f.code = std::move(code);
  return f;
}

/// main(x) = relax.add(x, x), all on the host as today's lowering emits it.
std::shared_ptr<Executable> add_executable() {
  auto ex = std::make_shared<Executable>();
  ex->kernel_names = {"relax.add"};
  ex->functions.push_back(function({"x"}, 2, {call(Opcode::CallKernel, 0, {0, 0}, 1, {spec({2, 3})}), ret(1)}));
  return ex;
}

template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error was raised";
  return Error("None", "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A module whose function runs "on" the fake device: out = in0 + in1 computed through host
/// copies, recording what the VM handed it.
class FakeDeviceModule : public RuntimeModule {
 public:
  std::vector<Device> input_devices, output_devices;
  std::vector<StreamHandle> streams_seen;
  std::string type_key() const override { return "fake_device_module"; }
  DeviceKind device_kind() const override { return FakeDeviceAPI::kKind; }
  std::vector<std::string> function_names() const override { return {"fused_add"}; }
  PackedFunc get_function(const std::string& symbol) override {
    if (symbol != "fused_add") return {};
    return [this](std::span<const Tensor> ins, std::span<Tensor> outs) {
      for (auto& t : ins) input_devices.push_back(t.device());
      for (auto& t : outs) output_devices.push_back(t.device());
      streams_seen.push_back(current_stream(kFake));
      Tensor a = ins[0].to(Device::cpu()), b = ins[1].to(Device::cpu()), sum = Tensor::empty(a.shape(), f32);
      for (int64_t i = 0; i < a.numel(); ++i) sum.data_as<float>()[i] = a.data_as<float>()[i] + b.data_as<float>()[i];
      outs[0].copy_from(sum);
    };
  }
};

}  // namespace

TEST(VMDevices, HostKernelsOnADeviceVMCopyAtTheEdges) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto ex = add_executable();
  VirtualMachine vm(ex, kFake);
  EXPECT_EQ(vm.device(), kFake);
  Tensor x = iota({2, 3}).to(kFake);
  auto out = vm.invoke("main", {x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].device(), kFake);  // the user's device
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(vm.memory_stats().device_copies, 2);  // the input in, the result out
  EXPECT_EQ(vm.memory_stats().device_copy_bytes, 48);
  EXPECT_EQ(fake.current_device, 0);              // the call made the VM's device current
  // Steady state: the host copy of x and the kernel's output come from the VM's host pool.
  int64_t reuses = vm.memory_stats().reuses;
  vm.invoke("main", {x});
  EXPECT_EQ(vm.memory_stats().reuses, reuses + 2);
  EXPECT_EQ(vm.memory_stats().device_copies, 4);
  // A host input needs no copy in; the result still comes back on the VM's device.
  out = vm.invoke("main", {iota({2, 3})});
  EXPECT_EQ(out[0].device(), kFake);
  EXPECT_EQ(vm.memory_stats().device_copies, 5);
  // A CPU VM given a device tensor computes on the host and returns host tensors.
  VirtualMachine cpu_vm(ex);
  out = cpu_vm.invoke("main", {x});
  EXPECT_EQ(out[0].device(), Device::cpu());
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  // The profile counts the copies.
  ProfileReport report = vm.profile("main", {x});
  bool listed = false;
  for (auto& e : report.entries) listed = listed || (e.name == "(device copies)" && e.calls == 2);
  EXPECT_TRUE(listed) << report.table();
}

TEST(VMDevices, ToVdeviceKernelWritesTheOutputsDevice) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto ex = std::make_shared<Executable>();
  ex->kernel_names = {"relax.to_vdevice"};
  ex->functions.push_back(function({"x"}, 2, {call(Opcode::CallKernel, 0, {0}, 1, {spec({2, 3}, kFake)}), ret(1)}));
  VirtualMachine vm(ex, kFake);
  fake.reset_counts();
  auto out = vm.invoke("main", {iota({2, 3}, 2)});
  EXPECT_EQ(out[0].device(), kFake);
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(vm.memory_stats().device_copies, 0);  // the kernel made the only copy
  ASSERT_GE(fake.copies.size(), 1u);
  EXPECT_EQ(fake.copies[0], std::make_pair(Device::cpu(), kFake));
  EXPECT_EQ(kernel_placement("relax.to_vdevice"), KernelPlacement::kAnyDevice);
  EXPECT_EQ(kernel_placement("relax.add"), KernelPlacement::kHost);

  // A CPU VM has no such device: refused when it is made, naming both.
  Error e = error_of([&] { VirtualMachine cpu_vm(ex); });
  EXPECT_EQ(e.kind(), "ValueError");
  EXPECT_TRUE(contains(e.message(), "vulkan:0") && contains(e.message(), "cpu:0")) << e.message();
  // The executable's device ids are the VM's devices of that kind; it has one.
  ex->functions[0].code[0].outs[0].device.id = 1;
  e = error_of([&] { VirtualMachine other(ex, kFake); });
  EXPECT_TRUE(contains(e.message(), "one vulkan device")) << e.message();
}

TEST(VMDevices, HostKernelsCannotWriteDeviceMemory) {
  FakeDeviceAPI::get();
  auto ex = add_executable();
  ex->functions[0].code[0].outs[0].device = kFake;
  Error e = error_of([&] { VirtualMachine vm(ex, kFake); });
  EXPECT_EQ(e.kind(), "ValueError");
  EXPECT_TRUE(contains(e.message(), "host kernel 'relax.add'")) << e.message();
  EXPECT_TRUE(contains(e.message(), "host kernels write host memory")) << e.message();
}

TEST(VMDevices, ExternalModulesGetTheirDeviceAndTheVMsStream) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto module = std::make_shared<FakeDeviceModule>();
  auto ex = std::make_shared<Executable>();
  ex->extern_symbols = {"fused_add"};
  ex->external_modules = {module};
  ex->add_constant(iota({2, 3}, 10));
  Instruction load;
  load.op = Opcode::LoadConst;
  load.index = 0;
  load.dst = 1;
  ex->functions.push_back(
      function({"x"}, 3, {load, call(Opcode::CallExtern, 0, {0, 1}, 2, {spec({2, 3})}), ret(2)}));

  VirtualMachine vm(ex, kFake);
  StreamHandle vm_stream = fake.create_stream(0);
  vm.set_stream(vm_stream);
  Tensor x = iota({2, 3}).to(kFake);
  fake.reset_counts();
  auto out = vm.invoke("main", {x});
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 11, 22, 33, 44, 55}));
  EXPECT_EQ(out[0].device(), kFake);
  EXPECT_EQ(module->input_devices, (std::vector<Device>{kFake, kFake}));
  EXPECT_EQ(module->output_devices, (std::vector<Device>{kFake}));
  EXPECT_EQ(module->streams_seen, (std::vector<StreamHandle>{vm_stream}));
  EXPECT_EQ(fake.alloc_streams.at(0), vm_stream) << "outputs allocated for the VM's stream";
  // On return the caller's (default) stream waits for the VM's.
  ASSERT_EQ(fake.waits.size(), 1u);
  EXPECT_EQ(fake.waits[0], std::make_pair(StreamHandle(nullptr), vm_stream));
  EXPECT_EQ(current_stream(kFake), nullptr) << "the VM's stream is current during the call only";
  // The constant went to the device once; the second call copies nothing in.
  EXPECT_EQ(vm.memory_stats().device_copies, 1);
  vm.invoke("main", {x});
  EXPECT_EQ(vm.memory_stats().device_copies, 1);

  // Without set_stream, calls run on the caller's current stream.
  VirtualMachine plain(ex, kFake);
  auto caller = reinterpret_cast<StreamHandle>(0x55);
  {
    StreamGuard g(kFake, caller);
    plain.invoke("main", {x});
  }
  EXPECT_EQ(module->streams_seen.back(), caller);
  // A module on a kind of device the VM lacks is refused when the VM is made.
  Error e = error_of([&] { VirtualMachine cpu_vm(ex); });
  EXPECT_TRUE(contains(e.message(), "external function 'fused_add' (module 'fake_device_module')")) << e.message();
}

TEST(VMDevices, ParametersAreCopiedToTheirDevice) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto ex = std::make_shared<Executable>();
  VMFunction f = function({"x"}, 1, {ret(0)});
  f.param_devices = {kFake};
  ex->functions.push_back(f);
  VirtualMachine vm(ex, kFake);
  fake.reset_counts();
  auto out = vm.invoke("main", {iota({3})});
  EXPECT_EQ(out[0].device(), kFake);
  EXPECT_EQ(fake.copies.size(), 1u);  // once on entry; the result is already on the user's device
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 1, 2}));
  EXPECT_THROW(VirtualMachine cpu_vm(ex), Error);
}

TEST(VMDevices, ArtifactsKeepDevices) {
  auto ex = std::make_shared<Executable>();
  ex->kernel_names = {"relax.to_vdevice"};
  VMFunction f = function({"x"}, 2, {call(Opcode::CallKernel, 0, {0}, 1, {spec({2, 3}, kFake)}), ret(1)});
  f.param_devices = {Device::cpu()};
  ex->functions.push_back(f);
  std::string bytes;
  ex->save(bytes);
  auto loaded = Executable::load(bytes);
  EXPECT_EQ(loaded->functions[0].code[0].outs[0].device, kFake);
  EXPECT_EQ(loaded->functions[0].param_devices, (std::vector<Device>{Device::cpu()}));
  EXPECT_TRUE(contains(loaded->as_text(), "-> vulkan:0")) << loaded->as_text();
  // A corrupt device kind is a load error, not a crash. The spec's device kind is the 8 bytes
  // before... find it by value: kind 7 (vulkan), id 0, as two int32.
  std::string bad = bytes;
  int32_t pattern[2] = {int32_t(kFake.kind), 0};
  size_t at = bad.find(std::string(reinterpret_cast<const char*>(pattern), 8));
  ASSERT_NE(at, std::string::npos);
  int32_t unknown = 5;
  std::memcpy(bad.data() + at, &unknown, 4);
  uint64_t sum = fnv1a64(std::string_view(bad).substr(0, bad.size() - 8));
  std::memcpy(bad.data() + bad.size() - 8, &sum, 8);
  Error e = error_of([&] { Executable::load(bad); });
  EXPECT_TRUE(contains(e.message(), "unknown device kind 5")) << e.message();
}

// Artifacts written before devices existed (format version 1) still load, all on the host.
TEST(VMDevices, VersionOneArtifactsLoad) {
  auto ex = std::make_shared<Executable>();
  ex->functions.push_back(function({"x"}, 1, {ret(0)}));
  std::string v2;
  ex->save(v2);
  // Version 2 differs here only by the function's parameter-device count (8 zero bytes at the
  // end of the functions section, tag 4).
  std::string v1 = v2;
  uint32_t one = 1;
  std::memcpy(v1.data() + 8, &one, 4);
  size_t pos = 16;
  bool patched = false;
  while (pos + 12 <= v1.size() - 8) {
    uint32_t tag;
    uint64_t size;
    std::memcpy(&tag, v1.data() + pos, 4);
    std::memcpy(&size, v1.data() + pos + 4, 8);
    if (tag == 4) {
      ASSERT_EQ(v1.substr(pos + 12 + size - 8, 8), std::string(8, '\0'));
      v1.erase(pos + 12 + size - 8, 8);
      size -= 8;
      std::memcpy(v1.data() + pos + 4, &size, 8);
      patched = true;
    }
    pos += 12 + size;
  }
  ASSERT_TRUE(patched);
  uint64_t sum = fnv1a64(std::string_view(v1).substr(0, v1.size() - 8));
  std::memcpy(v1.data() + v1.size() - 8, &sum, 8);
  auto loaded = Executable::load(v1);
  EXPECT_TRUE(loaded->functions[0].param_devices.empty());
  auto out = VirtualMachine(loaded).invoke("main", {iota({2})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 1}));
  // Version 3 does not exist yet.
  std::string v3 = v2;
  uint32_t three = 3;
  std::memcpy(v3.data() + 8, &three, 4);
  EXPECT_TRUE(contains(error_of([&] { Executable::load(v3); }).message(), "versions 1 to 2"));
}

namespace {

/// A capturable module on the fake device: out = in, one device-to-device copy per call (so a
/// graph's replay, which re-runs the recorded copies, computes what the function does).
class CopyModule : public RuntimeModule {
 public:
  int calls = 0;
  bool synchronizes = false;  // a function that synchronizes cannot be captured
  std::string type_key() const override { return "fake_copy"; }
  DeviceKind device_kind() const override { return FakeDeviceAPI::kKind; }
  bool supports_graph_capture() const override { return true; }
  PackedFunc get_function(const std::string& s) override {
    if (s != "copy") return {};
    return [this](std::span<const Tensor> ins, std::span<Tensor> outs) {
      ++calls;
      outs[0].copy_from(ins[0]);
      if (synchronizes) synchronize(ins[0].device());
    };
  }
};

/// main(x: (n,)) = copy(copy(x)): all device work, with a symbolic length.
std::shared_ptr<Executable> copy_chain(std::shared_ptr<CopyModule> module) {
  auto ex = std::make_shared<Executable>();
  ex->extern_symbols = {"copy"};
  ex->external_modules = {module};
  Instruction match;
  match.op = Opcode::MatchTensor;
  match.args = {0};
  match.dst = 0;
  match.match_ndim = 1;
  match.match_dims = {DimMatch{true, 0, {}}};
  match.name = "x";
  TensorSpec n{f32, false, {}, {{int64_t(DimOp::Var), 0}}, {}};
  VMFunction f = function({"x"}, 3, {match, call(Opcode::CallExtern, 0, {0}, 1, {n}), call(Opcode::CallExtern, 0, {1}, 2, {n}),
                                     ret(2)});
  f.num_sym_vars = 1;
  f.code[2].kills = {1};
  ex->functions.push_back(f);
  return ex;
}

}  // namespace

TEST(VMGraphs, CapturedOnTheSecondCallAndReplayedAfter) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  fake.graphs_supported = true;
  auto module = std::make_shared<CopyModule>();
  VirtualMachine vm(copy_chain(module), kFake);
  std::vector<std::vector<float>> results;
  std::vector<Tensor> held;
  for (int call = 0; call < 4; ++call) {
    Tensor out = vm.invoke("main", {iota({4}, float(call + 1)).to(kFake)})[0];
    EXPECT_EQ(out.device(), kFake);
    held.push_back(out);
  }
  // Warm-up, capture (the function runs while recorded, then the graph is launched), replays.
  EXPECT_EQ(module->calls, 4);  // 2 externs x (warm-up + capture); never again after
  EXPECT_EQ(vm.graph_stats().captures, 1);
  EXPECT_EQ(vm.graph_stats().launches, 3);
  EXPECT_EQ(vm.graph_stats().fallbacks, 0);
  // Every call's result is its own input, and earlier results were not overwritten.
  for (int call = 0; call < 4; ++call) {
    float k = float(call + 1);
    EXPECT_EQ(values(held[size_t(call)]), (std::vector<float>{0, k, 2 * k, 3 * k})) << call;
  }
  // Host inputs are copied into the graph's input buffers (outside the graph): still a replay.
  Tensor out = vm.invoke("main", {iota({4}, 7)})[0];
  EXPECT_EQ(values(out), (std::vector<float>{0, 7, 14, 21}));
  EXPECT_EQ(vm.graph_stats().launches, 4);
  EXPECT_EQ(module->calls, 4);
  // New input shapes: a new warm-up, then a new graph.
  for (int call = 0; call < 3; ++call) {
    out = vm.invoke("main", {iota({5}, 3).to(kFake)})[0];
    EXPECT_EQ(values(out), (std::vector<float>{0, 3, 6, 9, 12}));
  }
  EXPECT_EQ(vm.graph_stats().captures, 2);
  EXPECT_EQ(vm.graph_stats().launches, 6);
  EXPECT_EQ(module->calls, 8);
  // Turning capture off frees the graphs; calls run normally.
  int freed = fake.graphs_freed;
  vm.set_graph_capture(false);
  EXPECT_EQ(fake.graphs_freed, freed + 2);
  vm.invoke("main", {iota({4}).to(kFake)});
  EXPECT_EQ(module->calls, 10);
}

TEST(VMGraphs, FailedCaptureFallsBackAndHostWorkIsNeverCaptured) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto module = std::make_shared<CopyModule>();
  module->synchronizes = true;
  VirtualMachine vm(copy_chain(module), kFake);
  for (int call = 0; call < 4; ++call) {
    Tensor out = vm.invoke("main", {iota({3}, 2).to(kFake)})[0];
    EXPECT_EQ(values(out), (std::vector<float>{0, 2, 4})) << call;
  }
  EXPECT_EQ(vm.graph_stats().captures, 0);
  EXPECT_EQ(vm.graph_stats().fallbacks, 1);  // tried once, then the function runs normally
  EXPECT_FALSE(fake.capturing);
  // Host kernels make a function ineligible: no capture is even tried.
  VirtualMachine host(add_executable(), kFake);
  for (int call = 0; call < 3; ++call) host.invoke("main", {iota({2, 3}).to(kFake)});
  EXPECT_EQ(host.graph_stats().captures + host.graph_stats().fallbacks, 0);
  // A device without graphs: the capture is refused and the function runs normally.
  fake.graphs_supported = false;
  auto plain = std::make_shared<CopyModule>();
  VirtualMachine no_graphs(copy_chain(plain), kFake);
  for (int call = 0; call < 3; ++call) no_graphs.invoke("main", {iota({3}).to(kFake)});
  EXPECT_EQ(plain->calls, 6);
  EXPECT_EQ(no_graphs.graph_stats().captures, 0);
  fake.graphs_supported = true;
}

namespace {

Instruction view(int32_t src, int32_t dst, std::vector<int64_t> shape) {
  Instruction in;
  in.op = Opcode::View;
  in.args = {src};
  in.dst = dst;
  in.outs = {spec(std::move(shape), kFake)};
  return in;
}

/// main(x: (4,)) = (v, d) with a = copy(x), v = a viewed as (2, 2), b = copy(v), c = copy(b),
/// d = copy(c): a escapes through its view, b and c are intermediates, d is the result.
std::shared_ptr<Executable> planned_chain(std::shared_ptr<CopyModule> module) {
  auto ex = std::make_shared<Executable>();
  ex->extern_symbols = {"copy"};
  ex->external_modules = {module};
  Instruction tuple;
  tuple.op = Opcode::MakeTuple;
  tuple.args = {2, 5};
  tuple.dst = 6;
  VMFunction f = function({"x"}, 7, {call(Opcode::CallExtern, 0, {0}, 1, {spec({4}, kFake)}), view(1, 2, {2, 2}),
                                     call(Opcode::CallExtern, 0, {2}, 3, {spec({2, 2}, kFake)}),
                                     call(Opcode::CallExtern, 0, {3}, 4, {spec({2, 2}, kFake)}),
                                     call(Opcode::CallExtern, 0, {4}, 5, {spec({2, 2}, kFake)}), tuple, ret(6)});
  f.code[3].kills = {3};
  f.code[4].kills = {4};
  ex->functions.push_back(f);
  return ex;
}

}  // namespace

TEST(VMArena, DeviceIntermediatesShareOneAllocationPerRun) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto module = std::make_shared<CopyModule>();
  VirtualMachine vm(planned_chain(module), kFake);
  vm.set_graph_capture(false);
  std::vector<std::vector<Tensor>> held;
  for (int call = 0; call < 3; ++call) {
    Tensor x = iota({4}, float(call + 1)).to(kFake);
    fake.reset_counts();
    held.push_back(vm.invoke("main", {x}));
    // One arena (b and c), and a (escaping through v) and d on their own.
    EXPECT_EQ(fake.allocs, 3) << call;
  }
  EXPECT_EQ(vm.memory_stats().planned, 6);
  for (int call = 0; call < 3; ++call) {
    float k = float(call + 1);
    EXPECT_EQ(held[size_t(call)][0].shape(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(values(held[size_t(call)][0]), (std::vector<float>{0, k, 2 * k, 3 * k})) << call;
    EXPECT_EQ(values(held[size_t(call)][1]), (std::vector<float>{0, k, 2 * k, 3 * k})) << call;
  }
}

TEST(VMArena, CapturedGraphsKeepTheirArena) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  fake.graphs_supported = true;
  auto module = std::make_shared<CopyModule>();
  VirtualMachine vm(planned_chain(module), kFake);
  std::vector<std::vector<Tensor>> held;
  for (int call = 0; call < 5; ++call) held.push_back(vm.invoke("main", {iota({4}, float(call + 1)).to(kFake)}));
  EXPECT_EQ(vm.graph_stats().captures, 1);
  EXPECT_EQ(vm.graph_stats().launches, 4);
  EXPECT_EQ(module->calls, 8);  // 4 externs x (warm-up + capture)
  for (int call = 0; call < 5; ++call) {
    float k = float(call + 1);
    EXPECT_EQ(values(held[size_t(call)][0]), (std::vector<float>{0, k, 2 * k, 3 * k})) << call;
    EXPECT_EQ(values(held[size_t(call)][1]), (std::vector<float>{0, k, 2 * k, 3 * k})) << call;
  }
}

TEST(VMArena, HostVMsAndDynamicShapesKeepPerTensorBuffers) {
  // A symbolic length has no static plan: every device buffer is its own allocation.
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  auto module = std::make_shared<CopyModule>();
  VirtualMachine vm(copy_chain(module), kFake);
  vm.set_graph_capture(false);
  Tensor x = iota({4}).to(kFake);
  fake.reset_counts();
  vm.invoke("main", {x});
  EXPECT_EQ(fake.allocs, 2);
  EXPECT_EQ(vm.memory_stats().planned, 0);
}
