#include <pybind11/pybind11.h>
PYBIND11_MODULE(_ffi, m) { m.doc() = "Partita native bindings"; }
