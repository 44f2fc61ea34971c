// The "cuda" runtime module without a GPU: it serializes source, cubin and launches, loads back
// from an artifact on a machine without a device, rejects corrupted bytes and wrong tensors, and
// says clearly that it needs a device; the NVRTC cache answers from memory and from disk.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "cudagen_util.h"
#include "partita/codegen/codegen.h"

namespace partita::cudagen_test {
namespace {

const char* kText = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 6), dtype="float32"), y: R.Tensor((6,), dtype="float32")):
        with R.dataflow():
            lv = R.add(x, y)
            gv = R.nn.softmax(lv, axis=-1)
            R.output(gv)
        return gv
)";

runtime::ModulePtr compiled_module() {
  IRModule out = run_cuda_codegen(backend::cuda::partition_for_cuda(script::parse_module(kText)));
  auto mods = codegen::external_mods_of(out);
  EXPECT_EQ(mods.size(), 1u);
  return mods.at(0);
}

TEST(CudaKernelModule, SaveAndLoadKeepEverything) {
  runtime::ModulePtr m = compiled_module();
  EXPECT_EQ(m->type_key(), "cuda");
  std::string bytes;
  m->save_to_binary(bytes);
  runtime::ModulePtr back = runtime::load_module_from_binary("cuda", bytes);
  EXPECT_EQ(back->function_names(), m->function_names());
  EXPECT_EQ(back->get_source(), m->get_source());
  EXPECT_EQ(back->get_source("cubin"), m->get_source("cubin"));
  std::string again;
  back->save_to_binary(again);
  EXPECT_EQ(again, bytes);
}

TEST(CudaKernelModule, CorruptedBytesAreRejected) {
  runtime::ModulePtr m = compiled_module();
  std::string bytes;
  m->save_to_binary(bytes);
  EXPECT_THROW(runtime::load_module_from_binary("cuda", bytes.substr(0, bytes.size() / 2)), Error);
  std::string bad = bytes;
  bad[0] ^= 0x55;
  try {
    runtime::load_module_from_binary("cuda", bad);
    FAIL() << "bad magic accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a cuda module"), std::string::npos) << e.what();
  }
  EXPECT_THROW(runtime::load_module_from_binary("cuda", bytes + "x"), Error);
}

TEST(CudaKernelModule, WrongTensorsAreRejectedBeforeAnyDeviceWork) {
  runtime::ModulePtr m = compiled_module();
  runtime::PackedFunc f = m->get_function(m->function_names().at(0));
  ASSERT_TRUE(bool(f));
  EXPECT_FALSE(bool(m->get_function("no_such_symbol")));
  Tensor x = random_input({3, 6}, DataType::Float(32), 1), y = random_input({6}, DataType::Float(32), 2);
  std::vector<Tensor> out = {Tensor::empty({3, 6}, DataType::Float(32))};
  auto message = [&](std::vector<Tensor> in, std::vector<Tensor> o) {
    try {
      f(in, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({x}, out).find("expected 2 inputs and 1 outputs, got 1 and 1"), std::string::npos);
  EXPECT_NE(message({x, random_input({5}, DataType::Float(32), 2)}, out).find("input 1 has shape (5,), expected (6,)"),
            std::string::npos);
  EXPECT_NE(message({x, converted(y, DataType::Float(16))}, out).find("input 1 has dtype float16, expected float32"),
            std::string::npos);
  EXPECT_NE(message({x, y}, {Tensor::empty({4, 6}, DataType::Float(32))}).find("output 0 has shape (4, 6), expected (3, 6)"),
            std::string::npos);
}

TEST(CudaKernelModule, ArtifactLoadsWithoutADeviceAndSaysWhatItNeeds) {
  auto exec = build_cuda(script::parse_module(kText));
  std::string bytes;
  exec->save(bytes);
  auto loaded = runtime::Executable::load(bytes);
  std::string why;
  if (device_available(&why)) GTEST_SKIP() << "a CUDA device is present";
  // The VM for a CPU cannot call CUDA functions; the VM for a GPU needs one.
  try {
    runtime::VirtualMachine cpu_vm(loaded);
    FAIL() << "a CPU VM accepted CUDA functions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("create the VM for a cuda device"), std::string::npos) << e.what();
  }
  try {
    runtime::VirtualMachine vm(loaded, Device::cuda(0));
    vm.invoke("main", {random_input({2, 6}, DataType::Float(32), 1), random_input({6}, DataType::Float(32), 2)});
    FAIL() << "ran without a device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

TEST(CudaKernelModule, CompileCacheInMemoryAndOnDisk) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("partita_cuda_cache_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  codegen::Target target("cuda", {{"cache_dir", dir.string()}});
  // A source nothing else compiles, so the first compile is a real one.
  std::string src = "extern \"C\" __global__ void pt_cache_probe_" + std::to_string(::getpid()) +
                    "(float* p) { p[threadIdx.x] = 2.0f; }";
  auto before = backend::cuda::compile_cache_stats();
  std::string cubin = backend::cuda::compile_cubin(src, target);
  auto after = backend::cuda::compile_cache_stats();
  EXPECT_EQ(after.compiles, before.compiles + 1);
  ASSERT_FALSE(cubin.empty());
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".cubin";
  EXPECT_EQ(files, 1);
  // Again: from memory.
  EXPECT_EQ(backend::cuda::compile_cubin(src, target), cubin);
  EXPECT_EQ(backend::cuda::compile_cache_stats().memory_hits, after.memory_hits + 1);
  // After forgetting the memory cache: from disk.
  backend::cuda::clear_compile_memory_cache();
  EXPECT_EQ(backend::cuda::compile_cubin(src, target), cubin);
  EXPECT_EQ(backend::cuda::compile_cache_stats().disk_hits, after.disk_hits + 1);
  // A damaged cache file is ignored (recompiled), never trusted.
  backend::cuda::clear_compile_memory_cache();
  for (const auto& e : fs::directory_iterator(dir)) fs::resize_file(e.path(), 40);
  int compiles = backend::cuda::compile_cache_stats().compiles;
  EXPECT_EQ(backend::cuda::compile_cubin(src, target), cubin);
  EXPECT_EQ(backend::cuda::compile_cache_stats().compiles, compiles + 1);
  // Other options, another entry.
  backend::cuda::clear_compile_memory_cache();
  codegen::Target other("cuda", {{"cache_dir", dir.string()}, {"options", std::vector<std::string>{"-lineinfo"}}});
  compiles = backend::cuda::compile_cache_stats().compiles;
  backend::cuda::compile_cubin(src, other);
  EXPECT_EQ(backend::cuda::compile_cache_stats().compiles, compiles + 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace partita::cudagen_test
