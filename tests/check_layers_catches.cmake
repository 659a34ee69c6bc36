# cmake/check_layers.cmake must fail on an include that runs up the layers:
# run it on a copy of the sources with two such includes added, and on the
# unchanged copy.
#   cmake -DSEMMAP_SOURCE_DIR=<repo> -DWORK_DIR=<scratch> -P check_layers_catches.cmake
cmake_minimum_required(VERSION 3.22)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(COPY ${SEMMAP_SOURCE_DIR}/src ${SEMMAP_SOURCE_DIR}/include DESTINATION ${WORK_DIR})

function(run_check out_result out_text)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -DSEMMAP_SOURCE_DIR=${WORK_DIR}
            -P ${SEMMAP_SOURCE_DIR}/cmake/check_layers.cmake
    RESULT_VARIABLE result ERROR_VARIABLE text OUTPUT_VARIABLE ignored)
  set(${out_result} ${result} PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

run_check(result text)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the unchanged sources fail the check:\n${text}")
endif()

# The graph layer including a writer's header; the mapping's core including
# the mapper's facade; a step including a strategy; a public graph header
# including a mapping one.
file(APPEND ${WORK_DIR}/src/graph/graph.cc "#include \"semmap/annotate.h\"\n")
file(APPEND ${WORK_DIR}/src/mapping/core/op_traits.h "#include \"semmap/mapper.h\"\n")
file(APPEND ${WORK_DIR}/src/mapping/steps/assess_fit.cc
     "#include \"mapping/strategies/structure.h\"\n")
file(APPEND ${WORK_DIR}/include/semmap/graph.h "#include \"mapping/core/confidence.h\"\n")
run_check(result text)
if(result EQUAL 0)
  message(FATAL_ERROR "the check passed sources with upward includes")
endif()
foreach(expected
    "src/graph/graph.cc (graph) includes semmap/annotate.h (output)"
    "src/mapping/core/op_traits.h (mapping_core) includes semmap/mapper.h (mapper)"
    "src/mapping/steps/assess_fit.cc (mapping_steps) includes mapping/strategies/structure.h (mapping_strategies)"
    "include/semmap/graph.h (graph) includes mapping/core/confidence.h (mapping_core)")
  string(FIND "${text}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the check did not name \"${expected}\":\n${text}")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
