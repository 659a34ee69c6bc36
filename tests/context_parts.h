// What a semmap::internal::MappingContext borrows, owned together, for the
// tests that run one step or strategy on its own.
#ifndef SEMMAP_TESTS_CONTEXT_PARTS_H_
#define SEMMAP_TESTS_CONTEXT_PARTS_H_

#include <utility>
#include <vector>

#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/origin_table.h"
#include "mapping/core/tensor_evidence.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/root_binding.h"
#include "semmap/rules.h"

namespace semmap_test {

// `records` empty: one unmapped record per node.
struct ContextParts {
  ContextParts(const semmap::Graph& g, const semmap::Manifest& m,
               std::vector<semmap::internal::MappingRecord> initial = {},
               const semmap::Rules& r = semmap::Rules::Default(),
               const semmap::RootBinding& binding = {})
      : graph(g),
        manifest(m),
        rules(r),
        ops(g, r),
        tensors(g, m, r, ops, binding.root, binding.wrapper),
        records(initial.empty() ? std::vector<semmap::internal::MappingRecord>(g.size())
                                : std::move(initial)) {}

  semmap::internal::MappingContext context() {
    return {graph, manifest, rules, ops, tensors, records, evidence, origins};
  }

  const semmap::Graph& graph;
  const semmap::Manifest& manifest;
  const semmap::Rules& rules;
  const semmap::internal::OpTraits ops;
  const semmap::internal::TensorEvidence tensors;
  std::vector<semmap::internal::MappingRecord> records;
  semmap::internal::EvidenceStore evidence;
  semmap::internal::OriginTable origins;
};

}  // namespace semmap_test

#endif  // SEMMAP_TESTS_CONTEXT_PARTS_H_
