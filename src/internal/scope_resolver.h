// Resolving TorchScript scope segments to manifest modules.
#ifndef SEMMAP_SRC_INTERNAL_SCOPE_RESOLVER_H_
#define SEMMAP_SRC_INTERNAL_SCOPE_RESOLVER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

struct ScopeResolution {
  ModuleId module = kNoModule;  // deepest module reached; kNoModule if none
  std::size_t resolved = 0;     // segments consumed (wrapper included)
  std::size_t total = 0;        // segments in the scope
  bool call_suffix = false;     // a "_N" call suffix was stripped on the way
  bool ambiguous = false;       // some step had several equally good matches
  std::size_t indirect = 0;     // steps that skipped modules to match
  bool complete() const { return module != kNoModule && resolved == total; }
};

// Resolves scope segments starting at `root`, after matching and consuming
// the `wrapper` segments (ONNX scopes outside the manifest). A scope that
// does not start with the wrapper resolves to nothing.
class ScopeResolver {
 public:
  explicit ScopeResolver(const Manifest& manifest) : manifest_(manifest) {}

  ScopeResolution Resolve(absl::Span<const absl::string_view> segments,
                          ModuleId root,
                          absl::Span<const std::string> wrapper) const;

  // One step: the module under `parent` whose scope is named `segment`.
  // Sets *indirect when the match is not the parent's own attribute.
  ModuleId Step(ModuleId parent, absl::string_view segment, bool* ambiguous,
                bool* indirect) const;

 private:
  const Manifest& manifest_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_INTERNAL_SCOPE_RESOLVER_H_
