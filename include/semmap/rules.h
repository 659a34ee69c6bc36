// Rules: the user-extendable data behind semmap's inference.
//
// Everything semmap knows beyond the graph and the manifest lives in a rule
// file (JSON with RE2 patterns), never in code: which node names are built
// from value names, which suffixes optimizers append to value names, which
// ops carry weights or belong with their consumers, and how module classes
// map to semantic categories (attention, projection, normalization, ...).
// rules/default.json is compiled in; Rules::Load reads a user's file in the
// same format (docs/rules.md).
//
//   absl::StatusOr<semmap::Rules> rules = semmap::Rules::Load("my_rules.json");
//   semmap::MapperOptions options;
//   options.rules = &*rules;
//
// Immutable after loading; safe to share between threads.
#ifndef SEMMAP_INCLUDE_SEMMAP_RULES_H_
#define SEMMAP_INCLUDE_SEMMAP_RULES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/manifest.h"

namespace semmap {

class SEMMAP_EXPORT Rules {
 public:
  // The compiled-in default rules (rules/default.json).
  static const Rules& Default();
  // Reads a rule file. Errors name the file and the JSON pointer:
  // NotFound, InvalidArgument (bad JSON, wrong field types, an RE2 pattern
  // that does not compile or exceeds the program-size budget),
  // FailedPrecondition (unknown format version).
  static absl::StatusOr<Rules> Load(const std::string& path);
  static absl::StatusOr<Rules> Parse(absl::string_view json, absl::string_view origin);

  Rules(Rules&&) noexcept;
  Rules& operator=(Rules&&) noexcept;
  ~Rules();

  // A node name built from a value name ("<value>_QuantizeLinear"): its
  // scope describes the value's producer, not the node.
  bool isDerivedNodeName(absl::string_view name) const;
  // `value` without the optimizer/exporter suffixes of value names
  // ("/a/MatMul_output_0_quantized" -> "/a/MatMul").
  absl::string_view stripValueSuffixes(absl::string_view value) const;
  // Ops that pass a weight through unchanged in meaning (Transpose, Cast...).
  bool isWeightPassthrough(absl::string_view op_type) const;
  // Ops that belong with their consumers (quantize, cast, constants...).
  bool followsConsumers(absl::string_view op_type) const;
  // Ops that read only their input's shape (Shape, Size): the start of a
  // shape computation, which belongs with the node using the shape.
  bool isShapeSource(absl::string_view op_type) const;
  // The semantic category of a manifest module ("" when no rule matches).
  std::string categoryOf(const Manifest& manifest, ModuleId module) const;
  // categoryOf() of every module of `manifest`, by module id; the class
  // patterns run once per distinct pair of classes, not per module.
  std::vector<std::string> categoriesOf(const Manifest& manifest) const;
  // A module of the framework's own library (torch.nn.Linear, LayerNorm,
  // containers...): its forward is one library op on its parameters, so it
  // owns the nodes reading them and nothing else; a container owns none.
  bool isLibraryModule(const ModuleInfo& module) const;
  // A container that is never called (torch.nn.ModuleList, ModuleDict):
  // it is on no call stack, so exporters' namespaces have no level for it
  // and Annotate's namespace skips it.
  bool isUncalledModule(const ModuleInfo& module) const;
  // Index of the first "module_ops" rule matching a parameterless module's
  // class, or -1: the ops such a module produces (an activation's Relu, a
  // pooling module's MaxPool), which identify its nodes in a graph without
  // names.
  int moduleOpsRule(const ModuleInfo& module) const;
  // True when `op_type` is one rule `moduleOpsRule()` returned produces.
  bool moduleProduces(int rule, absl::string_view op_type) const;
  // The creation counter an exporter wrote into a node or value name
  // ("node_MatMul_55", "val_93" -> 55, 93: the dynamo exporter numbers what
  // it creates in execution order), when an "order_keys" rule matches.
  bool orderKey(absl::string_view name, std::uint64_t* key) const;

 private:
  struct Impl;
  explicit Rules(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_RULES_H_
