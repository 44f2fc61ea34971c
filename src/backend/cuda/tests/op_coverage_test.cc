// The cuda target's coverage of the operator registry: every registered operator that is a
// kernel has a rule in the cuda op table (so partitioning may hand it to the codegen instead of
// leaving it on the host, which costs a synchronizing copy and breaks whole-run CUDA Graph
// capture), and every operator the table names is exercised by an op case (compiled for every
// dtype on the CPU, run against the host kernels on the GPU).
#include <gtest/gtest.h>

#include <set>

#include "../codegen/op_support.h"
#include "cudagen_util.h"
#include "op_cases.h"
#include "partita/op/registry.h"

namespace partita::cudagen_test {
namespace {

// Operators that are no kernels: a packed-function call, and device annotations and copies (the
// VM's copies between devices).
const std::set<std::string> kNotKernels = {"relax.call_pure_packed", "relax.hint_on_device", "relax.to_vdevice"};

TEST(CudaOpCoverage, EveryRegisteredOperatorHasACudaRule) {
  std::vector<std::string> supported = backend::cuda::supported_ops();
  std::set<std::string> table(supported.begin(), supported.end());
  std::vector<std::string> missing;
  for (const std::string& name : op::list_ops())
    if (!kNotKernels.count(name) && !table.count(name)) missing.push_back(name);
  EXPECT_EQ(missing, std::vector<std::string>{}) << "registered operators without generated CUDA";
}

TEST(CudaOpCoverage, EveryCudaOperatorHasAnOpCase) {
  std::set<std::string> called;  // the operators the cases' models call
  for (const auto& c : op_cases()) {
    IRModule m = script::parse_module(case_text(c, c.dtypes.at(0)));
    for (const auto& block : m.lookup("main").as<FunctionNode>()->body.as<SeqExprNode>()->blocks)
      for (const auto& b : block->bindings)
        if (auto* vb = b.as<VarBindingNode>())
          if (auto* call = vb->value.as<CallNode>())
            if (auto* op = call->op.as<OpNode>()) called.insert(op->name);
  }
  std::vector<std::string> missing;
  for (const std::string& name : backend::cuda::supported_ops()) {
    EXPECT_TRUE(op::find_op_def(name)) << name << " is in the cuda op table but not registered";
    if (!called.count(name)) missing.push_back(name);
  }
  EXPECT_EQ(missing, std::vector<std::string>{}) << "operators of the cuda op table that no op case runs";
}

}  // namespace
}  // namespace partita::cudagen_test
