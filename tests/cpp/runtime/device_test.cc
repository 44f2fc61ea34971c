// Devices without a GPU: Device names, the device-API registry and the CPU's API, tensors on a
// device (the fake one of fake_device.h), plug-in loading errors, and the errors a CUDA device
// gives where the plug-in or a GPU is missing. These run everywhere (CI has no GPU).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fake_device.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/plugin.h"
#include "partita/runtime/tensor.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;
using partita::testing::FakeDeviceAPI;
namespace fs = std::filesystem;

namespace {

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

Tensor iota(std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = float(i);
  return t;
}

}  // namespace

TEST(Device, NamesParseAndPrint) {
  EXPECT_EQ(Device::parse("cuda:1"), (Device{DeviceKind::kCUDA, 1}));
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda_host"), (Device{DeviceKind::kCUDAHost, 0}));
  EXPECT_EQ(Device::cuda(3).str(), "cuda:3");
  EXPECT_EQ(Device::parse(Device::cuda(3).str()), Device::cuda(3));
  EXPECT_EQ(device_kind_name(DeviceKind::kCUDAManaged), "cuda_managed");
  EXPECT_EQ(device_kind_name(DeviceKind(99)), "device_type_99");
  EXPECT_TRUE(is_known_device_kind(2));
  EXPECT_FALSE(is_known_device_kind(5));
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", ""}) {
    Error e = error_of([&] { Device::parse(bad); });
    EXPECT_EQ(e.kind(), "ValueError") << bad;
    EXPECT_TRUE(contains(e.message(), "kinds: cpu, cuda")) << e.message();
  }
  EXPECT_TRUE(Device::cpu().is_host_accessible());
  EXPECT_TRUE((Device{DeviceKind::kCUDAHost, 0}).is_host_accessible());
  EXPECT_FALSE(Device::cuda().is_host_accessible());
  EXPECT_NE(std::hash<Device>()(Device::cuda(0)), std::hash<Device>()(Device::cuda(1)));
}

TEST(DeviceAPI, CpuIsBuiltInAndCopiesAreMemcpy) {
  DeviceAPI* cpu = device_api(Device::cpu());
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu, find_device_api(DeviceKind::kCPU));
  EXPECT_EQ(cpu->device_count(), 1);
  void* p = cpu->alloc(0, 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  int src[25];
  for (int i = 0; i < 25; ++i) src[i] = i * 3;
  cpu->copy(src, Device::cpu(), p, Device::cpu(), sizeof src, nullptr);
  EXPECT_EQ(static_cast<int*>(p)[24], 72);
  cpu->free(0, p);
  EXPECT_TRUE(device_exists(Device::cpu()));
  EXPECT_FALSE(device_exists(Device::cpu(1)));
  EXPECT_EQ(device_plugin_name(DeviceKind::kCUDA), "cuda");
  EXPECT_EQ(device_plugin_name(DeviceKind::kCUDAHost), "cuda");
  EXPECT_EQ(device_plugin_name(DeviceKind::kCPU), "");
}

TEST(DeviceAPI, KindsWithoutAnApiNameTheDevice) {
  Error e = error_of([] { device_api(Device{DeviceKind::kMetal, 0}); });
  EXPECT_EQ(e.kind(), "RuntimeError");
  EXPECT_TRUE(contains(e.message(), "metal:0")) << e.message();
  EXPECT_TRUE(contains(e.message(), "no device API for metal")) << e.message();
  EXPECT_THROW(Tensor::empty({2}, DataType::Float(32), Device{DeviceKind::kMetal, 0}), Error);
}

TEST(DeviceAPI, CurrentStreamsArePerDeviceAndThread) {
  Device a = Device::cuda(0), b = Device::cuda(1);
  auto s1 = reinterpret_cast<StreamHandle>(0x10), s2 = reinterpret_cast<StreamHandle>(0x20);
  EXPECT_EQ(current_stream(a), nullptr);
  {
    StreamGuard g(a, s1);
    EXPECT_EQ(current_stream(a), s1);
    EXPECT_EQ(current_stream(b), nullptr);
    set_current_stream(b, s2);
    {
      StreamGuard inner(a, s2);
      EXPECT_EQ(current_stream(a), s2);
    }
    EXPECT_EQ(current_stream(a), s1);
    StreamHandle seen = reinterpret_cast<StreamHandle>(0x1);
    std::thread([&] { seen = current_stream(a); }).join();
    EXPECT_EQ(seen, nullptr);  // another thread has its own
  }
  EXPECT_EQ(current_stream(a), nullptr);
  EXPECT_EQ(current_stream(b), s2);
  set_current_stream(b, nullptr);
}

TEST(Tensor, OnTheCpuByDefault) {
  Tensor t = iota({2, 3});
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_TRUE(t.to(Device::cpu()).same_buffer(t));
  Tensor c = Tensor::empty({3, 2}, DataType::Float(32));
  c.copy_from(t);
  EXPECT_EQ(c.data_as<float>()[5], 5.0f);
  EXPECT_EQ(t.view({6}).shape(), (std::vector<int64_t>{6}));
  Error e = error_of([&] { c.copy_from(iota({7})); });
  EXPECT_EQ(e.kind(), "ValueError");
  EXPECT_TRUE(contains(e.message(), "7 elements")) << e.message();
  EXPECT_THROW(c.copy_from(Tensor()), Error);
}

TEST(Tensor, OnADeviceGoesThroughItsApi) {
  FakeDeviceAPI& fake = FakeDeviceAPI::get();
  fake.reset_counts();
  Device dev = FakeDeviceAPI::device();
  Tensor host = iota({4, 5});
  {
    Tensor d = host.to(dev);
    EXPECT_EQ(d.device(), dev);
    EXPECT_FALSE(d.same_buffer(host));
    EXPECT_EQ(fake.allocs, 1);
    ASSERT_EQ(fake.copies.size(), 1u);
    EXPECT_EQ(fake.copies[0], std::make_pair(Device::cpu(), dev));
    EXPECT_TRUE(d.to(dev).same_buffer(d));

    Tensor d2 = d.copy();  // device to device, on the device
    EXPECT_EQ(d2.device(), dev);
    EXPECT_EQ(fake.copies.back(), std::make_pair(dev, dev));
    Tensor back = d2.to(Device::cpu());
    EXPECT_EQ(back.device(), Device::cpu());
    EXPECT_EQ(fake.copies.back(), std::make_pair(dev, Device::cpu()));
    EXPECT_TRUE(back.content_equal(host));
    EXPECT_TRUE(d.content_equal(d2));     // compared through host copies
    EXPECT_FALSE(d.content_equal(host));  // another device is another tensor
    EXPECT_EQ(d.content_hash(), d2.content_hash());
    EXPECT_NE(d.content_hash(), host.content_hash());
    // Copies run on the thread's current stream of the device.
    auto s = reinterpret_cast<StreamHandle>(0x77);
    StreamGuard g(dev, s);
    Tensor up = host.to(dev);
    EXPECT_EQ(fake.copy_streams.back(), s);
    EXPECT_EQ(fake.alloc_streams.back(), s);
    synchronize(dev);
    EXPECT_EQ(fake.syncs.back(), s);
  }
  EXPECT_EQ(fake.frees, fake.allocs);  // every device buffer went back through the API
  EXPECT_TRUE(fake.live.empty());
}

TEST(Plugin, MissingPluginNamesTheLibraryAndEveryPathTried) {
  Error e = error_of([] { load_plugin("no_such_plugin"); });
  EXPECT_EQ(e.kind(), "RuntimeError");
  EXPECT_TRUE(contains(e.message(), "'no_such_plugin'")) << e.message();
  EXPECT_TRUE(contains(e.message(), "libpartita_runtime_no_such_plugin.so: cannot open shared object file")) << e.message();
  EXPECT_TRUE(contains(e.message(), "PARTITA_PLUGIN_PATH")) << e.message();
  EXPECT_FALSE(plugin_loaded("no_such_plugin"));
}

TEST(Plugin, UnloadableFileGivesTheLoadersReason) {
  fs::path dir = fs::temp_directory_path() / "partita_plugin_test";
  fs::create_directories(dir);
  { std::ofstream(dir / "libpartita_runtime_broken.so") << "not a shared object"; }
  std::string old = std::getenv("PARTITA_PLUGIN_PATH") ? std::getenv("PARTITA_PLUGIN_PATH") : "";
  setenv("PARTITA_PLUGIN_PATH", ("/nonexistent:" + dir.string()).c_str(), 1);
  Error e = error_of([] { load_plugin("broken"); });
  setenv("PARTITA_PLUGIN_PATH", old.c_str(), 1);
  fs::remove_all(dir);
  EXPECT_TRUE(contains(e.message(), "/nonexistent/libpartita_runtime_broken.so: cannot open shared object file")) << e.message();
  // dlerror's text for a file that is no ELF object ("invalid ELF header" / "file too short").
  EXPECT_TRUE(contains(e.message(), (dir / "libpartita_runtime_broken.so").string() + ": ")) << e.message();
  EXPECT_TRUE(contains(e.message(), "ELF") || contains(e.message(), "too short")) << e.message();
}

// Where there is no GPU (CI), a CUDA device is a clear error: either the plug-in is missing
// (a CPU-only build) or it loads and finds no device. With a GPU, tests/cpp/cuda covers it.
TEST(DeviceAPI, CudaWithoutAGpuIsAClearError) {
  if (device_exists(Device::cuda(0))) GTEST_SKIP() << "a CUDA device is present: tests/cpp/cuda covers CUDA";
  for (Device d : {Device::cuda(0), Device{DeviceKind::kCUDAHost, 0}}) {
    Error e = error_of([&] { Tensor::empty({4}, DataType::Float(32), d); });
    EXPECT_EQ(e.kind(), "RuntimeError");
    bool no_plugin = contains(e.message(), "needs the cuda runtime plug-in") &&
                     contains(e.message(), "libpartita_runtime_cuda.so");
    bool no_gpu = contains(e.message(), "no CUDA device: " + d.str());
    EXPECT_TRUE(no_plugin || no_gpu) << e.message();
    if (no_gpu) {
      EXPECT_TRUE(plugin_loaded("cuda"));
    }
  }
  EXPECT_FALSE(device_exists(Device::cuda(0)));
}
