// Bindings of build, the VM, executables, targets and the BYOC passes (TVM's relax.build,
// relax.VirtualMachine, tvm.target.Target, relax.transform.RunCodegen ...).
#include "common.h"
#include "partita/codegen/build.h"
#include "partita/codegen/collage.h"
#include "partita/codegen/codegen.h"
#include "partita/runtime/vm.h"
#include "partita/transform/byoc_helpers.h"
#include "partita/transform/pattern_registry.h"

namespace partita::python {

using codegen::Target;
using codegen::TargetOptionMap;
using runtime::Executable;
using runtime::VirtualMachine;

namespace {

/// A VM result as Python sees it: a partita.runtime.Tensor (TVM's VM returns runtime tensors;
/// `.numpy()` and `__array__` give numpy), a tuple of them for a tuple.
py::object value_to_py(const runtime::Value& v) {
  if (!v.is_tuple()) return v.tensor.defined() ? py::cast(TensorHandle{v.tensor}) : py::object(py::none());
  py::tuple t(v.tuple->size());
  for (size_t i = 0; i < v.tuple->size(); ++i) t[i] = value_to_py((*v.tuple)[i]);
  return t;
}

runtime::Value py_to_value(py::handle h) {
  if (py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h)) {
    std::vector<runtime::Value> fields;
    for (py::handle x : h) fields.push_back(py_to_value(x));
    return runtime::Value::make_tuple(std::move(fields));
  }
  return runtime::Value(h.cast<Tensor>());
}

/// Argument `i` of a call of `f`, converted with errors that name the function and the
/// parameter (the VM checks dtype, shape and device of what converts).
runtime::Value vm_argument(py::handle h, const runtime::VMFunction& f, size_t i) {
  std::string where = i < f.param_names.size()
                          ? "argument '" + f.param_names[i] + "' of function '" + f.name + "'"
                          : "argument " + std::to_string(i) + " of function '" + f.name + "'";
  try {
    return py_to_value(h);
  } catch (const Error& e) {
    throw_error(e.kind(), where + ": " + e.message());
  } catch (const py::cast_error&) {
    std::string got = py::str(py::type::handle_of(h).attr("__name__"));
    if (py::isinstance<py::array>(h)) got += " of dtype " + std::string(py::str(h.attr("dtype")));
    throw_error("TypeError", where + ": expected a tensor (a numpy array of a supported dtype, a "
                                     "partita.runtime.Tensor or a DLPack producer such as torch.Tensor), got " + got);
  }
}

std::vector<Target> to_targets(py::handle target) {
  std::vector<Target> targets;
  if (target.is_none()) return targets;
  if (py::isinstance<py::str>(target)) return {Target(target.cast<std::string>())};
  if (py::isinstance<Target>(target)) return {target.cast<Target>()};
  for (py::handle t : target) {
    if (py::isinstance<py::str>(t)) targets.emplace_back(t.cast<std::string>());
    else targets.push_back(t.cast<Target>());
  }
  return targets;
}

TargetOptionMap to_options(const py::dict& d) {
  TargetOptionMap options;
  for (auto [k, v] : d) {
    std::string key = k.cast<std::string>();
    if (py::isinstance<py::bool_>(v)) options[key] = v.cast<bool>();
    else if (py::isinstance<py::int_>(v)) options[key] = v.cast<int64_t>();
    else if (py::isinstance<py::str>(v)) options[key] = v.cast<std::string>();
    else options[key] = v.cast<std::vector<std::string>>();
  }
  return options;
}

// CollagePartition: the Python wrappers (relax/transform/collage.py) make the options; a
// Target's kind names its backend when it has patterns (the host kinds and "cuda", which fuses
// by kind, are where the rest runs), its options are what candidates are built with.
void bind_collage(py::module_& m) {
  py::class_<codegen::CollageOptions>(m, "CollageOptions")
      .def(py::init([](py::handle targets) {
        codegen::CollageOptions o;
        for (const Target& t : to_targets(targets)) {
          if (!transform::get_patterns_with_prefix(t.kind() + ".").empty()) o.backends.push_back(t.kind());
          o.targets.push_back(t);
        }
        return o;
      }))
      .def_readwrite("cost_cache", &codegen::CollageOptions::cost_cache)
      .def_readwrite("budget_s", &codegen::CollageOptions::budget_s)
      .def_readwrite("max_merge", &codegen::CollageOptions::max_merge)
      .def_readwrite("device", &codegen::CollageOptions::device)
      .def_readwrite("validate", &codegen::CollageOptions::validate)
      .def_readwrite("refit", &codegen::CollageOptions::refit)
      .def_readwrite("verbose", &codegen::CollageOptions::verbose);
  m.def("CollagePartition", &codegen::CollagePartition);
  m.def("collage_partition", [](const IRModule& mod, const codegen::CollageOptions& o) {
    codegen::CollageResult r = codegen::collage_partition(mod, o);
    py::list parts;
    for (const auto& p : r.partitions) {
      py::dict d;
      d["function"] = p.function;
      d["backend"] = p.backend;
      d["vars"] = p.vars;
      d["patterns"] = p.patterns;
      d["cost_us"] = p.cost_us;
      d["measured"] = p.measured;
      parts.append(d);
    }
    py::dict stats;
    stats["predicted_us"] = r.predicted_us();
    stats["candidates"] = r.candidates;
    stats["measured"] = r.measured;
    stats["cached"] = r.cached;
    stats["measure_s"] = r.measure_s;
    stats["search_s"] = r.search_s;
    stats["summary"] = r.summary();
    stats["alternatives"] = r.alternatives_table();
    stats["boundary_us"] = r.boundary_us;
    stats["chosen"] = r.chosen;
    stats["validate_s"] = r.validate_s;
    stats["refit_boundary_us"] = r.refit_boundary_us;
    py::list placements;
    for (const auto& p : r.placements) {
      py::dict d;
      d["name"] = p.name;
      d["predicted_us"] = p.predicted_us;
      d["measured_us"] = p.measured_us;
      d["partitions"] = p.partitions;
      d["cached"] = p.cached;
      placements.append(d);
    }
    stats["placements"] = placements;
    return py::make_tuple(r.mod, parts, stats);
  });
}

/// A function of a VM, callable from Python: vm["main"](x, y).
struct VMFunctionHandle {
  std::shared_ptr<VirtualMachine> vm;
  std::string name;
};

}  // namespace

static void bind_targets(py::module_& m) {
  py::class_<Target>(m, "Target")
      .def(py::init([](const std::string& kind, std::optional<py::dict> options) {
             return Target(kind, options ? to_options(*options) : TargetOptionMap());
           }),
           py::arg("kind"), py::arg("options") = py::none())
      .def_property_readonly("kind", &Target::kind)
      .def_property_readonly("options", [](const Target& t) {
        py::dict d;
        for (const auto& option : t.options())  // not a structured binding: clang 14 cannot capture one
          std::visit([&](const auto& x) { d[py::str(option.first)] = py::cast(x); }, option.second.storage());
        return d;
      })
      .def("__str__", &Target::str)
      .def("__repr__", [](const Target& t) { return "Target(" + t.str() + ")"; });
  m.def("list_target_kinds", &codegen::list_target_kinds);
}

static void bind_vm(py::module_& m) {
  py::class_<Executable, std::shared_ptr<Executable>>(m, "Executable")
      .def("export_library", &Executable::export_library, py::arg("path"))
      .def("as_text", &Executable::as_text)
      .def("save", [](const Executable& ex) {
        std::string bytes;
        ex.save(bytes);
        return py::bytes(bytes);
      })
      .def_static("load", [](py::bytes b) { return Executable::load(std::string_view(b)); })
      .def_property_readonly("function_names", [](const Executable& ex) {
        std::vector<std::string> names;
        for (const auto& f : ex.functions) names.push_back(f.name);
        return names;
      })
      .def_property_readonly("named_constants", [](const Executable& ex) { return ex.named_constant_map(); })
      .def("function_params", [](const Executable& ex, const std::string& name) {
        int32_t i = ex.function_index(name);
        if (i < 0) throw_error("KeyError", "the executable has no function named \"" + name + "\"");
        return ex.functions[size_t(i)].param_names;
      }, py::arg("name"), "The parameter names of function `name`, in order.")
      .def_property_readonly("external_module_kinds", [](const Executable& ex) {
        std::vector<std::string> kinds;
        for (const auto& mod : ex.external_modules) kinds.push_back(mod->type_key());
        return kinds;
      });
  m.def("load_module", &runtime::load_module, py::arg("path"));

  py::class_<VMFunctionHandle>(m, "VMFunction")
      .def("__call__", [](const VMFunctionHandle& f, py::args args) {
        const Executable& ex = f.vm->executable();
        const runtime::VMFunction& fn = ex.functions[size_t(ex.function_index(f.name))];
        std::vector<runtime::Value> inputs;
        for (py::handle a : args) inputs.push_back(vm_argument(a, fn, inputs.size()));
        runtime::Value out;
        {
          py::gil_scoped_release release;
          out = f.vm->invoke_value(f.name, inputs);
        }
        return value_to_py(out);
      });
  py::class_<runtime::ProfileEntry>(m, "ProfileEntry")
      .def_readonly("name", &runtime::ProfileEntry::name)
      .def_readonly("external", &runtime::ProfileEntry::external)
      .def_readonly("calls", &runtime::ProfileEntry::calls)
      .def_readonly("total_us", &runtime::ProfileEntry::total_us)
      .def("__repr__", [](const runtime::ProfileEntry& e) {
        return "ProfileEntry(" + e.name + ", calls=" + std::to_string(e.calls) + ", total_us=" + std::to_string(e.total_us) + ")";
      });
  py::class_<runtime::ProfileReport>(m, "ProfileReport")
      .def_readonly("entries", &runtime::ProfileReport::entries)
      .def_readonly("wall_us", &runtime::ProfileReport::wall_us)
      .def("table", &runtime::ProfileReport::table)
      .def("__str__", &runtime::ProfileReport::table);
  py::class_<VirtualMachine, std::shared_ptr<VirtualMachine>>(m, "VirtualMachine")
      .def(py::init([](std::shared_ptr<Executable> ex, py::object device) {
             // A list of devices (TVM accepts one): the accelerator among them is the user's.
             Device d = Device::cpu();
             if (py::isinstance<py::list>(device)) {
               for (py::handle x : device) {
                 Device e = device_from_py(x);
                 if (!e.is_cpu()) d = e;
               }
             } else {
               d = device_from_py(device);
             }
             return std::make_shared<VirtualMachine>(ex, d);
           }),
           py::arg("exec"), py::arg("device") = py::none(),
           "A VM for the user's `device` (partita.cpu() by default, or partita.cuda(n)): "
           "arguments on other devices are copied where the function expects them and results "
           "come back on `device`.")
      .def_property_readonly("device", &VirtualMachine::device)
      .def("set_graph_capture", &VirtualMachine::set_graph_capture, py::arg("enabled"),
           "CUDA Graph capture of whole runs where valid (on by default; see graph_stats).")
      .def("graph_stats", [](const VirtualMachine& vm) {
        const auto& g = vm.graph_stats();
        py::dict d;
        d["captures"] = g.captures;
        d["launches"] = g.launches;
        d["fallbacks"] = g.fallbacks;
        return d;
      })
      .def("set_stream", [](VirtualMachine& vm, uintptr_t stream) {
        vm.set_stream(reinterpret_cast<runtime::StreamHandle>(stream));
      }, py::arg("stream"), "Runs later calls on this stream of the VM's device (an integer handle).")
      .def("__getitem__", [](std::shared_ptr<VirtualMachine> vm, const std::string& name) {
        if (vm->executable().function_index(name) < 0)
          throw_error("KeyError", "the executable has no function named \"" + name + "\"");
        return VMFunctionHandle{vm, name};
      })
      .def("invoke", [](VirtualMachine& vm, const std::string& name, std::vector<Tensor> inputs) {
        std::vector<Tensor> outs;
        {
          py::gil_scoped_release release;
          outs = vm.invoke(name, inputs);
        }
        py::list result;
        for (const Tensor& t : outs) result.append(py::cast(TensorHandle{t}));
        return result;
      })
      .def("profile", [](VirtualMachine& vm, const std::string& name, py::args args) {
        const Executable& ex = vm.executable();
        int32_t idx = ex.function_index(name);
        if (idx < 0) throw_error("KeyError", "the executable has no function named \"" + name + "\"");
        std::vector<Tensor> inputs;
        for (py::handle a : args) {
          runtime::Value v = vm_argument(a, ex.functions[size_t(idx)], inputs.size());
          if (v.is_tuple()) throw_error("TypeError", "profile takes tensors, not tuples");
          inputs.push_back(v.tensor);
        }
        py::gil_scoped_release release;
        return vm.profile(name, inputs);
      }, "Runs a function once, timing every host kernel and backend call; returns a report "
         "whose table() lists them, most expensive first.")
      .def("memory_stats", [](const VirtualMachine& vm) {
        const auto& s = vm.memory_stats();
        py::dict d;
        d["allocations"] = s.allocations;
        d["bytes_allocated"] = s.bytes_allocated;
        d["reuses"] = s.reuses;
        d["device_copies"] = s.device_copies;
        d["device_copy_bytes"] = s.device_copy_bytes;
        return d;
      });

  m.def("build", [](const IRModule& mod, py::object target, std::optional<bool> fallback) {
    return codegen::build(mod, codegen::BuildOptions{to_targets(target), fallback});
  }, py::arg("mod"), py::arg("target") = py::none(), py::arg("fallback") = py::none());
  bind_collage(m);
}

static void bind_byoc_passes(py::module_& m) {
  m.def("RunCodegen", [](std::optional<std::map<std::string, py::dict>> target_options,
                         std::vector<std::string> entry_functions) {
    std::map<std::string, TargetOptionMap> options;
    if (target_options)
      for (const auto& [k, d] : *target_options) options[k] = to_options(d);
    return codegen::RunCodegen(options, entry_functions);
  }, py::arg("target_options") = py::none(), py::arg("entry_functions") = std::vector<std::string>());
  m.def("InlineCompilerFunctions", [](std::vector<std::string> backends, std::vector<std::string> functions) {
    return transform::InlineCompilerFunctions(transform::InlineSelection{backends, functions});
  }, py::arg("backends") = std::vector<std::string>(), py::arg("functions") = std::vector<std::string>());
  m.def("OutlineCompilerFunctions", [](std::string filter) {
    return transform::OutlineCompilerFunctions(nullptr, filter);
  }, py::arg("compiler_filter") = "");
  m.def("MarkCompilerFunctionsAsExtern", &transform::MarkCompilerFunctionsAsExtern,
        py::arg("compiler_filter") = "");
  m.def("NameCodegenConstants", &codegen::NameCodegenConstants);
}

void bind_runtime_modules(py::module_& m);  // bind_runtime_module.cc

void init_runtime(py::module_& m) {
  bind_targets(m);
  bind_runtime_modules(m);
  bind_vm(m);
  bind_byoc_passes(m);
}

}  // namespace partita::python
