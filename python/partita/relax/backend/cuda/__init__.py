"""CUDA backends (``tvm.relax.backend.cuda``). Each backend's wrapper module is installed here by
its folder's CMake fragment (``src/backend/<name>/python``); every one present is imported."""
from .._discover import import_submodules

__all__ = import_submodules(__name__, __path__)
