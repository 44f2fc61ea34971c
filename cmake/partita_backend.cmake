# partita_add_backend: builds one backend from its folder src/backend/<name>/ (see
# docs/adding-a-backend.md). A backend's CMake fragment, src/backend/<name>/backend.cmake, finds
# its third-party libraries, declares its PARTITA_WITH_<NAME> option if it has one, and calls
#
#   partita_add_backend(<name>
#     [RUNTIME_LIBRARIES <lib>...]     third-party libraries of its runtime plug-in (PRIVATE)
#     [RUNTIME_INCLUDE_DIRS <dir>...]  their include directories (PRIVATE)
#     [RUNTIME_DEFINITIONS <def>...]   compile definitions of the runtime plug-in (PRIVATE)
#     [COMPILER_LIBRARIES <lib>...]    libraries its compiler half needs (PRIVATE to libpartita)
#     [TEST_LIBRARIES <lib>...]        extra libraries of its test program
#     [PYTHON_PACKAGE <dir>])          where its python/*.py go in the package, e.g. relax/backend/cpu
#
# Sources are found by folder, so adding a file needs no edit:
#   *.cc outside the folders below      the compiler half, compiled into libpartita
#   runtime/**/*.cc                      the runtime plug-in libpartita_runtime_<name>.so, which
#                                        links libpartita_runtime and nothing of the compiler
#   startup/*.cc                         compiled into libpartita_runtime itself (with the
#                                        RUNTIME_DEFINITIONS), for what must happen when a
#                                        process loads the runtime, before any thread of ours
#                                        exists (cblas sets OPENBLAS_CORETYPE there: setenv is not
#                                        thread-safe); no libraries of its own, keep it small
#   tests/*.cc                           one GoogleTest program test_backend_<name> (ctest)
#   python/*.py                          linked into build/python/partita/<PYTHON_PACKAGE>/
#   benchmarks/*.cc                      one program each (with PARTITA_BUILD_BENCHMARKS)
#
# Every runtime plug-in is built beside libpartita_runtime.so, where the runtime looks first
# (partita/runtime/plugin.h), and is a dependency of libpartita and of the runtime-only tools,
# so building either builds the plug-ins its users will load.
function(partita_add_backend name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG ""  "PYTHON_PACKAGE"
                        "RUNTIME_LIBRARIES;RUNTIME_INCLUDE_DIRS;RUNTIME_DEFINITIONS;COMPILER_LIBRARIES;TEST_LIBRARIES")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "partita_add_backend(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(dir ${PROJECT_SOURCE_DIR}/src/backend/${name})
  if(NOT IS_DIRECTORY ${dir})
    message(FATAL_ERROR "partita_add_backend(${name}): the backend's folder ${dir} does not exist")
  endif()
  set_property(GLOBAL APPEND PROPERTY PARTITA_BACKENDS ${name})

  # Compiler half.
  file(GLOB_RECURSE compiler_srcs CONFIGURE_DEPENDS ${dir}/*.cc)
  list(FILTER compiler_srcs EXCLUDE REGEX "^${dir}/(runtime|startup|tests|benchmarks|python)/")
  if(compiler_srcs)
    target_sources(partita PRIVATE ${compiler_srcs})
  endif()
  if(ARG_COMPILER_LIBRARIES)
    target_link_libraries(partita PRIVATE ${ARG_COMPILER_LIBRARIES})
  endif()

  # Start-up code of the runtime library.
  file(GLOB startup_srcs CONFIGURE_DEPENDS ${dir}/startup/*.cc)
  if(startup_srcs)
    target_sources(partita_runtime PRIVATE ${startup_srcs})
    set_property(SOURCE ${startup_srcs} APPEND PROPERTY COMPILE_DEFINITIONS ${ARG_RUNTIME_DEFINITIONS})
  endif()

  # Runtime plug-in.
  file(GLOB_RECURSE runtime_srcs CONFIGURE_DEPENDS ${dir}/runtime/*.cc)
  set(plugin)
  if(runtime_srcs)
    set(plugin partita_runtime_${name})
    add_library(${plugin} SHARED ${runtime_srcs})
    target_link_libraries(${plugin} PUBLIC partita_runtime PRIVATE ${ARG_RUNTIME_LIBRARIES})
    target_include_directories(${plugin} PRIVATE ${ARG_RUNTIME_INCLUDE_DIRS})
    target_compile_definitions(${plugin} PRIVATE ${ARG_RUNTIME_DEFINITIONS})
    set_target_properties(${plugin} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
    add_dependencies(partita ${plugin})
    set_property(GLOBAL APPEND PROPERTY PARTITA_RUNTIME_PLUGINS ${plugin})
  endif()

  # Tests.
  file(GLOB test_srcs CONFIGURE_DEPENDS ${dir}/tests/*.cc)
  if(PARTITA_BUILD_TESTS AND test_srcs)
    add_executable(test_backend_${name} ${test_srcs})
    target_link_libraries(test_backend_${name} PRIVATE partita ${plugin} ${ARG_TEST_LIBRARIES}
                          GTest::gtest GTest::gtest_main)
    target_include_directories(test_backend_${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/cpp
                               ${ARG_RUNTIME_INCLUDE_DIRS})
    target_compile_definitions(test_backend_${name} PRIVATE PARTITA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                               PARTITA_BINARY_DIR="${PROJECT_BINARY_DIR}")
    gtest_discover_tests(test_backend_${name} DISCOVERY_TIMEOUT 60)
    # Tests may run an exported artifact in a process without the compiler library.
    add_dependencies(test_backend_${name} partita_run_min)
  endif()

  # Python wrapper.
  file(GLOB py_srcs CONFIGURE_DEPENDS RELATIVE ${dir}/python ${dir}/python/*.py)
  if(PARTITA_BUILD_PYTHON AND py_srcs)
    if(NOT ARG_PYTHON_PACKAGE)
      message(FATAL_ERROR "partita_add_backend(${name}): python/*.py needs PYTHON_PACKAGE")
    endif()
    set(py_dir ${PROJECT_BINARY_DIR}/python/partita/${ARG_PYTHON_PACKAGE})
    file(MAKE_DIRECTORY ${py_dir})
    foreach(f ${py_srcs})
      if(EXISTS ${PROJECT_SOURCE_DIR}/python/partita/${ARG_PYTHON_PACKAGE}/${f})
        message(FATAL_ERROR "partita_add_backend(${name}): python/${f} would replace "
                            "python/partita/${ARG_PYTHON_PACKAGE}/${f}")
      endif()
      file(CREATE_LINK ${dir}/python/${f} ${py_dir}/${f} SYMBOLIC)
    endforeach()
  endif()

  # Benchmarks.
  file(GLOB bench_srcs CONFIGURE_DEPENDS ${dir}/benchmarks/*.cc)
  if(PARTITA_BUILD_BENCHMARKS)
    foreach(src ${bench_srcs})
      get_filename_component(bench ${src} NAME_WE)
      add_executable(${bench} ${src})
      target_link_libraries(${bench} PRIVATE partita ${plugin} ${ARG_RUNTIME_LIBRARIES} benchmark::benchmark)
      target_include_directories(${bench} PRIVATE ${ARG_RUNTIME_INCLUDE_DIRS})
    endforeach()
  endif()
endfunction()
