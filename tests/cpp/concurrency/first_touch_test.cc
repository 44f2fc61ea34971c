// The process-wide tables, first touched from N threads at once: the operator registry (filled
// on first use), the pattern and kind-fusion registries, the codegen and target registries, the
// kernel registry, the plug-in loader and the module loaders it fills. ctest runs every test in
// a process of its own, so each test is the first to touch what it names; each also mixes
// registrations with lookups, which must never see a half-changed table.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/dpl/pattern.h"
#include "partita/op/registry.h"
#include "partita/runtime/plugin.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/transform/fuse_ops_by_kind.h"
#include "partita/transform/pattern_registry.h"
#include "threads.h"

using namespace partita;
using namespace partita::runtime;
namespace fs = std::filesystem;
using partita::testing::kThreads;
using partita::testing::run_together;

namespace {

const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            m: R.Tensor((4, 8), dtype="float32") = R.matmul(x, w, out_dtype="void")
            a: R.Tensor((4, 8), dtype="float32") = R.add(m, x)
            r: R.Tensor((4, 8), dtype="float32") = R.nn.relu(a)
            R.output(r)
        return r
)";

Tensor filled(std::vector<int64_t> shape, int seed) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = float((i * 3 + seed) % 17 - 8) / 4.f;
  return t;
}

std::vector<Tensor> model_inputs() { return {filled({4, 8}, 1), filled({8, 8}, 2)}; }

std::vector<float> values(const Tensor& t) { return {t.data_as<float>(), t.data_as<float>() + t.numel()}; }

/// The backends with a code generator, in registration order.
std::vector<std::string> codegen_backends() {
  std::vector<std::string> out;
  for (const std::string& name : backend::list_backends())
    if (backend::find_backend(name)->codegen) out.push_back(name);
  return out;
}

/// Whether every module of `ex` runs its functions on the CPU (a GPU backend's need a device).
bool runs_on_cpu(const Executable& ex) {
  for (const auto& m : ex.external_modules)
    if (m->device_kind() != DeviceKind::kCPU) return false;
  return true;
}

/// The backends whose artifact of kModel runs on the CPU (built here, so plug-ins get loaded).
std::vector<std::string> cpu_codegen_backends() {
  std::vector<std::string> out;
  for (const std::string& name : codegen_backends())
    if (runs_on_cpu(*codegen::build(transform::partition_for(name, script::parse_module(kModel))))) out.push_back(name);
  return out;
}

void register_test_op(const std::string& name) {
  op::OpDef def;
  def.name = name;
  def.args = {{"x"}};
  def.infer = [](const CallNode& call) { return call.args[0]->struct_info_; };
  def.fusion_kind = op::FusionKind::ElementWise;
  op::register_op(def);
}

}  // namespace

TEST(ConcurrencyFirstTouch, OperatorRegistry) {
  std::vector<size_t> counts(kThreads);
  auto errors = run_together(kThreads, [&](int t) {
    // Half the threads register operators while the others look operators up.
    if (t % 2) register_test_op("test.concurrency.op" + std::to_string(t));
    for (int i = 0; i < 50; ++i) {
      if (!op::find_op_def("relax.nn.relu")) throw Error("Missing", "relax.nn.relu");
      if (op::get_op("relax.add")->name != "relax.add") throw Error("Wrong", "relax.add");
      if (op::find_op_def("relax.no_such_op")) throw Error("Wrong", "relax.no_such_op");
    }
    counts[size_t(t)] = op::list_ops().size();
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  size_t builtin = op::list_ops().size() - kThreads / 2;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_GE(counts[size_t(t)], builtin);
    EXPECT_LE(counts[size_t(t)], builtin + kThreads / 2);
    if (t % 2) {
      EXPECT_NE(op::find_op_def("test.concurrency.op" + std::to_string(t)), nullptr);
    }
  }
}

TEST(ConcurrencyFirstTouch, CompilingInEveryThread) {
  // Each thread parses, partitions for a CPU backend, builds and runs: the parser, the operator,
  // pattern, codegen and target registries, plug-in loading by the codegens and the kernels.
  std::vector<std::string> backends = cpu_codegen_backends();
  ASSERT_FALSE(backends.empty());
  std::vector<std::vector<float>> got(kThreads);
  auto errors = run_together(kThreads, [&](int t) {
    IRModule mod = script::parse_module(kModel);
    IRModule parted = transform::partition_for(backends[size_t(t) % backends.size()], mod);
    got[size_t(t)] = values(VirtualMachine(codegen::build(parted)).invoke("main", model_inputs())[0]);
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  std::vector<float> want = values(VirtualMachine(codegen::build(script::parse_module(kModel))).invoke("main", model_inputs())[0]);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[size_t(t)].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[size_t(t)][i], want[i], 1e-5f * (1 + std::abs(want[i])))
          << "thread " << t << " (" << backends[size_t(t) % backends.size()] << ") element " << i;
  }
}

TEST(ConcurrencyFirstTouch, PluginLoaderAndModuleLoaders) {
  // The artifacts are made by a child process, so this process has loaded no plug-in when its
  // threads load them all at once (each load looks up a module loader, which loads a plug-in).
  // The child writes only the artifacts that run on the CPU.
  std::vector<std::string> backends = codegen_backends();
  std::vector<fs::path> files;
  for (const auto& b : backends)
    files.push_back(fs::temp_directory_path() / ("partita_first_touch_" + b + "_" + std::to_string(getpid()) + ".ptx"));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 0;
    try {
      for (size_t i = 0; i < backends.size(); ++i) {
        auto ex = codegen::build(transform::partition_for(backends[i], script::parse_module(kModel)));
        if (runs_on_cpu(*ex)) ex->export_library(files[i].string());
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      status = 1;
    }
    _exit(status);
  }
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not build the artifacts";
  for (size_t i = backends.size(); i-- > 0;)
    if (!fs::exists(files[i])) {
      backends.erase(backends.begin() + long(i));
      files.erase(files.begin() + long(i));
    }
  ASSERT_FALSE(backends.empty());
  // Run alone (as ctest runs it) nothing is loaded yet; in a run of the whole program an
  // earlier test may have loaded plug-ins, and the loads still overlap below.
  for (const auto& b : backends) {
    std::string plugin = backend::find_backend(b)->runtime_plugin;
    if (!plugin.empty() && plugin_loaded(plugin))
      std::printf("[ NOTE     ] plug-in %s was loaded by an earlier test of this process\n", plugin.c_str());
  }
  std::vector<std::vector<std::vector<float>>> got(kThreads);
  auto errors = run_together(kThreads, [&](int t) {
    for (size_t i = 0; i < files.size(); ++i) {
      size_t k = (i + size_t(t)) % files.size();  // every thread starts with another artifact
      // Half the threads ask for the plug-in by name first, the others through the loader.
      std::string plugin = backend::find_backend(backends[k])->runtime_plugin;
      if (t % 2 == 0 && !plugin.empty()) load_plugin(plugin);
      auto ex = load_module(files[k].string());
      got[size_t(t)].resize(files.size());
      got[size_t(t)][k] = values(VirtualMachine(ex).invoke("main", model_inputs())[0]);
    }
  });
  for (const auto& f : files) fs::remove(f);
  ASSERT_TRUE(errors.empty()) << errors[0];
  for (const auto& b : backends) {
    std::string plugin = backend::find_backend(b)->runtime_plugin;
    if (!plugin.empty()) {
      EXPECT_TRUE(plugin_loaded(plugin)) << plugin;
    }
  }
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(got[size_t(t)], got[0]) << "thread " << t;
}

TEST(ConcurrencyFirstTouch, PatternAndKindFusionRegistries) {
  auto errors = run_together(kThreads, [&](int t) {
    std::string name = "test_concurrency.p" + std::to_string(t);
    for (int i = 0; i < 20; ++i) {
      if (t % 2) {
        transform::FusionPattern p;
        p.name = name;
        p.pattern = dpl::is_op("relax.add")({dpl::wildcard(), dpl::wildcard()});
        transform::register_patterns({p});
        transform::register_kind_fusion("test_concurrency_k" + std::to_string(i % 3), transform::KindFusion{});
      } else {
        (void)transform::get_patterns_with_prefix("test_concurrency.");
        (void)transform::get_pattern("dnnl.conv2d");
        (void)transform::find_kind_fusion("test_concurrency_k" + std::to_string(i % 3));
      }
    }
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(transform::get_patterns_with_prefix("test_concurrency.").size(), size_t(kThreads / 2));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(transform::find_kind_fusion("test_concurrency_k" + std::to_string(i)));
}

TEST(ConcurrencyFirstTouch, KernelAndDeviceRegistries) {
  auto errors = run_together(kThreads, [&](int t) {
    for (int i = 0; i < 50; ++i) {
      if (!find_kernel("relax.add") || !find_kernel("relax.nn.relu")) throw Error("Missing", "kernel");
      if (t % 2 && i == 0) register_kernel("test.concurrency.k" + std::to_string(t), find_kernel("relax.add"));
      if (device_api(Device::cpu())->device_count() != 1) throw Error("Wrong", "cpu device count");
    }
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  for (int t = 1; t < kThreads; t += 2) EXPECT_TRUE(find_kernel("test.concurrency.k" + std::to_string(t)));
}
