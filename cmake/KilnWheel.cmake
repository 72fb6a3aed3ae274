# What the Python wheel holds (pyproject.toml builds it with scikit-build-core,
# which sets SKBUILD and installs component `wheel` into the wheel's platlib;
# docs/install.md):
#
#   kiln/lib/libkiln.so.0         the runtime, under its SONAME: the CLI and the
#                                 CUDA plugin link that name, kiln.runtime loads it
#   kiln/lib/libkiln_cuda.so      the CUDA plugin, when built (beside libkiln, where
#                                 libkiln's loader looks for it)
#   kiln/lib/libsleef.so.3        the build machine's SLEEF, which CPU programs call
#   kiln/lib/LICENSE.sleef        and its licence (Boost Software License 1.0)
#   kiln/shims/<device>.txt       the shim lists the exporter checks against
#   kiln/VERSION                  the version, read by kiln/__init__.py
#   <scripts>/kiln                the CLI, on PATH once installed
#
# One file per library: a wheel (a zip) cannot hold symbolic links, and
# libkiln.so.0.1.0 with two links would ship three copies.

# Builds only what the wheel ships (pyproject.toml: build.targets), not tools'
# tests, benchmarks or the static runtime.
add_custom_target(kiln_wheel)
add_dependencies(kiln_wheel kiln kiln_cli)

install(FILES $<TARGET_FILE:kiln> DESTINATION kiln/lib RENAME libkiln.so.0 COMPONENT wheel)
if(TARGET kiln_cuda)
  add_dependencies(kiln_wheel kiln_cuda)
  # install(TARGETS): its run path becomes the install one, $ORIGIN alone.
  install(TARGETS kiln_cuda LIBRARY DESTINATION kiln/lib COMPONENT wheel)
endif()

# The CLI is a wheel script: pip puts it in the environment's bin/ and the
# package in lib/pythonX.Y/site-packages (dist-packages on Debian's system
# Python), so it finds libkiln.so.0 there, relative to itself. The wheel's tag
# names this Python version, so X.Y is known here.
find_package(Python COMPONENTS Interpreter REQUIRED)
set(_kiln_py lib/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR})
set_target_properties(kiln_cli PROPERTIES INSTALL_RPATH
  "\$ORIGIN/../${_kiln_py}/site-packages/kiln/lib:\$ORIGIN/../${_kiln_py}/dist-packages/kiln/lib")
install(TARGETS kiln_cli RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR} COMPONENT wheel)

# SLEEF: the exporter's CPU programs import Sleef_* functions, which libkiln
# opens from a libsleef.so.3 beside itself before the system's
# (src/aoti/aoti_library.cpp), so the wheel runs programs on machines without
# libsleef3. The real file is copied under its SONAME.
find_library(KILN_SLEEF_LIBRARY NAMES libsleef.so.3 sleef
  DOC "libsleef.so.3 to bundle into the Python wheel")
set(KILN_SLEEF_LICENSE /usr/share/doc/libsleef3/copyright CACHE FILEPATH
  "Licence text of KILN_SLEEF_LIBRARY, shipped beside it in the wheel")
if(NOT KILN_SLEEF_LIBRARY)
  message(FATAL_ERROR "The wheel bundles SLEEF, which CPU programs need at run time, but libsleef.so.3 "
    "was not found: install it (Debian/Ubuntu: apt-get install libsleef3) or pass "
    "-C cmake.define.KILN_SLEEF_LIBRARY=/path/to/libsleef.so.3")
endif()
if(NOT EXISTS ${KILN_SLEEF_LICENSE})
  message(FATAL_ERROR "The wheel ships SLEEF's licence beside it, but ${KILN_SLEEF_LICENSE} does not exist: "
    "pass -C cmake.define.KILN_SLEEF_LICENSE=/path/to/its/LICENSE")
endif()
file(REAL_PATH ${KILN_SLEEF_LIBRARY} _kiln_sleef_file)
install(FILES ${_kiln_sleef_file} DESTINATION kiln/lib RENAME libsleef.so.3 COMPONENT wheel)
install(FILES ${KILN_SLEEF_LICENSE} DESTINATION kiln/lib RENAME LICENSE.sleef COMPONENT wheel)

# Package data kept elsewhere in the source tree.
foreach(device common cpu cuda)
  install(FILES ${PROJECT_SOURCE_DIR}/src/shims/${device}/shims.txt DESTINATION kiln/shims
    RENAME ${device}.txt COMPONENT wheel)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/VERSION DESTINATION kiln COMPONENT wheel)
