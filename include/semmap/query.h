// SemanticQuery: which ONNX nodes belong to a module, a layer, a class.
//
//   semmap::SemanticQuery query(*mapper);
//   absl::StatusOr<std::vector<semmap::NodeId>> attn =
//       query.nodesOfModule("bert.encoder.layer.0.attention", /*subtree=*/true);
//   absl::StatusOr<std::vector<semmap::NodeId>> second = query.nodesOfLayer(1);
//   absl::StatusOr<std::vector<semmap::NodeId>> linears = query.nodesOfClass("Linear");
//
// Answers come from the mapper's Mappings; nothing is re-parsed. Node lists
// are sorted by NodeId (graph traversal order) and hold no duplicates.
//
// Layers are found from the manifest's shape alone, never from names: a
// *repeated container* is a module whose children are all numeric atoms
// ("encoder.layer.0", "encoder.layer.1") of one qualified class (a
// ModuleList of BertLayer, GPT2Block, LlamaDecoderLayer, T5Block). The
// *layer containers* are the repeated containers that hold blocks (their
// items have submodules) and are not nested inside another repeated
// container's item: "bert.encoder.layer", "transformer.h", "model.layers",
// and both "encoder.block" and "decoder.block" for T5. Layer N is item N of
// each layer container.
//
// Lifetime: the SemanticMapper (and its Graph and Manifest) must outlive the
// query. Thread-safety: const methods are safe to call concurrently.
#ifndef SEMMAP_INCLUDE_SEMMAP_QUERY_H_
#define SEMMAP_INCLUDE_SEMMAP_QUERY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "semmap/mapping.h"

namespace semmap {

// A module whose children are all numeric atoms sharing a qualified class.
struct SEMMAP_EXPORT RepeatedContainer {
  ModuleId module = kNoModule;
  // Children ordered by their numeric atom.
  std::vector<ModuleId> items;
  std::vector<std::int64_t> indices;  // the numeric atom of each item
  std::string item_class;
  std::string item_qualified_class;
  // Not inside an item of another repeated container.
  bool outermost = true;
  // Used by nodesOfLayer(): outermost and its items have submodules.
  bool layer = false;
};

class SEMMAP_EXPORT SemanticQuery {
 public:
  explicit SemanticQuery(const SemanticMapper& mapper);

  // Nodes mapped to the module at `path` ("" is the root); with `subtree`,
  // also those mapped to its descendants. NotFound when the manifest has no
  // such module (the message quotes the path).
  absl::StatusOr<std::vector<NodeId>> nodesOfModule(absl::string_view path,
                                                    bool subtree = false) const;

  // Nodes of layer `index` (whole subtree) in every layer container (the
  // union, e.g. encoder and decoder block N of T5). InvalidArgument for a
  // negative index; NotFound when the model has no layer container or none
  // has an item `index` (the message lists the containers and their sizes).
  absl::StatusOr<std::vector<NodeId>> nodesOfLayer(std::int64_t index) const;
  // Same within the repeated container at `container` (any repeated
  // container, layer or not). NotFound when `container` is not a module or
  // not a repeated container, or has no item `index`.
  absl::StatusOr<std::vector<NodeId>> nodesOfLayer(absl::string_view container,
                                                   std::int64_t index) const;

  // Nodes mapped to modules whose class name ("Linear") or qualified class
  // ("torch.nn.modules.linear.Linear") equals `cls`. NotFound when no module
  // of the manifest has that class; InvalidArgument when `cls` is empty.
  absl::StatusOr<std::vector<NodeId>> nodesOfClass(absl::string_view cls) const;

  // Nodes whose module path contains a match of the RE2 `pattern`
  // (unanchored: use ^...$ for a whole-path match). InvalidArgument for an
  // empty pattern or one RE2 rejects (the message quotes the pattern and
  // RE2's error).
  absl::StatusOr<std::vector<NodeId>> nodesMatching(absl::string_view pattern) const;

  // Modules with no node mapped to them; with `subtree`, only those whose
  // whole subtree has none (dropout in eval mode, unused heads). Root never
  // listed. In manifest order.
  std::vector<ModuleId> modulesWithoutNodes(bool subtree = true) const;

  // Nodes of modules of a semantic category ("attention", "projection"...:
  // Mapping::category, from the rule file). An empty result is not an error.
  std::vector<NodeId> nodesOfCategory(absl::string_view category) const;

  // Nodes whose confidence is strictly below `threshold` (unmapped nodes
  // have confidence 0 and are included for any threshold > 0).
  std::vector<NodeId> nodesBelowConfidence(double threshold) const;

  // Nodes whose mapping passes `predicate`: the hook for filters the fixed
  // queries do not cover (a semantic category, a strategy).
  std::vector<NodeId> nodesWhere(
      const std::function<bool(NodeId, const Mapping&)>& predicate) const;

  // Every repeated container, in manifest order.
  const std::vector<RepeatedContainer>& repeatedContainers() const { return containers_; }
  // The subset used by nodesOfLayer(index).
  std::vector<const RepeatedContainer*> layerContainers() const;
  // The repeated container at `path`, or nullptr.
  const RepeatedContainer* findContainer(absl::string_view path) const;

  const SemanticMapper& mapper() const { return *mapper_; }

 private:
  void DetectContainers();
  std::vector<NodeId> SubtreeNodes(const std::vector<ModuleId>& roots) const;

  const SemanticMapper* mapper_;
  std::vector<RepeatedContainer> containers_;
  // Nodes per module (own mappings), in NodeId order.
  std::vector<std::vector<NodeId>> own_nodes_;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_QUERY_H_
