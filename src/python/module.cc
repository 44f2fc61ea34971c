// The native module `partita._ffi`. Each binding file registers one layer; the Python package
// (python/partita) arranges them into TVM-shaped namespaces.
#include "common.h"

namespace partita::python {

PYBIND11_MODULE(_ffi, m) {
  m.doc() = "Partita native bindings";
  static py::exception<Error> error_type(m, "PartitaError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // Map our kinds to the Python exceptions users expect.
      PyObject* type = error_type.ptr();
      if (e.kind() == "KeyError") type = PyExc_KeyError;
      else if (e.kind() == "TypeError") type = PyExc_TypeError;
      else if (e.kind() == "ValueError") type = PyExc_ValueError;
      else if (e.kind() == "AttributeError") type = PyExc_AttributeError;
      // Builtin exception types already say the kind; PartitaError keeps it in the text.
      std::string text = e.what();
      if (type != error_type.ptr()) text = text.substr(e.kind().size() + 2);
      PyErr_SetString(type, text.c_str());
    }
  });
  init_tensor(m);
  init_ir(m);
  init_op(m);
  init_script(m);
  init_transform(m);
  init_relax_passes(m);
  init_dpl(m);
  init_frontend(m);
  init_runtime(m);
}

}  // namespace partita::python
