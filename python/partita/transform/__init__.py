"""Pass infrastructure (``tvm.transform``): passes, sequences, contexts, instruments."""
import functools
import inspect

from .._ffi import (Pass, PassInfo, PassContext, PassInstrument, PassTimingInstrument,
                    PassPrintingInstrument, Sequential as _Sequential)
from .._ffi import create_module_pass, create_function_pass


def Sequential(passes=None, opt_level=0, name="sequential", required=None,  # noqa: N802
               traceable=False):
    """Runs ``passes`` in order, each subject to the current PassContext (a pass whose
    opt_level exceeds the context's is skipped unless required; disabled passes are skipped)."""
    del required, traceable
    return _Sequential(list(passes or []), name, opt_level)


def _takes_context(fn, skip_self=False):
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(params) - (1 if skip_self else 0) >= 2


def _module_pass_of(fn, opt_level, name, takes_ctx):
    if takes_ctx:
        return create_module_pass(lambda mod: fn(mod, PassContext.current()), opt_level, name)
    return create_module_pass(fn, opt_level, name)


def module_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False):
    """Makes a Pass of ``fn(mod, ctx) -> mod`` (or ``fn(mod)``), or, on a class with
    ``transform_module(self, mod, ctx)``, makes the class's instances passes — TVM's
    ``tvm.transform.module_pass``, as a decorator or called directly."""
    del required, traceable
    level = 0 if opt_level is None else opt_level

    def create(target):
        if inspect.isclass(target):
            cls = target
            if not hasattr(cls, "transform_module"):
                raise TypeError(f"module_pass: class {cls.__name__} has no transform_module method")

            @functools.wraps(cls)
            def make(*args, **kwargs):
                inst = cls(*args, **kwargs)
                return _module_pass_of(inst.transform_module, level, name or cls.__name__, True)
            return make
        if not callable(target):
            raise TypeError("module_pass: expected a function or a class")
        return _module_pass_of(target, level, name or target.__name__, _takes_context(target))

    return create(pass_func) if pass_func is not None else create


def function_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False):
    """Makes a Pass applying ``fn(func, mod, ctx) -> func`` to every Relax function (TVM's
    ``relax.transform.function_pass``); on a class, its ``transform_function`` method."""
    del required, traceable
    level = 0 if opt_level is None else opt_level

    def of(fn, pass_name):
        return create_function_pass(lambda f, mod: fn(f, mod, PassContext.current()), level, pass_name)

    def create(target):
        if inspect.isclass(target):
            cls = target

            @functools.wraps(cls)
            def make(*args, **kwargs):
                inst = cls(*args, **kwargs)
                return of(inst.transform_function, name or cls.__name__)
            return make
        return of(target, name or target.__name__)

    return create(pass_func) if pass_func is not None else create


def PrintIR(header="", show_meta_data=False):  # noqa: N802 - TVM's spelling
    """A pass printing the module (TVM's ``tvm.transform.PrintIR``), leaving it unchanged."""
    def print_ir(mod):
        if header:
            print(header)
        print(mod.script(show_meta=show_meta_data))
        return mod
    return create_module_pass(print_ir, 0, "PrintIR")


__all__ = ["Pass", "PassInfo", "PassContext", "PassInstrument", "PassTimingInstrument",
           "PassPrintingInstrument", "Sequential", "module_pass", "function_pass", "PrintIR"]
