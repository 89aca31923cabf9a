# cuda.cmake: the CUDA executor (src/gpu/), included by the top-level
# CMakeLists.txt when nvcc is found. Its C sources join libsuperopt; its
# kernels (.cu) build into the static library superopt_cuda, linked into
# libsuperopt with cudart, cuDNN and cuBLASLt. SUPEROPT_HAVE_CUDA is defined
# for every C source that links libsuperopt (the CLI and the tests).
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
set(CMAKE_CUDA_STANDARD 17)

find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64)
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
if(NOT CUDNN_LIBRARY OR NOT CUDNN_INCLUDE_DIR)
  message(FATAL_ERROR "superopt: nvcc found but no cuDNN (cudnn.h, libcudnn)")
endif()

file(GLOB GPU_CU CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*.cu)
file(GLOB GPU_C CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*.c)

add_library(superopt_cuda STATIC ${GPU_CU})
# The directory-wide C flags (-Wall..., sanitizers) are not nvcc's: replace
# them with their nvcc spelling for the kernels.
set_target_properties(superopt_cuda PROPERTIES
  COMPILE_OPTIONS ""
  POSITION_INDEPENDENT_CODE ON
  CUDA_SEPARABLE_COMPILATION OFF)
target_compile_options(superopt_cuda PRIVATE
  --Werror all-warnings -Xcompiler=-Wall,-Wextra,-Werror -lineinfo)
target_include_directories(superopt_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(superopt_cuda PUBLIC CUDA::cudart)

target_sources(libsuperopt PRIVATE ${GPU_C})
set_target_properties(libsuperopt PROPERTIES
  CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
target_include_directories(libsuperopt SYSTEM PUBLIC
                           ${CUDAToolkit_INCLUDE_DIRS} ${CUDNN_INCLUDE_DIR})
target_compile_definitions(libsuperopt PUBLIC SUPEROPT_HAVE_CUDA=1)
target_link_libraries(libsuperopt PUBLIC superopt_cuda CUDA::cudart
                      CUDA::cublasLt CUDA::nvrtc ${CUDNN_LIBRARY})
# The driver API (fused kernels, src/gpu/fused.c) is reached through
# cudaGetDriverEntryPointByVersion, not by linking CUDA::cuda_driver: a
# binary linked with libcuda does not even start where no driver is
# installed, and GPU tests must skip cleanly there.
