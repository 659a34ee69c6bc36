// Mapping: the answer semmap gives for one ONNX node.
#ifndef SEMMAP_INCLUDE_SEMMAP_MAPPING_H_
#define SEMMAP_INCLUDE_SEMMAP_MAPPING_H_

#include <array>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/manifest.h"
#include "semmap/strategy.h"

namespace semmap {

// kConfidentFloor (strategy.h, beside the strategies that never reach it):
// the confidence at and above which an answer counts as confident.

struct SEMMAP_EXPORT Mapping {
  ModuleId module = kNoModule;
  // Views into the mapper's manifest: valid while the SemanticMapper that
  // produced this Mapping lives. Empty when unmapped; class names are empty
  // when mapping without a manifest.
  absl::string_view module_path;
  absl::string_view class_name;
  absl::string_view qualified_class;
  // The module's semantic category from the rule file ("attention",
  // "projection", "normalization", ...); empty when no rule matches.
  absl::string_view category;
  // In [0, 1]: how sure the strategy is. 0 exactly when unmapped.
  double confidence = 0.0;
  Strategy strategy = Strategy::kUnmapped;
  // Short human-readable reason ("scope /encoder/layer.0/... resolved"). A
  // view into the mapper's store, valid while the SemanticMapper lives.
  absl::string_view evidence;

  bool mapped() const { return module != kNoModule; }
  // mapped() with confidence >= kConfidentFloor.
  bool confident() const { return mapped() && confidence >= kConfidentFloor; }
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_MAPPING_H_
