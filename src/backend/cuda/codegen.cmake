# The cuda target's generated kernels (src/backend/cuda/codegen, runtime/kernel_module.cc):
# included by the top CMakeLists.txt when the CUDA toolkit was found (PARTITA_WITH_CUDA).
#
# The toolkit's include directory and libraries are given to these sources alone (not to the
# whole library), so every other object keeps its compile line and the shared ccache stays warm.
list(GET CUDAToolkit_INCLUDE_DIRS 0 PARTITA_CUDA_INCLUDE_DIR)
file(GLOB PARTITA_CUDA_CODEGEN_SRCS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/codegen/*.cc)
set(PARTITA_CUDA_RUNTIME_SRCS ${CMAKE_CURRENT_LIST_DIR}/runtime/kernel_module.cc)
set_source_files_properties(${PARTITA_CUDA_CODEGEN_SRCS} ${PARTITA_CUDA_RUNTIME_SRCS}
                            PROPERTIES INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/codegen/codegen.cc PROPERTIES
                            COMPILE_DEFINITIONS "PARTITA_CUDA_INCLUDE_DIR=\"${PARTITA_CUDA_INCLUDE_DIR}\"")
# NVRTC compiles at build time (compiler library); the runtime loads and launches (runtime library).
target_link_libraries(partita PRIVATE ${CUDA_nvrtc_LIBRARY})
target_link_libraries(partita_runtime PRIVATE ${CUDA_cudart_LIBRARY})
# GPU tests allocate device memory themselves.
if(TARGET test_cudagen)
  target_include_directories(test_cudagen PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(test_cudagen PRIVATE ${CUDA_cudart_LIBRARY})
  target_compile_definitions(test_cudagen PRIVATE PARTITA_BINARY_DIR="${PROJECT_BINARY_DIR}")
  target_link_libraries(test_cudagen PRIVATE partita_frontend_onnx)  # whole models from ONNX
endif()
