// MergeCompositeFunctions' rules that the TVM oracle found missing (tests/python/
// test_tvm_oracle_partition.py; both expected modules are apache-tvm's): an alias binding
// (`gv = v2`) is in its value's group, and the pass ends with TVM's DeadCodeElimination, so a
// dead chain left on the host goes. Before/after texts compared structurally and line for line.
#include <gtest/gtest.h>

#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"

namespace partita::transform {
namespace {

using dpl::is_op;
using dpl::wildcard;

FusionPattern fp(std::string name, dpl::Pattern p) {
  FusionPattern f;
  f.name = std::move(name);
  f.pattern = std::move(p);
  return f;
}

void expect_merged(const char* before, const std::vector<FusionPattern>& patterns, const std::string& expected) {
  IRModule mod = merge_composite_functions(fuse_ops_by_pattern(patterns, script::parse_module(before), true, false));
  auto diff = structural_diff(mod, script::parse_module(expected));
  EXPECT_FALSE(diff) << *diff;
  EXPECT_EQ(script::print_module(mod), expected);
  EXPECT_TRUE(well_formed(mod));
}

TEST(MergeTvmRules, AnAliasIsInItsValuesGroup) {
  expect_merged(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            v0 = R.sigmoid(y)
            v1 = R.nn.relu(v0)
            v2 = R.exp(v1)
            gv = v2
            R.output(gv)
        return gv
)",
                {fp("B.exp", is_op("relax.exp")({wildcard()})), fp("A.exp", is_op("relax.exp")({wildcard()}))},
                R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_exp1_B(v1: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        R.func_attr({"Codegen": "B"})
        # from partita.script import relax as R
        
        @R.function
        def gv(v1_1: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
            R.func_attr({"Composite": "B.exp"})
            with R.dataflow():
                gv_1: R.Tensor((4, 4), dtype="float32") = R.exp(v1_1)
                R.output(gv_1)
            return gv_1

        lv: R.Tensor((4, 4), dtype="float32") = gv(v1)
        gv_1: R.Tensor((4, 4), dtype="float32") = lv
        return gv_1

    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            v0: R.Tensor((4, 4), dtype="float32") = R.sigmoid(y)
            v1: R.Tensor((4, 4), dtype="float32") = R.nn.relu(v0)
            gv: R.Tensor((4, 4), dtype="float32") = cls.fused_relax_exp1_B(v1)
            R.output(gv)
        return gv)");
}

TEST(MergeTvmRules, DeadHostBindingsAreRemoved) {
  expect_merged(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            v0 = R.subtract(y, x)
            v1 = R.subtract(v0, v0)
            v2 = R.multiply(v1, v0)
            v3 = R.add(v2, v2)
            v4 = R.multiply(v3, v2)
            v5 = R.subtract(v4, v2)
            v6 = R.sigmoid(v1)
            v7 = R.subtract(v6, v6)
            gv = R.add(v7, x)
            R.output(gv)
        return gv
)", {fp("A.sigmoid", is_op("relax.sigmoid")({wildcard()}))}, R"(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_sigmoid1_A(v1: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        R.func_attr({"Codegen": "A"})
        # from partita.script import tir as T
        # from partita.script import relax as R
        
        @R.function
        def gv(v1_1: R.Tensor(("n_1", 4), dtype="float32")) -> R.Tensor(("n_1", 4), dtype="float32"):
            n_1 = T.int64()
            R.func_attr({"Composite": "A.sigmoid"})
            with R.dataflow():
                gv_1: R.Tensor((n_1, 4), dtype="float32") = R.sigmoid(v1_1)
                R.output(gv_1)
            return gv_1

        gv_1: R.Tensor((n, 4), dtype="float32") = gv(v1)
        return gv_1

    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32"), w: R.Tensor((4, 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            v0: R.Tensor((n, 4), dtype="float32") = R.subtract(y, x)
            v1: R.Tensor((n, 4), dtype="float32") = R.subtract(v0, v0)
            lv: R.Tensor((n, 4), dtype="float32") = cls.fused_relax_sigmoid1_A(v1)
            v7: R.Tensor((n, 4), dtype="float32") = R.subtract(lv, lv)
            gv: R.Tensor((n, 4), dtype="float32") = R.add(v7, x)
            R.output(gv)
        return gv)");
}

// FuseOpsByPattern with annotate_codegen=True, then MergeCompositeFunctions (TVM's BYOC tutorial
// does both): TVM renames every Codegen function main calls to <name>_<codegen> and turns its
// body, nested composite included, into plain bindings (ToNonDataflow). Expected: apache-tvm's.
TEST(MergeTvmRules, ACodegenFunctionTheModuleHadIsRenamedWithoutDataflow) {
  const char* before = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 6, 6), dtype="float32"), w: R.Tensor((3, 2, 3, 3), dtype="float32")) -> R.Tensor((1, 3, 4, 4), dtype="float32"):
        with R.dataflow():
            c = R.nn.conv2d(x, w)
            r = R.nn.relu(c)
            out = R.exp(r)
            R.output(out)
        return out
)";
  const std::string expected = R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_nn_conv2d_relax_nn_relu_A_A(x: R.Tensor((1, 2, 6, 6), dtype="float32"), w: R.Tensor((3, 2, 3, 3), dtype="float32")) -> R.Tensor((1, 3, 4, 4), dtype="float32"):
        R.func_attr({"Codegen": "A"})
        # from partita.script import relax as R
        
        @R.function
        def local_func(x_1: R.Tensor((1, 2, 6, 6), dtype="float32"), w_1: R.Tensor((3, 2, 3, 3), dtype="float32")) -> R.Tensor((1, 3, 4, 4), dtype="float32"):
            R.func_attr({"Composite": "A.conv_relu"})
            c: R.Tensor((1, 3, 4, 4), dtype="float32") = R.nn.conv2d(x_1, w_1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            gv: R.Tensor((1, 3, 4, 4), dtype="float32") = R.nn.relu(c)
            return gv

        output: R.Tensor((1, 3, 4, 4), dtype="float32") = local_func(x, w)
        return output

    @R.function
    def main(x: R.Tensor((1, 2, 6, 6), dtype="float32"), w: R.Tensor((3, 2, 3, 3), dtype="float32")) -> R.Tensor((1, 3, 4, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((1, 3, 4, 4), dtype="float32") = cls.fused_relax_nn_conv2d_relax_nn_relu_A_A(x, w)
            out: R.Tensor((1, 3, 4, 4), dtype="float32") = R.exp(lv)
            R.output(out)
        return out)";
  auto pattern = fp("A.conv_relu", is_op("relax.nn.relu")({is_op("relax.nn.conv2d")({wildcard(), wildcard()})}));
  IRModule mod = merge_composite_functions(fuse_ops_by_pattern({pattern}, script::parse_module(before), false, true));
  auto diff = structural_diff(mod, script::parse_module(expected));
  EXPECT_FALSE(diff) << *diff;
  EXPECT_EQ(script::print_module(mod), expected);
  EXPECT_TRUE(well_formed(mod));
}

}  // namespace
}  // namespace partita::transform
