// Fuzz target for Manifest::Parse (JSON manifests). Properties:
//   - an error names the origin and is InvalidArgument or FailedPrecondition;
//   - a parsed manifest is a tree rooted at module 0: every module's parent
//     precedes it, lists it among its children, and depth = parent's + 1;
//   - find(path) returns each module's own index, withVariableName() lists
//     it, and the lowest common ancestor of two modules is an ancestor of
//     both;
//   - forward signatures (schema version 2, and only there) hold at most
//     10,000 events; each call names a module other than the caller and
//     the root, each read one of the module's own tensors, once.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "semmap/manifest.h"

namespace {

constexpr absl::string_view kOrigin = "fuzz.json";

void CheckManifest(const semmap::Manifest& m) {
  SEMMAP_FUZZ_CHECK(m.size() >= 1);
  SEMMAP_FUZZ_CHECK(m.schemaVersion() >= 1 && m.schemaVersion() <= semmap::kManifestSchemaVersion);
  const semmap::ModuleInfo& root = m.module(m.root());
  SEMMAP_FUZZ_CHECK(root.path.empty() && root.parent == semmap::kNoModule && root.depth == 0);
  const auto n = static_cast<semmap::ModuleId>(m.size());
  for (semmap::ModuleId i = 0; i < n; ++i) {
    const semmap::ModuleInfo& info = m.module(i);
    SEMMAP_FUZZ_CHECK(m.find(info.path) == i);
    SEMMAP_FUZZ_CHECK(info.variable_name == semmap::VariableNameOf(info.path));
    for (semmap::ModuleId c : info.children) {
      SEMMAP_FUZZ_CHECK(c > i && c < n);
      SEMMAP_FUZZ_CHECK(m.parent(c) == i);
    }
    if (i == 0) continue;
    SEMMAP_FUZZ_CHECK(info.parent >= 0 && info.parent < i);
    SEMMAP_FUZZ_CHECK(info.depth == m.depth(info.parent) + 1);
    SEMMAP_FUZZ_CHECK(m.isAncestorOrSelf(info.parent, i));
    SEMMAP_FUZZ_CHECK(m.isAncestorOrSelf(0, i));
    bool listed = false;
    for (semmap::ModuleId v : m.withVariableName(info.variable_name)) listed |= v == i;
    SEMMAP_FUZZ_CHECK(listed);
    // LCA with a module earlier in the list (bounded work per module).
    const semmap::ModuleId other = (i * 7 + 3) % n;
    const semmap::ModuleId lca = m.lowestCommonAncestor(i, other);
    SEMMAP_FUZZ_CHECK(lca != semmap::kNoModule);
    SEMMAP_FUZZ_CHECK(m.isAncestorOrSelf(lca, i) && m.isAncestorOrSelf(lca, other));
    for (const auto* list : {&info.parameters, &info.buffers}) {
      for (const semmap::TensorSpec& t : *list) {
        SEMMAP_FUZZ_CHECK(!t.name.empty() && !t.dtype.empty());
        for (std::int64_t d : t.shape) SEMMAP_FUZZ_CHECK(d >= 0);
      }
    }
  }
  bool traced = false;
  for (semmap::ModuleId i = 0; i < n; ++i) {
    const semmap::ModuleInfo& info = m.module(i);
    traced |= info.traced;
    SEMMAP_FUZZ_CHECK(info.traced || info.forward.empty());
    SEMMAP_FUZZ_CHECK(info.forward.size() <= 10000);
    for (const semmap::ForwardEvent& e : info.forward) {
      if (e.call != semmap::kNoModule) {
        SEMMAP_FUZZ_CHECK(e.call > 0 && e.call < n && e.call != i && e.op.empty() && e.reads.empty());
        continue;
      }
      SEMMAP_FUZZ_CHECK(!e.op.empty());
      for (std::size_t r = 0; r < e.reads.size(); ++r) {
        bool own = false;
        for (const auto* list : {&info.parameters, &info.buffers}) {
          for (const semmap::TensorSpec& t : *list) own |= t.name == e.reads[r];
        }
        SEMMAP_FUZZ_CHECK(own);
        for (std::size_t q = 0; q < r; ++q) SEMMAP_FUZZ_CHECK(e.reads[q] != e.reads[r]);
      }
    }
  }
  SEMMAP_FUZZ_CHECK(traced == (m.schemaVersion() == 2));
  SEMMAP_FUZZ_CHECK(m.lowestCommonAncestor(semmap::kNoModule, 0) == semmap::kNoModule);
  SEMMAP_FUZZ_CHECK(!m.isAncestorOrSelf(semmap::kNoModule, 0));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<semmap::Manifest> m = semmap::Manifest::Parse(text, kOrigin);
  if (m.ok()) {
    CheckManifest(*m);
    // A limit below the module count refuses the same text.
    if (m->size() > 1) {
      semmap::ManifestOptions small;
      small.max_modules = m->size() - 1;
      absl::StatusOr<semmap::Manifest> refused = semmap::Manifest::Parse(text, kOrigin, small);
      SEMMAP_FUZZ_CHECK(!refused.ok());
      SEMMAP_FUZZ_CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
    }
  } else {
    semmap_fuzz::CheckErrorNamesOrigin(m.status(), kOrigin);
    const absl::StatusCode code = m.status().code();
    SEMMAP_FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument ||
                      code == absl::StatusCode::kFailedPrecondition);
  }
  return 0;
}
