// RemoveUnusedOutputs: cases ported from TVM's test_transform_remove_unused_outputs.py.
#include "partita/transform/remove_unused_outputs.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;

TEST(RemoveUnusedOutputs, Simple) {
  check_pass(RemoveUnusedOutputs(), R"(
@I.ir_module
class Module:
    @R.function
    def main() -> R.Tensor((16, 16), dtype="int32"):
        cls = Module
        args: R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32")) = cls.func()
        gv: R.Tensor((16, 16), dtype="int32") = args[0]
        return gv

    @R.function(private=True)
    def func() -> R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32")):
        A: R.Tensor((16, 16), dtype="int32") = R.zeros(R.shape([16, 16]), dtype="int32")
        B: R.Tensor((16, 16), dtype="int32") = R.ones(R.shape([16, 16]), dtype="int32")
        return (A, B)
)", R"(
@I.ir_module
class Module:
    @R.function
    def main() -> R.Tensor((16, 16), dtype="int32"):
        cls = Module
        A: R.Tensor((16, 16), dtype="int32") = cls.func()
        return A

    @R.function(private=True)
    def func() -> R.Tensor((16, 16), dtype="int32"):
        A: R.Tensor((16, 16), dtype="int32") = R.zeros(R.shape([16, 16]), dtype="int32")
        return A
)");
}

TEST(RemoveUnusedOutputs, MultipleCallSites) {
  check_pass(RemoveUnusedOutputs(), R"(
@I.ir_module
class Module:
    @R.function
    def main_a() -> R.Tensor((16, 16), dtype="int32"):
        cls = Module
        args: R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32"), R.Tensor((32, 32), dtype="int32")) = cls.func()
        gv: R.Tensor((16, 16), dtype="int32") = args[0]
        return gv

    @R.function
    def main_b() -> R.Tensor((32, 32), dtype="int32"):
        cls = Module
        args: R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32"), R.Tensor((32, 32), dtype="int32")) = cls.func()
        gv: R.Tensor((32, 32), dtype="int32") = args[2]
        return gv

    @R.function(private=True)
    def func() -> R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32"), R.Tensor((32, 32), dtype="int32")):
        A: R.Tensor((16, 16), dtype="int32") = R.zeros(R.shape([16, 16]), dtype="int32")
        B: R.Tensor((16, 16), dtype="int32") = R.ones(R.shape([16, 16]), dtype="int32")
        C: R.Tensor((32, 32), dtype="int32") = R.zeros(R.shape([32, 32]), dtype="int32")
        return (A, B, C)
)", R"(
@I.ir_module
class Module:
    @R.function
    def main_a() -> R.Tensor((16, 16), dtype="int32"):
        cls = Module
        args: R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((32, 32), dtype="int32")) = cls.func()
        gv: R.Tensor((16, 16), dtype="int32") = args[0]
        return gv

    @R.function
    def main_b() -> R.Tensor((32, 32), dtype="int32"):
        cls = Module
        args: R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((32, 32), dtype="int32")) = cls.func()
        gv: R.Tensor((32, 32), dtype="int32") = args[1]
        return gv

    @R.function(private=True)
    def func() -> R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((32, 32), dtype="int32")):
        A: R.Tensor((16, 16), dtype="int32") = R.zeros(R.shape([16, 16]), dtype="int32")
        C: R.Tensor((32, 32), dtype="int32") = R.zeros(R.shape([32, 32]), dtype="int32")
        return (A, C)
)");
}

// A caller returning the whole tuple uses every output; a public callee keeps its signature.
TEST(RemoveUnusedOutputs, WholeTupleUseOrPublicCalleeChangesNothing) {
  const char* whole = R"(
@I.ir_module
class Module:
    @R.function
    def main(A: R.Tensor((16, 16), dtype="int32")) -> R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32")):
        cls = Module
        out: R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32")) = cls.func(A)
        return out

    @R.function(private=True)
    def func(B: R.Tensor((16, 16), dtype="int32")) -> R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32")):
        C: R.Tensor((16, 16), dtype="int32") = R.multiply(B, B)
        D: R.Tensor((16, 16), dtype="int32") = R.add(B, B)
        return (C, D)
)";
  check_pass(RemoveUnusedOutputs(), whole, whole);
  const char* exposed = R"(
@I.ir_module
class Module:
    @R.function
    def main(A: R.Tensor((16, 16), dtype="int32")) -> R.Tensor((16, 16), dtype="int32"):
        cls = Module
        out: R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32")) = cls.func(A)
        gv: R.Tensor((16, 16), dtype="int32") = out[1]
        return gv

    @R.function
    def func(B: R.Tensor((16, 16), dtype="int32")) -> R.Tuple(R.Tensor((16, 16), dtype="int32"), R.Tensor((16, 16), dtype="int32")):
        C: R.Tensor((16, 16), dtype="int32") = R.multiply(B, B)
        D: R.Tensor((16, 16), dtype="int32") = R.add(B, B)
        return (C, D)
)";
  check_pass(RemoveUnusedOutputs(), exposed, exposed);
}

}  // namespace
}  // namespace partita::transform
