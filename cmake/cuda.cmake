# cuda.cmake: the CUDA executor (src/gpu/), included by the top-level
# CMakeLists.txt when nvcc is found. Its kernels (.cu) build into the static
# library superopt_cuda; its C sources and the kernels, with cudart, cuDNN
# and cuBLASLt, into the shared object libsuperopt_gpu.so, which
# libsuperopt loads on first use (src/gpu/lazy.c: the forwarders of gpu.h,
# built into libsuperopt with the memory planner), so that nothing that
# stays on the CPU maps the CUDA libraries. SUPEROPT_HAVE_CUDA is defined
# for every C source that links libsuperopt (the CLI and the tests).
# Hopper machine code (the target GPUs; kse.cu's thread block clusters
# need it) and sm_75 with its PTX for older GPUs. Set before
# enable_language, which otherwise takes nvcc's default (sm_75 for CUDA 13:
# every kernel JIT-compiled from sm_75 PTX on an H100, no clusters).
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(CMAKE_CUDA_ARCHITECTURES 75 90)
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
# A build folder configured before that default keeps its cached list.
set(SUPEROPT_SM90 OFF)
foreach(arch ${CMAKE_CUDA_ARCHITECTURES})
  string(REGEX MATCH "^[0-9]+" num "${arch}")
  if(arch MATCHES "^(all|all-major|native)$" OR
     (num AND num GREATER_EQUAL 90))
    set(SUPEROPT_SM90 ON)
  endif()
endforeach()
if(NOT SUPEROPT_SM90)
  message(WARNING "superopt: CMAKE_CUDA_ARCHITECTURES "
          "(${CMAKE_CUDA_ARCHITECTURES}) has no sm_90 or later: the "
          "squeeze-and-excitation kernel (kse.cu) stays off. Reconfigure "
          "with -DCMAKE_CUDA_ARCHITECTURES=\"75;90\".")
endif()
set(CMAKE_CUDA_STANDARD 17)

find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64)
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(NVRTC_LIBRARY nvrtc HINTS ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64 REQUIRED)
if(NOT CUDNN_LIBRARY OR NOT CUDNN_INCLUDE_DIR)
  message(FATAL_ERROR "superopt: nvcc found but no cuDNN (cudnn.h, libcudnn)")
endif()

file(GLOB GPU_CU CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/kern/*.cu)
file(GLOB_RECURSE GPU_C CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*.c)
list(REMOVE_ITEM GPU_C ${PROJECT_SOURCE_DIR}/src/gpu/lazy.c)

# SUPEROPT_CUDA_KERNELS: the kernels of another build of this tree (its
# libsuperopt_cuda.a) linked instead of compiled again. The kernels take no
# sanitizer or C flags, so the sanitizer build of scripts/test reuses the
# plain build's (about 90 CPU-seconds of nvcc saved).
set(SUPEROPT_CUDA_KERNELS "" CACHE FILEPATH
    "prebuilt libsuperopt_cuda.a of this source tree to link (empty: compile)")
if(SUPEROPT_CUDA_KERNELS)
  if(NOT EXISTS ${SUPEROPT_CUDA_KERNELS})
    message(FATAL_ERROR "superopt: SUPEROPT_CUDA_KERNELS: no file "
                        "${SUPEROPT_CUDA_KERNELS} (build the tree it names first)")
  endif()
  add_library(superopt_cuda STATIC IMPORTED)
  set_target_properties(superopt_cuda PROPERTIES
    IMPORTED_LOCATION ${SUPEROPT_CUDA_KERNELS}
    IMPORTED_LINK_INTERFACE_LANGUAGES CUDA)
  target_link_libraries(superopt_cuda INTERFACE CUDA::cudart)
else()
  add_library(superopt_cuda STATIC ${GPU_CU})
  # The directory-wide C flags (-Wall..., sanitizers) are not nvcc's:
  # replace them with their nvcc spelling for the kernels.
  set_target_properties(superopt_cuda PROPERTIES
    COMPILE_OPTIONS ""
    POSITION_INDEPENDENT_CODE ON
    CUDA_SEPARABLE_COMPILATION OFF)
  target_compile_options(superopt_cuda PRIVATE
    --Werror all-warnings -Xcompiler=-Wall,-Wextra,-Werror -lineinfo)
  target_include_directories(superopt_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
  # kwg.cu's warpgroup matmul needs sm_90a's wgmma (arch-specific: the
  # plain sm_90 image compiles it out, and cxk_wg_runs_here says which
  # image the device loaded).
  if(SUPEROPT_SM90)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/src/gpu/kern/kwg.cu
      PROPERTIES COMPILE_OPTIONS "-gencode=arch=compute_90a,code=sm_90a")
  endif()
  target_link_libraries(superopt_cuda PUBLIC CUDA::cudart)
endif()

# libsuperopt: the loader and the memory planner (no CUDA).
target_sources(libsuperopt PRIVATE ${PROJECT_SOURCE_DIR}/src/gpu/lazy.c
               ${PROJECT_SOURCE_DIR}/src/gpu/plan/memplan.c
               ${PROJECT_SOURCE_DIR}/src/gpu/plan/sched.c)
target_compile_definitions(libsuperopt PUBLIC SUPEROPT_HAVE_CUDA=1)
target_link_libraries(libsuperopt PUBLIC ${CMAKE_DL_LIBS} Threads::Threads)

# libsuperopt_gpu.so: the executor. Its gpu.h functions are renamed *_impl
# (impl_names.h) for lazy.c to find; the parts of libsuperopt it uses are
# linked in and kept private (--exclude-libs), so it loads the same way
# into the CLI, a program linked with libsuperopt.a and the Python module.
add_library(superopt_gpu SHARED ${GPU_C})
target_compile_options(superopt_gpu PRIVATE
  "$<$<COMPILE_LANGUAGE:C>:SHELL:-include ${PROJECT_SOURCE_DIR}/src/gpu/impl_names.h>")
target_include_directories(superopt_gpu SYSTEM PRIVATE
                           ${CUDAToolkit_INCLUDE_DIRS} ${CUDNN_INCLUDE_DIR})
target_link_libraries(superopt_gpu PRIVATE superopt_cuda libsuperopt
                      CUDA::cudart CUDA::cublas CUDA::cublasLt ${NVRTC_LIBRARY} ${CUDNN_LIBRARY})
# NVRTC by its path: CMake's CUDA::nvrtc drags in CUDA::cuda_driver (the
# stub libcuda.so), which an ASan link (no --as-needed) would record as
# needed, so the executor would not load where no driver is installed.
# The driver API (fused kernels, src/gpu/run/fused.c) is reached through
# cudaGetDriverEntryPointByVersion, not by linking CUDA::cuda_driver: a
# binary linked with libcuda does not even start where no driver is
# installed, and GPU tests must skip cleanly there.
target_link_options(superopt_gpu PRIVATE -Wl,--exclude-libs,ALL
                    -Wl,--no-undefined)
set_target_properties(superopt_gpu PROPERTIES
  CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
  INSTALL_RPATH_USE_LINK_PATH ON)
