// On the GPU: every operator case, for every dtype it lists, through the VM with the cuda target
// against the host kernels. float16 / bfloat16 cases are compared with the float32 model on the
// same (exactly widened) inputs, with the 16-bit dtype's tolerance; integer results are exact.
#include <gtest/gtest.h>

#include "cudagen_util.h"
#include "op_cases.h"

namespace partita::cudagen_test {
namespace {

struct CaseDtype {
  size_t index;
  std::string dtype;
};

std::vector<CaseDtype> all_case_dtypes() {
  std::vector<CaseDtype> out;
  for (size_t i = 0; i < op_cases().size(); ++i)
    for (const auto& dt : op_cases()[i].dtypes) out.push_back({i, dt});
  return out;
}

class CudaOp : public ::testing::TestWithParam<CaseDtype> {};

// The kernels are generated and compiled on every machine (so CI compiles them all); only running
// them needs the GPU.
TEST_P(CudaOp, MatchesTheHostKernels) {
  const OpCase& c = op_cases()[GetParam().index];
  const std::string& dt = GetParam().dtype;
  IRModule mod = script::parse_module(case_text(c, dt));
  IRModule ref_mod = script::parse_module(case_text(c, reference_dtype(dt), true));
  CaseInputs in = case_inputs(c, mod, ref_mod);

  IRModule parted = backend::cuda::partition_for_cuda(mod);
  EXPECT_EQ(ops_left_on_host(parted), std::vector<std::string>{});
  auto exec = codegen::build(parted, codegen::BuildOptions({cuda_target()}, false));
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine gpu(exec, Device::cuda(0));
  std::vector<Tensor> got = run_gpu(gpu, in.inputs);
  std::vector<Tensor> want = run_host(ref_mod, in.reference);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    double tol = tolerance(got[k].dtype(), c.tolerance);
    EXPECT_TRUE(close(got[k], want[k], tol, tol)) << "output " << k << " of " << c.name << " (" << dt << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaOp, ::testing::ValuesIn(all_case_dtypes()),
                         [](const ::testing::TestParamInfo<CaseDtype>& info) {
                           return op_cases()[info.param.index].name + "_" + info.param.dtype;
                         });

}  // namespace
}  // namespace partita::cudagen_test
