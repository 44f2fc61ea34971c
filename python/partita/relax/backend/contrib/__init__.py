"""Backends TVM keeps under ``tvm.relax.backend.contrib`` (``example_npu``, ``tensorrt``). Their
modules are installed here by their folders' CMake fragments (``src/backend/<name>/python``);
as in TVM, each is imported by name (``import partita.relax.backend.contrib.example_npu``),
which registers what it registers."""
