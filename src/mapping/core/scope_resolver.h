// Resolving TorchScript scope segments to manifest modules.
#ifndef SEMMAP_SRC_MAPPING_CORE_SCOPE_RESOLVER_H_
#define SEMMAP_SRC_MAPPING_CORE_SCOPE_RESOLVER_H_

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
// does not start with the wrapper resolves to nothing. Not thread-safe (a
// scratch buffer): one resolver per thread.
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

// Resolves scopes one after the other, reusing the steps a scope shares
// with the one before it: given scopes in sorted order, a model's scopes
// cost about one step each instead of one per segment. Gives exactly
// ScopeResolver::Resolve's results.
class PrefixResolver {
 public:
  PrefixResolver(const ScopeResolver& resolver, ModuleId root,
                 absl::Span<const std::string> wrapper)
      : resolver_(resolver), root_(root), wrapper_(wrapper) {}

  // `segments` must stay valid until the next call.
  ScopeResolution Resolve(absl::Span<const absl::string_view> segments);

 private:
  struct State {
    ModuleId module = kNoModule;
    bool call_suffix = false;
    bool ambiguous = false;
    std::size_t indirect = 0;
  };
  const ScopeResolver& resolver_;
  const ModuleId root_;
  const absl::Span<const std::string> wrapper_;
  // The previous scope's segments, and the state after each step past the
  // wrapper that it completed (states_[0]: at the root).
  absl::Span<const absl::string_view> previous_;
  std::vector<State> states_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_SCOPE_RESOLVER_H_
