# Kiln's layers, enforced by the build.
#
# Each layer is an object library compiled against an include tree of its own
# (<build>/layers/<name>) that holds links to its own directories and public
# headers and to those of the layers it depends on, and nothing else: a source
# that includes a header of a layer it does not depend on fails to compile
# ("fatal error: runtime/backend.h: No such file or directory").
# docs/architecture.md draws the graph.

# kiln_layer_includes(<target> <root name> DIRS <dirs under src/> HEADERS <names under include/kiln/>)
# (an entry of DIRS may also be a single header under src/).
# Builds the include tree <build>/layers/<root name> and gives it to <target>.
function(kiln_layer_includes target root_name)
  cmake_parse_arguments(L "" "" "DIRS;HEADERS" ${ARGN})
  set(root ${PROJECT_BINARY_DIR}/layers/${root_name})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root}/src ${root}/include/kiln)
  foreach(dir IN LISTS L_DIRS)
    get_filename_component(parent ${root}/src/${dir} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${dir} ${root}/src/${dir} SYMBOLIC)
  endforeach()
  foreach(header IN LISTS L_HEADERS)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/kiln/${header} ${root}/include/kiln/${header} SYMBOLIC)
  endforeach()
  # generated/public holds kiln/version.h, a leaf header of macros that every
  # layer may include.
  target_include_directories(${target} PRIVATE ${root}/src ${root}/include ${PROJECT_BINARY_DIR}/generated
                                               ${KILN_GENERATED_PUBLIC_INCLUDE})
endfunction()

# kiln_restrict_includes(<target> <root name> DIRS <dirs> [HEADERS <headers>] [DEPENDS <layers>])
# Gives <target> an include tree of DIRS and HEADERS plus, transitively, those
# of the layers it DEPENDS on. Returns the closure in <root name>_DIRS and
# <root name>_HEADERS in the caller's scope.
function(kiln_restrict_includes target root_name)
  cmake_parse_arguments(L "" "" "DIRS;HEADERS;DEPENDS" ${ARGN})
  set(dirs ${L_DIRS})
  set(headers ${L_HEADERS})
  foreach(dep IN LISTS L_DEPENDS)
    get_property(known GLOBAL PROPERTY KILN_LAYER_${dep}_DEFINED)
    if(NOT known)
      message(FATAL_ERROR "${target} depends on layer '${dep}', which is not defined before it")
    endif()
    get_property(dep_dirs GLOBAL PROPERTY KILN_LAYER_${dep}_DIRS)
    get_property(dep_headers GLOBAL PROPERTY KILN_LAYER_${dep}_HEADERS)
    list(APPEND dirs ${dep_dirs})
    list(APPEND headers ${dep_headers})
  endforeach()
  list(REMOVE_DUPLICATES dirs)
  list(REMOVE_DUPLICATES headers)
  kiln_layer_includes(${target} ${root_name} DIRS ${dirs} HEADERS ${headers})
  set(${root_name}_DIRS ${dirs} PARENT_SCOPE)
  set(${root_name}_HEADERS ${headers} PARENT_SCOPE)
endfunction()

# kiln_layer(<name> DIRS <dirs under src/> [HEADERS <public headers>] [DEPENDS <layers>] SOURCES <files>)
# The object library kiln_<name>, part of libkiln.so and of the static
# runtime, which may include its own DIRS and HEADERS and, transitively, those
# of the layers it DEPENDS on.
function(kiln_layer name)
  cmake_parse_arguments(L "" "" "DIRS;HEADERS;DEPENDS;SOURCES" ${ARGN})
  add_library(kiln_${name} OBJECT ${L_SOURCES})
  kiln_restrict_includes(kiln_${name} ${name} DIRS ${L_DIRS} HEADERS ${L_HEADERS} DEPENDS ${L_DEPENDS})
  set_property(GLOBAL PROPERTY KILN_LAYER_${name}_DIRS ${${name}_DIRS})
  set_property(GLOBAL PROPERTY KILN_LAYER_${name}_HEADERS ${${name}_HEADERS})
  set_property(GLOBAL PROPERTY KILN_LAYER_${name}_DEFINED TRUE)
  target_compile_options(kiln_${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${KILN_WARNING_FLAGS}>)
  target_link_libraries(kiln_${name} PRIVATE kiln_build_settings)
  set_property(GLOBAL APPEND PROPERTY KILN_LAYERS kiln_${name})
endfunction()
