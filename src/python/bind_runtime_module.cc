// Runtime modules in Python (TVM's runtime.Module as far as BYOC code uses it): what a
// backend's codegen makes, made from bytes by type key, and a codegen run on functions directly
// (TVM's "relax.ext.<codegen>"(functions, options, constant_names)). Generic: no backend is
// named here; a backend's Python half (e.g. the example NPU's) wraps these.
#include "common.h"
#include "partita/codegen/codegen.h"
#include "partita/runtime/module.h"

namespace partita::python {

namespace {

std::vector<Tensor> tensors_of(const py::list& list) {
  std::vector<Tensor> out;
  for (py::handle h : list) out.push_back(h.cast<Tensor>());
  return out;
}

}  // namespace

void bind_runtime_modules(py::module_& m) {
  py::class_<runtime::RuntimeModule, std::shared_ptr<runtime::RuntimeModule>>(m, "RuntimeModule")
      .def_property_readonly("type_key", &runtime::RuntimeModule::type_key)
      .def_property_readonly("function_names", &runtime::RuntimeModule::function_names)
      .def_property_readonly("const_names", &runtime::RuntimeModule::const_names)
      .def("get_source", &runtime::RuntimeModule::get_source, py::arg("format") = "")
      .def("save_to_binary",
           [](const runtime::RuntimeModule& mod) {
             std::string bytes;
             mod.save_to_binary(bytes);
             return py::bytes(bytes);
           })
      .def("init_constants", &runtime::RuntimeModule::init_constants, py::arg("constants"))
      .def(
          "call",
          [](runtime::RuntimeModule& mod, const std::string& symbol, const py::list& inputs,
             const py::list& outputs) {
            runtime::PackedFunc f = mod.find_function(symbol);
            if (!f)
              throw_error("KeyError",
                          "module " + mod.type_key() + " has no function '" + symbol + "'");
            std::vector<Tensor> in = tensors_of(inputs), out = tensors_of(outputs);
            py::gil_scoped_release release;
            f(in, out);
          },
          py::arg("symbol"), py::arg("inputs"), py::arg("outputs"),
          "Runs `symbol` in destination-passing style: writes its results into `outputs` (tensors "
          "of the result's shapes; numpy arrays are written in place).")
      .def("__repr__", [](const runtime::RuntimeModule& mod) {
        return "RuntimeModule(" + mod.type_key() + ")";
      });

  m.def(
      "load_module_from_binary",
      [](const std::string& type_key, py::bytes bytes) {
        return runtime::load_module_from_binary(type_key, std::string_view(bytes));
      },
      py::arg("type_key"), py::arg("bytes"));

  m.def(
      "run_backend_codegen",
      [](const std::string& name, const std::vector<Function>& functions,
         const codegen::Target& target, const std::map<std::string, Tensor>& constants) {
        const codegen::CodegenFn* fn = codegen::find_codegen(name);
        if (!fn) throw_error("KeyError", "no codegen named '" + name + "' is registered");
        std::vector<codegen::CodegenFunction> fs;
        for (const Function& f : functions) {
          std::string symbol = f->attr_string("global_symbol").value_or("");
          if (symbol.empty())
            throw_error("ValueError", "run_backend_codegen: a function has no \"global_symbol\"");
          fs.push_back({symbol, f});
        }
        codegen::CodegenResult r = (*fn)(fs, target, constants);
        return py::make_tuple(r.modules, r.constants);
      },
      py::arg("name"), py::arg("functions"), py::arg("target"), py::arg("constants"),
      "Runs codegen `name` on `functions` (each with a \"global_symbol\") with `target` and the "
      "module's named constants; returns (runtime modules, constants it added by name).");
}

}  // namespace partita::python
