"""CUDA backends (``tvm.relax.backend.cuda``)."""
from . import cutlass  # noqa: E402,F401
