"""CUDA backends (``tvm.relax.backend.cuda``)."""
