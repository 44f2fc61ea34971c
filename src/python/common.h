// Shared pieces of the Python bindings: the Ref<T> holder, and conversions of DataType and
// Tensor (to/from numpy), so every binding file sees the same casters.
#pragma once

#define PYBIND11_DETAILED_ERROR_MESSAGES

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "partita/ir/dispatch.h"
#include "partita/support/error.h"

PYBIND11_DECLARE_HOLDER_TYPE(T, partita::Ref<T>, true);

namespace pybind11::detail {

/// pybind11 stores mutable pointers; IR nodes are immutable by convention, not by type.
template <typename T>
struct holder_helper<partita::Ref<T>> {
  static T* get(const partita::Ref<T>& p) { return const_cast<T*>(p.get()); }
};

/// DataType <-> str ("float32"; void is "").
template <>
struct type_caster<partita::DataType> {
  PYBIND11_TYPE_CASTER(partita::DataType, const_name("dtype"));
  bool load(handle src, bool) {
    if (!PyUnicode_Check(src.ptr())) return false;
    std::string s = src.cast<std::string>();
    if (!partita::DataType::is_valid(s)) return false;
    value = partita::DataType::parse(s);
    return true;
  }
  static handle cast(partita::DataType t, return_value_policy, handle) {
    return pybind11::str(t.str()).release();
  }
};

/// Tensor <-> numpy.ndarray, zero-copy where possible (rules in bind_tensor.cc). Loading also
/// accepts partita.runtime.Tensor and other DLPack producers (torch and CuPy CUDA tensors are
/// shared, not copied). A tensor host code cannot read (CUDA) converts to a
/// partita.runtime.Tensor instead of a numpy array.
template <>
struct type_caster<partita::Tensor> {
  PYBIND11_TYPE_CASTER(partita::Tensor, const_name("numpy.ndarray"));
  bool load(handle src, bool convert);
  static handle cast(const partita::Tensor& t, return_value_policy, handle);
};

}  // namespace pybind11::detail

namespace partita::python {

namespace py = pybind11;

/// numpy dtype string for a DataType ("float32", "bool", ...).
std::string numpy_dtype(DataType t);

/// The Python object partita.runtime.Tensor (a handle sharing the tensor's buffer).
struct TensorHandle {
  Tensor tensor;
};
/// A Tensor over `a`'s memory when C-contiguous, writable and element-aligned; a copy otherwise.
Tensor tensor_from_numpy(const py::array& a);
/// A numpy array over `t`'s buffer (no copy); the array's base keeps the buffer alive.
py::array tensor_to_numpy(const Tensor& t, bool writable);

/// Registers a node class `T` (Python name `name`) with bases, exposing every declared field
/// as a read-only property.
template <class T, class... Bases>
py::class_<T, Bases..., Ref<T>> bind_node(py::module_& m, const char* name) {
  py::class_<T, Bases..., Ref<T>> cls(m, name);
  std::apply(
      [&](auto... fd) {
        (cls.def_property_readonly(fd.name, [member = fd.member](const T& self) {
          return py::cast(self.*member);
        }),
         ...);
      },
      T::declared_fields());
  return cls;
}

void init_ir(py::module_& m);
void init_op(py::module_& m);
void init_script(py::module_& m);
void init_transform(py::module_& m);
void init_dpl(py::module_& m);
void init_frontend(py::module_& m);
void init_runtime(py::module_& m);
void init_tensor(py::module_& m);
void init_device(py::module_& m);
void init_relax_passes(py::module_& m);
/// A Device from None (the CPU), a Device, "cuda:0" or a (device_type, device_id) pair.
Device device_from_py(py::handle h);

}  // namespace partita::python
