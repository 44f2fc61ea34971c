// Bindings of the Relax passes a TVM pipeline uses beyond the basic ones in bind_transform.cc
// (TVM's relax.transform names): ToMixedPrecision, EliminateCommonSubexpr, RemoveUnusedOutputs,
// BindParams, AttachGlobalSymbol, LambdaLift, DecomposeOpsForInference, FuseOps. The Python
// wrappers with TVM's argument forms are in python/partita/relax/transform/.
#include "common.h"
#include "partita/transform/attach_global_symbol.h"
#include "partita/transform/bind_params.h"
#include "partita/transform/decompose_ops.h"
#include "partita/transform/eliminate_common_subexpr.h"
#include "partita/transform/fuse_ops.h"
#include "partita/transform/lambda_lift.h"
#include "partita/transform/remove_unused_outputs.h"
#include "partita/transform/to_mixed_precision.h"

namespace partita::python {

void init_relax_passes(py::module_& m) {
  m.def("AttachGlobalSymbol", &transform::AttachGlobalSymbol);
  m.def("EliminateCommonSubexpr", &transform::EliminateCommonSubexpr, py::arg("call_only") = false);
  m.def("RemoveUnusedOutputs", &transform::RemoveUnusedOutputs);
  m.def("FuseOps", &transform::FuseOps, py::arg("fuse_opt_level") = -1);
  m.def("LambdaLift", &transform::LambdaLift);
  m.def(
      "DecomposeOpsForInference",
      [](std::optional<std::string> func_name) {
        return transform::DecomposeOpsForInference(func_name.value_or(""));
      },
      py::arg("func_name") = py::none());
  m.def("ToMixedPrecision", &transform::ToMixedPrecision,
        py::arg("out_dtype") = DataType::Float(32),
        py::arg("fp16_input_names") = std::vector<std::string>());
  // (name, var, value) triples: python/partita/relax/transform turns TVM's dict into them.
  m.def(
      "BindParams",
      [](std::string func_name, std::vector<std::tuple<std::string, Var, Expr>> params) {
        std::vector<transform::ParamBinding> bindings;
        for (auto& [name, var, value] : params) bindings.push_back({name, var, value});
        return transform::BindParams(std::move(func_name), std::move(bindings));
      },
      py::arg("func_name"), py::arg("params"));
}

}  // namespace partita::python
