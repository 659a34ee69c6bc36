#include "model.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "errors.h"

namespace nb = nanobind;

namespace semmap_python {

std::unique_ptr<Model> Model::Load(const nb::bytes& model_path, const nb::bytes& manifest_path,
                                   const nb::bytes& reference_path, const nb::bytes& rules_path,
                                   bool allow_manifest_mismatch, bool use_record) {
  auto model = std::make_unique<Model>();
  model->allow_manifest_mismatch_ = allow_manifest_mismatch;
  model->use_record_ = use_record;
  model->model_path_ = PathOf(model_path);
  model->manifest_path_ = PathOf(manifest_path);
  model->reference_path_ = PathOf(reference_path);
  model->rules_path_ = PathOf(rules_path);
  absl::Status status;
  {
    nb::gil_scoped_release release;
    status = model->Open();
  }
  ThrowIfError(status);
  model->modules_.resize(model->mapper().manifest().size() + 1);
  model->node_ids_.resize(model->mapper().graph().size());
  model->node_op_types_.resize(model->mapper().graph().size());
  return model;
}

const ModuleStrings& Model::ModuleStringsOf(semmap::NodeId node) {
  const semmap::Mapping& m = mapper_->moduleFor(node);
  ModuleStrings& s = modules_[static_cast<std::size_t>(m.module + 1)];
  if (!s.path.is_valid()) {
    s.path = m.mapped() ? nb::object(Str(m.module_path)) : nb::none();
    s.class_name = Str(m.class_name);
    s.qualified_class = Str(m.qualified_class);
    s.category = Str(m.category);
  }
  return s;
}

const nb::object& Model::OpTypeString(semmap::NodeId node) {
  nb::object& cached = node_op_types_[static_cast<std::size_t>(node)];
  if (!cached.is_valid()) {
    const semmap::Node& n = graph().node(node);
    nb::object& s = op_types_[n.op_type];
    if (!s.is_valid()) s = Str(n.op_type);
    cached = s;
  }
  return cached;
}

const nb::object& Model::StrategyString(semmap::Strategy strategy) {
  nb::object& s = strategies_[static_cast<std::size_t>(strategy)];
  // A member of semmap.Strategy (python/semmap/_strategy.py), a str subclass.
  if (!s.is_valid()) {
    s = nb::module_::import_("semmap._strategy")
            .attr("Strategy")(Str(semmap::StrategyName(strategy)));
  }
  return s;
}

nb::list Model::NodeList(const std::vector<semmap::NodeId>& nodes) {
  nb::list out;
  for (semmap::NodeId n : nodes) out.append(NodeIdString(n));
  return out;
}

const semmap::SemanticQuery& Model::query() {
  nb::gil_scoped_release release;
  std::call_once(query_once_,
                 [this] { query_ = std::make_unique<semmap::SemanticQuery>(*mapper_); });
  return *query_;
}

semmap::NodeId Model::FindNode(const std::string& name) const {
  const semmap::NodeId id = graph().find(name);
  if (id == semmap::kNoNode) {
    ThrowIfError(absl::NotFoundError(absl::StrCat(model_path_, ": no node \"",
                                                  absl::string_view(name).substr(0, 200),
                                                  name.size() > 200 ? "...\"" : "\"")),
                 NotFoundMeans::kKey);
  }
  return id;
}

absl::Status Model::Open() {
  semmap::SemanticMapper::OpenOptions options;
  options.mapper.allow_manifest_mismatch = allow_manifest_mismatch_;
  options.use_record = use_record_;
  options.reference_path = reference_path_;
  options.rules_path = rules_path_;
  absl::StatusOr<semmap::SemanticMapper> mapper =
      semmap::SemanticMapper::Open(model_path_, manifest_path_, options);
  if (!mapper.ok()) return mapper.status();
  mapper_.emplace(*std::move(mapper));
  return absl::OkStatus();
}

}  // namespace semmap_python
