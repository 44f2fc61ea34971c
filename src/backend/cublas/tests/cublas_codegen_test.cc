// The cublas codegen without a GPU: the GEMM program each pattern becomes, its round trip through
// save / load and export_library / load_module, clean errors on malformed bytes, and a function
// the codegen refuses falling back to generated CUDA (with a warning naming it and why).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../cublas.h"
#include "../gemm_program.h"
#include "../module_format.h"
#include "cublas_test_util.h"
#include "partita/codegen/build.h"
#include "partita/codegen/codegen.h"
#include "partita/dpl/pattern.h"
#include "partita/runtime/executable.h"
#include "partita/runtime/vm.h"
#include "partita/script/printer.h"

namespace partita::backend::cublas::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string T(const std::string& shape, const std::string& dtype) { return tensor(shape, dtype); }

// The cublas module's GEMM program for `text` partitioned with partition_for_cublas.
json program_of(const std::string& text, runtime::ModulePtr* module = nullptr) {
  IRModule parted = partition_for_cublas(script::parse_module(text));
  IRModule lowered = codegen::run_codegen(codegen::name_codegen_constants(parted));
  auto mods = codegen::external_mods_of(lowered);
  EXPECT_EQ(mods.size(), 1u);
  if (mods.empty()) return {};
  EXPECT_EQ(mods[0]->type_key(), "cublas");
  EXPECT_EQ(mods[0]->device_kind(), DeviceKind::kCUDA);
  if (module) *module = mods[0];
  return json::parse(mods[0]->get_source());
}

std::string transposed_bias_gelu_module(const std::string& m) {
  std::string f16 = "float16";
  return module_text("x: " + T("(" + m + ", 32)", f16) + ", w: " + T("(24, 32)", f16) + ", b: " + T("(24,)", f16),
                     {"wt: " + T("(32, 24)", f16) + " = R.permute_dims(w, axes=None)",
                      "mm: " + T("(" + m + ", 24)", f16) + " = R.matmul(x, wt, out_dtype=\"void\")",
                      "a: " + T("(" + m + ", 24)", f16) + " = R.add(mm, b)", "gv: " + T("(" + m + ", 24)", f16) + " = R.nn.gelu(a)"},
                     T("(" + m + ", 24)", f16));
}

TEST(CublasCodegen, TransposedBiasGeluIsOneGemmWithItsEpilogue) {
  json p = program_of(transposed_bias_gelu_module("\"m\""));
  ASSERT_EQ(p["functions"].size(), 1u);
  const json& f = p["functions"][0];
  ASSERT_EQ(f["gemms"].size(), 1u);
  const json& g = f["gemms"][0];
  EXPECT_EQ(g["transpose_b"], true);
  EXPECT_EQ(g["bias_kind"], "vector");
  EXPECT_EQ(g["epilogue"], "gelu");
  EXPECT_EQ(g["from"], "cublas.matmul_transposed_bias_gelu");
  EXPECT_EQ(g["scale_a"], -1);
  // Parameters in the Codegen function's order (w, x, b); M symbolic.
  ASSERT_EQ(f["inputs"].size(), 3u);
  EXPECT_EQ(g["b"], f["inputs"][0]);
  EXPECT_EQ(g["a"], f["inputs"][1]);
  EXPECT_EQ(g["bias"], f["inputs"][2]);
  EXPECT_EQ(f["values"][g["a"].get<int>()]["shape"], json::array({-1, 32}));
  EXPECT_EQ(f["values"][g["a"].get<int>()]["dtype"], "float16");
  EXPECT_EQ(f["outputs"], json::array({g["out"]}));
  EXPECT_EQ(p["allow_tf32"], false);
  EXPECT_EQ(p["autotune_top_k"], 0);
}

TEST(CublasCodegen, MatrixBiasAndScaledProducts) {
  std::string f32 = "float32";
  json p = program_of(module_text("x: " + T("(16, 32)", f32) + ", w: " + T("(32, 24)", f32) + ", z: " + T("(16, 24)", f32),
                                  {"m: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"void\")",
                                   "gv: " + T("(16, 24)", f32) + " = R.add(z, m)"},
                                  T("(16, 24)", f32)));
  const json& g = p["functions"][0]["gemms"][0];
  EXPECT_EQ(g["bias_kind"], "matrix");
  EXPECT_EQ(g["epilogue"], "none");
  std::string f16 = "float16";
  json q = program_of(module_text(
      "x: " + T("(16, 32)", f16) + ", w: " + T("(24, 32)", f16) + ", sa: " + T("(1,)", f16) + ", sb: " + T("(1,)", f16),
      {"wt: " + T("(32, 24)", f16) + " = R.permute_dims(w, axes=None)",
       "m: " + T("(16, 24)", f16) + " = R.matmul(x, wt, out_dtype=\"void\")", "s: " + T("(1,)", f16) + " = R.multiply(sa, sb)",
       "p: " + T("(16, 24)", f16) + " = R.multiply(s, m)", "gv: " + T("(16, 24)", "float32") + " = R.astype(p, dtype=\"float32\")"},
      T("(16, 24)", "float32")));
  const json& f = q["functions"][0];
  const json& h = f["gemms"][0];
  EXPECT_EQ(h["from"], "cublas.matmul_transposed_multiply");
  EXPECT_GE(h["scale_a"].get<int>(), 0);
  EXPECT_GE(h["scale_b"].get<int>(), 0);
  EXPECT_EQ(f["values"][h["out"].get<int>()]["dtype"], "float32");
}

TEST(CublasCodegen, TargetOptionsReachTheProgram) {
  IRModule parted = partition_for_cublas(script::parse_module(transposed_bias_gelu_module("16")));
  codegen::RunCodegenOptions o;
  o.targets.push_back(codegen::Target("cublas", {{"allow_tf32", true}, {"autotune_top_k", int64_t(4)}}));
  auto mods = codegen::external_mods_of(codegen::run_codegen(codegen::name_codegen_constants(parted), o));
  ASSERT_EQ(mods.size(), 1u);
  json p = json::parse(mods[0]->get_source());
  EXPECT_EQ(p["allow_tf32"], true);
  EXPECT_EQ(p["autotune_top_k"], 4);
  o.targets = {codegen::Target("cublas", {{"autotune_top_k", int64_t(-1)}})};
  EXPECT_THROW(codegen::run_codegen(codegen::name_codegen_constants(parted), o), Error);
}

TEST(CublasCodegen, ModuleRoundTripsThroughSaveAndExport) {
  runtime::ModulePtr m;
  json p = program_of(transposed_bias_gelu_module("16"), &m);
  std::string bytes;
  m->save_to_binary(bytes);
  runtime::ModulePtr back = runtime::load_module_from_binary("cublas", bytes);
  EXPECT_EQ(back->get_source(), m->get_source());
  EXPECT_EQ(back->function_names(), m->function_names());
  // A whole executable (the remainder on the host VM) exported and loaded back, without a GPU.
  IRModule parted = partition_for_cublas(script::parse_module(transposed_bias_gelu_module("16")));
  auto ex = codegen::build(parted);
  fs::path file = fs::temp_directory_path() / ("partita_cublas_roundtrip_" + std::to_string(::getpid()) + ".ptx");
  ex->export_library(file.string());
  auto loaded = runtime::load_module(file.string());
  fs::remove(file);
  ASSERT_EQ(loaded->external_modules.size(), 1u);
  EXPECT_EQ(loaded->external_modules[0]->type_key(), "cublas");
  EXPECT_EQ(loaded->external_modules[0]->get_source(), m->get_source());
}

// Bad bytes are errors naming what is wrong, never crashes.
TEST(CublasCodegen, MalformedModulesAreCleanErrors) {
  auto error_of = [](const std::string& bytes) -> std::string {
    try {
      runtime::load_module_from_binary("cublas", bytes);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  runtime::ModulePtr m;
  json p = program_of(transposed_bias_gelu_module("16"), &m);
  std::string good;
  m->save_to_binary(good);
  EXPECT_NE(error_of(good.substr(0, good.size() / 2)), "");
  std::string bad_magic = good;
  bad_magic[0] ^= 0x5a;
  EXPECT_NE(error_of(bad_magic), "");
  auto with_program = [](const std::string& text) { return runtime::write_module_sections(kModuleFormat, {text}); };
  EXPECT_NE(error_of(with_program("{not json")).find("not JSON"), std::string::npos);
  json missing = p;
  missing["functions"][0].erase("gemms");
  EXPECT_NE(error_of(with_program(missing.dump())).find("has no 'gemms'"), std::string::npos);
  json out_of_range = p;
  out_of_range["functions"][0]["gemms"][0]["a"] = 99;
  EXPECT_NE(error_of(with_program(out_of_range.dump())).find("is not a value"), std::string::npos);
  json early = p;
  early["functions"][0]["gemms"][0]["bias"] = early["functions"][0]["gemms"][0]["out"];
  EXPECT_NE(error_of(with_program(early.dump())).find("read before it is computed"), std::string::npos);
  json bad_epilogue = p;
  bad_epilogue["functions"][0]["gemms"][0]["epilogue"] = "swish";
  EXPECT_NE(error_of(with_program(bad_epilogue.dump())).find("unknown epilogue"), std::string::npos);
}

// A "cublas" function the codegen cannot express: a composite of an operator cuBLAS does not
// run, made by hand (the pattern table never makes one).
IRModule hand_made_softmax_partition() {
  IRModule mod = script::parse_module(module_text(
      "x: " + T("(16, 32)", "float32") + ", w: " + T("(32, 24)", "float32"),
      {"m: " + T("(16, 24)", "float32") + " = R.matmul(x, w, out_dtype=\"void\")",
       "gv: " + T("(16, 24)", "float32") + " = R.nn.softmax(m, axis=-1)"},
      T("(16, 24)", "float32")));
  transform::FusionPattern p;
  p.name = "cublas.softmax";
  p.pattern = dpl::is_op("relax.nn.softmax")({dpl::wildcard()});
  IRModule parted = transform::fuse_ops_by_pattern({p}, mod, true, /*annotate_codegen=*/true);
  // And the product for cublas proper.
  return transform::fuse_ops_by_pattern({cublas_patterns()[0]}, parted, false, true);
}

codegen::Target cuda_target() {
  const char* dir = std::getenv("PARTITA_TEST_CUDA_CACHE");
  std::string cache = dir && *dir ? dir : std::string(PARTITA_BINARY_DIR) + "/cuda_kernel_cache";
  return codegen::Target("cuda", {{"cache_dir", cache}});
}

TEST(CublasCodegen, RefusedFunctionRunsAsGeneratedCudaWithAWarning) {
  IRModule parted = hand_made_softmax_partition();
  ASSERT_EQ(cublas_composites(parted), (std::vector<std::string>{"cublas.matmul", "cublas.softmax"}));
  ::testing::internal::CaptureStderr();
  auto ex = codegen::build(parted, codegen::BuildOptions({cuda_target()}));
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("codegen 'cublas' cannot compile function 'fused_relax_nn_softmax_cublas'"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("operator relax.nn.softmax is not a GEMM or its epilogue"), std::string::npos) << warning;
  EXPECT_NE(warning.find("it runs as generated cuda code instead"), std::string::npos) << warning;
  // The product stays with cuBLAS; the softmax became a generated kernel.
  std::vector<std::string> kinds;
  for (const auto& m : ex->external_modules) kinds.push_back(m->type_key());
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::string>{"cublas", "cuda"}));
  // Fallback turned off: the build fails naming the function.
  try {
    codegen::build(parted, codegen::BuildOptions({cuda_target()}, false));
    ADD_FAILURE() << "expected an UnsupportedFunction error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fused_relax_nn_softmax_cublas"), std::string::npos) << e.what();
  }
  // And on the GPU, the same numbers as the host.
  PARTITA_REQUIRE_CUDA_DEVICE();
  std::vector<Tensor> in = {random_input({16, 32}, DataType::Float(32), 1), random_input({32, 24}, DataType::Float(32), 2)};
  auto want = runtime::VirtualMachine(codegen::build(script::parse_module(module_text(
                  "x: " + T("(16, 32)", "float32") + ", w: " + T("(32, 24)", "float32"),
                  {"m: " + T("(16, 24)", "float32") + " = R.matmul(x, w, out_dtype=\"void\")",
                   "gv: " + T("(16, 24)", "float32") + " = R.nn.softmax(m, axis=-1)"},
                  T("(16, 24)", "float32")))))
                  .invoke("main", in);
  auto got = runtime::VirtualMachine(ex, Device::cuda(0)).invoke("main", in);
  EXPECT_TRUE(close(got[0].to(Device::cpu()), want[0], 1e-5));
}

}  // namespace
}  // namespace partita::backend::cublas::test
