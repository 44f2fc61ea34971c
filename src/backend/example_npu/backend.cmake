# The example NPU (src/backend/example_npu/README.md): TVM's teaching backend of its BYOC
# tutorial, with TVM's pattern table, a JSON graph per offloaded function and a runtime that
# computes on the runtime's host kernels. No third-party library, so it is always built.
option(PARTITA_WITH_EXAMPLE_NPU "Build the example NPU backend (src/backend/example_npu)" ON)
if(NOT PARTITA_WITH_EXAMPLE_NPU)
  return()
endif()
partita_add_backend(example_npu PYTHON_PACKAGE relax/backend/contrib/example_npu)
