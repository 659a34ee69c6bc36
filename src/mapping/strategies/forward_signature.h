// What a manifest's forward signatures (schema version 2: each module's
// calls and own operations in the order its forward ran them) say about
// the nodes between two anchored modules.
//
// In execution order, the nodes after module A's weights and before module
// B's are exactly what runs on the way out of A and into B: the rest of A's
// forward, the rest of each ancestor's forward after its call toward A up
// to the lowest common ancestor, the LCA's own operations and the other
// modules it calls between its call toward A and its call toward B, then
// the start of each module's forward on the way down to B. Between()
// lists those operations with the module that runs each; Align() matches
// them with the nodes of the gap by op type (rules "forward_ops": the ONNX
// op types a torch operation may be exported as).
//
// A signature records a module's first call; a module called several times
// in one forward is looked up at its first call. Without signatures (a
// schema version 1 manifest) nothing is known.
//
// Work and memory (docs/robustness.md, "Forward signatures"): the lookups
// Between() makes (a module's last weight read, its first call toward a
// module from an event on, its weight reads around an event) come from
// tables built once per object, in time and memory linear in the events of
// the manifest; each lookup and each event visited is charged to a budget
// of kMaxVisited per gap and, over all gaps of the object's life, of
// kMaxVisited plus kVisitsPerItem per graph node and manifest event. A gap
// past either budget is left open (Between returns false).
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_FORWARD_SIGNATURE_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_FORWARD_SIGNATURE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// One operation expected in a gap: the module whose own code runs it.
struct ExpectedOp {
  ModuleId module = kNoModule;
  absl::string_view op;  // a view of the manifest's event
};

class ForwardSignatures {
 public:
  // `graph_nodes`: the size of the graph whose gaps are matched (the
  // object's budget grows with it).
  ForwardSignatures(const Manifest& manifest, const Rules& rules, std::size_t graph_nodes = 0);

  // True when the manifest records any module's forward.
  bool available() const { return available_; }

  // The operations expected after `a`'s weights are read and before `b`'s
  // are, in order; false when the signatures do not tell (a module on the
  // way not recorded, a call not found, more operations than a bound, a
  // budget spent).
  bool Between(ModuleId a, ModuleId b, std::vector<ExpectedOp>* out) const;

  // The module of each node of a gap (`op_types`, in order), by matching
  // them with `expected` in order: the most nodes matched to an operation
  // that may be exported as their op type. kNoModule for a node matched to
  // modules that differ between the earliest and the latest such matching,
  // or to none; all kNoModule past a bound on the work, per gap and over
  // all gaps of the object's life (one graph).
  std::vector<ModuleId> Align(absl::Span<const absl::string_view> op_types,
                              absl::Span<const ExpectedOp> expected) const;

 private:
  // The lookup tables of one module's events, as ranges of the flat
  // vectors below.
  struct ModuleIndex {
    std::size_t calls_begin = 0, calls_end = 0;  // into calls_
    std::size_t reads_begin = 0, reads_end = 0;  // into reads_
    // The last event reading the module's own weights; the event count
    // when none.
    std::size_t last_read = 0;
    // One past the last own operation reading them before the first call
    // (0 when none).
    std::size_t reads_before_call = 0;
  };
  // A call event: callee and index, sorted by both within a module.
  struct CallAt {
    ModuleId callee;
    std::size_t event;
    bool operator<(const CallAt& o) const {
      return callee != o.callee ? callee < o.callee : event < o.event;
    }
  };

  // Builds the tables on first use (O(events)).
  void BuildIndex() const;
  // Takes `n` visits from the gap's and the object's budgets; false when
  // either is spent.
  bool Charge(std::size_t n) const;
  // Appends every operation `callee`'s forward runs, its calls expanded
  // (`depth` calls deep).
  bool Expand(ModuleId callee, int depth, std::vector<ExpectedOp>* out) const;
  // Appends the operations of `module`'s events [begin, end), calls expanded.
  bool Append(ModuleId module, std::size_t begin, std::size_t end, int depth,
              std::vector<ExpectedOp>* out) const;
  // Index of the first event of `module` at or after `from` that calls
  // `target` or a module on the way down to it; the event count when none
  // (or a budget is spent). One table lookup per ancestor of `target`.
  std::size_t CallToward(ModuleId module, ModuleId target, std::size_t from) const;
  // The last event of `module` before `end` that reads its own weights,
  // and the first at or after `from`; the event count when none.
  std::size_t LastReadBefore(ModuleId module, std::size_t end) const;
  std::size_t FirstReadFrom(ModuleId module, std::size_t from) const;
  bool Matches(absl::string_view torch_op, absl::string_view op_type) const;

  const Manifest& manifest_;
  const Rules& rules_;
  bool available_ = false;
  // Keys view the manifest's events and the graph's op types, which outlive this.
  mutable absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, bool> matches_;
  // What the alignments of one graph may still use (table cells).
  mutable std::size_t cells_left_;
  // Events and lookups Between() may still make, for the current gap and
  // for the object's life.
  mutable std::size_t gap_visits_left_ = 0;
  mutable std::size_t visits_left_ = 0;
  std::size_t graph_nodes_ = 0;
  mutable bool indexed_ = false;
  mutable std::vector<ModuleIndex> index_;
  mutable std::vector<CallAt> calls_;
  mutable std::vector<std::size_t> reads_;
  // Per module: a container without a forward (rules "uncalled_modules").
  mutable std::vector<bool> container_;
};

// One op the model ran: the module whose own code ran it, and the event.
struct ForwardCall {
  ModuleId module;
  const ForwardEvent* event;
};

// The root's forward with every call of a recorded module expanded, in
// order (`out` views the manifest's events). False without a recorded
// root, or past kMaxVisited plus kVisitsPerItem per manifest event and
// per node of the graph (`graph_nodes`) events visited: a module calling
// an empty one 10^5 times, each of those calling ... expands in bounded
// work.
bool ExpandRoot(const Manifest& manifest, std::size_t graph_nodes, std::vector<ForwardCall>* out);

// Per module, per parameter (in ModuleInfo::parameters' order), the index
// of its first read among all parameter reads of `calls`, the expanded
// root forward (ExpandRoot()); -1 for one never read.
std::vector<std::vector<std::int64_t>> FirstReads(const Manifest& manifest,
                                                  absl::Span<const ForwardCall> calls);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_FORWARD_SIGNATURE_H_
