// The runtime-only program (tools/partita_run_min.cc, linked against libpartita_runtime alone)
// loads an exported artifact in a separate process and computes what the in-process VM computes:
// a host-only artifact, and an artifact of every registered backend that generates code (its
// runtime plug-in loaded by that process on demand).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <cmath>
#include <sstream>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/runtime/plugin.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/transform/pattern_registry.h"

using namespace partita;
using namespace partita::runtime;
namespace fs = std::filesystem;

namespace {

std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  *status = pclose(p);
  return out;
}

fs::path tool_path() { return fs::read_symlink("/proc/self/exe").parent_path() / "partita_run_min"; }

}  // namespace

TEST(RunMin, LoadsAndRunsAnExportedModelInAnotherProcess) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((3, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        with R.dataflow():
            m: R.Tensor((2, 2), dtype="float32") = R.matmul(x, y, out_dtype="void")
            s: R.Tensor((2, 2), dtype="float32") = R.nn.softmax(m, axis=-1)
            R.output(s)
        return s
)";
  fs::path tool = tool_path();
  if (!fs::exists(tool)) GTEST_SKIP() << "partita_run_min not built at " << tool;
  auto ex = codegen::build_vm_executable(script::parse_module(text));
  fs::path file = fs::temp_directory_path() / "partita_run_min_test.ptx";
  ex->export_library(file.string());
  int status = -1;
  std::string got = run_command(tool.string() + " " + file.string() + " main float32:2x3 float32:3x2", &status);
  EXPECT_EQ(status, 0) << got;
  // Same inputs in process: element i of input k = ((i*7 + k*3) % 11 - 5) / 4.
  std::vector<Tensor> inputs = {Tensor::empty({2, 3}, DataType::Float(32)), Tensor::empty({3, 2}, DataType::Float(32))};
  for (int k = 0; k < 2; ++k)
    for (int64_t i = 0; i < 6; ++i) inputs[size_t(k)].data_as<float>()[i] = float(double((i * 7 + k * 3) % 11 - 5) / 4.0);
  auto out = VirtualMachine(ex).invoke("main", inputs);
  char want[256];
  const float* o = out[0].data_as<float>();
  std::snprintf(want, sizeof want, "float32[2, 2]: %.6g %.6g %.6g %.6g\n", double(o[0]), double(o[1]), double(o[2]),
                double(o[3]));
  EXPECT_EQ(got, want);
  // A corrupted file gives a clean error and a non-zero status.
  { std::FILE* f = std::fopen(file.string().c_str(), "r+b"); std::fseek(f, 40, SEEK_SET); std::fputc(0x5a, f); std::fclose(f); }
  std::string err = run_command(tool.string() + " " + file.string() + " main float32:2x3 float32:3x2 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(err.find("error:"), std::string::npos) << err;
  fs::remove(file);
  // Linked against the runtime library only.
  std::string deps = run_command("ldd " + tool.string(), &status);
  EXPECT_NE(deps.find("libpartita_runtime"), std::string::npos) << deps;
  EXPECT_EQ(deps.find("libpartita.so"), std::string::npos) << deps;
}

namespace {

// main(x, w, y) = relu(x @ w + y) + x: a product, an activation and element-wise adds of one
// shape, of which every CPU backend takes some.
const char* kBackendModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32"), y: R.Tensor((8, 16), dtype="float32")) -> R.Tensor((8, 16), dtype="float32"):
        with R.dataflow():
            m: R.Tensor((8, 16), dtype="float32") = R.matmul(x, w, out_dtype="void")
            b: R.Tensor((8, 16), dtype="float32") = R.add(m, y)
            r: R.Tensor((8, 16), dtype="float32") = R.nn.relu(b)
            s: R.Tensor((8, 16), dtype="float32") = R.add(r, x)
            R.output(s)
        return s
)";

std::vector<float> parse_floats(const std::string& line) {
  std::vector<float> out;
  std::istringstream in(line.substr(line.find(':') + 1));
  for (float v; in >> v;) out.push_back(v);
  return out;
}

}  // namespace

TEST(RunMin, EveryBackendsArtifactRunsWithTheRuntimeAlone) {
  fs::path tool = tool_path();
  ASSERT_TRUE(fs::exists(tool)) << tool;
  IRModule mod = script::parse_module(kBackendModel);
  // The inputs partita_run_min makes: element i of input k = ((i*7 + k*3) % 11 - 5) / 4.
  std::vector<Tensor> inputs = {Tensor::empty({8, 16}, DataType::Float(32)), Tensor::empty({16, 16}, DataType::Float(32)),
                                Tensor::empty({8, 16}, DataType::Float(32))};
  for (int k = 0; k < 3; ++k)
    for (int64_t i = 0; i < inputs[size_t(k)].numel(); ++i)
      inputs[size_t(k)].data_as<float>()[i] = float(double((i * 7 + k * 3) % 11 - 5) / 4.0);
  Tensor want = VirtualMachine(codegen::build(mod)).invoke("main", inputs)[0];
  int ran = 0;
  for (const std::string& name : backend::list_backends()) {
    auto info = backend::find_backend(name);
    if (!info->codegen) continue;  // partitions only: nothing to run
    SCOPED_TRACE("backend " + name);
    IRModule parted = transform::partition_for(name, mod);
    int offloaded = 0;
    for (const auto& [gv, f] : parted.functions())
      if (auto* fn = f.as<FunctionNode>(); fn && fn->attr_string("Codegen") == name) ++offloaded;
    if (offloaded == 0) {
      std::printf("[ NOTE     ] backend %s takes nothing of this model; not run\n", name.c_str());
      continue;
    }
    auto ex = codegen::build(parted);
    ASSERT_FALSE(ex->external_modules.empty());
    for (const auto& m : ex->external_modules) {
      if (!info->runtime_plugin.empty()) {
        EXPECT_EQ(runtime::plugin_for_type_key(m->type_key()), info->runtime_plugin);
      }
    }
    fs::path file = fs::temp_directory_path() / ("partita_run_min_" + name + ".ptx");
    ex->export_library(file.string());
    int status = -1;
    std::string got = run_command(tool.string() + " " + file.string() + " main float32:8x16 float32:16x16 float32:8x16 2>&1", &status);
    fs::remove(file);
    // partita_run_min runs on the CPU: a backend whose functions run on a GPU is not run there.
    if (status != 0 && got.find("create the VM for a") != std::string::npos) {
      std::printf("[ NOTE     ] backend %s runs on another device than partita_run_min's CPU; not run\n", name.c_str());
      continue;
    }
    EXPECT_EQ(status, 0) << got;
    std::vector<float> values = parse_floats(got);
    ASSERT_EQ(values.size(), 128u) << got;
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(values[i], want.data_as<float>()[i], 1e-4 * (1 + std::abs(want.data_as<float>()[i]))) << i;
    ++ran;
  }
  EXPECT_GE(ran, 1) << "no backend took part of the model";
}
