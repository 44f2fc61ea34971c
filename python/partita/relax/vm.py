"""Building and running Relax modules (``tvm.relax.build`` / ``tvm.relax.VirtualMachine``)."""
import math
import numbers
import time

import numpy as np

from .. import _ffi
from ..runtime.module import BenchmarkResult
from ..runtime.tensor import Tensor


def build(mod, target=None, params=None, relax_pipeline=None, tir_pipeline=None,
          exec_mode="bytecode", *, system_lib=None, fallback=None):
    """Compiles ``mod``: functions carrying "Codegen" go to their backends (module-at-a-time,
    with the options of the matching target in ``target``, a Target, a kind name or a list of
    them), the rest to the host VM. Returns an Executable (``export_library(path)`` writes it
    to one file).

    As TVM's ``relax.build``: ``params`` (a dict of name to array) are bound into ``main``
    first, and ``relax_pipeline`` (a Pass, or a name for :func:`relax.get_pipeline`) runs on the
    module before it is lowered. ``tir_pipeline``, ``exec_mode`` and ``system_lib`` are accepted
    for compatibility: Partita has no TIR and one execution mode."""
    del tir_pipeline, exec_mode, system_lib
    if params is not None and not isinstance(params, dict):
        raise TypeError("relax.build: params must be a dict of parameter name to array "
                        f"(got {type(params).__name__}; fallback is a keyword argument)")
    if params:
        from .transform import BindParams
        mod = BindParams("main", params)(mod)
    if relax_pipeline is not None and relax_pipeline != "default":
        if isinstance(relax_pipeline, str):
            from .pipeline import get_pipeline
            relax_pipeline = get_pipeline(relax_pipeline)
        mod = relax_pipeline(mod)
    return _ffi.build(_inline_host_primitives(mod), target, fallback)


def _inline_host_primitives(mod):
    """FuseOps' "Primitive" functions without a code generator are TVM's input to FuseTIR,
    which fuses their TIR into one kernel. Partita's host VM runs operators one by one, so such
    a group runs as its operators: it is inlined back where it is called."""
    names = [gv.name_hint for gv, f in mod.functions_items()
             if isinstance(f, _ffi.Function) and "Primitive" in f.attrs and "Codegen" not in f.attrs]
    if not names:
        return mod
    return _ffi.InlineCompilerFunctions([], names)(mod)


def _vm_arg(arg):
    """An argument as the VM takes it (TVM's VirtualMachine._convert): tensors as they are,
    arrays as tensors, Python numbers as 0-d int32 / float32 tensors, lists and tuples as
    tuples."""
    if isinstance(arg, Tensor):
        return arg
    if isinstance(arg, np.ndarray):
        return _ffi.tensor(arg)
    if isinstance(arg, (tuple, list)):
        return tuple(_vm_arg(a) for a in arg)
    if isinstance(arg, np.generic):
        return _ffi.tensor(np.asarray(arg))
    if isinstance(arg, (bool, numbers.Integral)):
        return _ffi.tensor(np.asarray(arg, "int32"))
    if isinstance(arg, numbers.Real):
        return _ffi.tensor(np.asarray(arg, "float32"))
    if hasattr(arg, "__dlpack__"):
        return _ffi.from_dlpack(arg)
    raise TypeError(f"unsupported VM argument type: {type(arg).__name__}")


class VirtualMachine(_ffi.VirtualMachine):
    """A VM for an Executable on the user's ``device`` (``partita.cpu()`` by default, or
    ``partita.cuda(n)``; a list of devices names the accelerator among them): arguments on other
    devices are copied where the function expects them and results come back on ``device`` as
    ``partita.runtime.Tensor``.

    ``vm["main"](*args)`` calls a function; ``set_input`` / ``invoke_stateful`` /
    ``get_outputs``, ``save_function`` and ``time_evaluator`` behave as TVM's."""

    def __init__(self, rt_mod, device=None, memory_cfg=None):
        del memory_cfg  # one caching allocator per device; TVM's "naive"/"pooled" choice
        if not isinstance(rt_mod, _ffi.Executable):
            raise ValueError(f"VirtualMachine expects an Executable (relax.build or "
                             f"runtime.load_module), got {type(rt_mod).__name__}")
        super().__init__(rt_mod, device)
        self._executable = rt_mod
        self._inputs = {}
        self._outputs = {}
        self._saved = {}

    def __getitem__(self, name):
        saved = self._saved.get(name)
        return saved if saved is not None else super().__getitem__(name)

    def _ordered_args(self, func_name, args, kwargs):
        params = self._executable.function_params(func_name)
        if not kwargs:
            if len(args) != len(params):
                raise TypeError(f"{func_name} takes {len(params)} arguments "
                                f"({', '.join(params)}), {len(args)} were given")
            return list(args)
        unknown = [k for k in kwargs if k not in params]
        if unknown:
            raise TypeError(f"{func_name} has no parameter named {', '.join(unknown)} "
                            f"(its parameters: {', '.join(params)})")
        positional = iter(args)
        ordered = []
        for p in params:
            if p in kwargs:
                ordered.append(kwargs[p])
            else:
                try:
                    ordered.append(next(positional))
                except StopIteration:
                    raise TypeError(f"{func_name}: missing argument '{p}'") from None
        if next(positional, None) is not None:
            raise TypeError(f"{func_name} takes {len(params)} arguments, more were given")
        return ordered

    def set_input(self, func_name, *args, **kwargs):
        """Sets the arguments for a later :meth:`invoke_stateful` of ``func_name`` (positional,
        or by parameter name)."""
        self.__getitem__(func_name)  # KeyError for an unknown function
        self._inputs[func_name] = [_vm_arg(a) for a in self._ordered_args(func_name, args, kwargs)]

    def invoke_stateful(self, func_name):
        """Calls ``func_name`` with the arguments given to :meth:`set_input`; the result is
        kept for :meth:`get_outputs`."""
        if func_name not in self._inputs:
            raise ValueError(f"invoke_stateful(\"{func_name}\"): set_input was not called for "
                             f"\"{func_name}\"")
        self._outputs[func_name] = super().__getitem__(func_name)(*self._inputs[func_name])

    def get_outputs(self, func_name):
        """The result of the last :meth:`invoke_stateful` of ``func_name`` (a Tensor, or a
        tuple of results for a tuple)."""
        if func_name not in self._outputs:
            raise ValueError(f"get_outputs(\"{func_name}\"): invoke_stateful was not called for "
                             f"\"{func_name}\"")
        return self._outputs[func_name]

    def save_function(self, func_name, saved_name, *args, include_return=True, **kwargs):
        """Saves ``func_name`` applied to ``args`` as a function of no arguments,
        ``vm[saved_name]()`` (arguments converted once, so timing it measures the call)."""
        if saved_name in self._executable.function_names:
            raise ValueError(f"save_function: \"{saved_name}\" is a function of the executable")
        fn = super().__getitem__(func_name)
        converted = [_vm_arg(a) for a in self._ordered_args(func_name, args, kwargs)]

        def saved():
            out = fn(*converted)
            return out if include_return else None

        self._saved[saved_name] = saved

    def time_evaluator(self, func_name, dev, number=10, repeat=1, min_repeat_ms=0,
                       cooldown_interval_ms=0, repeats_to_cooldown=1, f_preproc=""):
        """A function that runs ``func_name`` on its arguments 1 + ``number`` x ``repeat`` times
        (the first run warms up and is not counted) and returns a BenchmarkResult of ``repeat``
        mean times in seconds. With ``min_repeat_ms`` a repeat runs ``number`` times more until
        it lasts that long. ``func_name`` "invoke_stateful" times
        ``invoke_stateful(<its argument>)``, as in TVM."""
        if f_preproc:
            raise ValueError("time_evaluator: f_preproc is not supported")
        if number < 1 or repeat < 1:
            raise ValueError("time_evaluator: number and repeat must be at least 1")
        if func_name == "invoke_stateful":
            def call(*args):
                return self.invoke_stateful(*args)
        else:
            fn = self[func_name]

            def call(*args):
                return fn(*args)

        def evaluator(*args):
            args = [a if isinstance(a, str) else _vm_arg(a) for a in args]
            call(*args)
            dev.sync()
            results = []
            runs = number
            for i in range(repeat):
                while True:
                    start = time.perf_counter()
                    for _ in range(runs):
                        call(*args)
                    dev.sync()
                    elapsed = time.perf_counter() - start
                    if elapsed * 1000 >= min_repeat_ms or min_repeat_ms <= 0:
                        break
                    # TVM's rule: grow to the estimate, at least by the golden ratio.
                    per_run = max(elapsed / runs, 1e-9)
                    runs = max(int(math.ceil(min_repeat_ms / 1000 / per_run)), int(runs * 1.618) + 1)
                results.append(elapsed / runs)
                if cooldown_interval_ms > 0 and (i + 1) % repeats_to_cooldown == 0:
                    time.sleep(cooldown_interval_ms / 1000)
            return BenchmarkResult(results)

        return evaluator


__all__ = ["build", "VirtualMachine"]
