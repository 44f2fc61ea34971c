"""TVM's global function registry (``tvm.register_func`` / ``tvm.get_global_func``), for the
functions Python code registers. Partita's own natives are not looked up by name (they are
``partita._ffi``'s attributes), so a name TVM's C++ would provide — "relax.ext.<codegen>",
"runtime.<Module>Create" — is absent here, and code probing for it with ``allow_missing=True``
takes its "not available" branch."""

_REGISTRY = {}


def register_func(func_name, f=None, override=False):
    """Registers ``f`` as ``func_name`` (as a decorator when ``f`` is omitted)."""
    if not isinstance(func_name, str):
        raise TypeError("register_func: the name must be a string")

    def register(fn):
        if not callable(fn):
            raise TypeError(f"register_func: {func_name} must be callable")
        if func_name in _REGISTRY and not override:
            raise ValueError(f"register_func: {func_name} is already registered (pass override=True)")
        _REGISTRY[func_name] = fn
        return fn
    return register(f) if f is not None else register


def get_global_func(name, allow_missing=False):
    """The function registered as ``name``; None when absent and ``allow_missing``, else a
    ValueError naming it."""
    fn = _REGISTRY.get(name)
    if fn is None and not allow_missing:
        raise ValueError(f"Cannot find global function {name}")
    return fn


def list_global_func_names():
    return sorted(_REGISTRY)
