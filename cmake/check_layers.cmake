# Fails when a source of the library includes a header of a layer above its
# own. Run by the build (target semmap_layers) and by ctest (layers):
#   cmake -DSEMMAP_SOURCE_DIR=<repo> -P cmake/check_layers.cmake
#
# The layers, lowest first; each may include itself and what it lists:
#   base      status macros, threads, memory, text for messages
#   io        files, mapped files, atomic writes, JSON
#   graph     ONNX files: the wire format, the loaders, the Graph, node names
#   manifest  the hierarchy manifest and the rule file
#   mapping_core        what every step shares: the records, evidence and
#                       origins, op traits, the scope resolver, the tensor
#                       index (mapping/core/)
#   mapping_steps       the steps that read names: scopes, the root
#                       binding, the manifest's fit, the reference check,
#                       the provenance record (mapping/steps/)
#   mapping_strategies  the inference strategies: structure, neighbourhood,
#                       forward signatures, fused nodes, reference transfer
#                       (mapping/strategies/)
#   mapper              the SemanticMapper facade (semmap/mapper.h,
#                       mapping/mapper.cc and its mapper_*.{h,cc}, alone at
#                       the top of mapping/)
#   analysis  tree, query, diff, profile, ground truth
#   output    what the writers write: annotate, extract, stages, sidecar,
#             report, GraphML, node data
# A public header include/semmap/X.h belongs to the layer of src/*/X.cc; the
# few without a source are listed below. docs/development.md draws the same.
cmake_minimum_required(VERSION 3.22)
if(NOT SEMMAP_SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: set SEMMAP_SOURCE_DIR")
endif()

set(layers base io graph manifest mapping_core mapping_steps mapping_strategies mapper analysis
           output)
set(allowed_base "")
set(allowed_io base)
set(allowed_graph base io)
set(allowed_manifest base io)
set(allowed_mapping_core base io graph manifest)
set(allowed_mapping_steps base io graph manifest mapping_core)
set(allowed_mapping_strategies base io graph manifest mapping_core mapping_steps)
set(allowed_mapper base io graph manifest mapping_core mapping_steps mapping_strategies)
set(allowed_analysis ${allowed_mapper} mapper)
set(allowed_output ${allowed_analysis} analysis)

# Public headers without a source of their name.
set(header_layer_export.h base)
set(header_layer_version.h base)
set(header_layer_metadata_keys.h base)
set(header_layer_indexed_list.h base)
set(header_layer_mapper.h mapper)
set(header_layer_mapping.h mapping_core)
set(header_layer_provenance.h mapping_core)
set(header_layer_manifest_fit.h mapping_core)
set(header_layer_reference_check.h mapping_core)
set(header_layer_root_binding.h mapping_core)
set(header_layer_semmap.h umbrella)

file(GLOB_RECURSE sources RELATIVE ${SEMMAP_SOURCE_DIR}
     ${SEMMAP_SOURCE_DIR}/src/*.h ${SEMMAP_SOURCE_DIR}/src/*.cc)
file(GLOB headers RELATIVE ${SEMMAP_SOURCE_DIR} ${SEMMAP_SOURCE_DIR}/include/semmap/*.h)

# The layer of a public header, by name.
foreach(header IN LISTS headers)
  get_filename_component(name ${header} NAME)
  if(DEFINED header_layer_${name})
    continue()
  endif()
  string(REGEX REPLACE "\\.h$" ".cc" source_name ${name})
  set(found "")
  foreach(source IN LISTS sources)
    if(source MATCHES "^src/([a-z_]+)/(.*/)?${source_name}$")
      set(found ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "check_layers.cmake: ${header} has no source of its name; "
                        "give it a layer in cmake/check_layers.cmake")
  endif()
  set(header_layer_${name} ${found})
endforeach()

function(layer_of_path path out)
  if(path MATCHES "^src/mapping/mapper(_[a-z]+)?\\.(cc|h)$")
    set(${out} mapper PARENT_SCOPE)
  elseif(path MATCHES "^src/mapping/(core|steps|strategies)/")
    set(${out} mapping_${CMAKE_MATCH_1} PARENT_SCOPE)
  elseif(path MATCHES "^src/mapping/")
    set(${out} "" PARENT_SCOPE)  # a file beside the facade: in no layer
  elseif(path MATCHES "^src/([a-z_]+)/")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  elseif(path MATCHES "^include/semmap/([a-z_]+\\.h)$")
    set(${out} ${header_layer_${CMAKE_MATCH_1}} PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

set(violations "")
foreach(file IN LISTS sources headers)
  layer_of_path(${file} layer)
  if(NOT layer IN_LIST layers)
    if(layer STREQUAL "umbrella")
      continue()
    endif()
    list(APPEND violations "${file}: in no layer (folders: ${layers})")
    continue()
  endif()
  file(STRINGS ${SEMMAP_SOURCE_DIR}/${file} includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(included MATCHES "^semmap/")
      layer_of_path(include/${included} target)
    elseif(included MATCHES "^(base|io|graph|manifest|mapping|analysis|output)/")
      layer_of_path(src/${included} target)
    else()
      continue()  # a third-party header
    endif()
    if(target STREQUAL layer OR target IN_LIST allowed_${layer})
      continue()
    endif()
    list(APPEND violations "${file} (${layer}) includes ${included} (${target})")
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "semmap: includes that run up the layers "
                      "(cmake/check_layers.cmake):\n  ${text}")
endif()
