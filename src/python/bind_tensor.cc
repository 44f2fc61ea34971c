// Tensors across the Python boundary: the Tensor <-> numpy caster (zero-copy where possible),
// and partita.runtime.Tensor / from_dlpack / to_dlpack (DLPack, so numpy.from_dlpack works).
//
// Sharing rules. numpy -> Tensor shares the array's memory when it is C-contiguous, writable,
// of a supported native dtype and aligned to one element (all the runtime kernels need; see
// runtime::required_alignment); the Tensor's buffer then holds a reference to the array.
// Anything else is copied into a fresh 64-byte aligned tensor: a strided view, a read-only or
// misaligned array, and an array in the other byte order (converted to this machine's). Tensor -> numpy never copies:
// the array's base is a capsule holding a reference to the Tensor's buffer, so buffer pools
// (the VM's) see the buffer as in use for as long as Python holds the array.
//
// Devices. A tensor in CUDA memory stays a partita.runtime.Tensor (numpy cannot hold it):
// `.numpy()` copies it to the host, `.to(device)` moves it, and DLPack shares it with PyTorch
// and CuPy both ways with DLPack's stream protocol: a consumer passes its stream to
// `__dlpack__(stream=...)` and we make that stream wait for our current stream of the device
// (an event, no host block); we pass ours when we consume (1, the legacy default stream, when
// ours is the default stream).
#include <string>

#include "common.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/dlpack.h"

namespace partita::python {

namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

/// False once the interpreter is finalizing: references then can no longer be dropped safely
/// (and need not be), so buffer deleters leak them instead of touching Python.
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

/// Runs `f` holding the GIL. Buffer deleters run wherever the last Tensor reference goes,
/// possibly a thread that does not hold the GIL (a VM call releases it). PyGILState is used
/// rather than pybind11's gil_scoped_acquire because it does not touch pybind11's internals,
/// which may already be gone late in shutdown.
template <class F>
void with_gil(F&& f) {
  if (!python_alive()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  f();
  PyGILState_Release(state);
}

/// A buffer pointer whose lifetime is tied to a Python object (a reference is held).
std::shared_ptr<uint8_t> buffer_owned_by(void* data, py::handle owner) {
  PyObject* obj = owner.ptr();
  Py_INCREF(obj);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(data), [obj](uint8_t*) {
    with_gil([obj] { Py_DECREF(obj); });
  });
}

/// `t` again, but its last reference drops the producer's buffer under the GIL (numpy 1.24's
/// DLPack deleter does not take it itself).
Tensor release_under_gil(Tensor t) {
  auto* inner = new std::shared_ptr<uint8_t>(t.buffer());
  std::shared_ptr<uint8_t> outer(inner->get(), [inner](uint8_t*) {
    if (python_alive()) with_gil([inner] { delete inner; });
    // else: leak; the producer's memory goes with the process
  });
  return Tensor::from_buffer(t.shape(), t.dtype(), std::move(outer), t.device());
}

DataType dtype_of(const py::array& a) {
  std::string dt = py::str(a.dtype()).cast<std::string>();
  if (!DataType::is_valid(dt)) throw_error("TypeError", "unsupported numpy dtype '" + dt + "'");
  return DataType::parse(dt);
}

bool can_share(const py::array& a, DataType dtype) {
  int flags = py::detail::array_proxy(a.ptr())->flags;
  bool contiguous = flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_;
  bool writable = flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  auto addr = reinterpret_cast<uintptr_t>(a.data());
  return contiguous && writable && a.size() > 0 && addr % runtime::required_alignment(dtype) == 0;
}

struct CapsuleDeleter {
  static void destroy(PyObject* capsule) {
    // Still named "dltensor": nobody consumed it, so we own the managed tensor.
    if (PyCapsule_IsValid(capsule, kCapsuleName)) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
      if (m && m->deleter) m->deleter(m);
    } else {
      PyErr_Clear();
    }
  }
};

py::capsule make_capsule(const Tensor& t) {
  DLManagedTensor* m = runtime::to_dlpack(t);
  PyObject* cap = PyCapsule_New(m, kCapsuleName, &CapsuleDeleter::destroy);
  if (!cap) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

Tensor tensor_from_capsule(py::handle cap, runtime::DLPackCopy copy) {
  if (!PyCapsule_CheckExact(cap.ptr()) || !PyCapsule_IsValid(cap.ptr(), kCapsuleName)) {
    PyErr_Clear();
    throw_error("ValueError", "expected a DLPack capsule named 'dltensor' (a capsule can be consumed once)");
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), kCapsuleName));
  // On failure from_dlpack leaves `m` to the capsule, whose destructor frees it.
  Tensor t = runtime::from_dlpack(m, copy);
  PyCapsule_SetName(cap.ptr(), kUsedCapsuleName);
  return release_under_gil(std::move(t));
}

runtime::DLPackCopy copy_mode(std::optional<bool> copy) {
  return copy == false ? runtime::DLPackCopy::kNever : runtime::DLPackCopy::kIfNeeded;
}

/// The integer DLPack's __dlpack__(stream=...) takes for our current stream of `d`: the
/// stream's handle, or 1 (the legacy default stream) for the default stream.
int64_t dlpack_stream_arg(Device d) {
  auto s = reinterpret_cast<int64_t>(runtime::current_stream(d));
  return s == 0 ? 1 : s;
}

/// from_dlpack(obj): obj is a DLPack capsule or has __dlpack__ (numpy arrays, torch tensors, ...).
Tensor tensor_from_dlpack(py::handle obj, std::optional<bool> copy) {
  Tensor t;
  if (PyCapsule_CheckExact(obj.ptr())) {
    t = tensor_from_capsule(obj, copy_mode(copy));
  } else if (py::hasattr(obj, "__dlpack__")) {
    py::object cap;
    if (py::hasattr(obj, "__dlpack_device__")) {
      auto dev = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
      if (dev.first != kDLCPU && dev.first != kDLCUDA && dev.first != kDLCUDAHost)
        throw_error("ValueError", "from_dlpack: tensor is on device type " + std::to_string(dev.first) + " (" +
                                      device_kind_name(DeviceKind(dev.first)) +
                                      "), but the runtime holds tensors in CPU, CUDA and pinned host memory only");
      // A CUDA producer makes our current stream wait for its pending work on the tensor.
      if (dev.first == kDLCUDA)
        cap = obj.attr("__dlpack__")(py::arg("stream") = dlpack_stream_arg(Device{DeviceKind::kCUDA, dev.second}));
    }
    if (!cap) cap = obj.attr("__dlpack__")();
    t = tensor_from_capsule(cap, copy_mode(copy));
  } else {
    throw_error("TypeError", "from_dlpack: expected a DLPack capsule or an object with __dlpack__, got " +
                                 std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  }
  return copy == true ? t.copy() : t;
}

std::string shape_str(const Tensor& t) {
  std::string s = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  return s + (t.shape().size() == 1 ? ",)" : ")");
}

/// Tensor.__dlpack__ (the producer side of DLPack's Python protocol).
py::capsule export_dlpack(const Tensor& tensor, py::object stream, py::object dl_device, py::object copy) {
  Tensor t = tensor;
  if (!dl_device.is_none()) {
    Device want = device_from_py(dl_device);
    if (!(want == t.device())) {
      if (!copy.is_none() && !copy.cast<bool>())
        throw py::buffer_error("__dlpack__: the tensor is on " + t.device().str() + ", " + want.str() +
                               " was asked for, and copy=False");
      t = t.to(want);
    }
  }
  if (!copy.is_none() && copy.cast<bool>() && t.same_buffer(tensor)) t = t.copy();
  Device d = t.device();
  if (d.kind == DeviceKind::kCUDA) {
    // None: the consumer works on the legacy default stream. -1: it asks for no synchronization.
    int64_t consumer = stream.is_none() ? 1 : stream.cast<int64_t>();
    if (consumer == 0)
      throw_error("ValueError", "__dlpack__: stream 0 is ambiguous for CUDA; DLPack asks for 1 (legacy default "
                                "stream), 2 (per-thread default stream) or a stream handle");
    if (consumer != -1)
      runtime::device_api(d)->stream_wait(d.id, reinterpret_cast<runtime::StreamHandle>(consumer),
                                          runtime::current_stream(d));
  }
  return make_capsule(t);
}

py::object tensor_numpy(const Tensor& t) {
  if (t.device().is_host_accessible()) return tensor_to_numpy(t, true);
  return tensor_to_numpy(t.to(Device::cpu()), true);
}

Tensor tensor_on(py::object data, py::object device) {
  Tensor t = py::cast<Tensor>(data);
  return device.is_none() ? t : t.to(device_from_py(device));
}

}  // namespace

std::string numpy_dtype(DataType t) {
  if (t == DataType::BFloat16()) throw_error("TypeError", "numpy has no bfloat16");
  return t.str();
}

Tensor tensor_from_numpy(const py::array& a) {
  DataType dtype = dtype_of(a);
  if (can_share(a, dtype)) {
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    return Tensor::from_buffer(std::move(shape), dtype, buffer_owned_by(const_cast<void*>(a.data()), a));
  }
  py::array c = py::array::ensure(a, py::array::c_style);
  if (!c) throw py::error_already_set();
  std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
  return Tensor::from_bytes(std::move(shape), dtype, c.data(), size_t(c.nbytes()));
}

py::array tensor_to_numpy(const Tensor& t, bool writable) {
  auto* holder = new std::shared_ptr<uint8_t>(t.buffer());
  py::capsule base(holder, [](void* p) { delete static_cast<std::shared_ptr<uint8_t>*>(p); });
  py::array a(py::dtype(numpy_dtype(t.dtype())), t.shape(), {}, t.data(), base);
  if (!writable) py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

void init_tensor(py::module_& m) {
  init_device(m);
  py::class_<TensorHandle>(m, "Tensor",
                           "A runtime tensor on a device. On the CPU it shares memory with numpy and "
                           "DLPack producers when it can (numpy.from_dlpack(t) and t.numpy() do not "
                           "copy); a CUDA tensor shares with torch/CuPy through DLPack, and "
                           "t.numpy() copies it to the host.")
      .def(py::init([](py::object data, py::object device) { return TensorHandle{tensor_on(data, device)}; }),
           py::arg("data"), py::arg("device") = py::none())
      .def_property_readonly("shape", [](const TensorHandle& h) { return py::tuple(py::cast(h.tensor.shape())); })
      .def_property_readonly("dtype", [](const TensorHandle& h) { return h.tensor.dtype().str(); })
      .def_property_readonly("ndim", [](const TensorHandle& h) { return h.tensor.ndim(); })
      .def_property_readonly("data_ptr", [](const TensorHandle& h) { return reinterpret_cast<uintptr_t>(h.tensor.data()); })
      .def_property_readonly("device", [](const TensorHandle& h) { return h.tensor.device(); })
      .def("numpy", [](const TensorHandle& h) { return tensor_numpy(h.tensor); },
           "A numpy array: over the same memory for host tensors, a host copy of a device tensor.")
      .def("__array__", [](const TensorHandle& h, py::object dtype, py::object) {
             py::object a = tensor_numpy(h.tensor);
             return dtype.is_none() ? a : a.attr("astype")(dtype);
           }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("to", [](const TensorHandle& h, py::object device) { return TensorHandle{h.tensor.to(device_from_py(device))}; },
           py::arg("device"), "This tensor on `device` (itself when it is there already, a copy otherwise).")
      .def("copy_from", [](TensorHandle& h, py::object src) { h.tensor.copy_from(py::cast<Tensor>(src)); },
           py::arg("src"), "Overwrites this tensor with `src` (same dtype and size, any device).")
      .def("copy", [](const TensorHandle& h) { return TensorHandle{h.tensor.copy()}; })
      .def("same_buffer", [](const TensorHandle& a, const TensorHandle& b) { return a.tensor.same_buffer(b.tensor); })
      .def("__dlpack__", [](const TensorHandle& h, py::object stream, py::object /*max_version*/,
                            py::object dl_device, py::object copy) {
             return export_dlpack(h.tensor, stream, dl_device, copy);
           }, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
           py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
           "A DLPack capsule (unversioned, DLPack 0.6) sharing the memory; `stream` is the "
           "consumer's, which is made to wait for this tensor's pending work.")
      .def("__dlpack_device__", [](const TensorHandle& h) {
        return py::make_tuple(int32_t(h.tensor.device().kind), h.tensor.device().id);
      })
      .def("__repr__", [](const TensorHandle& h) {
        std::string dev = h.tensor.device().is_cpu() ? "" : ", device=" + h.tensor.device().str();
        return "Tensor(shape=" + shape_str(h.tensor) + ", dtype=" + h.tensor.dtype().str() + dev + ")";
      });
  m.def("tensor", [](py::object data, py::object device) { return TensorHandle{tensor_on(data, device)}; },
        py::arg("data"), py::arg("device") = py::none(),
        "A runtime tensor over `data` (shares numpy memory when possible, copies otherwise), "
        "copied to `device` when one is given.");
  m.def("empty", [](std::vector<int64_t> shape, DataType dtype, py::object device) {
    return TensorHandle{Tensor::empty(std::move(shape), dtype, device_from_py(device))};
  }, py::arg("shape"), py::arg("dtype") = DataType::Float(32), py::arg("device") = py::none(),
        "An uninitialised tensor on `device` (the CPU by default).");
  m.def("from_dlpack", [](py::object obj, std::optional<bool> copy) {
    return TensorHandle{tensor_from_dlpack(obj, copy)};
  }, py::arg("obj"), py::arg("copy") = py::none(),
        "A Tensor from a DLPack capsule or an object with __dlpack__. copy=None shares when "
        "possible and copies otherwise; copy=False raises instead of copying; copy=True copies.");
  m.def("to_dlpack", [](py::object obj) {
    return make_capsule(py::isinstance<TensorHandle>(obj) ? obj.cast<TensorHandle&>().tensor : obj.cast<Tensor>());
  }, py::arg("tensor"), "A DLPack capsule sharing the tensor's memory.");
}

}  // namespace partita::python

namespace pybind11::detail {

bool type_caster<partita::Tensor>::load(handle src, bool convert) {
  using namespace partita::python;
  if (isinstance<TensorHandle>(src)) {
    value = src.cast<TensorHandle&>().tensor;
    return true;
  }
  if (!isinstance<array>(src)) {
    if (!convert) return false;
    // Other DLPack producers (torch, ...) share through DLPack; everything else goes via numpy.
    if (hasattr(src, "__dlpack__") && !PyCapsule_CheckExact(src.ptr())) {
      value = tensor_from_dlpack(src, std::nullopt);
      return true;
    }
  }
  array a = array::ensure(src);
  if (!a) {
    PyErr_Clear();
    return false;
  }
  // Another byte order than this machine's ('>f4' here) is converted (a copy), never read as is.
  if (!a.dtype().attr("isnative").cast<bool>())
    a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
  std::string dt = str(a.dtype()).cast<std::string>();
  if (!partita::DataType::is_valid(dt)) return false;
  value = tensor_from_numpy(a);
  return true;
}

handle type_caster<partita::Tensor>::cast(const partita::Tensor& t, return_value_policy, handle) {
  if (!t.defined()) return none().release();
  if (!t.device().is_host_accessible()) return pybind11::cast(partita::python::TensorHandle{t}).release();
  return partita::python::tensor_to_numpy(t, true).release();
}

}  // namespace pybind11::detail
