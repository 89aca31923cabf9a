# install.cmake: libsuperopt.so (the static library's objects, whole), the
# install rules and the build tree's share/superopt, whose links to the
# source tree let build/superopt find its data the way an installed one does
# (src/api/data.c). Included by the top-level CMakeLists.txt after the
# targets are defined. Two layouts:
# - cmake --install: bin/, lib/ (libsuperopt.so.0 and .a), include/superopt/,
#   lib/pkgconfig/, lib/cmake/superopt/ (install(EXPORT): superopt::superopt
#   and superopt::superopt_static), share/superopt/;
# - pip install ./python (scikit-build-core sets SKBUILD; python/pyproject.toml
#   installs into the package's superopt/_native/): bin/superopt,
#   lib/libsuperopt.so (one file: no version links, which a wheel would copy),
#   lib/libsuperopt_gpu.so in CUDA builds and share/superopt/, and the
#   `superopt` command (python/superopt-command) in the environment's scripts.
include(CMakePackageConfigHelpers)

# The shared library: every object of libsuperopt (and, in CUDA builds, the
# kernels it pulls from superopt_cuda). It needs one source of its own.
file(WRITE ${API_GEN}/shared.c
     "/* shared.c: generated; libsuperopt.so's own (empty) unit. */\n"
     "typedef int superopt_shared_unit;\n")
add_library(libsuperopt_shared SHARED ${API_GEN}/shared.c)
target_link_libraries(libsuperopt_shared
                      PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,libsuperopt>")
target_include_directories(libsuperopt_shared
                           INTERFACE $<INSTALL_INTERFACE:include>)
set_target_properties(libsuperopt_shared PROPERTIES
  OUTPUT_NAME superopt EXPORT_NAME superopt
  INSTALL_RPATH_USE_LINK_PATH ON)
if(NOT SKBUILD)
  set_target_properties(libsuperopt_shared PROPERTIES
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
endif()
set_target_properties(libsuperopt PROPERTIES EXPORT_NAME superopt_static)
set_target_properties(superopt PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

# Data for the build tree: build/share/superopt/{rules,costdb} -> sources.
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/superopt)
foreach(d rules costdb)
  if(NOT EXISTS ${CMAKE_BINARY_DIR}/share/superopt/${d})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${d}
         ${CMAKE_BINARY_DIR}/share/superopt/${d} SYMBOLIC)
  endif()
endforeach()

# Both layouts: the tool, the shared library, the executor, the data.
install(TARGETS superopt RUNTIME DESTINATION bin)
if(SUPEROPT_HAVE_CUDA)
  install(TARGETS superopt_gpu LIBRARY DESTINATION lib)
  add_dependencies(superopt superopt_gpu) # built with the CLI, which loads it
endif()
install(FILES rules/default.rules rules/extended.rules rules/passes.rules
        DESTINATION share/superopt/rules)
install(DIRECTORY costdb/ DESTINATION share/superopt/costdb
        FILES_MATCHING PATTERN "*.tsv")

if(SKBUILD)
  install(TARGETS libsuperopt_shared LIBRARY DESTINATION lib)
  install(PROGRAMS python/superopt-command DESTINATION ${SKBUILD_SCRIPTS_DIR}
          RENAME superopt)
  return()
endif()

# pkg-config: superopt (the shared library) and superopt-static (the
# archive). Neither requires the dependencies' packages, whose Cflags
# (igraph's, libxml2's folders) pkg-config would add to --cflags: the public
# header includes none of them; the shared library records them itself and
# superopt-static lists their linker flags, as found now.
set(PC_STATIC_LIBS "")
foreach(dep XXHASH PROTOBUF_C Z3 IGRAPH SQLITE3 JANSSON)
  list(APPEND PC_STATIC_LIBS ${${dep}_LDFLAGS})
endforeach()
list(APPEND PC_STATIC_LIBS -fopenmp -lm)
if(SUPEROPT_HAVE_BLAS) # OpenBLAS's OpenMP build (CMakeLists.txt)
  list(APPEND PC_STATIC_LIBS -L${OPENBLAS_LIBRARY_DIRS} -lopenblas)
endif()
if(SUPEROPT_HAVE_CUDA)
  list(APPEND PC_STATIC_LIBS -ldl -lpthread)
endif()
list(REMOVE_DUPLICATES PC_STATIC_LIBS)
list(JOIN PC_STATIC_LIBS " " PC_STATIC_LIBS)
configure_file(cmake/superopt.pc.in ${API_GEN}/superopt.pc @ONLY)
configure_file(cmake/superopt-static.pc.in ${API_GEN}/superopt-static.pc @ONLY)

# The CMake package: the exported targets, and a config that finds what the
# static target links (find_dependency, pkg_check_modules).
set(SUPEROPT_DATA_DIR share/superopt)
configure_package_config_file(cmake/superoptConfig.cmake.in
  ${API_GEN}/superoptConfig.cmake INSTALL_DESTINATION lib/cmake/superopt
  PATH_VARS SUPEROPT_DATA_DIR)
write_basic_package_version_file(${API_GEN}/superoptConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

install(TARGETS libsuperopt libsuperopt_shared EXPORT superoptTargets
        ARCHIVE DESTINATION lib LIBRARY DESTINATION lib)
install(EXPORT superoptTargets NAMESPACE superopt::
        DESTINATION lib/cmake/superopt)
install(FILES src/api/superopt.h DESTINATION include/superopt)
install(FILES ${API_GEN}/superopt.pc ${API_GEN}/superopt-static.pc
        DESTINATION lib/pkgconfig)
install(FILES ${API_GEN}/superoptConfig.cmake
              ${API_GEN}/superoptConfigVersion.cmake
        DESTINATION lib/cmake/superopt)
