// The micro-kernels of products by packed constant weights, one per instruction set chosen at
// run time (gemm_micro_kernel.h): each one this CPU runs is compared with a double-precision
// product over odd shapes (every row tail, partial panels, k from 1), and each runs a cblas
// module end to end (PARTITA_CBLAS_GEMM selects it; "generic" is OpenBLAS's sgemm). An
// instruction set the CPU lacks is skipped, saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "partita/codegen/build.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/runtime/kernels/gemm_micro_kernel.h"
#include "partita/runtime/vm.h"
#include "partita/transform/pattern_registry.h"
#include "random_tensor.h"

namespace partita::backend::cblas {
namespace {

namespace kn = runtime::kernels;
using partita::testing::random_tensor;

class GemmIsaTest : public ::testing::TestWithParam<kn::GemmIsa> {
 protected:
  void SetUp() override {
    if (!kn::gemm_isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU does not run " << kn::gemm_isa_name(GetParam()) << " (cpuid)";
  }
};

std::string isa_label(const ::testing::TestParamInfo<kn::GemmIsa>& info) { return kn::gemm_isa_name(info.param); }

// The kernels (the generic path has none: it is OpenBLAS's sgemm).
class GemmKernel : public GemmIsaTest {};

TEST_P(GemmKernel, PanelProductMatchesADoubleProduct) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t width = kn::gemm_panel_width(GetParam());
  for (int64_t rows : {1, 2, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 23, 25, 40})
    for (int64_t k : {1, 3, 16, 67})
      for (int64_t cols : {width, int64_t(1), width / 2 + 1}) {
        const int64_t lda = k + 3, ldc = cols + 5;  // rows apart by more than they hold
        std::vector<float> a(size_t(rows * lda)), panel(size_t(k * width)), c(size_t(rows * ldc), -7.0f);
        for (auto& x : a) x = u(rng);
        for (auto& x : panel) x = u(rng);
        kn::panel_product_isa(GetParam(), a.data(), lda, rows, panel.data(), k, cols, c.data(), ldc);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            if (j >= cols) {
              ASSERT_EQ(c[size_t(i * ldc + j)], -7.0f) << "wrote past column " << cols;
              continue;
            }
            double want = 0;
            for (int64_t p = 0; p < k; ++p) want += double(a[size_t(i * lda + p)]) * double(panel[size_t(p * width + j)]);
            ASSERT_NEAR(c[size_t(i * ldc + j)], want, 1e-5 * double(k)) << rows << "x" << k << "x" << cols << " at " << i
                                                                        << ", " << j;
          }
      }
}

INSTANTIATE_TEST_SUITE_P(Isa, GemmKernel, ::testing::Values(kn::GemmIsa::kAvx512, kn::GemmIsa::kAvx2), isa_label);

TEST(GemmIsa, TheBestIsOneThisCpuRuns) {
  EXPECT_TRUE(kn::gemm_isa_supported(kn::best_gemm_isa()));
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(kn::best_gemm_isa(), kn::GemmIsa::kAvx512);
  }
}

// A module with products by constant weights (bias, activation, odd sizes, a single row) on
// each path, against the host.
class CblasModuleOnIsa : public GemmIsaTest {};

TEST_P(CblasModuleOnIsa, ProductsByConstantWeightsMatchTheHost) {
  const DataType f32 = DataType::Float(32);
  ::setenv("PARTITA_CBLAS_GEMM", kn::gemm_isa_name(GetParam()), 1);
  for (int64_t m : {1, 37}) {
    Tensor w1 = random_tensor({53, 45}, 11, 0.2f), b1 = random_tensor({45}, 12), w2 = random_tensor({45, 19}, 13, 0.2f);
    Var x = make<VarNode>("x", tensor_sinfo({m, 53}, f32));
    BlockBuilder bb;
    bb.begin_function("main", {x});
    bb.begin_dataflow();
    Var y = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w1)}));
    y = bb.emit(op::make_call("relax.add", {y, make<ConstantNode>(b1)}));
    y = bb.emit(op::make_call("relax.nn.relu", {y}));
    y = bb.emit(op::make_call("relax.matmul", {y, make<ConstantNode>(w2)}));
    Var out = bb.emit_output(y);
    bb.end_dataflow();
    bb.emit_func_output(out);
    IRModule mod = bb.get();
    std::vector<Tensor> in = {random_tensor({m, 53}, 14)};
    auto want = runtime::VirtualMachine(codegen::build(mod)).invoke("main", in);
    codegen::BuildOptions opts({codegen::Target("cblas", {{"num_threads", 2}})}, /*fallback=*/false);
    auto got = runtime::VirtualMachine(codegen::build(transform::partition_for("cblas", mod), opts)).invoke("main", in);
    ASSERT_EQ(got[0].shape(), want[0].shape());
    for (int64_t i = 0; i < want[0].numel(); ++i)
      ASSERT_NEAR(got[0].data_as<float>()[i], want[0].data_as<float>()[i], 1e-4) << "m " << m << ", element " << i;
  }
  ::unsetenv("PARTITA_CBLAS_GEMM");
}

INSTANTIATE_TEST_SUITE_P(Isa, CblasModuleOnIsa,
                         ::testing::Values(kn::GemmIsa::kAvx512, kn::GemmIsa::kAvx2, kn::GemmIsa::kGeneric), isa_label);

TEST(GemmIsa, AnUnknownOrUnsupportedChoiceIsAnError) {
  ::setenv("PARTITA_CBLAS_GEMM", "avx9000", 1);
  Var x = make<VarNode>("x", tensor_sinfo({4, 8}, DataType::Float(32)));
  BlockBuilder bb;
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var y = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(random_tensor({8, 16}, 3))}));
  Var out = bb.emit_output(y);
  bb.end_dataflow();
  bb.emit_func_output(out);
  codegen::BuildOptions opts({codegen::Target("cblas", {{"num_threads", 1}})}, /*fallback=*/false);
  try {
    codegen::build(transform::partition_for("cblas", bb.get()), opts);
    ADD_FAILURE() << "built with PARTITA_CBLAS_GEMM=avx9000";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PARTITA_CBLAS_GEMM=avx9000"), std::string::npos) << e.what();
  }
  ::unsetenv("PARTITA_CBLAS_GEMM");
}

}  // namespace
}  // namespace partita::backend::cblas
