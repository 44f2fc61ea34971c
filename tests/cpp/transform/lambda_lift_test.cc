// LambdaLift: cases from TVM's tests/python/relax/test_transform_lambda_lift.py (basic), and
// closures lifted with their captures passed at the calls.
#include "partita/support/error.h"
#include "partita/transform/lambda_lift.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::parse;

TEST(LambdaLift, Basic) {
  check_pass(LambdaLift(), R"(
@I.ir_module
class Module:
    @R.function
    def main(x1: R.Tensor((10, 5), dtype="float32"), y1: R.Tensor((10, 5), dtype="float32")) -> R.Tensor((10, 5), dtype="float32"):
        @R.function
        def inner(x2: R.Tensor((10, 5), dtype="float32"), y2: R.Tensor((10, 5), dtype="float32")) -> R.Tensor((10, 5), dtype="float32"):
            s: R.Tensor((10, 5), dtype="float32") = R.add(x2, y2)
            return s

        gv1: R.Tensor((10, 5), dtype="float32") = inner(x1, y1)
        return gv1
)", R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def main_inner(x2: R.Tensor((10, 5), dtype="float32"), y2: R.Tensor((10, 5), dtype="float32")) -> R.Tensor((10, 5), dtype="float32"):
        s: R.Tensor((10, 5), dtype="float32") = R.add(x2, y2)
        return s

    @R.function
    def main(x1: R.Tensor((10, 5), dtype="float32"), y1: R.Tensor((10, 5), dtype="float32")) -> R.Tensor((10, 5), dtype="float32"):
        cls = Module
        gv1: R.Tensor((10, 5), dtype="float32") = cls.main_inner(x1, y1)
        return gv1
)");
}

TEST(LambdaLift, ClosureGetsItsCapturesAsParameters) {
  check_pass(LambdaLift(), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        @R.function
        def add_y(a: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
            s: R.Tensor((4,), dtype="float32") = R.add(a, y)
            return s

        gv: R.Tensor((4,), dtype="float32") = add_y(x)
        return gv
)", R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def main_add_y(a: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        s: R.Tensor((4,), dtype="float32") = R.add(a, y)
        return s

    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        gv: R.Tensor((4,), dtype="float32") = cls.main_add_y(x, y)
        return gv
)");
}

TEST(LambdaLift, NameTakenFallsBackAndClosureAsValueIsAnError) {
  IRModule lifted = LambdaLift()(parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        @R.function
        def f(a: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
            return a

        gv: R.Tensor((4,), dtype="float32") = f(x)
        return gv

    @R.function
    def main_f(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x
)"));
  EXPECT_TRUE(lifted.contains("main_f_0"));
  EXPECT_TRUE(well_formed(lifted));
  EXPECT_THROW(LambdaLift()(parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Object:
        @R.function
        def f(a: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
            s: R.Tensor((4,), dtype="float32") = R.add(a, x)
            return s

        return f
)")), Error);
}

}  // namespace
}  // namespace partita::transform
