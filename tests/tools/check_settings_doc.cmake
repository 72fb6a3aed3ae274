# Fails unless DOC holds exactly what `KILN settings --markdown` prints.
execute_process(COMMAND ${KILN} settings --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "`kiln settings --markdown` failed (${status})")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${DOC} is out of date with the settings table: regenerate it with\n"
                      "  build/kiln settings --markdown > docs/settings.md")
endif()
