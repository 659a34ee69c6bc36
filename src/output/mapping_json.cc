#include "output/mapping_json.h"

#include <vector>

#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

void WriteMappingObject(JsonWriter& w, const SemanticMapper& mapper, NodeId id,
                        MappingJsonForm form) {
  const bool sidecar = form == MappingJsonForm::kSidecar;
  const Node& n = mapper.graph().node(id);
  const Mapping m = mapper.moduleFor(id);
  w.BeginObject();
  w.Key("category").String(m.category);
  w.Key("class").String(m.class_name);
  w.Key("confidence").Number(m.confidence);
  w.Key("domain").String(n.domain);
  w.Key("evidence").String(m.evidence);
  if (sidecar) w.Key("id").String(n.id);
  if (m.mapped()) {
    w.Key("module").String(m.module_path);
  } else {
    w.Key("module").Null();
  }
  w.Key("name").String(n.name);
  if (!sidecar) w.Key("node").String(n.id);
  w.Key("op_type").String(n.op_type);
  const std::vector<absl::string_view> origins = mapper.originPathsOf(id);
  if (!origins.empty()) w.Key("origins").Strings(origins);
  w.Key("qualified_class").String(m.qualified_class);
  w.Key("strategy").String(StrategyName(m.strategy));
  if (sidecar) w.Key("subgraph").Integer(n.subgraph);
  w.EndObject();
}

}  // namespace internal
}  // namespace semmap
