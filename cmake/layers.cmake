# Layering, enforced by the build (included by the top-level CMakeLists.txt
# after the stage tables TJ_STAGES, TJ_DIRS_<s>, TJ_USES_<s>, TJ_HEADERS_<s>).
#
# 1. Includes: cmake/check_layers.awk reads every #include of every stage
#    before anything compiles; an include of a stage that is not below, of
#    another folder's *_internal.h, or without its folder fails the build
#    with FILE:LINE.
# 2. Calls: on Linux each stage is linked alone with the stages it uses into
#    a shared library with -Wl,--no-undefined, so a call into a stage above
#    is an undefined symbol there.

set(TJ_LAYER_TABLE ${PROJECT_BINARY_DIR}/generated/layers.txt)
set(table "")
set(layer_inputs "")
set(layer_files "")
foreach(stage ${TJ_STAGES})
  foreach(used ${TJ_USES_${stage}})
    foreach(indirect ${TJ_USES_${used}})
      if(NOT indirect IN_LIST TJ_USES_${stage})
        message(FATAL_ERROR "layers: ${stage} uses ${used}, which uses ${indirect}: list it in TJ_USES_${stage}")
      endif()
    endforeach()
  endforeach()
  set(row ${stage})
  foreach(column DIRS USES HEADERS)
    string(REPLACE ";" "," list "${TJ_${column}_${stage}}")
    if(list STREQUAL "")
      set(list "-")
    endif()
    string(APPEND row " ${list}")
  endforeach()
  string(APPEND table "${row}\n")
  foreach(dir ${TJ_DIRS_${stage}})
    file(GLOB files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.c ${PROJECT_SOURCE_DIR}/${dir}/*.h)
    list(APPEND layer_inputs ${files})
    foreach(f ${files})
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${f})
      list(APPEND layer_files ${PROJECT_SOURCE_DIR}/./${rel})
    endforeach()
  endforeach()
endforeach()
file(GLOB public_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/tilejit/*)
list(APPEND layer_inputs ${public_headers})
find_program(TJ_AWK awk REQUIRED)
file(GENERATE OUTPUT ${TJ_LAYER_TABLE} CONTENT "${table}")

set(TJ_LAYER_STAMP ${PROJECT_BINARY_DIR}/generated/layers.ok)
add_custom_command(OUTPUT ${TJ_LAYER_STAMP}
  COMMAND ${TJ_AWK} -f ${PROJECT_SOURCE_DIR}/cmake/check_layers.awk ${TJ_LAYER_TABLE} ${layer_files}
  COMMAND ${CMAKE_COMMAND} -E touch ${TJ_LAYER_STAMP}
  DEPENDS ${layer_inputs} ${TJ_LAYER_TABLE} ${PROJECT_SOURCE_DIR}/cmake/check_layers.awk
  COMMENT "Checking that every stage includes only the stages below it" VERBATIM)
add_custom_target(tj_layers DEPENDS ${TJ_LAYER_STAMP})
foreach(stage ${TJ_STAGES})
  add_dependencies(tj_${stage} tj_layers)
endforeach()

if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  foreach(stage ${TJ_STAGES})
    set(objects $<TARGET_OBJECTS:tj_${stage}>)
    foreach(used ${TJ_USES_${stage}})
      list(APPEND objects $<TARGET_OBJECTS:tj_${used}>)
    endforeach()
    add_library(tj_layer_${stage} SHARED ${objects})
    target_link_libraries(tj_layer_${stage} PRIVATE m Threads::Threads ${CMAKE_DL_LIBS})
    target_link_options(tj_layer_${stage} PRIVATE -Wl,--no-undefined)
    set_target_properties(tj_layer_${stage} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/layers)
  endforeach()
endif()
