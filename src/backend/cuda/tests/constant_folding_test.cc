// build() with the cuda target folds constants before it groups operators by kind, as
// partition_for does before its patterns: a transposed constant weight (ONNX Gemm's transB) is
// stored transposed once, so the GEMM reads it row by row instead of through a permute.
#include <gtest/gtest.h>

#include "cudagen_util.h"

#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"
#include "partita/script/printer.h"

namespace partita::cudagen_test {
namespace {

IRModule matmul_of_transposed_constant(const Tensor& w) {
  BlockBuilder bb;
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4, 6}, DataType::Float(32)));
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var t = bb.emit(op::permute_dims(make<ConstantNode>(w), op::IntList{1, 0}));
  Var gv = bb.emit_output(op::make_call("relax.matmul", {x, t}));
  bb.end_dataflow();
  bb.emit_func_output(gv);
  return bb.get();
}

TEST(CudaConstantFolding, BuildStoresATransposedWeightTransposed) {
  Tensor w = random_input({3, 6}, DataType::Float(32), 1);
  auto exec = build_cuda(matmul_of_transposed_constant(w));
  ASSERT_EQ(exec->external_modules.size(), 1u);
  std::vector<std::string> names = exec->external_modules[0]->function_names();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].find("permute"), std::string::npos) << names[0];
  EXPECT_NE(names[0].find("matmul"), std::string::npos) << names[0];
}

TEST(CudaConstantFolding, PartitionForCudaFoldsToo) {
  Tensor w = random_input({3, 6}, DataType::Float(32), 1);
  IRModule p = backend::cuda::partition_for_cuda(matmul_of_transposed_constant(w));
  std::string text = script::print_module(p);
  EXPECT_EQ(text.find("R.permute_dims"), std::string::npos) << text;
}

}  // namespace
}  // namespace partita::cudagen_test
