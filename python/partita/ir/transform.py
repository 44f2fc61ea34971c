"""``tvm.ir.transform``: the pass infrastructure, the same module as ``partita.transform``."""
from ..transform import *  # noqa: F401,F403
from ..transform import __all__  # noqa: F401
