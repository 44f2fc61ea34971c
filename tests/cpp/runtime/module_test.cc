// Runtime modules: loader registry, function modules, and a real shared object compiled with
// the system C compiler through the C ABI (functions and named constants), carried inside an
// exported executable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "partita/runtime/executable.h"
#include "partita/runtime/module.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;
namespace fs = std::filesystem;

TEST(RuntimeModule, RegistryAndFunctionModules) {
  EXPECT_TRUE(has_module_loader("dso_library"));
  try {
    load_module_from_binary("no_such_kind", "");
    FAIL();
  } catch (const Error& e) {
    // No loader and no plug-in of that name (plugin_test.cc covers plug-ins).
    EXPECT_EQ(e.kind(), "RuntimeError");
    EXPECT_NE(std::string(e.what()).find("dso_library"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("libpartita_runtime_no_such_kind.so"), std::string::npos);
  }
  auto m = make_function_module("fm", {{"f", [](std::span<const Tensor>, std::span<Tensor>) {}}});
  EXPECT_TRUE(bool(m->get_function("f")));
  EXPECT_FALSE(bool(m->get_function("g")));
  auto outer = make_function_module("outer", {});
  outer->import_module(m);
  EXPECT_TRUE(bool(outer->find_function("f")));
  std::string blob;
  EXPECT_THROW(m->save_to_binary(blob), Error);
  EXPECT_THROW(load_module_from_binary("dso_library", "\x01\x02"), Error);
}

namespace {
const char* kCSource = R"(
#include <stdint.h>
#include "partita/runtime/c_abi.h"
static const float* g_bias = 0;
static int64_t g_bias_n = 0;
int32_t partita_set_constant(const char* name, const PartitaTensorC* t) {
  if (name[0] != 'b') return 1;
  g_bias = (const float*)t->data;
  g_bias_n = t->shape[0];
  return 0;
}
const char* partita_last_error(void) { return "shape mismatch"; }
int32_t mul_bias(const PartitaTensorC* in, int32_t nin, PartitaTensorC* out, int32_t nout) {
  if (nin != 2 || nout != 1) return 3;
  int64_t n = 1;
  for (int i = 0; i < in[0].ndim; ++i) n *= in[0].shape[i];
  if (!g_bias || g_bias_n != in[0].shape[in[0].ndim - 1]) return 2;
  const float* a = (const float*)in[0].data;
  const float* b = (const float*)in[1].data;
  float* o = (float*)out[0].data;
  for (int64_t i = 0; i < n; ++i) o[i] = a[i] * b[i] + g_bias[i % g_bias_n];
  return 0;
}
)";
}  // namespace

TEST(RuntimeModule, SharedObjectThroughTheCAbiAndAnArtifact) {
  fs::path dir = fs::temp_directory_path() / "partita_dso_test";
  fs::create_directories(dir);
  { std::ofstream(dir / "k.c") << kCSource; }
  std::string cmd = "cc -O2 -shared -fPIC -I" + std::string(PARTITA_SOURCE_DIR) + "/include -o " +
                    (dir / "k.so").string() + " " + (dir / "k.c").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "no C compiler";
  std::stringstream ss;
  ss << std::ifstream(dir / "k.so", std::ios::binary).rdbuf();
  auto mod = make_dso_module(ss.str(), {"mul_bias"}, {"bias"});
  EXPECT_EQ(mod->type_key(), "dso_library");
  EXPECT_THROW(make_dso_module(ss.str(), {"missing_symbol"}), Error);

  // An executable whose main calls the external function: main(x, y) = mul_bias(x, y).
  auto ex = std::make_shared<Executable>();
  ex->extern_symbols = {"mul_bias"};
  Tensor bias = Tensor::empty({3}, DataType::Float(32));
  for (int i = 0; i < 3; ++i) bias.data_as<float>()[i] = float(i) * 10;
  ex->named_constants["bias"] = ex->add_constant(bias);
  ex->external_modules = {mod};
  VMFunction f;
  f.name = "main";
  f.param_names = {"x", "y"};
  f.num_registers = 3;
  Instruction call;
  call.op = Opcode::CallExtern;
  call.index = 0;
  call.args = {0, 1};
  call.dst = 2;
  call.outs = {TensorSpec{DataType::Float(32), true, {2, 3}, {}, {}}};
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {2};
  f.code = {call, ret};
  ex->functions.push_back(f);
  ex->init_external_modules();
  Tensor x = Tensor::empty({2, 3}, DataType::Float(32)), y = Tensor::empty({2, 3}, DataType::Float(32));
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = float(i), y.data_as<float>()[i] = 2;
  auto check = [&](const std::vector<Tensor>& out) {
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], float(i) * 2 + float(i % 3) * 10);
  };
  check(VirtualMachine(ex).invoke("main", {x, y}));
  fs::path file = dir / "model.ptx";
  ex->export_library(file.string());
  auto loaded = load_module(file.string());
  check(VirtualMachine(loaded).invoke("main", {x, y}));
  // A failing external call reports the symbol and the module's message.
  Tensor x4 = Tensor::empty({2, 4}, DataType::Float(32));
  try {
    std::vector<Tensor> out = {Tensor::empty({2, 4}, DataType::Float(32))};
    loaded->external_modules[0]->get_function("mul_bias")(std::vector<Tensor>{x4, x4}, out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mul_bias"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("shape mismatch"), std::string::npos);
  }
  fs::remove_all(dir);
}
