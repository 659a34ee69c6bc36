// The metadata_props keys semmap writes into ONNX files, in one place: the
// writers (annotate.h, stages.h, extract.h) write them and the mapper reads
// kModuleKey back when it maps an annotated file.
//
// The field comes first and "@semmap" last because viewers cut long keys:
// Model Explorer's side panel and graph panel draw "[metadata] <key>" in a
// 100 px column, which leaves three to five characters of the key
// ("[metadata] mod…", "[metadata] clas…"), so keys that all began
// "semmap." read alike there ("[metadata] sem…"; ctest -R
// model_explorer_browser checks what it draws). Earlier versions wrote
// "semmap.module", "semmap.stage", "semmap.stage_units" and
// "semmap.extracted_module"; mapping an annotated file reads kModuleKey and
// "semmap.module" alike.
#ifndef SEMMAP_INCLUDE_SEMMAP_METADATA_KEYS_H_
#define SEMMAP_INCLUDE_SEMMAP_METADATA_KEYS_H_

#include "absl/strings/string_view.h"

namespace semmap {

// On each node, by Annotate (annotate.h).
inline constexpr absl::string_view kModuleKey = "module@semmap";
inline constexpr absl::string_view kClassKey = "class@semmap";
inline constexpr absl::string_view kConfidenceKey = "confidence@semmap";
inline constexpr absl::string_view kStrategyKey = "strategy@semmap";
inline constexpr absl::string_view kCategoryKey = "category@semmap";
// Only on a node doing several modules' work (SemanticMapper::originsOf):
// their paths as a JSON array of strings. Since 1.1.
inline constexpr absl::string_view kOriginsKey = "origins@semmap";

// On a stage model, by WriteStages (stages.h): its stage and the units in it.
inline constexpr absl::string_view kStageKey = "stage@semmap";
inline constexpr absl::string_view kStageUnitsKey = "units@semmap";

// On an extracted model, by Extract (extract.h): the module it holds.
inline constexpr absl::string_view kExtractedModuleKey = "extracted@semmap";

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_METADATA_KEYS_H_
