# cuBLAS: the `cublas.*` patterns and codegen (compiler half, in libpartita, no CUDA dependency)
# and the runtime plug-in libpartita_runtime_cublas.so on cuBLASLt (CUDA::cublasLt and
# CUDA::cudart from the toolkit). Built when the CUDA toolkit and cuBLASLt are found, like
# src/backend/cuda (forced off with -DPARTITA_WITH_CUBLAS=OFF). The plug-in runs on the device
# APIs of libpartita_runtime_cuda.so, which the runtime loads for the VM's CUDA device.
find_package(CUDAToolkit QUIET)
set(PARTITA_CUBLASLT_FOUND OFF)
if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt)
  set(PARTITA_CUBLASLT_FOUND ON)
endif()
option(PARTITA_WITH_CUBLAS "Build the cuBLAS backend (src/backend/cublas)" ${PARTITA_CUBLASLT_FOUND})
if(NOT PARTITA_WITH_CUBLAS)
  return()
endif()
if(NOT PARTITA_CUBLASLT_FOUND)
  message(FATAL_ERROR "PARTITA_WITH_CUBLAS is ON but the CUDA toolkit's cuBLASLt was not found")
endif()
partita_add_backend(cublas
  RUNTIME_LIBRARIES CUDA::cublasLt CUDA::cudart
  # GPU tests allocate and compare device memory themselves.
  TEST_LIBRARIES CUDA::cudart
  PYTHON_PACKAGE relax/backend/cuda)
