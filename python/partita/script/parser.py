"""Parsing TVMScript source (from strings, or from decorated Python objects)."""
import inspect
import re
import textwrap

from .. import _ffi

_MODULE_RE = re.compile(r"^\s*@I\.ir_module\b", re.MULTILINE)


def from_source(text, filename="<string>"):
    """The IRModule (or, for a lone ``@R.function``, the Function) that ``text`` describes."""
    if _MODULE_RE.search(text):
        return _ffi.parse_module(text, filename)
    return _ffi.parse_function(text, filename)


def source_of(obj):
    """The dedented source of a decorated class or function, and the file it came from."""
    try:
        lines, first = inspect.getsourcelines(obj)
    except (OSError, TypeError) as err:
        raise OSError(f"cannot read the source of {obj!r}: TVMScript must be defined in a file") from err
    filename = inspect.getsourcefile(obj) or "<unknown>"
    module = inspect.getmodule(obj)
    text = textwrap.dedent("".join(lines))
    if module is not None:
        from ._source import normalize_decorators, normalize_relax_op_calls
        text = normalize_relax_op_calls(normalize_decorators(text, vars(module)), vars(module))
    # Pad with blank lines so parse errors report the line numbers of the original file.
    return "\n" * (first - 1) + text, filename
