# libFuzzer harnesses (tests/fuzz/*_fuzzer.cc), built when the compiler is clang (libFuzzer is
# clang's): scripts/sanitize.sh configures build-asan so, with the libraries instrumented for
# coverage (-fsanitize=fuzzer-no-link) and ASan + UBSan. Each harness is a ctest test that fuzzes
# for PARTITA_FUZZ_SECONDS from its seed corpus (tests/fuzz/corpus/<name>); scripts/fuzz.sh runs
# them for longer. New inputs go to <build>/fuzz/corpus/<name>, never into the source tree.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  return()
endif()
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer)
check_cxx_source_compiles("
#include <cstdint>
#include <cstddef>
extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }" PARTITA_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
option(PARTITA_BUILD_FUZZERS "Build the libFuzzer harnesses of tests/fuzz" ${PARTITA_HAVE_LIBFUZZER})
if(NOT PARTITA_BUILD_FUZZERS)
  return()
endif()
set(PARTITA_FUZZ_SECONDS 5 CACHE STRING "How long ctest runs each fuzzer")

file(GLOB PARTITA_FUZZERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/*_fuzzer.cc)
foreach(src ${PARTITA_FUZZERS})
  get_filename_component(stem ${src} NAME_WE)
  string(REGEX REPLACE "_fuzzer$" "" name ${stem})
  add_executable(fuzz_${name} ${src})
  target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  # -static-libsan: libFuzzer puts libstdc++ ahead of a shared ASan runtime, which ASan refuses;
  # the fuzzers are never started by the preloaded python3 that the shared runtime is for.
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer -static-libsan)
  target_link_libraries(fuzz_${name} PRIVATE partita)
  if(name STREQUAL "onnx")
    target_link_libraries(fuzz_${name} PRIVATE partita_frontend_onnx)
  endif()
  set_target_properties(fuzz_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
  add_test(NAME fuzz_${name}
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/fuzz/run_fuzzer.sh $<TARGET_FILE:fuzz_${name}>
                   ${PARTITA_FUZZ_SECONDS} ${PROJECT_BINARY_DIR}/fuzz/corpus/${name}
                   ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${name})
endforeach()
if(PARTITA_RUNTIME_PLUGINS AND TARGET fuzz_artifact)
  add_dependencies(fuzz_artifact ${PARTITA_RUNTIME_PLUGINS})  # the artifacts' modules load them
endif()
