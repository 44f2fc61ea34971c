// DecomposeOpsForInference: TVM's test_transform_decompose_ops.py, test_batch_norm_inference.
#include "partita/support/error.h"
#include "partita/transform/decompose_ops.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::dataflow_module;
using partita::testing::parse;

const std::string kBatchNorm = dataflow_module(R"(main(x: R.Tensor((1, 64, 112, 112), dtype="float32"), gamma: R.Tensor((64,), dtype="float32"), beta: R.Tensor((64,), dtype="float32"), moving_mean: R.Tensor((64,), dtype="float32"), moving_var: R.Tensor((64,), dtype="float32")) -> R.Tensor((1, 64, 112, 112), dtype="float32"))", R"(
bn: R.Tuple(R.Tensor((1, 64, 112, 112), dtype="float32"), R.Tensor((64,), dtype="float32"), R.Tensor((64,), dtype="float32")) = R.nn.batch_norm(x, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True)
gv: R.Tensor((1, 64, 112, 112), dtype="float32") = bn[0])", "gv");

TEST(DecomposeOpsForInference, BatchNorm) {
  check_pass(DecomposeOpsForInference("main"), kBatchNorm, dataflow_module(R"(main(x: R.Tensor((1, 64, 112, 112), dtype="float32"), gamma: R.Tensor((64,), dtype="float32"), beta: R.Tensor((64,), dtype="float32"), moving_mean: R.Tensor((64,), dtype="float32"), moving_var: R.Tensor((64,), dtype="float32")) -> R.Tensor((1, 64, 112, 112), dtype="float32"))", R"(
lv: R.Tensor((1, 64, 1, 1), dtype="float32") = R.expand_dims(moving_mean, axis=[0, 2, 3])
lv1: R.Tensor((1, 64, 112, 112), dtype="float32") = R.subtract(x, lv)
lv2: R.Tensor((1, 64, 1, 1), dtype="float32") = R.expand_dims(moving_var, axis=[0, 2, 3])
lv3: R.Tensor((1, 64, 1, 1), dtype="float32") = R.add(lv2, R.const(9.9999997473787516e-06, "float32"))
lv4: R.Tensor((1, 64, 1, 1), dtype="float32") = R.sqrt(lv3)
lv5: R.Tensor((1, 64, 112, 112), dtype="float32") = R.divide(lv1, lv4)
lv6: R.Tensor((1, 64, 1, 1), dtype="float32") = R.expand_dims(gamma, axis=[0, 2, 3])
lv7: R.Tensor((1, 64, 112, 112), dtype="float32") = R.multiply(lv5, lv6)
lv8: R.Tensor((1, 64, 1, 1), dtype="float32") = R.expand_dims(beta, axis=[0, 2, 3])
lv9: R.Tensor((1, 64, 112, 112), dtype="float32") = R.add(lv7, lv8)
bn: R.Tuple(R.Tensor((1, 64, 112, 112), dtype="float32"), R.Tensor((64,), dtype="float32"), R.Tensor((64,), dtype="float32")) = (lv9, moving_mean, moving_var)
gv: R.Tensor((1, 64, 112, 112), dtype="float32") = bn[0])", "gv"));
}

TEST(DecomposeOpsForInference, NamedFunctionOnlyAndMissingName) {
  IRModule before = parse(kBatchNorm);
  EXPECT_THROW(DecomposeOpsForInference("other")(before), Error);
  // Every function when no name is given.
  IRModule all = DecomposeOpsForInference()(before);
  EXPECT_FALSE(structural_equal(all, before));
  EXPECT_TRUE(well_formed(all));
}

}  // namespace
}  // namespace partita::transform
