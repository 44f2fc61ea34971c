"""IR containers and structural comparison (``tvm.ir``)."""
from .._ffi import IRModule, GlobalVar, Op, Object, Attrs, GlobalInfo, VDevice, TargetDesc
from . import transform  # noqa: F401 - tvm.ir.transform is tvm.transform
from .structural import structural_equal, structural_hash, assert_structural_equal

__all__ = ["IRModule", "GlobalVar", "Op", "Object", "Attrs", "GlobalInfo", "VDevice", "TargetDesc",
           "structural_equal", "structural_hash", "assert_structural_equal"]

from .. import _ffi as _native


def _script(self, show_meta=True):
    """The module in the TVMScript text format."""
    return _native.print_module(self, show_meta)


def _show(self, show_meta=True):
    """Prints :meth:`script`."""
    print(_script(self, show_meta))


def _node_script(self):
    return _native.print_expr(self)


IRModule.script = _script
IRModule.astext = _script
IRModule.__repr__ = _script
# TVM's field is `global_var_map_`; the brief's readers also look for it without the underscore.
IRModule.global_var_map = IRModule.global_var_map_
IRModule.show = _show
IRModule.__str__ = _script
Object.script = _node_script
Object.show = lambda self: print(_node_script(self))
Object.__repr__ = _node_script


def _from_expr(expr, functions=None):
    """A module whose "main" is ``expr`` (TVM's ``IRModule.from_expr``): a Function as it is
    (made public as "main"), any other expression as the body of a function whose parameters are
    its free variables; ``functions`` (name or GlobalVar -> function) are added beside it."""
    from .. import relax as _relax
    if isinstance(expr, _native.Function):
        func = expr
    else:
        params = list(_native.free_vars(expr))
        func = _native.Function(params, expr)
    if "global_symbol" not in func.attrs:
        func = func.with_attr("global_symbol", "main")
    mod = IRModule(dict(functions or {}))
    mod["main"] = func
    return _relax.transform.Normalize()(mod)


IRModule.from_expr = staticmethod(_from_expr)
