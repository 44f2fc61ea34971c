// One loaded artifact used by N threads at once, each with its own VM: every CPU backend's
// artifact (its plug-in's module shared by all VMs) and a host-only one with symbolic shapes.
// Each thread's results are byte-identical to the same inputs run on one thread.
#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>

#include <filesystem>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/transform/pattern_registry.h"
#include "threads.h"

using namespace partita;
using namespace partita::runtime;
namespace fs = std::filesystem;
using partita::testing::kThreads;
using partita::testing::run_together;

namespace {

// relu(x @ w + y) + x and a softmax: products, activations, element-wise adds and a
// reduction, of which every CPU backend takes some.
const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32"), y: R.Tensor((8, 16), dtype="float32")) -> R.Tensor((8, 16), dtype="float32"):
        with R.dataflow():
            m: R.Tensor((8, 16), dtype="float32") = R.matmul(x, w, out_dtype="void")
            b: R.Tensor((8, 16), dtype="float32") = R.add(m, y)
            r: R.Tensor((8, 16), dtype="float32") = R.nn.relu(b)
            s: R.Tensor((8, 16), dtype="float32") = R.add(r, x)
            t: R.Tensor((8, 16), dtype="float32") = R.nn.softmax(s, axis=-1)
            R.output(t)
        return t
)";

// Symbolic batch: every call allocates by its own shapes, from each VM's own pool.
const char* kSymbolic = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32"), y: R.Tensor(("n", 16), dtype="float32")) -> R.Tensor(("n", 16), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            m: R.Tensor((n, 16), dtype="float32") = R.matmul(x, w, out_dtype="void")
            b: R.Tensor((n, 16), dtype="float32") = R.add(m, y)
            r: R.Tensor((n, 16), dtype="float32") = R.nn.relu(b)
            t: R.Tensor((n, 16), dtype="float32") = R.nn.softmax(r, axis=-1)
            R.output(t)
        return t
)";

Tensor filled(std::vector<int64_t> shape, int seed) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = float((i * 7 + seed * 13) % 23 - 11) / 8.f;
  return t;
}

std::vector<Tensor> inputs_for(int thread, int call, int64_t rows) {
  int seed = thread * 31 + call;
  return {filled({rows, 16}, seed), filled({16, 16}, seed + 1), filled({rows, 16}, seed + 2)};
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

/// Exports `ex`, loads it back, and runs it on kThreads threads at once, each with its own VM
/// and its own inputs, comparing every result with the same call on one thread.
void expect_threads_match_one_thread(const std::shared_ptr<Executable>& built, const std::string& tag,
                                     bool symbolic) {
  fs::path file = fs::temp_directory_path() / ("partita_concurrency_" + tag + "_" + std::to_string(getpid()) + ".ptx");
  built->export_library(file.string());
  std::shared_ptr<Executable> loaded = load_module(file.string());
  fs::remove(file);
  constexpr int kCalls = 6;
  auto rows = [&](int thread, int call) { return symbolic ? int64_t(1 + (thread + call) % 9) : int64_t(8); };
  // The reference: the same calls, one thread, one VM.
  std::vector<std::vector<Tensor>> want(kThreads);
  {
    VirtualMachine vm(loaded);
    for (int t = 0; t < kThreads; ++t)
      for (int c = 0; c < kCalls; ++c) want[size_t(t)].push_back(vm.invoke("main", inputs_for(t, c, rows(t, c)))[0].copy());
  }
  std::vector<std::vector<Tensor>> got(kThreads);
  auto errors = run_together(kThreads, [&](int t) {
    VirtualMachine vm(loaded);
    for (int c = 0; c < kCalls; ++c) got[size_t(t)].push_back(vm.invoke("main", inputs_for(t, c, rows(t, c)))[0].copy());
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  for (int t = 0; t < kThreads; ++t)
    for (int c = 0; c < kCalls; ++c)
      EXPECT_TRUE(same_bytes(got[size_t(t)][size_t(c)], want[size_t(t)][size_t(c)])) << tag << " thread " << t << " call " << c;
}

}  // namespace

TEST(ConcurrencyArtifact, HostOnlyWithSymbolicShapes) {
  expect_threads_match_one_thread(codegen::build(script::parse_module(kSymbolic)), "host", true);
}

TEST(ConcurrencyArtifact, EveryCPUBackendsArtifact) {
  IRModule mod = script::parse_module(kModel);
  int ran = 0;
  for (const std::string& name : backend::list_backends()) {
    auto info = backend::find_backend(name);
    if (!info->codegen) continue;  // partitions only: nothing to run
    IRModule parted = transform::partition_for(name, mod);
    std::shared_ptr<Executable> ex;
    try {
      ex = codegen::build(parted);
    } catch (const Error& e) {
      ADD_FAILURE() << "backend " << name << ": " << e.what();
      continue;
    }
    if (ex->external_modules.empty()) continue;  // took nothing of this model
    bool on_cpu = true;
    for (const auto& m : ex->external_modules) on_cpu = on_cpu && m->device_kind() == DeviceKind::kCPU;
    if (!on_cpu) {
      std::printf("[ NOTE     ] backend %s runs on another device; its concurrency is the GPU tests'\n", name.c_str());
      continue;
    }
    SCOPED_TRACE("backend " + name);
    expect_threads_match_one_thread(ex, name, false);
    ++ran;
  }
  EXPECT_GE(ran, 2) << "fewer than two CPU backends took part of the model";
}
