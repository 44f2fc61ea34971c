# CUDA: the runtime plug-in libpartita_runtime_cuda.so (the CUDA device APIs: device memory with a
# caching allocator per GPU, pinned host memory, streams, copies, graphs; and the module of
# generated kernels) and the cuda target's default code generator (NVRTC-generated kernels for
# every operator no other backend takes, compiler half in libpartita, linking NVRTC). Built when
# the CUDA toolkit is found (or forced with -DPARTITA_WITH_CUDA=ON); libpartita_runtime never
# links CUDA: it loads the plug-in on the first use of a CUDA device or module (runtime/plugin.h).
# The toolkit's include directory is given to the compiler half's sources alone, so the rest of
# libpartita keeps its compile lines (and the shared ccache stays warm).
find_package(CUDAToolkit QUIET)
option(PARTITA_WITH_CUDA "Build the cuda target (src/backend/cuda)" ${CUDAToolkit_FOUND})
if(NOT PARTITA_WITH_CUDA)
  return()
endif()
find_package(CUDAToolkit REQUIRED)
list(GET CUDAToolkit_INCLUDE_DIRS 0 PARTITA_CUDA_INCLUDE_DIR)
file(GLOB_RECURSE PARTITA_CUDA_COMPILER_SRCS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cc)
list(FILTER PARTITA_CUDA_COMPILER_SRCS EXCLUDE REGEX "^${CMAKE_CURRENT_LIST_DIR}/(runtime|tests|benchmarks|python)/")
set_source_files_properties(${PARTITA_CUDA_COMPILER_SRCS} PROPERTIES INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/register.cc PROPERTIES
                            COMPILE_DEFINITIONS "PARTITA_CUDA_INCLUDE_DIR=\"${PARTITA_CUDA_INCLUDE_DIR}\"")
partita_add_backend(cuda
  RUNTIME_LIBRARIES CUDA::cudart
  COMPILER_LIBRARIES ${CUDA_nvrtc_LIBRARY}
  # GPU tests allocate device memory themselves; whole models come from ONNX.
  TEST_LIBRARIES CUDA::cudart partita_frontend_onnx
  PYTHON_PACKAGE relax/backend/cuda)
