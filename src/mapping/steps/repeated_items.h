// Whether a manifest is of a deeper model than the graph: the trailing
// items of a repeated container ("layers.10" to "layers.11") that nothing
// in the graph reaches. Part of the fit check (assess_fit.h) and of the
// record's check (mapper.cc).
#ifndef SEMMAP_SRC_MAPPING_STEPS_REPEATED_ITEMS_H_
#define SEMMAP_SRC_MAPPING_STEPS_REPEATED_ITEMS_H_

#include <cstddef>
#include <vector>

#include "absl/types/span.h"
#include "mapping/steps/fit_notes.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// Trailing items of a repeated container that nothing in the graph touches:
// a misfit when they are at least this share of the container. An export
// may drop a dead last layer (a feature taken from the penultimate one),
// never a quarter of them.
inline constexpr std::size_t kUnusedItemShare = 4;

// Marks `id` and its ancestors in `touched` (per module): the modules some
// evidence reaches.
void Touch(const Manifest& manifest, ModuleId id, std::vector<bool>* touched);

// Children after the last one `touched` (per module) in modules with a
// touched child, as UnusedRepeatedItems counts them; folded neighbours are
// noted in `notes`.
std::size_t UnusedTrailingItems(const Manifest& manifest, const std::vector<bool>& touched,
                                ModuleId* container, std::size_t* container_items,
                                NoteTally* notes);

// The trailing items of a repeated container no node of `node_modules`
// (per node, its module or kNoModule) reaches, when they are a quarter of
// the container's items or more: the manifest is of a deeper model than the
// graph. 0 otherwise; `container` and `items` name the worst container.
// The fit's own test (ManifestFit::unused_items), on a finished mapping.
std::size_t UnusedRepeatedItems(const Manifest& manifest, absl::Span<const ModuleId> node_modules,
                                ModuleId* container, std::size_t* items);

// The modules owning the parameter-named initializers of `graph` (a
// quantizer's suffixes stripped, or the parameter's name found inside a
// tool's: "q_output_<parameter>_1"), one entry per initializer: what the
// record's check reads the depth of a model from.
std::vector<ModuleId> WeightOwners(const Graph& graph, const Manifest& manifest,
                                   const Rules& rules);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_REPEATED_ITEMS_H_
