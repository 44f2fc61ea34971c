# The cuDNN backend: built with the CUDA toolkit when cuDNN's headers and library (cudnn.h,
# libcudnn.so.9) and the cuDNN frontend headers (PyPI nvidia-cudnn-frontend, fetched into
# .deps/venv by scripts/fetch_cuda_headers.sh) are found; -DPARTITA_WITH_CUDNN=ON forces it.
# Only the runtime plug-in sees cuDNN; the compiler half needs no CUDA header at all.
find_package(CUDAToolkit QUIET)
find_path(PARTITA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/include/x86_64-linux-gnu)
find_library(PARTITA_CUDNN_LIBRARY NAMES libcudnn.so.9 cudnn
             HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
file(GLOB _partita_cudnn_fe_dirs ${PROJECT_SOURCE_DIR}/.deps/venv/lib/python3*/site-packages/include)
find_path(PARTITA_CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h HINTS ${_partita_cudnn_fe_dirs})
set(_partita_cudnn_found OFF)
if(CUDAToolkit_FOUND AND PARTITA_CUDNN_INCLUDE_DIR AND PARTITA_CUDNN_LIBRARY AND PARTITA_CUDNN_FRONTEND_INCLUDE_DIR)
  set(_partita_cudnn_found ON)
endif()
option(PARTITA_WITH_CUDNN "Build the cuDNN backend (src/backend/cudnn)" ${_partita_cudnn_found})
if(NOT PARTITA_WITH_CUDNN)
  return()
endif()
if(NOT _partita_cudnn_found)
  message(FATAL_ERROR "PARTITA_WITH_CUDNN: needs the CUDA toolkit, cudnn.h, libcudnn.so.9 and the cuDNN frontend "
                      "headers (bash scripts/fetch_cuda_headers.sh); found: '${PARTITA_CUDNN_INCLUDE_DIR}' "
                      "'${PARTITA_CUDNN_LIBRARY}' '${PARTITA_CUDNN_FRONTEND_INCLUDE_DIR}'")
endif()
message(STATUS "cudnn backend: ${PARTITA_CUDNN_LIBRARY}, frontend ${PARTITA_CUDNN_FRONTEND_INCLUDE_DIR}")
partita_add_backend(cudnn
  RUNTIME_LIBRARIES ${PARTITA_CUDNN_LIBRARY} CUDA::cudart
  RUNTIME_INCLUDE_DIRS ${PARTITA_CUDNN_INCLUDE_DIR} ${PARTITA_CUDNN_FRONTEND_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS}
  TEST_LIBRARIES CUDA::cudart
  PYTHON_PACKAGE relax/backend/cuda)
