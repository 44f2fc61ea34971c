"""The BlockBuilder with TVM's context-manager API::

    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, y))
            gv = bb.emit_output(lv0)
        bb.emit_func_output(gv)
    mod = bb.get()
"""
import contextlib

from .. import _ffi


class BlockBuilder:
    """Builds Relax functions binding by binding, normalizing every emitted expression."""

    def __init__(self, mod=None):
        self._bb = _ffi.BlockBuilder(mod)

    @contextlib.contextmanager
    def function(self, name, params=None, attrs=None, pure=True, private=False):
        """Opens function ``name``; the body must end with :meth:`emit_func_output`."""
        self._bb.begin_function(name, list(params or []), dict(attrs or {}), pure, private)
        yield self

    @contextlib.contextmanager
    def dataflow(self):
        """Opens a dataflow block; values leave it through :meth:`emit_output`."""
        self._bb.begin_dataflow()
        yield self
        self._bb.end_dataflow()

    def emit(self, expr, name_hint=""):
        return self._bb.emit(expr, name_hint)

    def emit_output(self, output, name_hint=""):
        if isinstance(output, (list, tuple)):
            output = _ffi.Tuple(list(output))
        return self._bb.emit_output(output, name_hint)

    def emit_match_cast(self, value, struct_info, name_hint=""):
        return self._bb.emit_match_cast(value, struct_info, name_hint)

    def emit_func_output(self, output):
        if isinstance(output, (list, tuple)):
            output = _ffi.Tuple(list(output))
        return self._bb.emit_func_output(output)

    def normalize(self, expr):
        return self._bb.normalize(expr)

    def add_func(self, func, func_name):
        return self._bb.add_func(func, func_name)

    def update_func(self, gv, func):
        self._bb.update_func(gv, func)

    def get_unique_name(self, name_hint):
        return self._bb.get_unique_name(name_hint)

    def lookup_binding(self, var):
        return self._bb.lookup_binding(var)

    def get(self):
        """The module holding every function built so far."""
        return self._bb.get()
