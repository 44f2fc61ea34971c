// The partitioning conformance cases of ../shared/conformance/cases, run through the C++ API:
// parse before.py, apply the case's transform, compare with expected.py structurally and as text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"

namespace partita::transform {
namespace {

namespace fs = std::filesystem;
using dpl::is_op;
using dpl::make_fused_bias_activation_pattern;
using dpl::wildcard;

fs::path cases_dir() {
  return fs::path(PARTITA_SOURCE_DIR) / ".." / "shared" / "conformance" / "cases";
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string strip_trailing(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  std::vector<std::string> lines;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (const auto& l : lines) out += l + "\n";
  return out;
}

FusionPattern fp(std::string name, dpl::Pattern p) {
  FusionPattern f;
  f.name = std::move(name);
  f.pattern = std::move(p);
  return f;
}

void run_case(const std::string& name, const std::function<IRModule(IRModule)>& transform) {
  fs::path dir = cases_dir() / name;
  ASSERT_TRUE(fs::exists(dir / "expected.py")) << dir;
  IRModule before = script::parse_module(read_file(dir / "before.py"), (dir / "before.py").string());
  std::string expected_text = read_file(dir / "expected.py");
  IRModule expected = script::parse_module(expected_text, (dir / "expected.py").string());
  IRModule after = transform(before);
  EXPECT_TRUE(well_formed(after)) << name;
  EXPECT_EQ(structural_diff(after, expected), std::nullopt) << name;
  EXPECT_EQ(strip_trailing(script::print_module(after)), strip_trailing(expected_text)) << name;
}

std::vector<FusionPattern> cutlass_multiply() {
  return {fp("cutlass.multiply", is_op("relax.multiply")({wildcard(), wildcard()}))};
}

std::vector<FusionPattern> dnnl_cnn() {
  return {fp("dnnl.conv2d_bias_relu", make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu")),
          fp("dnnl.add", is_op("relax.add")({wildcard(), wildcard()}))};
}

TEST(PartitionConformance, SeedPath1) {
  run_case("seed-path1", [](IRModule m) { return fuse_ops_by_pattern(cutlass_multiply(), m, true, true); });
}

TEST(PartitionConformance, SeedPath2) {
  run_case("seed-path2", [](IRModule m) {
    return merge_composite_functions(fuse_ops_by_pattern(cutlass_multiply(), m, true, false));
  });
}

TEST(PartitionConformance, CnnPath1) {
  run_case("cnn-path1", [](IRModule m) { return fuse_ops_by_pattern(dnnl_cnn(), m, true, true); });
}

TEST(PartitionConformance, CnnPath2) {
  run_case("cnn-path2", [](IRModule m) {
    return MergeCompositeFunctions()(FuseOpsByPattern(dnnl_cnn(), true, false)(m));
  });
}

TEST(PartitionConformance, DiamondTwoBackends) {
  run_case("diamond-two-backends", [](IRModule m) {
    std::vector<FusionPattern> pats{fp("compiler_A.relu", is_op("relax.nn.relu")({wildcard()})),
                                    fp("compiler_B.exp", is_op("relax.exp")({wildcard()})),
                                    fp("compiler_A.add", is_op("relax.add")({wildcard(), wildcard()}))};
    return merge_composite_functions(fuse_ops_by_pattern(pats, m, true, false));
  });
}

TEST(PartitionConformance, LeakingIntermediate) {
  run_case("leaking-intermediate", [](IRModule m) {
    std::vector<FusionPattern> pats{
        fp("dnnl.matmul_relu", is_op("relax.nn.relu")({is_op("relax.matmul")({wildcard(), wildcard()})})),
        fp("dnnl.matmul", is_op("relax.matmul")({wildcard(), wildcard()}))};
    return merge_composite_functions(fuse_ops_by_pattern(pats, m, true, false));
  });
}

}  // namespace
}  // namespace partita::transform
