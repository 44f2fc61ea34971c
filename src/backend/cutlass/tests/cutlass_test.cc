// The cutlass backend's registration: its pattern table partitions the seed tutorial's module
// through both composite paths; it has no codegen yet, so building such a module is refused
// with an error naming the backend.
#include <gtest/gtest.h>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/script/parser.h"
#include "partita/transform/pattern_registry.h"

namespace partita {
namespace {

const char* kModule = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            R.output(a)
        return a
)";

TEST(Cutlass, RegistersItsPatternTableWithoutACodegen) {
  auto info = backend::find_backend("cutlass");
  ASSERT_TRUE(info);
  EXPECT_FALSE(bool(info->codegen));
  EXPECT_TRUE(info->runtime_plugin.empty());
  EXPECT_TRUE(transform::get_pattern("cutlass.multiply"));
  EXPECT_TRUE(transform::get_pattern("cutlass.conv2d_bias_relu"));
  EXPECT_FALSE(transform::get_pattern("cutlass.nope"));
  // Fused patterns come after the plain ones they extend, so they are tried first.
  auto patterns = transform::get_patterns_with_prefix("cutlass.");
  ASSERT_EQ(patterns.size(), 9u);
  EXPECT_EQ(patterns.front().name, "cutlass.conv2d_bias_relu");
  EXPECT_EQ(patterns.back().name, "cutlass.multiply");
}

TEST(Cutlass, PartitionsButDoesNotBuild) {
  IRModule m = script::parse_module(kModule);
  IRModule p1 = transform::partition_for("cutlass", m, /*merge=*/false);
  IRModule p2 = transform::partition_for("cutlass", m, /*merge=*/true);
  EXPECT_TRUE(p1.contains("fused_relax_multiply_cutlass"));
  EXPECT_TRUE(p2.contains("fused_relax_multiply1_cutlass"));
  try {
    codegen::build(p2);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cutlass"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace partita
