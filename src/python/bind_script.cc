// Bindings of the text format: printing (script/show) and parsing (from_source).
#include "common.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

namespace partita::python {

void init_script(py::module_& m) {
  m.def("print_module", [](const IRModule& mod, bool show_meta) {
    return script::print_module(mod, script::PrintOptions{show_meta});
  }, py::arg("mod"), py::arg("show_meta") = true);
  m.def("print_expr", [](const ObjectRef& node) { return script::print_expr(node); });
  m.def("parse_module", &script::parse_module, py::arg("text"), py::arg("filename") = "<string>");
  m.def("parse_function", &script::parse_function, py::arg("text"), py::arg("filename") = "<string>");
}

}  // namespace partita::python
