# install.cmake: libsuperopt.so (the static library's objects, whole), the
# install rules (bin/, lib/, include/superopt/, lib/pkgconfig/,
# lib/cmake/superopt/, share/superopt/) and the build tree's share/superopt,
# whose links to the source tree let build/superopt find its data the way an
# installed one does (src/api/data.c). Included by the top-level
# CMakeLists.txt after the targets are defined.

# The shared library: every object of libsuperopt (and, in CUDA builds, the
# kernels it pulls from superopt_cuda). It needs one source of its own.
file(WRITE ${API_GEN}/shared.c
     "/* shared.c: generated; libsuperopt.so's own (empty) unit. */\n"
     "typedef int superopt_shared_unit;\n")
add_library(libsuperopt_shared SHARED ${API_GEN}/shared.c)
target_link_libraries(libsuperopt_shared
                      PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,libsuperopt>")
set_target_properties(libsuperopt_shared PROPERTIES
  OUTPUT_NAME superopt VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(superopt PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

# Data for the build tree: build/share/superopt/{rules,costdb} -> sources.
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/superopt)
foreach(d rules costdb)
  if(NOT EXISTS ${CMAKE_BINARY_DIR}/share/superopt/${d})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${d}
         ${CMAKE_BINARY_DIR}/share/superopt/${d} SYMBOLIC)
  endif()
endforeach()

# pkg-config: superopt (the shared library) and superopt-static (the
# archive, with the libraries it needs).
# (CUDA builds: the executor is libsuperopt_gpu.so, loaded at run time.)
set(PC_LIBS_PRIVATE "-fopenmp -lm")
if(SUPEROPT_HAVE_BLAS) # OpenBLAS's OpenMP build (CMakeLists.txt)
  string(APPEND PC_LIBS_PRIVATE " -L${OPENBLAS_LIBRARY_DIRS} -lopenblas")
endif()
if(SUPEROPT_HAVE_CUDA)
  string(APPEND PC_LIBS_PRIVATE " -ldl -lpthread")
endif()
configure_file(cmake/superopt.pc.in ${API_GEN}/superopt.pc @ONLY)
configure_file(cmake/superopt-static.pc.in ${API_GEN}/superopt-static.pc @ONLY)
configure_file(cmake/superoptConfig.cmake.in
               ${API_GEN}/superoptConfig.cmake @ONLY)
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${API_GEN}/superoptConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

install(TARGETS superopt RUNTIME DESTINATION bin)
install(TARGETS libsuperopt libsuperopt_shared
        ARCHIVE DESTINATION lib LIBRARY DESTINATION lib)
if(SUPEROPT_HAVE_CUDA)
  install(TARGETS superopt_gpu LIBRARY DESTINATION lib)
  add_dependencies(superopt superopt_gpu) # built with the CLI, which loads it
endif()
install(FILES src/api/superopt.h DESTINATION include/superopt)
install(FILES ${API_GEN}/superopt.pc ${API_GEN}/superopt-static.pc
        DESTINATION lib/pkgconfig)
install(FILES ${API_GEN}/superoptConfig.cmake
              ${API_GEN}/superoptConfigVersion.cmake
        DESTINATION lib/cmake/superopt)
install(FILES rules/default.rules rules/passes.rules
        DESTINATION share/superopt/rules)
install(DIRECTORY costdb/ DESTINATION share/superopt/costdb
        FILES_MATCHING PATTERN "*.tsv")
