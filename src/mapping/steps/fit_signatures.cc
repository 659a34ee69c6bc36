#include "mapping/steps/fit_signatures.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {

OpConflicts CheckSignatureOps(const Graph& graph, absl::Span<const ModuleId> node_modules,
                              const Manifest& manifest, const Rules& rules) {
  OpConflicts out;
  const internal::RuleQueries queries(rules);
  absl::flat_hash_map<absl::string_view, bool> checked_op;
  absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, bool> explained;
  std::vector<bool> counted(manifest.size(), false);
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    const ModuleId m = node_modules[n];
    if (m == kNoModule || !manifest.module(m).traced) continue;
    const absl::string_view op = graph.node(static_cast<NodeId>(n)).op_type;
    auto c = checked_op.find(op);
    if (c == checked_op.end()) c = checked_op.emplace(op, queries.IsSignatureChecked(op)).first;
    if (!c->second) continue;
    ++out.checked;
    // Judged only where the module's forward runs an operation of the kind
    // (a normalisation of its own): a module that computes its norm from
    // means and powers may see a tool fuse them into such a node.
    auto e = explained.find({m, op});
    if (e == explained.end()) {
      bool judged = false;
      bool any = false;
      for (const ForwardEvent& event : manifest.module(m).forward) {
        if (event.call != kNoModule || !queries.ExplainsCheckedOps(event.op)) continue;
        judged = true;
        any = any || queries.MayExportAs(event.op, op);
      }
      e = explained.emplace(std::make_pair(m, op), !judged || any).first;
    }
    if (e->second) continue;
    ++out.unexplained;
    if (!counted[m]) {
      counted[m] = true;
      ++out.modules;
      if (out.first.empty()) {
        out.first = absl::StrCat("\"", Abbreviate(manifest.module(m).path, 80), "\" runs ", op,
                                 " in the graph; no operation of its forward in the manifest is exported as one");
      }
    }
  }
  return out;
}

}  // namespace internal
}  // namespace semmap
