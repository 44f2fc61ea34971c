// EliminateCommonSubexpr: cases ported from TVM's tests/python/relax/test_transform_cse.py.
#include "partita/transform/eliminate_common_subexpr.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::dataflow_module;

TEST(EliminateCommonSubexpr, Simple) {
  const std::string sig = R"(foo(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"))";
  check_pass(EliminateCommonSubexpr(), dataflow_module(sig, R"(
lv0: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
lv1: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
gv: R.Tensor((2, 3), dtype="float32") = R.multiply(lv0, lv1))", "gv"), dataflow_module(sig, R"(
lv0: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
lv1: R.Tensor((2, 3), dtype="float32") = lv0
gv: R.Tensor((2, 3), dtype="float32") = R.multiply(lv0, lv0))", "gv"));
}

// Different operands, or operands swapped, are different values.
TEST(EliminateCommonSubexpr, DifferentValuesStay) {
  const std::string text = dataflow_module(R"(foo(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"))", R"(
lv0: R.Tensor((2, 3), dtype="float32") = R.subtract(x, y)
lv1: R.Tensor((2, 3), dtype="float32") = R.subtract(y, x)
gv: R.Tensor((2, 3), dtype="float32") = R.multiply(lv0, lv1))", "gv");
  check_pass(EliminateCommonSubexpr(), text, text);
}

// After lv3 and lv4 become lv0, lv5's value equals lv2's (TVM's test_inner_function, outer half).
TEST(EliminateCommonSubexpr, ReplacementsMakeLaterValuesEqual) {
  const std::string sig = R"(foo(x: R.Tensor((), dtype="int32")) -> R.Tensor((), dtype="int32"))";
  check_pass(EliminateCommonSubexpr(), dataflow_module(sig, R"(
lv0: R.Tensor((), dtype="int32") = R.negative(x)
lv1: R.Tensor((), dtype="int32") = R.negative(x)
lv2: R.Tensor((), dtype="int32") = R.add(lv0, lv1)
lv3: R.Tensor((), dtype="int32") = R.negative(x)
lv4: R.Tensor((), dtype="int32") = R.negative(x)
lv5: R.Tensor((), dtype="int32") = R.add(lv3, lv4)
gv: R.Tensor((), dtype="int32") = R.add(lv2, lv5))", "gv"), dataflow_module(sig, R"(
lv0: R.Tensor((), dtype="int32") = R.negative(x)
lv1: R.Tensor((), dtype="int32") = lv0
lv2: R.Tensor((), dtype="int32") = R.add(lv0, lv0)
lv3: R.Tensor((), dtype="int32") = lv0
lv4: R.Tensor((), dtype="int32") = lv0
lv5: R.Tensor((), dtype="int32") = lv2
gv: R.Tensor((), dtype="int32") = R.add(lv2, lv2))", "gv"));
}

// TVM's test_call_only: with call_only, a repeated tuple stays; calls still merge.
TEST(EliminateCommonSubexpr, CallOnly) {
  const std::string sig = R"(foo(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"))";
  const std::string before = dataflow_module(sig, R"(
t0: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, x)
t1: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, x)
a: R.Tensor((4,), dtype="float32") = R.exp(x)
b: R.Tensor((4,), dtype="float32") = R.exp(x)
c: R.Tensor((4,), dtype="float32") = t0[0]
d: R.Tensor((4,), dtype="float32") = t1[1]
e: R.Tensor((4,), dtype="float32") = R.add(a, b)
f: R.Tensor((4,), dtype="float32") = R.add(c, d)
gv: R.Tensor((4,), dtype="float32") = R.add(e, f))", "gv");
  check_pass(EliminateCommonSubexpr(/*call_only=*/true), before, dataflow_module(sig, R"(
t0: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, x)
t1: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, x)
a: R.Tensor((4,), dtype="float32") = R.exp(x)
b: R.Tensor((4,), dtype="float32") = a
c: R.Tensor((4,), dtype="float32") = t0[0]
d: R.Tensor((4,), dtype="float32") = t1[1]
e: R.Tensor((4,), dtype="float32") = R.add(a, a)
f: R.Tensor((4,), dtype="float32") = R.add(c, d)
gv: R.Tensor((4,), dtype="float32") = R.add(e, f))", "gv"));
  check_pass(EliminateCommonSubexpr(/*call_only=*/false), before, dataflow_module(sig, R"(
t0: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = (x, x)
t1: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = t0
a: R.Tensor((4,), dtype="float32") = R.exp(x)
b: R.Tensor((4,), dtype="float32") = a
c: R.Tensor((4,), dtype="float32") = t0[0]
d: R.Tensor((4,), dtype="float32") = t0[1]
e: R.Tensor((4,), dtype="float32") = R.add(a, a)
f: R.Tensor((4,), dtype="float32") = R.add(c, d)
gv: R.Tensor((4,), dtype="float32") = R.add(e, f))", "gv"));
}

// An If branch sees the enclosing bindings but not the other branch's (TVM's test_no_cse_across_branches).
TEST(EliminateCommonSubexpr, BranchesAreSeparateScopes) {
  check_pass(EliminateCommonSubexpr(), R"(
@I.ir_module
class Module:
    @R.function
    def foo(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        a: R.Tensor((4,), dtype="float32") = R.exp(x)
        if c:
            b: R.Tensor((4,), dtype="float32") = R.exp(x)
            d: R.Tensor((4,), dtype="float32") = R.sqrt(x)
            s: R.Tensor((4,), dtype="float32") = R.add(b, d)
            r: R.Tensor((4,), dtype="float32") = s
        else:
            e: R.Tensor((4,), dtype="float32") = R.sqrt(x)
            r: R.Tensor((4,), dtype="float32") = e
        return r
)", R"(
@I.ir_module
class Module:
    @R.function
    def foo(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        a: R.Tensor((4,), dtype="float32") = R.exp(x)
        if c:
            b: R.Tensor((4,), dtype="float32") = a
            d: R.Tensor((4,), dtype="float32") = R.sqrt(x)
            s: R.Tensor((4,), dtype="float32") = R.add(a, d)
            r: R.Tensor((4,), dtype="float32") = s
        else:
            e: R.Tensor((4,), dtype="float32") = R.sqrt(x)
            r: R.Tensor((4,), dtype="float32") = e
        return r
)");
}

// Impure calls are never merged (TVM's test_do_not_eliminate_impure).
TEST(EliminateCommonSubexpr, ImpureCallsStay) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function(pure=False)
    def foo(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        a: R.Tensor((2, 3), dtype="float32") = R.call_packed("my_side_effect", x, sinfo_args=(R.Tensor((2, 3), dtype="float32"),))
        b: R.Tensor((2, 3), dtype="float32") = R.call_packed("my_side_effect", x, sinfo_args=(R.Tensor((2, 3), dtype="float32"),))
        gv: R.Tensor((2, 3), dtype="float32") = R.add(a, b)
        return gv
)";
  check_pass(EliminateCommonSubexpr(), text, text);
}

}  // namespace
}  // namespace partita::transform
