// The CUDA runtime plug-in on a real GPU: allocation through the caching pool, copies in every
// direction (pageable and pinned host memory, device to device, between streams), DLPack
// imports of CUDA memory, and the VM on a CUDA device. Every test skips with the reason where
// there is no GPU (CI). Timings are printed as "[measure] ..." lines for docs/gpu.md.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "partita/runtime/device_api.h"
#include "partita/runtime/dlpack.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

const DataType f32 = DataType::Float(32);
const Device kGpu = Device::cuda(0);
const Device kPinned{DeviceKind::kCUDAHost, 0};

std::string no_gpu_reason() {
  try {
    device_api(kGpu);
    return "";
  } catch (const Error& e) {
    return e.message();
  }
}

// The runtime's own message starts with "no CUDA device:" when the plug-in found no GPU.
#define REQUIRE_GPU()                                                                        \
  do {                                                                                       \
    std::string why = no_gpu_reason();                                                       \
    if (!why.empty())                                                                        \
      GTEST_SKIP() << (why.rfind("no CUDA device", 0) == 0 ? why : "no CUDA device: " + why); \
  } while (0)

Tensor iota(std::vector<int64_t> shape, float scale = 1) {
  Tensor t = Tensor::empty(std::move(shape), f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = float(i) * scale;
  return t;
}

std::vector<float> values(const Tensor& t) {
  Tensor h = t.to(Device::cpu());
  return std::vector<float>(h.data_as<float>(), h.data_as<float>() + h.numel());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

}  // namespace

TEST(Cuda, RoundTripsEverySizeAndDirection) {
  REQUIRE_GPU();
  for (int64_t n : {0, 1, 7, 1000, 1 << 20, (1 << 22) + 3}) {
    Tensor host = iota({n}, 0.5f);
    Tensor gpu = host.to(kGpu);
    EXPECT_EQ(gpu.device(), kGpu);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(gpu.data()) % 256, 0u);
    Tensor gpu2 = gpu.copy();  // device to device
    EXPECT_NE(gpu2.data(), gpu.data());
    Tensor pinned = gpu2.to(kPinned);  // device to pinned host memory
    EXPECT_TRUE(pinned.device().is_host_accessible());
    Tensor back = pinned.to(kGpu).to(Device::cpu());
    ASSERT_EQ(back.numel(), n);
    EXPECT_EQ(std::memcmp(back.data(), host.data(), host.nbytes()), 0) << n;
    if (n > 0) {
      EXPECT_EQ(pinned.data_as<float>()[n - 1], float(n - 1) * 0.5f);
    }
    EXPECT_TRUE(gpu.content_equal(gpu2));
  }
}

TEST(Cuda, MissingDeviceIndexIsAClearError) {
  REQUIRE_GPU();
  int count = device_api(kGpu)->device_count();
  Error e = error_of([&] { Tensor::empty({4}, f32, Device::cuda(count)); });
  EXPECT_EQ(e.kind(), "RuntimeError");
  EXPECT_NE(e.message().find("no CUDA device: cuda:" + std::to_string(count)), std::string::npos) << e.message();
  // Far more memory than the card has: an out-of-memory error naming the device, not a crash.
  e = error_of([&] { Tensor::empty({int64_t(1) << 40}, f32, kGpu); });
  EXPECT_EQ(e.kind(), "MemoryError");
  EXPECT_NE(e.message().find("out of memory on cuda:0"), std::string::npos) << e.message();
  Tensor ok = Tensor::empty({1024}, f32, kGpu);  // and the device still works afterwards
  ok.copy_from(iota({1024}));
  EXPECT_EQ(values(ok)[1023], 1023.0f);
}

TEST(Cuda, CachingAllocatorAvoidsCudaMalloc) {
  REQUIRE_GPU();
  DeviceAPI* api = device_api(kGpu);
  api->empty_cache(0);
  AllocatorStats before = api->allocator_stats(0);
  for (int i = 0; i < 100; ++i) Tensor t = Tensor::empty({1 << 18}, f32, kGpu);  // 1 MiB each
  AllocatorStats after = api->allocator_stats(0);
  EXPECT_EQ(after.alloc_calls - before.alloc_calls, 100);
  EXPECT_EQ(after.device_allocs - before.device_allocs, 1);  // one cudaMalloc, 99 pool hits
  EXPECT_EQ(after.cache_hits - before.cache_hits, 99);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);

  // Latency: a pool hit against a miss (cudaMalloc + cudaFree), for 1 MiB and 64 MiB.
  for (int64_t elems : {int64_t(1) << 18, int64_t(1) << 24}) {
    const int reps = 200;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) Tensor t = Tensor::empty({elems}, f32, kGpu);
    double hit_us = seconds_since(t0) * 1e6 / reps;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) {
      { Tensor t = Tensor::empty({elems}, f32, kGpu); }
      api->empty_cache(0);
    }
    double miss_us = seconds_since(t0) * 1e6 / reps;
    std::printf("[measure] alloc+free of %lld MiB on cuda:0: pool hit %.2f us, cudaMalloc+cudaFree %.1f us\n",
                static_cast<long long>(elems * 4 >> 20), hit_us, miss_us);
    EXPECT_LT(hit_us, miss_us);
  }
  api->empty_cache(0);
  EXPECT_EQ(api->allocator_stats(0).bytes_cached, 0);
}

TEST(Cuda, CopyBandwidth) {
  REQUIRE_GPU();
  const int64_t elems = int64_t(256) << 18;  // 256 MiB
  const double gib = double(elems * 4) / double(1 << 30);
  Tensor pageable = iota({elems});
  Tensor pinned = Tensor::empty({elems}, f32, kPinned);
  std::memcpy(pinned.data(), pageable.data(), pageable.nbytes());
  Tensor gpu = Tensor::empty({elems}, f32, kGpu), gpu2 = Tensor::empty({elems}, f32, kGpu);
  auto rate = [&](Tensor& dst, const Tensor& src) {
    dst.copy_from(src);  // warm-up
    synchronize(kGpu);
    const int reps = 5;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) dst.copy_from(src);
    synchronize(kGpu);
    return gib * reps / seconds_since(t0);
  };
  double h2d = rate(gpu, pageable), d2h = rate(pageable, gpu);
  double h2d_pinned = rate(gpu, pinned), d2h_pinned = rate(pinned, gpu), d2d = rate(gpu2, gpu);
  std::printf("[measure] 256 MiB copies (GiB/s): H2D pageable %.1f, D2H pageable %.1f, H2D pinned %.1f, "
              "D2H pinned %.1f, D2D %.1f (bytes moved one way)\n",
              h2d, d2h, h2d_pinned, d2h_pinned, d2d);
  EXPECT_EQ(values(gpu2.view({elems}))[elems - 1], float(elems - 1));
  EXPECT_GT(h2d_pinned, 1.0);
}

TEST(Cuda, StreamsOrderCopiesAndWaitForEachOther) {
  REQUIRE_GPU();
  DeviceAPI* api = device_api(kGpu);
  StreamHandle a = api->create_stream(0), b = api->create_stream(0);
  const int64_t n = 1 << 24;
  Tensor host = iota({n});
  Tensor x = Tensor::empty({n}, f32, kGpu), y = Tensor::empty({n}, f32, kGpu);
  {
    StreamGuard on_a(kGpu, a);
    x.copy_from(host);
    Tensor z = Tensor::empty({n}, f32, kGpu);
    z.copy_from(x);  // queued on a
    api->stream_wait(0, b, a);
    StreamGuard on_b(kGpu, b);
    y.copy_from(z);  // on b, after a's work
    api->sync_stream(0, b);
  }
  EXPECT_EQ(values(y)[n - 1], float(n - 1));
  api->stream_wait(0, a, a);  // a stream already waits for itself: no-op, no error
  api->free_stream(0, a);
  api->free_stream(0, b);
}

TEST(Cuda, DLPackImportOfStridedDeviceMemoryGathers) {
  REQUIRE_GPU();
  // A 3 x 4 matrix on the GPU viewed transposed (4 x 3, strides {1, 4}): not shareable, so
  // from_dlpack gathers it, and the result matches the host transpose.
  Tensor m = iota({3, 4}).to(kGpu);
  static int64_t shape[2] = {4, 3}, strides[2] = {1, 4};
  struct Holder {
    Tensor keep;
  };
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor.data = m.data();
  managed->dl_tensor.device = {kDLCUDA, 0};
  managed->dl_tensor.ndim = 2;
  managed->dl_tensor.dtype = {kDLFloat, 32, 1};
  managed->dl_tensor.shape = shape;
  managed->dl_tensor.strides = strides;
  managed->manager_ctx = new Holder{m};
  static int deleted = 0;
  managed->deleter = [](DLManagedTensor* self) {
    delete static_cast<Holder*>(self->manager_ctx);
    delete self;
    ++deleted;
  };
  EXPECT_FALSE(can_share_dlpack(managed->dl_tensor));
  Tensor t = from_dlpack(managed, DLPackCopy::kIfNeeded);
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(t.device(), kGpu);
  EXPECT_EQ(values(t), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

namespace {
/// main(x) = relax.add(x, x) as today's lowering emits it (host kernels, host specs).
std::shared_ptr<Executable> add_executable(int64_t n) {
  auto ex = std::make_shared<Executable>();
  ex->kernel_names = {"relax.add", "relax.to_vdevice"};
  VMFunction f;
  f.name = "main";
  f.param_names = {"x"};
  f.num_registers = 3;
  Instruction add;
  add.op = Opcode::CallKernel;
  add.index = 0;
  add.args = {0, 0};
  add.dst = 1;
  add.outs = {TensorSpec{f32, true, {n}, {}, {}}};
  Instruction up = add;  // then R.to_vdevice to the GPU
  up.index = 1;
  up.args = {1};
  up.dst = 2;
  up.outs[0].device = Device::cuda(0);
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {2};
  f.code = {add, up, ret};
  ex->functions.push_back(f);
  return ex;
}

/// A CUDA-side module: out = in through a device-to-device copy on the current stream.
class CudaCopyModule : public RuntimeModule {
 public:
  std::vector<StreamHandle> streams;
  std::string type_key() const override { return "cuda_copy_test"; }
  DeviceKind device_kind() const override { return DeviceKind::kCUDA; }
  PackedFunc get_function(const std::string& s) override {
    if (s != "copy") return {};
    return [this](std::span<const Tensor> ins, std::span<Tensor> outs) {
      if (ins[0].device().kind != DeviceKind::kCUDA || outs[0].device().kind != DeviceKind::kCUDA)
        throw_error("ValueError", "expected CUDA tensors");
      streams.push_back(current_stream(ins[0].device()));
      outs[0].copy_from(ins[0]);
    };
  }
};
}  // namespace

TEST(Cuda, VirtualMachineOnTheGpu) {
  REQUIRE_GPU();
  const int64_t n = 1000;
  VirtualMachine vm(add_executable(n), kGpu);
  Tensor x = iota({n}).to(kGpu);
  auto out = vm.invoke("main", {x});
  EXPECT_EQ(out[0].device(), kGpu);
  std::vector<float> v = values(out[0]);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[size_t(i)], 2.0f * float(i));
  EXPECT_EQ(vm.memory_stats().device_copies, 1);  // x to the host; to_vdevice made the other copy
  EXPECT_THROW(VirtualMachine cpu_vm(add_executable(n)), Error);  // to_vdevice needs a GPU VM

  // A CUDA module gets CUDA tensors and the VM's stream.
  auto module = std::make_shared<CudaCopyModule>();
  auto ex = std::make_shared<Executable>();
  ex->extern_symbols = {"copy"};
  ex->external_modules = {module};
  VMFunction f;
  f.name = "main";
  f.param_names = {"x"};
  f.num_registers = 2;
  Instruction call;
  call.op = Opcode::CallExtern;
  call.index = 0;
  call.args = {0};
  call.dst = 1;
  call.outs = {TensorSpec{f32, true, {n}, {}, {}}};
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {1};
  f.code = {call, ret};
  ex->functions.push_back(f);
  VirtualMachine gpu_vm(ex, kGpu);
  StreamHandle s = device_api(kGpu)->create_stream(0);
  gpu_vm.set_stream(s);
  out = gpu_vm.invoke("main", {iota({n}, 3)});  // a host input goes to the GPU for the module
  EXPECT_EQ(module->streams, (std::vector<StreamHandle>{s}));
  EXPECT_EQ(values(out[0])[n - 1], 3.0f * float(n - 1));  // the caller's stream waited for s
  device_api(kGpu)->free_stream(0, s);
}

// What the host-kernel fallback costs: a VM on the GPU running a host kernel on a GPU tensor
// copies it to the host and the result back; the profile shows the copies' share.
TEST(Cuda, HostKernelFallbackCost) {
  REQUIRE_GPU();
  const int64_t n = int64_t(16) << 20;  // 64 MiB of float32
  auto ex = std::make_shared<Executable>();
  ex->kernel_names = {"relax.add"};
  VMFunction f;
  f.name = "main";
  f.param_names = {"x"};
  f.num_registers = 2;
  Instruction add;
  add.op = Opcode::CallKernel;
  add.index = 0;
  add.args = {0, 0};
  add.dst = 1;
  add.outs = {TensorSpec{f32, true, {n}, {}, {}}};
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {1};
  f.code = {add, ret};
  ex->functions.push_back(f);
  VirtualMachine vm(ex, kGpu);
  Tensor x = iota({n}).to(kGpu);
  vm.invoke("main", {x});  // warm-up
  ProfileReport r = vm.profile("main", {x});
  double copies = 0, kernel = 0;
  for (auto& e : r.entries) (e.name == "(device copies)" ? copies : kernel) += e.total_us;
  std::printf("[measure] VM on cuda:0, relax.add on 64 MiB through the host: %.0f us per call, %.0f us of it "
              "device copies, %.0f us the host kernel\n", r.wall_us, copies, kernel);
  EXPECT_GT(copies, 0);
  std::vector<float> v = values(vm.invoke("main", {x})[0]);
  EXPECT_EQ(v[size_t(n - 1)], 2.0f * float(n - 1));
}

namespace {
/// A capturable CUDA module: out = in by a device-to-device copy on the current stream.
class CudaChainModule : public RuntimeModule {
 public:
  int calls = 0;
  std::string type_key() const override { return "cuda_chain_test"; }
  DeviceKind device_kind() const override { return DeviceKind::kCUDA; }
  bool supports_graph_capture() const override { return true; }
  PackedFunc get_function(const std::string& s) override {
    if (s != "copy") return {};
    return [this](std::span<const Tensor> ins, std::span<Tensor> outs) {
      ++calls;
      outs[0].copy_from(ins[0]);
    };
  }
};

/// main(x) = copy(copy(...copy(x))), `depth` external calls of `n` floats each.
std::shared_ptr<Executable> chain(std::shared_ptr<RuntimeModule> module, int depth, int64_t n) {
  auto ex = std::make_shared<Executable>();
  ex->extern_symbols = {"copy"};
  ex->external_modules = {module};
  VMFunction f;
  f.name = "main";
  f.param_names = {"x"};
  f.num_registers = depth + 1;
  for (int i = 0; i < depth; ++i) {
    Instruction c;
    c.op = Opcode::CallExtern;
    c.index = 0;
    c.args = {i};
    c.dst = i + 1;
    c.outs = {TensorSpec{f32, true, {n}, {}, {}}};
    if (i > 0) c.kills = {i};
    f.code.push_back(c);
  }
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {depth};
  f.code.push_back(ret);
  ex->functions.push_back(f);
  return ex;
}
}  // namespace

// A whole run captured as a CUDA Graph on the second call and replayed: the results follow the
// inputs, the module is not called again, and the launch overhead of many small calls goes.
TEST(Cuda, GraphCaptureReplaysAWholeRun) {
  REQUIRE_GPU();
  const int depth = 50;
  const int64_t n = 1024;
  auto module = std::make_shared<CudaChainModule>();
  VirtualMachine vm(chain(module, depth, n), kGpu);
  std::vector<Tensor> held;
  for (int call = 0; call < 5; ++call) held.push_back(vm.invoke("main", {iota({n}, float(call + 1)).to(kGpu)})[0]);
  for (int call = 0; call < 5; ++call) {
    std::vector<float> v = values(held[size_t(call)]);
    ASSERT_EQ(v[size_t(n - 1)], float(n - 1) * float(call + 1)) << call;
    ASSERT_EQ(v[1], float(call + 1)) << call;
  }
  EXPECT_EQ(vm.graph_stats().captures, 1);
  EXPECT_EQ(vm.graph_stats().launches, 4);
  EXPECT_EQ(vm.graph_stats().fallbacks, 0);
  EXPECT_EQ(module->calls, 2 * depth);  // warm-up and capture only

  // Per-call time with and without the graph (mean of 500 calls, synchronized at the end).
  Tensor x = iota({n}).to(kGpu);
  auto per_call_us = [&](VirtualMachine& m) {
    for (int i = 0; i < 5; ++i) m.invoke("main", {x});
    synchronize(kGpu);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 500; ++i) m.invoke("main", {x});
    synchronize(kGpu);
    return seconds_since(t0) * 1e6 / 500;
  };
  double graphed = per_call_us(vm);
  VirtualMachine plain(chain(module, depth, n), kGpu);
  plain.set_graph_capture(false);
  double normal = per_call_us(plain);
  std::printf("[measure] VM call of %d external device copies of 4 KiB: %.1f us as a CUDA Graph, %.1f us "
              "without\n", depth, graphed, normal);
  EXPECT_EQ(plain.graph_stats().launches, 0);
  EXPECT_EQ(values(plain.invoke("main", {x})[0])[7], 7.0f);
}
