"""Partita: a bring-your-own-codegen deep-learning graph compiler.

The layout mirrors Apache TVM's Python API: ``partita.ir`` (IRModule, structural equality),
``partita.relax`` (Relax IR, BlockBuilder, operators, passes, pattern language),
``partita.tir`` (symbolic integers) and ``partita.script`` (the TVMScript text format).
"""
import os as _os

# The OpenMP threads of the backends' libraries spin between operators by default; on a shared or busy machine that
# costs 10-100x (measured in docs/benchmarks.md). Passive threads sleep at once, and waking them
# for each of a model's many short parallel regions costs ~5-10 %: a short spin (GOMP_SPINCOUNT)
# keeps them awake across the gap between two operators and no longer. libgomp reads both once,
# when _ffi loads it. The same defaults as src/runtime/omp_wait_policy.cc.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if _os.environ["OMP_WAIT_POLICY"].strip().lower() == "passive":
    _os.environ.setdefault("GOMP_SPINCOUNT", "3000")

from . import _ffi  # noqa: E402
from ._ffi import PartitaError  # noqa: E402
from . import ir, tir, transform, target, runtime, relax, script, nd  # noqa: E402
from .runtime import cpu, cuda, device  # noqa: E402
from .ir import IRModule  # noqa: E402
from ._global_func import register_func, get_global_func, list_global_func_names  # noqa: E402
from .driver import compile  # noqa: E402,A004 - TVM's tvm.compile

__all__ = ["ir", "tir", "transform", "target", "runtime", "relax", "script", "nd", "cpu", "cuda",
           "device", "IRModule", "PartitaError", "register_func", "get_global_func", "list_global_func_names", "compile"]
