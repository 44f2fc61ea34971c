# The CUDA runtime plug-in, libpartita_runtime_cuda.so: the CUDA device APIs (device memory
# with a caching allocator per GPU, pinned host memory, streams, copies). Built only when the
# CUDA toolkit is found (or PARTITA_WITH_CUDA is forced on); libpartita_runtime never links
# CUDA: it loads this plug-in on the first use of a CUDA device (runtime/plugin.h).
find_package(CUDAToolkit QUIET)
option(PARTITA_WITH_CUDA "Build the cuda target (src/backend/cuda)" ${CUDAToolkit_FOUND})
if(NOT PARTITA_WITH_CUDA)
  return()
endif()
find_package(CUDAToolkit REQUIRED)
partita_add_backend(cuda RUNTIME_LIBRARIES CUDA::cudart)
