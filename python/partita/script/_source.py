"""What TVM's parser accepts in decorated Python source, beyond the TVMScript text the C++
parser reads: TVM evaluates names from the defining module, so ``@tvm.script.ir_module`` is
``@I.ir_module`` and ``relax.op.nn.conv2d(...)`` (the Python operator function) is
``R.nn.conv2d(...)``. Decorated sources are rewritten to those spellings before parsing; every
rewrite keeps each token's line and column, so parse errors still point into the user's file."""
import re

_DECORATOR = re.compile(r"^(?P<indent>[ \t]*)@(?P<path>(?:[A-Za-z_]\w*\.)*ir_module)\b", re.MULTILINE)
_RELAX_OP = re.compile(r"(?<![\w.])relax\.op\.")


def _same_width(new, old):
    return new + " " * (len(old) - len(new))


def normalize_decorators(text, module_globals):
    """``@<module>.ir_module`` -> ``@I.ir_module`` where that name is Partita's decorator."""
    from . import ir as _ir

    def fix(match):
        path = match.group("path")
        obj = _resolve(path, module_globals)
        if obj is not _ir.ir_module or path == "I.ir_module":
            return match.group(0)
        return match.group("indent") + "@" + _same_width("I.ir_module", path)
    return _DECORATOR.sub(fix, text)


def normalize_relax_op_calls(text, module_globals):
    """``relax.op.X`` -> ``R.X`` where ``relax`` is ``partita.relax`` in the defining module."""
    from .. import relax as _relax
    if module_globals.get("relax") is not _relax:
        return text
    return _RELAX_OP.sub(lambda m: _same_width("R.", m.group(0)), text)


def _resolve(path, module_globals):
    parts = path.split(".")
    obj = module_globals.get(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p, None)
    return obj
