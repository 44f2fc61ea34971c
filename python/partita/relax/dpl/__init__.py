"""The dataflow pattern language (``tvm.relax.dpl``)."""
from .pattern import *  # noqa: F401,F403
from .pattern import __all__  # noqa: F401
