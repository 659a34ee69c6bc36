#include "semmap/scope_path.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace semmap {
namespace {

bool AllDigits(absl::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Splits a leaf such as "MatMul_1", "MatMul_quant", "MatMul_1_output_0" into
// op, ordinal and suffix.
void SplitLeaf(absl::string_view leaf, absl::string_view* op, std::int64_t* ordinal,
               absl::string_view* suffix) {
  const std::size_t us = leaf.find('_');
  *op = leaf.substr(0, us);
  *ordinal = -1;
  *suffix = absl::string_view();
  if (us == absl::string_view::npos) return;
  absl::string_view rest = leaf.substr(us + 1);
  const std::size_t next = rest.find('_');
  const absl::string_view first = rest.substr(0, next);
  if (AllDigits(first)) {
    std::int64_t value = -1;
    if (absl::SimpleAtoi(first, &value)) *ordinal = value;
    if (next != absl::string_view::npos) *suffix = rest.substr(next + 1);
  } else {
    *suffix = rest;
  }
}

}  // namespace

absl::string_view NameStyleName(NameStyle style) {
  switch (style) {
    case NameStyle::kEmpty:
      return "empty";
    case NameStyle::kScoped:
      return "scoped";
    case NameStyle::kUnscoped:
      return "unscoped";
    case NameStyle::kDynamo:
      return "dynamo";
  }
  return "unknown";
}

ScopePath ScopePath::Parse(absl::string_view name, std::size_t max_segments) {
  ScopePath p;
  if (name.empty()) return p;
  if (name.front() != '/') {
    static constexpr absl::string_view kDynamoPrefix = "node_";
    if (absl::StartsWith(name, kDynamoPrefix) &&
        name.size() > kDynamoPrefix.size()) {
      p.style_ = NameStyle::kDynamo;
      p.leaf_ = name.substr(kDynamoPrefix.size());
    } else {
      p.style_ = NameStyle::kUnscoped;
      p.leaf_ = name;
    }
    SplitLeaf(p.leaf_, &p.op_, &p.ordinal_, &p.suffix_);
    return p;
  }
  p.style_ = NameStyle::kScoped;
  const std::size_t last = name.rfind('/');
  p.leaf_ = name.substr(last + 1);
  SplitLeaf(p.leaf_, &p.op_, &p.ordinal_, &p.suffix_);
  // Segments lie between the leading '/' and the last '/'. Empty segments
  // ("//") carry no scope and are skipped.
  absl::string_view scope = name.substr(1, last == 0 ? 0 : last - 1);
  while (!scope.empty()) {
    const std::size_t slash = scope.find('/');
    const absl::string_view seg = scope.substr(0, slash);
    if (!seg.empty()) {
      if (p.segments_.size() == max_segments) {
        p.truncated_ = true;
        break;
      }
      p.segments_.push_back(seg);
    }
    if (slash == absl::string_view::npos) break;
    scope.remove_prefix(slash + 1);
  }
  return p;
}

std::string ScopePath::DottedPath() const { return DottedPathOf(segments_); }

std::string DottedPathOf(absl::Span<const absl::string_view> segments) {
  std::string out;
  absl::string_view previous;
  for (absl::string_view seg : segments) {
    // "/layer1/layer1.0": the called container repeats its own name.
    if (!previous.empty() && seg.size() > previous.size() &&
        absl::StartsWith(seg, previous) && seg[previous.size()] == '.' &&
        absl::EndsWith(out, previous)) {
      out.resize(out.size() - previous.size());
    } else if (!out.empty()) {
      out.push_back('.');
    }
    out.append(seg.data(), seg.size());
    previous = seg;
  }
  return out;
}

bool SplitCallSuffix(absl::string_view segment, absl::string_view* base,
                     std::int64_t* call_index) {
  const std::size_t us = segment.rfind('_');
  if (us == absl::string_view::npos || us == 0) return false;
  const absl::string_view digits = segment.substr(us + 1);
  std::int64_t value = 0;
  if (!AllDigits(digits) || !absl::SimpleAtoi(digits, &value)) return false;
  *base = segment.substr(0, us);
  *call_index = value;
  return true;
}

}  // namespace semmap
