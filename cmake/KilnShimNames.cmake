# Shim symbol names.
#
# Model libraries import aoti_torch_* functions. If Kiln exported those names,
# a process that also loads libtorch (or PyTorch's own AOTI loader) would bind
# one library's models to the other's shims and crash. So Kiln exports each
# shim as kiln_torch_<rest> (same length: "aoti" -> "kiln"), and the loader
# rewrites the four bytes of every aoti_torch_ import name in its private copy
# of the model library. The functions keep their aoti_torch_* names in the
# source; these generated files make the exported aliases.

# kiln_read_shim_list(<out var> <list files...>): the names in shim lists.
function(kiln_read_shim_list out_var)
  set(_names "")
  foreach(list_file IN LISTS ARGN)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list_file})
    file(STRINGS ${list_file} _lines)
    foreach(_line IN LISTS _lines)
      string(STRIP "${_line}" _name)
      if(_name STREQUAL "" OR _name MATCHES "^#")
        continue()
      endif()
      if(NOT _name MATCHES "^aoti_torch_[A-Za-z0-9_]+$")
        message(FATAL_ERROR "${list_file}: '${_name}' is not an aoti_torch_* name")
      endif()
      list(APPEND _names ${_name})
    endforeach()
  endforeach()
  set(${out_var} ${_names} PARENT_SCOPE)
endfunction()

# kiln_shim_alias_script(<output .ld> <list files...>): a linker script
# defining kiln_torch_X as an alias of aoti_torch_X for every listed name.
function(kiln_shim_alias_script output)
  kiln_read_shim_list(_names ${ARGN})
  set(_text "/* Generated from the shim lists: exported aliases of the shims (cmake/KilnShimNames.cmake). */\n")
  foreach(_name IN LISTS _names)
    string(REGEX REPLACE "^aoti_torch_" "kiln_torch_" _alias ${_name})
    string(APPEND _text "${_alias} = ${_name};\n")
  endforeach()
  file(CONFIGURE OUTPUT ${output} CONTENT "${_text}" @ONLY)
endfunction()

# kiln_shim_rename_header(<output .h> <list files...>): #defines that make code
# outside libkiln (the CUDA plugin) call libkiln's shims by their exported names.
function(kiln_shim_rename_header output)
  kiln_read_shim_list(_names ${ARGN})
  set(_text "/* Generated from the shim lists (cmake/KilnShimNames.cmake). */\n#pragma once\n")
  foreach(_name IN LISTS _names)
    string(REGEX REPLACE "^aoti_torch_" "kiln_torch_" _alias ${_name})
    string(APPEND _text "#define ${_name} ${_alias}\n")
  endforeach()
  file(CONFIGURE OUTPUT ${output} CONTENT "${_text}" @ONLY)
endfunction()
