# The oneDNN backend: built when oneDNN's CMake package is found (or forced with
# -DPARTITA_WITH_DNNL=ON, which then requires it).
find_package(dnnl CONFIG QUIET)
option(PARTITA_WITH_DNNL "Build the oneDNN backend (src/backend/dnnl)" ${dnnl_FOUND})
if(NOT PARTITA_WITH_DNNL)
  return()
endif()
find_package(dnnl CONFIG REQUIRED)
# The Winograd convolution threads with OpenMP (libgomp, as Debian's oneDNN does).
find_package(OpenMP REQUIRED COMPONENTS CXX)
partita_add_backend(dnnl
  RUNTIME_LIBRARIES DNNL::dnnl OpenMP::OpenMP_CXX
  TEST_LIBRARIES DNNL::dnnl
  PYTHON_PACKAGE relax/backend/cpu)
# The backend's tests once more as oneDNN runs on an AVX2 CPU (8-channel blocks, the plug-in's
# own Winograd kernel, no oneDNN Winograd): both CPU families on whichever machine runs ctest.
if(PARTITA_BUILD_TESTS AND TARGET test_backend_dnnl)
  add_test(NAME DnnlAsOnAvx2.AllTests COMMAND test_backend_dnnl)
  set_tests_properties(DnnlAsOnAvx2.AllTests PROPERTIES ENVIRONMENT DNNL_MAX_CPU_ISA=AVX2)
endif()
