// PatternPrefilter: "does any of these patterns match somewhere in this
// text?" for a text per node, without running a regular expression on
// texts that lack every literal a pattern requires.
//
// RE2's FilteredRE2 computes, for each pattern, literal strings ("atoms")
// of which a match must contain one ("_output_" for "_output_[0-9]+_");
// a text holding none of them cannot match, and most node names hold none.
// Patterns with no such literal are run on every text; so are all of them
// when a literal lies beyond ASCII (texts are lowered in ASCII only).
#ifndef SEMMAP_SRC_MANIFEST_PATTERN_PREFILTER_H_
#define SEMMAP_SRC_MANIFEST_PATTERN_PREFILTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "re2/filtered_re2.h"
#include "re2/re2.h"

namespace semmap {
namespace internal {

class PatternPrefilter {
 public:
  // The patterns of `patterns` (compiled, with their options), which must
  // outlive the prefilter and not change. Immutable
  // after construction; safe to share between threads.
  explicit PatternPrefilter(const std::vector<std::unique_ptr<RE2>>& patterns);
  PatternPrefilter(const PatternPrefilter&) = delete;
  PatternPrefilter& operator=(const PatternPrefilter&) = delete;

  // True when some pattern matches part of `text` (RE2::PartialMatch).
  bool AnyPartialMatch(absl::string_view text) const;

 private:
  const std::vector<std::unique_ptr<RE2>>& patterns_;
  // Null when a pattern could not be added (then every pattern is run).
  std::unique_ptr<re2::FilteredRE2> filter_;
  std::vector<std::string> atoms_;  // lower case, as FilteredRE2 gives them
  bool unfiltered_ = false;  // some pattern has no atom: run on every text
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_PATTERN_PREFILTER_H_
