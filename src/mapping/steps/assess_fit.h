// Whether a manifest describes the model a graph was exported from
// (semmap::ManifestFit, mapper.h), judged from the names the graph keeps.
#ifndef SEMMAP_SRC_MAPPING_STEPS_ASSESS_FIT_H_
#define SEMMAP_SRC_MAPPING_STEPS_ASSESS_FIT_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include "mapping/core/mapping_context.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/scope_resolver.h"
#include "mapping/core/tensor_evidence.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/manifest_fit.h"
#include "semmap/mapping.h"
#include "semmap/root_binding.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// A distinct scope of the graph as the mapper parsed it (mapper.cc): the
// scope part of TorchScript names, or a dynamo module stack's deepest path.
struct ScopeSample {
  bool from_metadata = false;
  absl::string_view name_scope;  // names: "/encoder/layer.0/attention"
  absl::string_view path;        // metadata: "encoder.layer.0.attention"
  absl::Span<const absl::string_view> segments;  // empty for the root scope
  absl::string_view qualified_class;             // metadata, when written
  std::size_t nodes = 0;
  // The scope's resolution under the binding being judged, when known:
  // a resolution through the manifest's own paths alone says which module
  // the scope names literally, without building and looking up its path.
  const ScopeResolution* resolution = nullptr;
};

// `node_modules`: per node, the module its scope names when resolved
// completely, else kNoModule (ResolvedModulesOfNodes, group_scopes.h).
// Linear in the nodes, the distinct scopes and the initializers plus the
// manifest's modules; names are not parsed again.
// Reads the context's graph, manifest, rules, op traits and tensor index,
// never its records (the inference writes them meanwhile).
ManifestFit AssessManifestFit(const MappingContext& context, const std::vector<ScopeSample>& scopes,
                              absl::Span<const ModuleId> node_modules, const RootBinding& binding);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_ASSESS_FIT_H_
