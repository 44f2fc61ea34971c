// The text of a module with a symbolic dimension after FuseOpsByPattern and
// MergeCompositeFunctions, as TVM prints it: the merged function's composites each declare
// their own `n_1`. The partitioning test expects the passes to give it; the printer tests
// expect it to round-trip.
#pragma once

namespace partita::testing {

inline constexpr const char* kMergedSymbolicModule = R"__(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def fused_relax_multiply_relax_nn_relu_relax_add_cutlass(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        R.func_attr({"Codegen": "cutlass"})
        # from partita.script import tir as T
        # from partita.script import relax as R
        
        @R.function
        def gv(x_1: R.Tensor(("n_1", 4), dtype="float32"), y_1: R.Tensor(("n_1", 4), dtype="float32")) -> R.Tensor(("n_1", 4), dtype="float32"):
            n_1 = T.int64()
            R.func_attr({"Composite": "cutlass.mulrelu"})
            with R.dataflow():
                a: R.Tensor((n_1, 4), dtype="float32") = R.multiply(x_1, y_1)
                gv_1: R.Tensor((n_1, 4), dtype="float32") = R.nn.relu(a)
                R.output(gv_1)
            return gv_1

        lv: R.Tensor((n, 4), dtype="float32") = gv(x, y)
        # from partita.script import tir as T
        # from partita.script import relax as R
        
        @R.function
        def gv1(lv_1: R.Tensor(("n_1", 4), dtype="float32"), x_1: R.Tensor(("n_1", 4), dtype="float32")) -> R.Tensor(("n_1", 4), dtype="float32"):
            n_1 = T.int64()
            R.func_attr({"Composite": "cutlass.add"})
            with R.dataflow():
                gv_1: R.Tensor((n_1, 4), dtype="float32") = R.add(lv_1, x_1)
                R.output(gv_1)
            return gv_1

        gv_1: R.Tensor((n, 4), dtype="float32") = gv1(lv, x)
        return gv_1

    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            gv: R.Tensor((n, 4), dtype="float32") = cls.fused_relax_multiply_relax_nn_relu_relax_add_cutlass(x, y)
            R.output(gv)
        return gv)__";

}  // namespace partita::testing
