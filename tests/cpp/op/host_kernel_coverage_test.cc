// Every operator of the op registry has a host kernel in the runtime (the VM's fallback for
// whatever no backend takes). Here rather than with the runtime's tests, which link the runtime
// library alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "partita/op/registry.h"
#include "partita/runtime/kernel.h"

namespace partita {

TEST(HostKernels, EveryRegisteredOperatorHasAHostKernel) {
  auto kernels = runtime::list_kernels();
  for (const auto& name : op::list_ops()) {
    // The VM lowering runs R.call_pure_packed as the call of its packed function.
    if (name == "relax.call_pure_packed") continue;
    EXPECT_TRUE(std::find(kernels.begin(), kernels.end(), name) != kernels.end()) << name;
  }
}

}  // namespace partita
