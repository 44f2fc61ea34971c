// Bindings of the operator registry. Python builds `relax.op.*` functions from these
// definitions (python/partita/relax/op/__init__.py), so a new operator needs no binding code.
#include "common.h"
#include "partita/op/registry.h"

namespace partita::python {

void init_op(py::module_& m) {
  m.def("list_ops", &op::list_ops);
  m.def("get_op", &op::get_op);
  m.def("op_def", [](const std::string& name) {
    const op::OpDef& def = op::get_op_def(name);
    py::list args, attrs;
    for (const auto& a : def.args) args.append(py::make_tuple(a.name, a.optional, a.variadic));
    for (const auto& a : def.attrs)
      attrs.append(py::make_tuple(a.name, int(a.kind), a.default_value, a.required));
    py::dict d;
    d["name"] = def.name;
    d["script_name"] = def.script_name;
    d["attrs_type_key"] = def.attrs_type_key;
    d["args"] = args;
    d["attrs"] = attrs;
    return d;
  });
  m.def("make_call", &op::make_call, py::arg("op_name"), py::arg("args"),
        py::arg("attrs") = std::vector<std::pair<std::string, AttrValue>>());
}

}  // namespace partita::python
