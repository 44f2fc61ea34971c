# The BLAS backend: built when OpenBLAS's cblas.h and library are found (or forced with
# -DPARTITA_WITH_CBLAS=ON). The runtime plug-in loads OpenBLAS itself, by soname, after choosing
# OPENBLAS_CORETYPE (runtime/openblas.h), so OpenBLAS is not one of its link dependencies.
find_library(OPENBLAS_LIBRARY openblas)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES x86_64-linux-gnu openblas)
if(OPENBLAS_LIBRARY AND OPENBLAS_INCLUDE_DIR)
  set(PARTITA_OPENBLAS_FOUND ON)
else()
  set(PARTITA_OPENBLAS_FOUND OFF)
endif()
option(PARTITA_WITH_CBLAS "Build the OpenBLAS backend (src/backend/cblas)" ${PARTITA_OPENBLAS_FOUND})
if(NOT PARTITA_WITH_CBLAS)
  return()
endif()
if(NOT PARTITA_OPENBLAS_FOUND)
  message(FATAL_ERROR "PARTITA_WITH_CBLAS is ON but OpenBLAS (cblas.h, libopenblas) was not found")
endif()
# The soname to dlopen (libopenblas.so.0 on Debian), read from the library found.
set(PARTITA_OPENBLAS_SONAME libopenblas.so.0)
find_program(READELF readelf)
if(READELF)
  execute_process(COMMAND ${READELF} -d ${OPENBLAS_LIBRARY} OUTPUT_VARIABLE openblas_dynamic ERROR_QUIET)
  if(openblas_dynamic MATCHES "Library soname: \\[([^]]+)\\]")
    set(PARTITA_OPENBLAS_SONAME ${CMAKE_MATCH_1})
  endif()
endif()
# OpenBLAS runs single-threaded inside the module's own OpenMP loop (one thread pool shared with
# the other backends'; see runtime/cblas_module.cc).
find_package(OpenMP REQUIRED COMPONENTS CXX)
partita_add_backend(cblas
  RUNTIME_LIBRARIES OpenMP::OpenMP_CXX
  RUNTIME_INCLUDE_DIRS ${OPENBLAS_INCLUDE_DIR}
  RUNTIME_DEFINITIONS PARTITA_OPENBLAS_SONAME="${PARTITA_OPENBLAS_SONAME}"
  PYTHON_PACKAGE relax/backend/cpu)
