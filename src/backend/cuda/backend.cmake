# The CUDA runtime plug-in, libpartita_runtime_cuda.so: the CUDA device APIs (device memory
# with a caching allocator per GPU, pinned host memory, streams, copies). Built only when the
# CUDA toolkit is found (or PARTITA_WITH_CUDA is forced on); libpartita_runtime never links
# CUDA: it loads this plug-in on the first use of a CUDA device (runtime/plugin.h).
find_package(CUDAToolkit QUIET)
option(PARTITA_WITH_CUDA "Build the CUDA runtime plug-in (src/backend/cuda)" ${CUDAToolkit_FOUND})
# Built into neither main library, whether or not the plug-in is built.
list(FILTER RUNTIME_SRCS EXCLUDE REGEX "/src/backend/cuda/")
if(PARTITA_WITH_CUDA)
  find_package(CUDAToolkit REQUIRED)
  file(GLOB_RECURSE PARTITA_CUDA_RUNTIME_SRCS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/runtime/*.cc)
  add_library(partita_runtime_cuda SHARED ${PARTITA_CUDA_RUNTIME_SRCS})
  target_link_libraries(partita_runtime_cuda PRIVATE partita_runtime CUDA::cudart)
  # The tests and the Python package load the plug-in at run time, so they need it built.
  function(partita_cuda_plugin_dependents)
    foreach(t test_runtime test_cuda _ffi)
      if(TARGET ${t})
        add_dependencies(${t} partita_runtime_cuda)
      endif()
    endforeach()
  endfunction()
  cmake_language(DEFER CALL partita_cuda_plugin_dependents)
endif()
