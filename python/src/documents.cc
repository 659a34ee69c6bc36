#include "documents.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace nb = nanobind;

namespace semmap_python {
namespace {

using Field = std::pair<const char*, nb::object>;

// A dict with its keys in sorted order, as the JSON writer's objects.
nb::dict SortedDict(const std::vector<Field>& fields) {
  std::vector<const Field*> order;
  order.reserve(fields.size());
  for (const Field& f : fields) order.push_back(&f);
  std::sort(order.begin(), order.end(),
            [](const Field* a, const Field* b) { return std::strcmp(a->first, b->first) < 0; });
  nb::dict d;
  for (const Field* f : order) d[f->first] = f->second;
  return d;
}

// Text from a file: invalid UTF-8 becomes U+FFFD, as in the JSON writer.
nb::object Text(absl::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (o == nullptr) throw nb::python_error();
  return nb::steal(o);
}

nb::object TextOrNone(bool present, absl::string_view s) { return present ? Text(s) : nb::none(); }

template <typename T>
nb::object Int(T value) {
  return nb::cast(value);
}

// A double as the JSON writer spells it: NaN and infinities become null.
nb::object Number(double value) {
  return std::isfinite(value) ? nb::object(nb::float_(value)) : nb::none();
}

nb::dict Histogram(const std::map<std::string, std::size_t>& counts) {
  nb::dict d;  // a std::map: already in key order
  for (const auto& [op, count] : counts) d[Text(op)] = count;
  return d;
}

nb::dict AB(nb::object a, nb::object b) { return SortedDict({{"a", a}, {"b", b}}); }

nb::dict DiffNodeDict(const semmap::DiffNode& n) {
  return SortedDict({{"key", Text(n.key)},
                     {"name", Text(n.name)},
                     {"op_type", Text(n.op_type)},
                     {"module", TextOrNone(n.mapped, n.module)},
                     {"confidence", Number(n.confidence)}});
}

nb::list DiffNodeList(const std::vector<semmap::DiffNode>& nodes) {
  nb::list out;
  for (const semmap::DiffNode& n : nodes) out.append(DiffNodeDict(n));
  return out;
}

// The fields of a tree module's dict, in the order TreeDict fills them.
constexpr std::array<const char*, 13> kTreeModuleFields = {
    "path", "class", "qualified_class", "parent", "depth", "children", "own_nodes",
    "subtree_nodes", "own_parameters", "subtree_parameters", "op_types", "subtree_op_types",
    "folded"};

// Strings a tree repeats (class names, op types), made once per call.
class TextCache {
 public:
  const nb::object& operator()(absl::string_view s) {
    nb::object& o = cache_[s];
    if (!o.is_valid()) o = Text(s);
    return o;
  }

 private:
  absl::flat_hash_map<absl::string_view, nb::object> cache_;
};

nb::dict Histogram(const std::map<std::string, std::size_t>& counts, TextCache& text) {
  nb::dict d;  // a std::map: already in key order
  for (const auto& [op, count] : counts) d[text(op)] = count;
  return d;
}

}  // namespace

// Long (about 55 lines): a dict per module, its keys made once and put in
// sorted order once (SortedDict's order), its repeated strings cached; the
// tree of a 2M-node model is a few hundred thousand such dicts.
nb::dict TreeDict(const semmap::ModuleTree& tree, const semmap::Manifest& manifest) {
  const std::vector<semmap::TreeModule>& modules = tree.modules();
  // One str per module path, shared by its entry, its parent's children
  // and its children's parent.
  std::vector<nb::object> paths;
  paths.reserve(modules.size());
  for (const semmap::TreeModule& m : modules) paths.push_back(Text(tree.info(m).path));
  std::array<std::size_t, kTreeModuleFields.size()> order;
  std::array<nb::object, kTreeModuleFields.size()> keys;
  for (std::size_t k = 0; k < order.size(); ++k) {
    order[k] = k;
    keys[k] = nb::str(kTreeModuleFields[k]);
  }
  std::sort(order.begin(), order.end(), [](std::size_t a, std::size_t b) {
    return std::strcmp(kTreeModuleFields[a], kTreeModuleFields[b]) < 0;
  });
  TextCache text;
  nb::list list;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const semmap::TreeModule& m = modules[i];
    const semmap::ModuleInfo& info = tree.info(m);
    nb::list children, folded;
    for (int c : m.children) children.append(paths[static_cast<std::size_t>(c)]);
    for (semmap::ModuleId f : m.folded) folded.append(Text(manifest.path(f)));
    const std::array<nb::object, kTreeModuleFields.size()> values = {
        paths[i],
        text(info.class_name),
        text(info.qualified_class),
        m.parent < 0 ? nb::none() : paths[static_cast<std::size_t>(m.parent)],
        Int(m.depth),
        children,
        Int(m.own_nodes),
        Int(m.subtree_nodes),
        Int(m.own_parameters),
        Int(m.subtree_parameters),
        Histogram(m.own_op_types, text),
        Histogram(m.subtree_op_types, text),
        folded};
    nb::dict d;
    for (std::size_t k : order) d[keys[k]] = values[k];
    list.append(d);
  }
  std::vector<Field> fields = {
      {"view", nb::str(tree.modelSpecificOnly() ? "model_specific" : "full")},
      {"unmapped_nodes", Int(tree.unmappedNodes())},
      {"modules", list}};
  // Only when TreeOptions::max_op_type_entries emptied the subtree histograms.
  if (!tree.subtreeOpTypesComplete()) {
    fields.emplace_back("subtree_op_types_complete", nb::bool_(false));
  }
  return SortedDict(fields);
}

nb::dict DiffDict(const semmap::ModelDiff& diff, bool all_modules) {
  nb::list modules;
  for (const semmap::ModuleDelta& m : diff.modules) {
    if (!all_modules && !m.changed()) continue;
    modules.append(SortedDict({{"path", Text(m.path)},
                               {"class", Text(m.class_name)},
                               {"own", AB(Int(m.own_a), Int(m.own_b))},
                               {"subtree", AB(Int(m.subtree_a), Int(m.subtree_b))},
                               {"op_types", AB(Histogram(m.ops_a), Histogram(m.ops_b))}}));
  }
  nb::list moved;
  for (const semmap::MovedNode& m : diff.moved) {
    moved.append(SortedDict({{"key", Text(m.a.key)},
                             {"op_type", Text(m.a.op_type)},
                             {"module_a", TextOrNone(m.a.mapped, m.a.module)},
                             {"module_b", TextOrNone(m.b.mapped, m.b.module)}}));
  }
  nb::list fusions;
  for (const semmap::FusionGroup& g : diff.fusions) {
    fusions.append(SortedDict({{"module", TextOrNone(g.mapped, g.module)},
                               {"fused", DiffNodeList(g.fused)},
                               {"replaced", DiffNodeList(g.replaced)}}));
  }
  auto side = [](const std::string& model_class, std::size_t nodes) {
    return SortedDict({{"model_class", Text(model_class)}, {"nodes", Int(nodes)}});
  };
  return SortedDict({{"format", nb::str("semmap.diff")},
                     {"a", side(diff.model_class_a, diff.nodes_a)},
                     {"b", side(diff.model_class_b, diff.nodes_b)},
                     {"module_overlap", Number(diff.module_overlap)},
                     {"common_nodes", Int(diff.common_nodes)},
                     {"modules", modules},
                     {"moved", moved},
                     {"fusions", fusions},
                     {"removed", DiffNodeList(diff.removed)}});
}

}  // namespace semmap_python
