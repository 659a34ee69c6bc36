// Fuzz target for the whole pipeline: Graph::Parse, Manifest::Parse,
// SemanticMapper::Create, then SemanticQuery, ModuleTree and SidecarJson on
// the result.
//
// Input: ONNX model bytes, optionally followed by kSeparator and manifest
// JSON (fuzz/make_seeds.cc writes seeds in that form). Without a separator,
// or with a manifest that does not parse, the model is mapped without one.
// Properties:
//   - every Mapping's confidence is in [0, 1] and it is 0 exactly when the
//     node is unmapped (no module, strategy "unmapped");
//   - a mapped node's module exists and its path and class are the
//     manifest's; strategy counts add up to the node count;
//   - query answers are sorted, duplicate-free node ids; the tree counts
//     every node once; the sidecar is valid JSON even for non-UTF-8 names.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "graph_checks.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"

namespace {

constexpr absl::string_view kSeparator = "#SEMMAP#MANIFEST#";

void CheckSorted(const std::vector<semmap::NodeId>& ids, std::size_t size) {
  for (std::size_t k = 0; k < ids.size(); ++k) {
    SEMMAP_FUZZ_CHECK(ids[k] >= 0 && static_cast<std::size_t>(ids[k]) < size);
    if (k > 0) SEMMAP_FUZZ_CHECK(ids[k - 1] < ids[k]);
  }
}

void CheckMappings(const semmap::SemanticMapper& mapper) {
  const semmap::Graph& g = mapper.graph();
  const semmap::Manifest& manifest = mapper.manifest();
  SEMMAP_FUZZ_CHECK(mapper.mapAll().size() == g.size());
  std::size_t mapped = 0;
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(g.size()); ++i) {
    const semmap::Mapping& m = mapper.moduleFor(i);
    SEMMAP_FUZZ_CHECK(m.confidence >= 0.0 && m.confidence <= 1.0);
    SEMMAP_FUZZ_CHECK(static_cast<std::size_t>(m.strategy) < semmap::kStrategyCount);
    const bool unmapped = !m.mapped();
    SEMMAP_FUZZ_CHECK(unmapped == (m.confidence == 0.0));
    SEMMAP_FUZZ_CHECK(unmapped == (m.strategy == semmap::Strategy::kUnmapped));
    if (unmapped) {
      SEMMAP_FUZZ_CHECK(m.module_path.empty());
      continue;
    }
    ++mapped;
    SEMMAP_FUZZ_CHECK(m.module >= 0 && static_cast<std::size_t>(m.module) < manifest.size());
    const semmap::ModuleInfo& info = manifest.module(m.module);
    SEMMAP_FUZZ_CHECK(m.module_path == info.path);
    SEMMAP_FUZZ_CHECK(m.class_name == info.class_name);
    SEMMAP_FUZZ_CHECK(m.qualified_class == info.qualified_class);
    absl::StatusOr<semmap::Mapping> by_id = mapper.moduleFor(g.node(i).id);
    SEMMAP_FUZZ_CHECK(by_id.ok() && by_id->module == m.module);
  }
  SEMMAP_FUZZ_CHECK(mapper.mappedCount() == mapped);
  const semmap::NamespacePlan namespaces = semmap::PlanNamespaces(mapper, {});
  SEMMAP_FUZZ_CHECK(namespaces.values.size() == g.size());
  SEMMAP_FUZZ_CHECK(namespaces.written + namespaces.kept <= g.size());
  std::size_t total = 0;
  for (std::size_t c : mapper.strategyCounts()) total += c;
  SEMMAP_FUZZ_CHECK(total == g.size());
  const semmap::RootBinding& b = mapper.rootBinding();
  SEMMAP_FUZZ_CHECK(b.root >= 0 && static_cast<std::size_t>(b.root) < manifest.size());
}

void CheckQueries(const semmap::SemanticMapper& mapper) {
  const std::size_t size = mapper.graph().size();
  const semmap::SemanticQuery query(mapper);
  absl::StatusOr<std::vector<semmap::NodeId>> all = query.nodesOfModule("", /*subtree=*/true);
  SEMMAP_FUZZ_CHECK(all.ok());
  CheckSorted(*all, size);
  SEMMAP_FUZZ_CHECK(all->size() == mapper.mappedCount());
  for (long layer : {0L, 1L}) {
    auto nodes = query.nodesOfLayer(layer);
    if (nodes.ok()) CheckSorted(*nodes, size);
  }
  for (const semmap::RepeatedContainer& c : query.repeatedContainers()) {
    SEMMAP_FUZZ_CHECK(c.items.size() == c.indices.size());
    if (c.indices.empty()) continue;
    const absl::string_view path = mapper.manifest().path(c.module);
    auto nodes = query.nodesOfLayer(path, c.indices.front());
    SEMMAP_FUZZ_CHECK(nodes.ok());
    CheckSorted(*nodes, size);
  }
  SEMMAP_FUZZ_CHECK(query.nodesOfLayer(-1).status().code() == absl::StatusCode::kInvalidArgument);
  if (auto linear = query.nodesOfClass("Linear"); linear.ok()) CheckSorted(*linear, size);
  if (auto matching = query.nodesMatching("layer|attn"); matching.ok()) CheckSorted(*matching, size);
  CheckSorted(query.nodesOfCategory("attention"), size);
  const std::vector<semmap::NodeId> below = query.nodesBelowConfidence(0.5);
  CheckSorted(below, size);
  SEMMAP_FUZZ_CHECK(query.nodesBelowConfidence(std::numeric_limits<double>::denorm_min()).size() == size - mapper.mappedCount());
  (void)query.modulesWithoutNodes(true);
  (void)query.modulesWithoutNodes(false);
}

void CheckTreeAndSidecar(const semmap::SemanticMapper& mapper) {
  for (bool model_specific : {false, true}) {
    semmap::TreeOptions options;
    options.model_specific_only = model_specific;
    const semmap::ModuleTree tree = semmap::ModuleTree::Build(mapper, options);
    SEMMAP_FUZZ_CHECK(!tree.modules().empty());
    SEMMAP_FUZZ_CHECK(tree.countedNodes() == mapper.graph().size());
    SEMMAP_FUZZ_CHECK(tree.root().subtree_nodes + tree.unmappedNodes() == tree.countedNodes());
  }
  semmap::SidecarOptions options;
  options.indent = -1;
  const std::string sidecar = semmap::SidecarJson(mapper, options);
  const nlohmann::json doc = nlohmann::json::parse(sidecar, nullptr, /*allow_exceptions=*/false);
  SEMMAP_FUZZ_CHECK(!doc.is_discarded());
  SEMMAP_FUZZ_CHECK(doc["nodes"].size() == mapper.graph().size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t sep = input.find(kSeparator);
  const absl::string_view model_bytes = input.substr(0, sep);
  const absl::string_view manifest_text =
      sep == absl::string_view::npos ? absl::string_view() : input.substr(sep + kSeparator.size());

  semmap::GraphOptions graph_options;
  graph_options.max_subgraph_depth = 16;
  absl::StatusOr<semmap::Graph> graph = semmap::Graph::Parse(model_bytes, "fuzz.onnx", graph_options);
  if (!graph.ok()) return 0;
  semmap_fuzz::CheckGraph(*graph, graph_options);
  absl::StatusOr<semmap::Manifest> manifest =
      sep == absl::string_view::npos
          ? absl::StatusOr<semmap::Manifest>(absl::NotFoundError("no manifest"))
          : semmap::Manifest::Parse(manifest_text, "fuzz.json");

  // A manifest that does not fit the graph is refused (FailedPrecondition)
  // unless allowed; allowed, every loaded graph maps (no limit refuses one).
  const semmap::Manifest* m = manifest.ok() ? &*manifest : nullptr;
  absl::StatusOr<semmap::SemanticMapper> strict = semmap::SemanticMapper::Create(*graph, m);
  SEMMAP_FUZZ_CHECK(strict.ok() || (m != nullptr && absl::IsFailedPrecondition(strict.status())));
  semmap::MapperOptions options;
  options.allow_manifest_mismatch = true;
  absl::StatusOr<semmap::SemanticMapper> mapper = semmap::SemanticMapper::Create(*graph, m, options);
  SEMMAP_FUZZ_CHECK(mapper.ok());
  SEMMAP_FUZZ_CHECK(strict.ok() == mapper->manifestFit().fits);
  SEMMAP_FUZZ_CHECK(mapper->hasManifest() == manifest.ok());
  CheckMappings(*mapper);
  CheckQueries(*mapper);
  CheckTreeAndSidecar(*mapper);
  return 0;
}
