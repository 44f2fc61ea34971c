// FuseOpsByPattern and MergeCompositeFunctions on a module with a symbolic dimension, as TVM
// gives them (checked against apache-tvm, see docs/tvm-oracle.md): every extracted function has
// symbolic variables of its own, declared first in its body; with annotate_codegen the wrapper
// and its composite share the wrapper's, and MergeCompositeFunctions' inner copies get their own
// again (`n_1`). Before/after texts compared with structural equality and line for line.
#include <gtest/gtest.h>

#include "../merged_symbolic_module.h"
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

std::vector<FusionPattern> patterns() {
  return {fp("cutlass.mulrelu", is_op("relax.nn.relu")({is_op("relax.multiply")({wildcard(), wildcard()})})),
          fp("cutlass.add", is_op("relax.add")({wildcard(), wildcard()}))};
}

const char* kBefore = R"(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n, 4), dtype="float32") = R.multiply(x, y)
            b: R.Tensor((n, 4), dtype="float32") = R.nn.relu(a)
            c: R.Tensor((n, 4), dtype="float32") = R.add(b, x)
            R.output(c)
        return c)";

void expect_module(const IRModule& got, const std::string& expected) {
  IRModule want = script::parse_module(expected);
  auto diff = structural_diff(got, want);
  EXPECT_FALSE(diff) << *diff;
  EXPECT_EQ(script::print_module(got), expected);
  EXPECT_TRUE(well_formed(got));
}

// The symbolic variable of the first dimension of parameter `i` of `f`.
const PrimVarNode* dim_var(const FunctionNode& f, size_t i = 0) {
  return f.params[i]->struct_info_.as<TensorStructInfoNode>()->shape->at(0).as<PrimVarNode>();
}

const FunctionNode* local_function(const FunctionNode& f, size_t k = 0) {
  for (const auto& block : f.body.as<SeqExprNode>()->blocks)
    for (const auto& b : block->bindings)
      if (const auto* inner = binding_value(*b).as<FunctionNode>(); inner && k-- == 0) return inner;
  return nullptr;
}

TEST(SymbolicPartition, AnnotatedCompositesHaveTheirOwnVariables) {
  IRModule before = script::parse_module(kBefore);
  IRModule after = fuse_ops_by_pattern(patterns(), before, true, true);
  expect_module(after, R"__(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_add_cutlass(lv: R.Tensor(("n", 4), dtype="float32"), x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        R.func_attr({"Codegen": "cutlass"})
        # from partita.script import tir as T
        # from partita.script import relax as R
        
        @R.function
        def local_func(lv_1: R.Tensor((n, 4), dtype="float32"), x_1: R.Tensor((n, 4), dtype="float32")) -> R.Tensor((n, 4), dtype="float32"):
            R.func_attr({"Composite": "cutlass.add"})
            with R.dataflow():
                gv: R.Tensor((n, 4), dtype="float32") = R.add(lv_1, x_1)
                R.output(gv)
            return gv

        output: R.Tensor((n, 4), dtype="float32") = local_func(lv, x)
        return output

    @R.function
    def fused_relax_multiply_relax_nn_relu_cutlass(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        R.func_attr({"Codegen": "cutlass"})
        # from partita.script import tir as T
        # from partita.script import relax as R
        
        @R.function
        def local_func(x_1: R.Tensor((n, 4), dtype="float32"), y_1: R.Tensor((n, 4), dtype="float32")) -> R.Tensor((n, 4), dtype="float32"):
            R.func_attr({"Composite": "cutlass.mulrelu"})
            with R.dataflow():
                a: R.Tensor((n, 4), dtype="float32") = R.multiply(x_1, y_1)
                gv: R.Tensor((n, 4), dtype="float32") = R.nn.relu(a)
                R.output(gv)
            return gv

        output: R.Tensor((n, 4), dtype="float32") = local_func(x, y)
        return output

    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            lv: R.Tensor((n, 4), dtype="float32") = cls.fused_relax_multiply_relax_nn_relu_cutlass(x, y)
            gv: R.Tensor((n, 4), dtype="float32") = cls.fused_relax_add_cutlass(lv, x)
            R.output(gv)
        return gv)__");
  const PrimVarNode* n_main = dim_var(*after.lookup("main").as<FunctionNode>());
  for (const char* name : {"fused_relax_multiply_relax_nn_relu_cutlass", "fused_relax_add_cutlass"}) {
    const auto* wrapper = after.lookup(name).as<FunctionNode>();
    EXPECT_NE(dim_var(*wrapper), n_main) << name;
    EXPECT_EQ(dim_var(*local_function(*wrapper)), dim_var(*wrapper)) << name;  // as TVM's annotator
  }
}

TEST(SymbolicPartition, MergedFunctionsAndTheirCompositesHaveTheirOwnVariables) {
  IRModule before = script::parse_module(kBefore);
  IRModule after = merge_composite_functions(fuse_ops_by_pattern(patterns(), before, true, false));
  expect_module(after, ::partita::testing::kMergedSymbolicModule);
  const auto* merged = after.lookup("fused_relax_multiply_relax_nn_relu_relax_add_cutlass").as<FunctionNode>();
  const PrimVarNode* n_outer = dim_var(*merged);
  EXPECT_NE(n_outer, dim_var(*after.lookup("main").as<FunctionNode>()));
  const PrimVarNode* n_first = dim_var(*local_function(*merged, 0));
  const PrimVarNode* n_second = dim_var(*local_function(*merged, 1));
  EXPECT_NE(n_first, n_outer);
  EXPECT_NE(n_second, n_outer);
  EXPECT_NE(n_first, n_second);
}

TEST(SymbolicPartition, CompositesWithoutAnnotationHaveTheirOwnVariables) {
  IRModule after = fuse_ops_by_pattern(patterns(), script::parse_module(kBefore), true, false);
  EXPECT_TRUE(well_formed(after));
  const PrimVarNode* n_main = dim_var(*after.lookup("main").as<FunctionNode>());
  for (const auto& [name, entry] : after->functions) {
    if (name == "main") continue;
    EXPECT_NE(dim_var(*entry.second.as<FunctionNode>()), n_main) << name;
  }
}

}  // namespace
}  // namespace partita::transform
