// Bindings of the ONNX importer (partita.relax.frontend.onnx).
#include "common.h"
#include "partita/frontend/onnx.h"

namespace partita::python {

void init_frontend(py::module_& m) {
  m.def(
      "onnx_from_bytes",
      [](py::bytes data, std::map<std::string, std::vector<frontend::InputDim>> shape_dict,
         bool keep_params_in_input, std::optional<int64_t> opset, std::string source_name) {
        frontend::OnnxImportOptions opts;
        opts.shape_dict = std::move(shape_dict);
        opts.keep_params_in_input = keep_params_in_input;
        opts.opset = opset;
        opts.source_name = std::move(source_name);
        std::string_view view = data;
        py::gil_scoped_release release;
        return frontend::from_onnx_bytes(view, opts);
      },
      py::arg("data"), py::arg("shape_dict"), py::arg("keep_params_in_input") = false,
      py::arg("opset") = py::none(), py::arg("source_name") = "<model>");
  m.def(
      "onnx_from_file",
      [](const std::string& path, std::map<std::string, std::vector<frontend::InputDim>> shape_dict,
         bool keep_params_in_input, std::optional<int64_t> opset) {
        frontend::OnnxImportOptions opts;
        opts.shape_dict = std::move(shape_dict);
        opts.keep_params_in_input = keep_params_in_input;
        opts.opset = opset;
        py::gil_scoped_release release;
        return frontend::from_onnx_file(path, opts);
      },
      py::arg("path"), py::arg("shape_dict"), py::arg("keep_params_in_input") = false,
      py::arg("opset") = py::none());
  m.def("onnx_params_of", &frontend::onnx_params_of, py::arg("mod"));
  m.def("onnx_supported_ops", &frontend::onnx_supported_ops);
}

}  // namespace partita::python
