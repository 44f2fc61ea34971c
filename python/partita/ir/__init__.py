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
