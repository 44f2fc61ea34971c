// The example backend, end to end: partitioned, built (its codegen makes the module through the
// runtime plug-in, loaded on demand), run against the host VM, exported, reloaded and run again;
// the pattern check keeps what the module cannot run (broadcasting) on the host.
#include <gtest/gtest.h>

#include <filesystem>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/runtime/executable.h"
#include "partita/runtime/module_sections.h"
#include "partita/runtime/plugin.h"
#include "partita/runtime/vm.h"
#include "partita/transform/pattern_registry.h"
#include "random_tensor.h"

namespace partita {
namespace {

const DataType F32 = DataType::Float(32);

// main(x, y, z) = (x + y) + z, with shapes of z given (broadcast when it differs).
IRModule add_chain(std::vector<int64_t> shape, std::vector<int64_t> z_shape) {
  Var x = make<VarNode>("x", tensor_sinfo(shape, F32)), y = make<VarNode>("y", tensor_sinfo(shape, F32));
  Var z = make<VarNode>("z", tensor_sinfo(z_shape, F32));
  BlockBuilder bb;
  bb.begin_function("main", {x, y, z});
  bb.begin_dataflow();
  Var s = bb.emit(op::make_call("relax.add", {x, y}));
  Var out = bb.emit_output(op::make_call("relax.add", {s, z}));
  bb.end_dataflow();
  bb.emit_func_output(out);
  return bb.get();
}

int offloaded_functions(const IRModule& mod) {
  int n = 0;
  for (const auto& [gv, f] : mod.functions())
    if (auto* fn = f.as<FunctionNode>(); fn && fn->attr_string("Codegen") == "example") ++n;
  return n;
}

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_FLOAT_EQ(a.data_as<float>()[i], b.data_as<float>()[i]) << i;
}

TEST(ExampleBackend, IsRegisteredWithItsRecord) {
  auto info = backend::find_backend("example");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->runtime_plugin, "example");
  EXPECT_TRUE(bool(info->codegen));
  EXPECT_EQ(transform::get_patterns_with_prefix("example.").size(), 1u);
}

TEST(ExampleBackend, PartitionsBuildsRunsAndReloads) {
  IRModule mod = add_chain({3, 5}, {3, 5});
  std::vector<Tensor> inputs = {testing::random_tensor({3, 5}, 1), testing::random_tensor({3, 5}, 2),
                                testing::random_tensor({3, 5}, 3)};
  Tensor want = runtime::VirtualMachine(codegen::build(mod)).invoke("main", inputs)[0];

  IRModule parted = transform::partition_for("example", mod);
  EXPECT_EQ(offloaded_functions(parted), 1);  // both adds in one merged partition
  auto exec = codegen::build(parted);
  ASSERT_EQ(exec->external_modules.size(), 1u);
  EXPECT_EQ(exec->external_modules[0]->type_key(), "example");
  EXPECT_TRUE(runtime::plugin_loaded("example"));
  EXPECT_NE(exec->external_modules[0]->get_source().find("\"adds\""), std::string::npos);
  expect_equal(runtime::VirtualMachine(exec).invoke("main", inputs)[0], want);

  auto file = std::filesystem::temp_directory_path() / "partita_example_backend_test.partita";
  exec->export_library(file.string());
  auto loaded = runtime::load_module(file.string());
  std::filesystem::remove(file);
  ASSERT_EQ(loaded->external_modules.size(), 1u);
  expect_equal(runtime::VirtualMachine(loaded).invoke("main", inputs)[0], want);
}

TEST(ExampleBackend, BroadcastingAddsStayOnTheHost) {
  IRModule parted = transform::partition_for("example", add_chain({3, 5}, {5}));
  EXPECT_EQ(offloaded_functions(parted), 1);  // x + y only
  std::vector<Tensor> inputs = {testing::random_tensor({3, 5}, 4), testing::random_tensor({3, 5}, 5),
                                testing::random_tensor({5}, 6)};
  Tensor want = runtime::VirtualMachine(codegen::build(add_chain({3, 5}, {5}))).invoke("main", inputs)[0];
  expect_equal(runtime::VirtualMachine(codegen::build(parted)).invoke("main", inputs)[0], want);
}

TEST(ExampleBackend, MalformedModuleBytesAreCleanErrors) {
  EXPECT_THROW(runtime::load_module_from_binary("example", "short"), Error);
  std::string bad = runtime::write_module_sections({"example", 0x58455450, 1}, {"{\"functions\": 3}"});
  EXPECT_THROW(runtime::load_module_from_binary("example", bad), Error);
  std::string other_version = runtime::write_module_sections({"example", 0x58455450, 2}, {"{}"});
  try {
    runtime::load_module_from_binary("example", other_version);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported example module version 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace partita
