// Fuzz target for the wire-level model rewriter annotate uses
// (src/graph/wire_writer.h). An editor drops "semmap." entries, appends
// one, renames every third node and sets every fifth node's doc string.
// Properties:
//   - an error names the origin and is InvalidArgument; whatever
//     Graph::Parse loads is rewritten;
//   - the pieces add up to size();
//   - when Graph::Parse reads the input, it reads the output too: the same
//     nodes in the same order with the same op types, inputs and outputs,
//     the new names and doc strings, and metadata = the input's without
//     "semmap." entries, plus the appended one;
//   - rewriting the output again gives the same bytes (idempotence).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "graph/wire_writer.h"
#include "semmap/graph.h"

namespace {

constexpr absl::string_view kOrigin = "fuzz.onnx";
constexpr int kMaxDepth = 16;

absl::Status Edit(const semmap::internal::NodeView& node, semmap::internal::NodeEdit* edit) {
  edit->drop_key_prefixes.emplace_back("semmap.");
  edit->add_metadata.emplace_back("semmap.index", absl::StrCat(node.index));
  if (node.index % 3 == 0) edit->name = absl::StrCat("r", node.index);
  if (node.index % 5 == 0) edit->doc_string = absl::StrCat("doc ", node.index);
  return absl::OkStatus();
}

void CheckNodes(const semmap::Graph& in, const semmap::Graph& out) {
  SEMMAP_FUZZ_CHECK(in.size() == out.size());
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(in.size()); ++i) {
    const semmap::Node& a = in.node(i);
    const semmap::Node& b = out.node(i);
    SEMMAP_FUZZ_CHECK(a.op_type == b.op_type && a.domain == b.domain && a.subgraph == b.subgraph);
    SEMMAP_FUZZ_CHECK(a.inputs == b.inputs && a.outputs == b.outputs);
    SEMMAP_FUZZ_CHECK(a.attribute_names == b.attribute_names);
    SEMMAP_FUZZ_CHECK(b.name == (i % 3 == 0 ? absl::StrCat("r", i) : a.name));
    SEMMAP_FUZZ_CHECK(b.doc_string == (i % 5 == 0 ? absl::StrCat("doc ", i) : a.doc_string));
    std::vector<std::pair<std::string, std::string>> expected, got;
    for (const auto& entry : a.metadata) {
      if (!absl::StartsWith(entry.first, "semmap.")) expected.emplace_back(entry.first, entry.second);
    }
    expected.emplace_back("semmap.index", absl::StrCat(i));
    for (const auto& entry : b.metadata) got.emplace_back(entry.first, entry.second);
    SEMMAP_FUZZ_CHECK(got == expected);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  semmap::GraphOptions options;
  options.max_subgraph_depth = kMaxDepth;
  absl::StatusOr<semmap::Graph> before = semmap::Graph::Parse(bytes, kOrigin, options);
  absl::StatusOr<semmap::internal::ModelRewrite> rewrite =
      semmap::internal::ModelRewrite::Plan(bytes, kOrigin, Edit, kMaxDepth);
  // The rewriter checks no more than the loader: what loads, rewrites.
  if (before.ok()) SEMMAP_FUZZ_CHECK(rewrite.ok());
  if (!rewrite.ok()) {
    semmap_fuzz::CheckErrorNamesOrigin(rewrite.status(), kOrigin);
    SEMMAP_FUZZ_CHECK(rewrite.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  const std::string out = rewrite->ToString();
  SEMMAP_FUZZ_CHECK(out.size() == rewrite->size());

  if (before.ok()) {
    absl::StatusOr<semmap::Graph> after = semmap::Graph::Parse(out, kOrigin, options);
    SEMMAP_FUZZ_CHECK(after.ok());
    CheckNodes(*before, *after);
  }

  absl::StatusOr<semmap::internal::ModelRewrite> again =
      semmap::internal::ModelRewrite::Plan(out, kOrigin, Edit, kMaxDepth);
  SEMMAP_FUZZ_CHECK(again.ok());
  SEMMAP_FUZZ_CHECK(again->ToString() == out);
  return 0;
}
