# The CUTLASS backend. Its pattern table is always built; its codegen (CUTLASS 3 sm90a C++
# compiled by nvcc when a model is built) and runtime plug-in when the CUDA toolkit is found and
# the CUTLASS headers are there: scripts/fetch_cuda_headers.sh puts nvidia-cutlass (PyPI) into
# .deps/venv, found here, or -DPARTITA_CUTLASS_DIR=<CUTLASS source folder with include/>.
# The plug-in links no CUDA library (the generated shared object does the CUDA work).
find_package(CUDAToolkit QUIET)
file(GLOB _partita_cutlass_candidates
     ${PROJECT_SOURCE_DIR}/.deps/venv/lib/python3*/site-packages/cutlass_library/source)
set(_partita_cutlass_default "")
foreach(dir ${_partita_cutlass_candidates})
  if(EXISTS ${dir}/include/cutlass/cutlass.h)
    set(_partita_cutlass_default ${dir})
  endif()
endforeach()
set(PARTITA_CUTLASS_DIR "${_partita_cutlass_default}" CACHE PATH "CUTLASS source folder (include/, tools/util/include/)")
set(_partita_cutlass_found OFF)
if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${PARTITA_CUTLASS_DIR}/include/cutlass/cutlass.h")
  set(_partita_cutlass_found ON)
endif()
option(PARTITA_WITH_CUTLASS "Build the cutlass codegen and runtime plug-in (src/backend/cutlass)" ${_partita_cutlass_found})
if(PARTITA_WITH_CUTLASS)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/register.cc PROPERTIES COMPILE_DEFINITIONS
    "PARTITA_WITH_CUTLASS_CODEGEN=1;PARTITA_CUTLASS_NVCC=\"${CUDAToolkit_NVCC_EXECUTABLE}\";PARTITA_CUTLASS_DIR=\"${PARTITA_CUTLASS_DIR}\"")
  message(STATUS "cutlass: codegen with ${CUDAToolkit_NVCC_EXECUTABLE}, CUTLASS at ${PARTITA_CUTLASS_DIR}")
else()
  message(STATUS "cutlass: pattern table only (no CUDA toolkit or no CUTLASS headers)")
endif()
partita_add_backend(cutlass PYTHON_PACKAGE relax/backend/cuda)
