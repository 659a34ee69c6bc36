#include "mapping/steps/repeated_items.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"
#include "base/text.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {
namespace {

// A child's place in a repetition: its class and its last path atom
// without trailing digits ("denselayer3" -> "denselayer", "3" -> "").
// Items of one repeated container ("layer.0", "layer.1"; "denselayer1",
// "denselayer2") share both.
std::pair<absl::string_view, absl::string_view> RepetitionKey(const ModuleInfo& info) {
  absl::string_view atom = info.path;
  atom = atom.substr(atom.rfind('.') + 1);
  while (!atom.empty() && absl::ascii_isdigit(static_cast<unsigned char>(atom.back()))) {
    atom.remove_suffix(1);
  }
  return {info.qualified_class, atom};
}

}  // namespace

void Touch(const Manifest& manifest, ModuleId id, std::vector<bool>* touched) {
  for (; id != kNoModule && !(*touched)[id]; id = manifest.parent(id)) {
    (*touched)[id] = true;
  }
}

// Children after the last one any evidence touched, in modules with a
// touched child. Those repeating a touched child (same class and name
// stem; in a numbered container, of one class; otherwise blocks without
// tensors of their own) are another
// depth of the container: the one with the most is the
// result (`*container` set) when they are a quarter of its items or more
// (an export may drop a dead last layer, never a quarter of them). Those
// of other kinds that hold tensors are noted as folded into a neighbour
// (a BatchNorm after the Conv it was folded into).
std::size_t UnusedTrailingItems(const Manifest& manifest, const std::vector<bool>& touched,
                                ModuleId* container, std::size_t* container_items,
                                NoteTally* notes) {
  std::size_t worst = 0;
  std::vector<std::pair<absl::string_view, absl::string_view>> used;
  for (std::size_t i = 0; i < manifest.size(); ++i) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(i));
    if (!touched[i] || info.children.empty()) continue;
    std::size_t last_touched = 0;
    used.clear();
    for (std::size_t k = 0; k < info.children.size(); ++k) {
      if (!touched[info.children[k]]) continue;
      last_touched = k + 1;
      used.push_back(RepetitionKey(manifest.module(info.children[k])));
    }
    if (last_touched == 0) continue;
    // A numbered container of one class repeats its items (layers); one of
    // several classes is a pipeline (Linear, ReLU, Linear), whose last
    // items an optimizer may fold into constants.
    bool one_class = true;
    for (ModuleId c : info.children) {
      one_class = one_class && manifest.module(c).qualified_class ==
                                   manifest.module(info.children.front()).qualified_class;
    }
    // Named repetitions ("denselayer1", "denselayer2") are of blocks that
    // only hold other modules; named modules with tensors of their own
    // sharing a stem ("bn1", "bn2", a norm with its activation inside) are
    // parts of one block, and folding may leave any of them without a node.
    const auto repeats = [&used, &info, one_class](const ModuleInfo& child) {
      if (info.numbered_children ? !one_class
                                 : (child.children.empty() || !child.parameters.empty() ||
                                    !child.buffers.empty())) {
        return false;
      }
      return std::find(used.begin(), used.end(), RepetitionKey(child)) != used.end();
    };
    std::size_t items = 0;
    std::size_t unused = 0;
    for (std::size_t k = 0; k < info.children.size(); ++k) {
      const ModuleInfo& child = manifest.module(info.children[k]);
      if (repeats(child)) {
        ++items;
        unused += k >= last_touched;
      } else if (k >= last_touched && (!child.parameters.empty() || !child.buffers.empty())) {
        notes->Add(FitNoteKind::kFoldedByExporter, child.path, 0);
      }
    }
    if (unused == 0 || unused * kUnusedItemShare < items) continue;
    if (unused > worst) {
      worst = unused;
      *container = static_cast<ModuleId>(i);
      *container_items = items;
    }
  }
  return worst;
}

std::size_t UnusedRepeatedItems(const Manifest& manifest, absl::Span<const ModuleId> node_modules,
                                ModuleId* container, std::size_t* items) {
  std::vector<bool> touched(manifest.size(), false);
  for (ModuleId m : node_modules) Touch(manifest, m, &touched);
  NoteTally notes;
  return UnusedTrailingItems(manifest, touched, container, items, &notes);
}

std::vector<ModuleId> WeightOwners(const Graph& graph, const Manifest& manifest,
                                   const Rules& rules) {
  const RuleQueries queries(rules);
  std::vector<ModuleId> owners;
  for (const TensorInfo& t : graph.initializers()) {
    ModuleId owner = manifest.ownerOfTensor(queries.StripValueSuffixes(t.name));
    if (owner == kNoModule) {
      FindEmbeddedName(t.name, ParameterLikeName, [&](absl::string_view part) {
        owner = manifest.ownerOfTensor(part);
        return owner != kNoModule;
      });
    }
    if (owner != kNoModule) owners.push_back(owner);
  }
  return owners;
}

}  // namespace internal
}  // namespace semmap
