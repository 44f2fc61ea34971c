"""The example NPU of TVM's BYOC tutorial (TVM v0.26's ``tvm.relax.backend.contrib.example_npu``).

Its ``example_npu.*`` patterns are registered by the backend itself (src/backend/example_npu,
TVM's names and order); ``patterns`` holds TVM's NPU parameters. Importing this package
registers the two functions TVM's build of the backend provides, so code probing for them
(``get_global_func("relax.ext.example_npu", True)``) finds them:

- ``relax.ext.example_npu(functions, options=None, constant_names=None)``: the codegen, on
  functions with a ``"Codegen": "example_npu"`` annotation and a ``"global_symbol"``; returns
  the runtime modules (one for all functions), given their constants (``constant_names`` is the
  module's name -> tensor table, Partita's ``const_name_to_constant``), so they can run.
- ``runtime.ExampleNPUJSONRuntimeCreate(symbol_name, graph_json, const_names)``: a runtime
  module from one function's JSON graph (the format of src/backend/example_npu/module_format.h,
  as ``module.get_source()`` shows it).

Unlike TVM's teaching stub, the runtime computes (on the runtime's host kernels), so results
can be checked against numpy; set ``PARTITA_EXAMPLE_NPU_LOG=1`` to see the dispatch decisions
TVM's stub logs (``module.get_source("dispatch")`` returns them).
"""
import json

from partita import _ffi
from partita._global_func import register_func, get_global_func
from partita.relax.backend._partition import partition_for

from . import patterns

__all__ = ["patterns", "partition_for_example_npu"]


def partition_for_example_npu(mod, merge=True, bind_constants=True):
    """Offloads what the ``example_npu.*`` patterns match (Partita's partition_for_<name>)."""
    return partition_for("example_npu", mod, merge, bind_constants)


def _example_npu_compiler(functions, options=None, constant_names=None):
    target = _ffi.Target("example_npu", dict(options or {}))
    constants = dict(constant_names or {})
    modules, added = _ffi.run_backend_codegen("example_npu", list(functions), target, constants)
    constants.update(added)
    for module in modules:
        module.init_constants({name: constants[name] for name in module.const_names})
    return modules


def _example_npu_runtime_create(symbol_name, graph_json, const_names):
    graph = json.loads(graph_json)
    if not isinstance(graph, dict):
        raise ValueError("runtime.ExampleNPUJSONRuntimeCreate: the graph must be one function's JSON object")
    graph["symbol"] = str(symbol_name)
    named = sorted(c["name"] for c in graph.get("constants", []))
    if named != sorted(str(n) for n in const_names):
        raise ValueError(f"runtime.ExampleNPUJSONRuntimeCreate: the graph uses the constants {named}, "
                         f"but const_names lists {sorted(const_names)}")
    return _ffi.load_module_from_binary("example_npu.json", json.dumps({"functions": [graph]}).encode())


# Registered once per process (a module imported again under another name must not fail).
if get_global_func("relax.ext.example_npu", True) is None:
    register_func("relax.ext.example_npu", _example_npu_compiler)
if get_global_func("runtime.ExampleNPUJSONRuntimeCreate", True) is None:
    register_func("runtime.ExampleNPUJSONRuntimeCreate", _example_npu_runtime_create)
