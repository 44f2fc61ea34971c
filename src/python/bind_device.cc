// partita.runtime.Device (TVM's Device: device_type, device_id, exist, sync()), partita.cpu()
// / partita.cuda(), streams as integers (a cudaStream_t's address; 0 is the default stream)
// and the caching allocator's statistics.
#include "common.h"
#include "partita/runtime/device_api.h"

namespace partita::python {

namespace {

py::dict stats_dict(const runtime::AllocatorStats& s) {
  py::dict d;
  d["alloc_calls"] = s.alloc_calls;
  d["cache_hits"] = s.cache_hits;
  d["device_allocs"] = s.device_allocs;
  d["device_frees"] = s.device_frees;
  d["bytes_in_use"] = s.bytes_in_use;
  d["bytes_cached"] = s.bytes_cached;
  d["peak_bytes_in_use"] = s.peak_bytes_in_use;
  return d;
}

runtime::StreamHandle as_stream(uintptr_t s) { return reinterpret_cast<runtime::StreamHandle>(s); }
uintptr_t from_stream(runtime::StreamHandle s) { return reinterpret_cast<uintptr_t>(s); }

}  // namespace

Device device_from_py(py::handle h) {
  if (h.is_none()) return Device::cpu();
  if (py::isinstance<Device>(h)) return h.cast<Device>();
  if (py::isinstance<py::str>(h)) return Device::parse(h.cast<std::string>());
  if (py::isinstance<py::tuple>(h) && py::len(h) == 2) {
    auto [type, id] = h.cast<std::pair<int32_t, int32_t>>();
    if (!is_known_device_kind(type)) throw_error("ValueError", "unknown DLPack device type " + std::to_string(type));
    return Device{DeviceKind(type), id};
  }
  throw_error("TypeError", "expected a device (partita.cpu(), partita.cuda(0), 'cuda:0' or a (device_type, "
                           "device_id) pair), got " + std::string(py::str(py::type::handle_of(h).attr("__name__"))));
}

void init_device(py::module_& m) {
  py::class_<Device>(m, "Device", "A device: a kind (DLPack's device type) and an index.")
      .def(py::init([](py::object kind, int32_t index) {
             if (py::isinstance<py::int_>(kind)) {
               int32_t type = kind.cast<int32_t>();
               if (!is_known_device_kind(type)) throw_error("ValueError", "unknown DLPack device type " + std::to_string(type));
               return Device{DeviceKind(type), index};
             }
             Device d = Device::parse(kind.cast<std::string>());
             if (kind.cast<std::string>().find(':') == std::string::npos) d.id = index;
             return d;
           }),
           py::arg("kind") = "cpu", py::arg("index") = 0)
      .def_property_readonly("kind", [](const Device& d) { return device_kind_name(d.kind); })
      .def_property_readonly("index", [](const Device& d) { return d.id; })
      .def_property_readonly("device_type", [](const Device& d) { return int32_t(d.kind); })
      .def_property_readonly("device_id", [](const Device& d) { return d.id; })
      .def_property_readonly("exist", &runtime::device_exists,
                             "True when the device is there (for CUDA: the plug-in loads and the GPU exists).")
      .def("sync", &runtime::synchronize, "Waits for the work queued on the device's current stream.")
      .def("memory_stats", [](const Device& d) {
        return stats_dict(runtime::device_api(d)->allocator_stats(d.id));
      }, "The caching allocator's counters (alloc_calls, cache_hits, device_allocs, ...).")
      .def("empty_cache", [](const Device& d) { runtime::device_api(d)->empty_cache(d.id); },
           "Gives idle pooled memory back to the driver.")
      .def("create_stream", [](const Device& d) {
        return from_stream(runtime::device_api(d)->create_stream(d.id));
      }, "A new stream of this device, as an integer handle (a cudaStream_t for CUDA).")
      .def("free_stream", [](const Device& d, uintptr_t s) { runtime::device_api(d)->free_stream(d.id, as_stream(s)); })
      .def_property("current_stream",
                    [](const Device& d) { return from_stream(runtime::current_stream(d)); },
                    [](const Device& d, uintptr_t s) { runtime::set_current_stream(d, as_stream(s)); },
                    "This thread's current stream of the device (0: the default stream); VM calls and "
                    "copies enqueue there.")
      .def("__dlpack_device__", [](const Device& d) { return py::make_tuple(int32_t(d.kind), d.id); })
      .def("__eq__", [](const Device& a, py::object b) {
        return py::isinstance<Device>(b) && a == b.cast<Device>();
      })
      .def("__hash__", [](const Device& d) { return std::hash<Device>()(d); })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return device_kind_name(d.kind) + "(" + std::to_string(d.id) + ")"; });
  m.def("device", [](py::object d) { return device_from_py(d); }, py::arg("device"),
        "A Device from 'cuda:0', a Device, or a (device_type, device_id) pair.");
}

}  // namespace partita::python
