// The Python side's model: one SemanticMapper (which owns its graph and
// manifest), the rules it was mapped with, and caches of the Python strings
// it hands out (node ids per node, module path / class / category per
// module, op types and strategy names per distinct value). Mapping objects
// hold a reference to their Model, so nothing they point into goes away
// while they live. Every method runs with the GIL held except the long
// libsemmap calls (loading and mapping, building the query), which release
// it.
#ifndef SEMMAP_PYTHON_SRC_MODEL_H_
#define SEMMAP_PYTHON_SRC_MODEL_H_

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "semmap/semmap.h"

namespace semmap_python {

inline nanobind::str Str(absl::string_view s) { return nanobind::str(s.data(), s.size()); }

// Paths cross as bytes (semmap._core_path: os.fsencode, NUL refused), so
// that a file name that is not UTF-8 reaches the file system unchanged.
inline std::string PathOf(const nanobind::bytes& path) {
  return std::string(path.c_str(), path.size());
}
inline nanobind::bytes Bytes(const std::string& s) { return nanobind::bytes(s.data(), s.size()); }

// The Python strings of one module's Mapping fields.
struct ModuleStrings {
  nanobind::object path, class_name, qualified_class, category;
};

class Model {
 public:
  // Loads and maps ('' means none), the GIL released meanwhile; the
  // library's error as the Python exception errors.h maps it to.
  static std::unique_ptr<Model> Load(const nanobind::bytes& model_path,
                                     const nanobind::bytes& manifest_path,
                                     const nanobind::bytes& reference_path,
                                     const nanobind::bytes& rules_path,
                                     bool allow_manifest_mismatch, bool use_record);

  const semmap::SemanticMapper& mapper() const { return *mapper_; }
  const semmap::Graph& graph() const { return mapper_->graph(); }
  std::size_t size() const { return mapper_->graph().size(); }
  const std::string& modelPath() const { return model_path_; }
  const std::string& manifestPath() const { return manifest_path_; }
  const std::string& referencePath() const { return reference_path_; }
  const std::string& rulesPath() const { return rules_path_; }
  // The files read besides the model and the manifest: no write replaces
  // them unless told to (the library's protected_paths).
  std::vector<std::string> otherInputs() const { return {reference_path_, rules_path_}; }
  const semmap::Rules* rules() const { return &mapper_->rules(); }

  // The node's id as a Python str (made once).
  const nanobind::object& NodeIdString(semmap::NodeId node) {
    nanobind::object& s = node_ids_[static_cast<std::size_t>(node)];
    if (!s.is_valid()) s = Str(graph().node(node).id);
    return s;
  }
  const ModuleStrings& ModuleStringsOf(semmap::NodeId node);
  const nanobind::object& OpTypeString(semmap::NodeId node);
  const nanobind::object& StrategyString(semmap::Strategy strategy);

  nanobind::list NodeList(const std::vector<semmap::NodeId>& nodes);

  // Built once, on the first query. Threads asking at the same moment wait
  // for the first to build it, the GIL released (so that none waits holding
  // it while the builder, which needs no Python, finishes).
  const semmap::SemanticQuery& query();

  // Node index by id or unique name; KeyError naming it otherwise.
  semmap::NodeId FindNode(const std::string& name) const;

 private:
  absl::Status Open();

  std::string model_path_, manifest_path_, reference_path_, rules_path_;
  bool allow_manifest_mismatch_ = false;
  bool use_record_ = true;
  std::optional<semmap::SemanticMapper> mapper_;
  std::once_flag query_once_;
  std::unique_ptr<semmap::SemanticQuery> query_;  // built on the first query (query())
  std::vector<nanobind::object> node_ids_;
  std::vector<nanobind::object> node_op_types_;  // per node: a reference into op_types_
  std::vector<ModuleStrings> modules_;  // index module + 1; 0 = unmapped
  absl::flat_hash_map<absl::string_view, nanobind::object> op_types_;
  std::array<nanobind::object, semmap::kStrategyCount> strategies_;
};

// One node's answer; keeps its Model alive.
struct MappingRef {
  nanobind::object owner;
  Model* model;
  semmap::NodeId node;

  semmap::Mapping mapping() const { return model->mapper().moduleFor(node); }
};

struct MappingIterator {
  nanobind::object owner;
  Model* model;
  semmap::NodeId next = 0;
};

inline MappingRef MakeRef(nanobind::handle self, semmap::NodeId node) {
  return MappingRef{nanobind::borrow(self), nanobind::inst_ptr<Model>(self), node};
}

// The classes of semmap._core, each bound in its own file.
void BindMapping(nanobind::module_& mod);  // bind_mapping.cc
void BindModel(nanobind::module_& mod);    // bind_model.cc

}  // namespace semmap_python

#endif  // SEMMAP_PYTHON_SRC_MODEL_H_
