// Fuzz target for node-name parsing: ScopePath::Parse, DottedPath and
// SplitCallSuffix. Parsing never fails, so the target checks what the
// result promises:
//   - segments, leaf, op and suffix are views into the name, and the
//     segments appear in the name in order without overlapping (joined,
//     they are a subsequence of the input);
//   - no more than max_segments segments, truncated() exactly when some
//     were dropped;
//   - DottedPath() is built from the segments' characters and dots only;
//   - SplitCallSuffix splits "<base>_<digits>" and nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "semmap/scope_path.h"

namespace {

bool Within(absl::string_view part, absl::string_view whole) {
  if (part.empty()) return true;  // an empty view may point anywhere
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void CheckParse(absl::string_view name, std::size_t max_segments) {
  const semmap::ScopePath p = semmap::ScopePath::Parse(name, max_segments);
  SEMMAP_FUZZ_CHECK(p.segments().size() <= max_segments);
  SEMMAP_FUZZ_CHECK(Within(p.leaf(), name));
  SEMMAP_FUZZ_CHECK(Within(p.op(), p.leaf()));
  SEMMAP_FUZZ_CHECK(Within(p.suffix(), p.leaf()));
  SEMMAP_FUZZ_CHECK(p.ordinal() >= -1);
  if (name.empty()) SEMMAP_FUZZ_CHECK(p.style() == semmap::NameStyle::kEmpty);
  if (!p.scoped()) SEMMAP_FUZZ_CHECK(p.segments().empty());
  SEMMAP_FUZZ_CHECK(p.scoped() == (!name.empty() && name.front() == '/'));
  SEMMAP_FUZZ_CHECK(!semmap::NameStyleName(p.style()).empty());

  // Segments in order, non-overlapping, non-empty, slash-free views.
  const char* cursor = name.data();
  std::size_t segment_bytes = 0;
  for (absl::string_view seg : p.segments()) {
    SEMMAP_FUZZ_CHECK(!seg.empty());
    SEMMAP_FUZZ_CHECK(Within(seg, name));
    SEMMAP_FUZZ_CHECK(seg.data() >= cursor);
    SEMMAP_FUZZ_CHECK(seg.find('/') == absl::string_view::npos);
    cursor = seg.data() + seg.size();
    segment_bytes += seg.size();
  }
  if (p.scoped() && !p.segments().empty()) {
    SEMMAP_FUZZ_CHECK(cursor <= p.leaf().data() || p.leaf().empty());
  }
  // Untruncated: the segments are exactly the non-empty pieces between
  // the first and the last slash.
  if (p.scoped() && !p.truncated()) {
    std::size_t pieces = 0;
    const std::size_t last = name.rfind('/');
    absl::string_view scope = name.substr(1, last == 0 ? 0 : last - 1);
    std::size_t start = 0;
    for (std::size_t i = 0; i <= scope.size(); ++i) {
      if (i == scope.size() || scope[i] == '/') {
        if (i > start) ++pieces;
        start = i + 1;
      }
    }
    SEMMAP_FUZZ_CHECK(pieces == p.segments().size());
  }
  if (p.truncated()) SEMMAP_FUZZ_CHECK(p.segments().size() == max_segments);

  const std::string dotted = p.DottedPath();
  SEMMAP_FUZZ_CHECK(dotted.size() <= segment_bytes + p.segments().size());
  SEMMAP_FUZZ_CHECK(dotted == semmap::DottedPathOf(p.segments()));
  if (!p.segments().empty()) {
    // The last segment always survives whole at the end.
    const absl::string_view back = p.segments().back();
    SEMMAP_FUZZ_CHECK(dotted.size() >= back.size() &&
                      absl::string_view(dotted).substr(dotted.size() - back.size()) == back);
  }
}

void CheckCallSuffix(absl::string_view segment) {
  absl::string_view base = "unchanged";
  long index = -7;
  if (semmap::SplitCallSuffix(segment, &base, &index)) {
    SEMMAP_FUZZ_CHECK(index >= 0);
    SEMMAP_FUZZ_CHECK(!base.empty());
    SEMMAP_FUZZ_CHECK(Within(base, segment));
    SEMMAP_FUZZ_CHECK(base.data() == segment.data());
    SEMMAP_FUZZ_CHECK(segment.size() > base.size() + 1 && segment[base.size()] == '_');
    for (char c : segment.substr(base.size() + 1)) SEMMAP_FUZZ_CHECK(c >= '0' && c <= '9');
  } else {
    SEMMAP_FUZZ_CHECK(base == "unchanged" && index == -7);  // outputs left alone
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view name(reinterpret_cast<const char*>(data), size);
  CheckParse(name, semmap::ScopePath::kDefaultMaxSegments);
  CheckParse(name, 3);  // exercise truncation on short inputs too
  CheckCallSuffix(name);
  const semmap::ScopePath p = semmap::ScopePath::Parse(name);
  for (absl::string_view seg : p.segments()) CheckCallSuffix(seg);
  return 0;
}
