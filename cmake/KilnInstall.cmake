# What `cmake --install` puts under the prefix (docs/install.md):
#
#   include/kiln/*.h                     the public headers (with the generated kiln/version.h)
#   <libdir>/libkiln.so[.0[.x.y.z]]      the runtime: C and C++ API
#   <libdir>/libkiln_cuda.so             the CUDA plugin, when built; beside libkiln.so, where
#                                        libkiln's loader looks for it (devices/cuda/loader)
#   bin/kiln                             the CLI
#   <libdir>/kiln/backends/kiln/libtriton_kiln.so
#                                        the Triton Inference Server backend, when built:
#                                        <libdir>/kiln/backends is a --backend-directory
#   <libdir>/cmake/Kiln/                 KilnConfig.cmake, KilnConfigVersion.cmake, KilnTargets*.cmake
#   <libdir>/pkgconfig/kiln.pc
#
# Example runners, tests, benchmarks and the static runtime are build-tree only.
# Consumers link libkiln.so alone: OpenBLAS is opened at run time, libsodium
# and libstdc++ are linked into libkiln.so statically, FlatBuffers is header
# only, so nothing private appears on a consumer's link line.
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)

install(TARGETS kiln EXPORT KilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${KILN_GENERATED_PUBLIC_INCLUDE}/kiln/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)

# The plugin keeps its $ORIGIN run path (src/devices/cuda/CMakeLists.txt): it
# finds libkiln.so.0 beside itself, where it is installed.
if(TARGET kiln_cuda)
  set_target_properties(kiln_cuda PROPERTIES EXPORT_NAME cuda)
  install(TARGETS kiln_cuda EXPORT KilnTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# The CLI finds the libkiln.so installed with it however the prefix is moved.
file(RELATIVE_PATH _kiln_bin_to_lib /kiln-prefix/${CMAKE_INSTALL_BINDIR} /kiln-prefix/${CMAKE_INSTALL_LIBDIR})
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
  set_target_properties(kiln_cli PROPERTIES INSTALL_RPATH ${CMAKE_INSTALL_LIBDIR})
else()
  set_target_properties(kiln_cli PROPERTIES INSTALL_RPATH "\$ORIGIN/${_kiln_bin_to_lib}")
endif()
install(TARGETS kiln_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The Triton backend in the layout Triton looks for (<backends>/kiln/libtriton_kiln.so).
# Its installed run path reaches the installed libkiln.so.0 three levels up
# (and still tries its own directory first, where docs/serving.md's copy puts it).
if(TARGET triton_kiln)
  set(KILN_TRITON_BACKEND_DIR ${CMAKE_INSTALL_LIBDIR}/kiln/backends/kiln)
  if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
    set_target_properties(triton_kiln PROPERTIES INSTALL_RPATH "\$ORIGIN;${CMAKE_INSTALL_LIBDIR}")
  else()
    set_target_properties(triton_kiln PROPERTIES INSTALL_RPATH "\$ORIGIN;\$ORIGIN/../../..")
  endif()
  install(TARGETS triton_kiln LIBRARY DESTINATION ${KILN_TRITON_BACKEND_DIR})
endif()

install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/KilnConfig.cmake INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
# SameMinorVersion: before 1.0 a minor release may change the C++ API (the C
# API only grows, see KILN_ABI_VERSION), so find_package(Kiln 0.1) accepts
# 0.1.x with x >= the requested patch, never 0.2. SameMajorVersion would
# accept any 0.x; revisit at 1.0.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/KilnConfig.cmake ${PROJECT_BINARY_DIR}/package/KilnConfigVersion.cmake
  DESTINATION ${KILN_INSTALL_CMAKEDIR})

# kiln.pc names its directories relative to its own (${pcfiledir}), so the
# tree works under whatever prefix `cmake --install --prefix` chose.
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR} OR IS_ABSOLUTE ${CMAKE_INSTALL_INCLUDEDIR})
  set(KILN_PC_PREFIX ${CMAKE_INSTALL_PREFIX})
else()
  file(RELATIVE_PATH _kiln_pc_to_prefix /kiln-prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /kiln-prefix)
  string(REGEX REPLACE "/$" "" _kiln_pc_to_prefix "${_kiln_pc_to_prefix}")
  set(KILN_PC_PREFIX "\${pcfiledir}/${_kiln_pc_to_prefix}")
endif()
cmake_path(ABSOLUTE_PATH CMAKE_INSTALL_LIBDIR BASE_DIRECTORY "\${prefix}" OUTPUT_VARIABLE KILN_PC_LIBDIR)
cmake_path(ABSOLUTE_PATH CMAKE_INSTALL_INCLUDEDIR BASE_DIRECTORY "\${prefix}" OUTPUT_VARIABLE KILN_PC_INCLUDEDIR)
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/package/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
