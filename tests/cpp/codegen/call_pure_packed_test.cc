// R.call_pure_packed, parsed from TVMScript, runs on the VM as the call of its packed function
// (an external module's function), inside a dataflow block, with a symbolic batch.
#include <gtest/gtest.h>

#include "../random_tensor.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/ir/analysis.h"
#include "partita/runtime/module.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"

namespace partita {
namespace {

TEST(CallPurePacked, RunsThePackedFunction) {
  IRModule mod = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32"), y: R.Tensor(("n", 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n, 3), dtype="float32") = R.call_pure_packed("ext_mul", x, y, sinfo_args=(R.Tensor((n, 3), dtype="float32"),))
            b: R.Tensor((n, 3), dtype="float32") = R.add(a, x)
            R.output(b)
        return b
)");
  ASSERT_TRUE(well_formed(mod));
  auto ext = runtime::make_function_module(
      "test_ext", {{"ext_mul", [](std::span<const Tensor> in, std::span<Tensor> out) {
                      for (int64_t i = 0; i < out[0].numel(); ++i)
                        out[0].data_as<float>()[i] = in[0].data_as<float>()[i] * in[1].data_as<float>()[i];
                    }}});
  runtime::VirtualMachine vm(codegen::build_vm_executable(mod, {ext}));
  Tensor x = testing::random_tensor({5, 3}, 1), y = testing::random_tensor({5, 3}, 2);
  auto out = vm.invoke("main", {x, y});
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{5, 3}));
  for (int i = 0; i < 15; ++i)
    EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], x.data_as<float>()[i] * y.data_as<float>()[i] + x.data_as<float>()[i]);
}

}  // namespace
}  // namespace partita
