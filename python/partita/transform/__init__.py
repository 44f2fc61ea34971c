"""Pass infrastructure (``tvm.transform``): passes, sequences, contexts, instruments."""
from .._ffi import (Pass, PassInfo, PassContext, PassInstrument, PassTimingInstrument,
                    PassPrintingInstrument, Sequential as _Sequential)
from .._ffi import create_module_pass, create_function_pass


def Sequential(passes=None, opt_level=0, name="sequential"):  # noqa: N802 - TVM's spelling
    """Runs ``passes`` in order, each subject to the current PassContext."""
    return _Sequential(list(passes or []), name, opt_level)


def module_pass(pass_func=None, opt_level=0, name=None):
    """Decorator making ``fn(mod) -> mod`` a Pass (TVM's ``tvm.transform.module_pass``)."""
    def wrap(fn):
        return create_module_pass(fn, opt_level, name or fn.__name__)
    return wrap(pass_func) if pass_func else wrap


__all__ = ["Pass", "PassInfo", "PassContext", "PassInstrument", "PassTimingInstrument",
           "PassPrintingInstrument", "Sequential", "module_pass"]
