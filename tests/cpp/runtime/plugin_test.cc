// Runtime plug-ins (partita/runtime/plugin.h): loaded on demand by the module-loader registry
// from PARTITA_PLUGIN_PATH (the fixture plug-in in build/test_plugins), once however many
// threads ask; a missing one is a clear error naming the backend, the paths tried and why, in
// process and when an exported artifact needs it in a process that has only the runtime library.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "partita/runtime/executable.h"
#include "partita/runtime/module_sections.h"
#include "partita/runtime/plugin.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;
namespace fs = std::filesystem;

namespace {

const std::string kFixtureDir = std::string(PARTITA_BINARY_DIR) + "/test_plugins";

void use_fixture_path() { setenv("PARTITA_PLUGIN_PATH", ("/nonexistent/partita:" + kFixtureDir).c_str(), 1); }

std::string fixture_bytes(const char* key) { return write_module_sections({key, 0x58494650, 1}, {"payload"}); }

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

// main(x) = fixture_scale(x) through the fixture plug-in's "fixture" module.
std::shared_ptr<Executable> fixture_executable() {
  auto ex = std::make_shared<Executable>();
  ex->extern_symbols = {"fixture_scale"};
  ex->external_modules = {load_module_from_binary("fixture", fixture_bytes("fixture"))};
  VMFunction f;
  f.name = "main";
  f.param_names = {"x"};
  f.num_registers = 2;
  Instruction call;
  call.op = Opcode::CallExtern;
  call.index = 0;
  call.args = {0};
  call.dst = 1;
  call.outs = {TensorSpec{DataType::Float(32), true, {4}, {}}};
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {1};
  f.code = {call, ret};
  ex->functions.push_back(f);
  ex->init_external_modules();
  return ex;
}

fs::path run_min_tool() { return fs::path(PARTITA_BINARY_DIR) / "partita_run_min"; }

}  // namespace

TEST(RuntimePlugin, NamesFollowTheTypeKey) {
  EXPECT_EQ(plugin_for_type_key("dnn"), "dnn");
  EXPECT_EQ(plugin_for_type_key("mine.graph"), "mine");
  EXPECT_THROW(load_plugin("../evil"), Error);
  EXPECT_THROW(load_plugin(""), Error);
}

TEST(RuntimePlugin, SearchPathStartsBesideTheRuntimeLibrary) {
  setenv("PARTITA_PLUGIN_PATH", "/a:/b::/c", 1);
  auto dirs = plugin_search_path();
  ASSERT_EQ(dirs.size(), 4u);
  EXPECT_EQ(fs::path(dirs[0]), fs::weakly_canonical(PARTITA_BINARY_DIR));
  EXPECT_EQ(dirs[1], "/a");
  EXPECT_EQ(dirs[3], "/c");
}

TEST(RuntimePlugin, MissingPluginIsAClearError) {
  setenv("PARTITA_PLUGIN_PATH", "/nonexistent/one:/nonexistent/two", 1);
  try {
    load_plugin("nosuchbackend");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.kind(), "RuntimeError");
    EXPECT_NE(m.find("backend 'nosuchbackend'"), std::string::npos) << m;
    EXPECT_NE(m.find("/nonexistent/one/libpartita_runtime_nosuchbackend.so"), std::string::npos) << m;
    EXPECT_NE(m.find("/nonexistent/two/libpartita_runtime_nosuchbackend.so"), std::string::npos) << m;
    EXPECT_NE(m.find("No such file"), std::string::npos) << m;  // dlerror's reason
  }
  EXPECT_FALSE(plugin_loaded("nosuchbackend"));
  // Through the loader registry: the module type, the known loaders and the plug-in's error.
  try {
    load_module_from_binary("nosuchbackend.graph", "");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.kind(), "RuntimeError");
    EXPECT_NE(m.find("'nosuchbackend.graph'"), std::string::npos) << m;
    EXPECT_NE(m.find("dso_library"), std::string::npos) << m;
    EXPECT_NE(m.find("libpartita_runtime_nosuchbackend.so"), std::string::npos) << m;
  }
}

TEST(RuntimePlugin, LoadedOnDemandOnceFromManyThreads) {
  use_fixture_path();
  std::vector<std::thread> threads;
  std::vector<ModulePtr> mods(8);
  for (size_t i = 0; i < mods.size(); ++i)
    threads.emplace_back([&, i] { mods[i] = load_module_from_binary(i % 2 ? "fixture.twice" : "fixture",
                                                                    fixture_bytes(i % 2 ? "fixture.twice" : "fixture")); });
  for (auto& t : threads) t.join();
  load_plugin("fixture");  // idempotent
  EXPECT_TRUE(plugin_loaded("fixture"));
  for (size_t i = 0; i < mods.size(); ++i) {
    ASSERT_TRUE(mods[i]);
    Tensor x = Tensor::empty({2}, DataType::Float(32)), y = Tensor::empty({2}, DataType::Float(32));
    x.data_as<float>()[0] = 3, x.data_as<float>()[1] = -1;
    std::vector<Tensor> in{x}, out{y};
    mods[i]->get_function("fixture_scale")(in, out);
    const float k = i % 2 ? 2.0f : 1.0f;  // + 1: the plug-in's initializers ran once
    EXPECT_FLOAT_EQ(y.data_as<float>()[0], 3 * k + 1);
    EXPECT_FLOAT_EQ(y.data_as<float>()[1], -1 * k + 1);
  }
  // Loaded but registering no loader for a key of its name: a KeyError naming both.
  try {
    load_module_from_binary("fixture.nothing", "");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "KeyError");
    EXPECT_NE(std::string(e.what()).find("plug-in 'fixture'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_module_from_binary("fixture", "PTXX"), Error);  // its own bad bytes
}

// An exported artifact needing the plug-in runs in a process linked against the runtime library
// alone, which loads the plug-in itself; without it on the search path, the error names it.
TEST(RuntimePlugin, ArtifactsLoadTheirPluginsInARuntimeOnlyProcess) {
  use_fixture_path();
  auto ex = fixture_executable();
  Tensor x = Tensor::empty({4}, DataType::Float(32));
  for (int64_t i = 0; i < 4; ++i) x.data_as<float>()[i] = float(double((i * 7) % 11 - 5) / 4.0);
  Tensor want = VirtualMachine(ex).invoke("main", {x})[0];
  fs::path file = fs::temp_directory_path() / "partita_plugin_test.partita";
  ex->export_library(file.string());
  ASSERT_TRUE(fs::exists(run_min_tool())) << run_min_tool();
  int status = -1;
  std::string got = run_command(run_min_tool().string() + " " + file.string() + " main float32:4 2>&1", &status);
  EXPECT_EQ(status, 0) << got;
  char line[256];
  const float* w = want.data_as<float>();
  std::snprintf(line, sizeof line, "float32[4]: %.6g %.6g %.6g %.6g\n", double(w[0]), double(w[1]), double(w[2]),
                double(w[3]));
  EXPECT_EQ(got, line);
  std::string err = run_command("env -u PARTITA_PLUGIN_PATH " + run_min_tool().string() + " " + file.string() +
                                    " main float32:4 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(err.find("runtime plug-in of backend 'fixture'"), std::string::npos) << err;
  EXPECT_NE(err.find("libpartita_runtime_fixture.so"), std::string::npos) << err;
  fs::remove(file);
}
