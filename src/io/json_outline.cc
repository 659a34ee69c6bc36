#include "io/json_outline.h"

#include <cstring>

namespace semmap {
namespace internal {
namespace {

// How often the pass reports its progress: pages are let go in pieces of
// about this size.
constexpr std::size_t kProgressBytes = std::size_t{4} << 20;

class Outliner {
 public:
  Outliner(absl::string_view text, int max_depth, absl::FunctionRef<void(std::size_t)> progress)
      : t_(text), max_depth_(max_depth), progress_(progress) {}

  bool Run(absl::string_view array_key, JsonOutline* out) {
    Space();
    if (!At('{') || max_depth_ < 1) return false;
    ++i_;
    Space();
    bool found = false;
    while (true) {
      if (!At('"')) return false;  // no members, or not a key
      const std::size_t key_begin = i_ + 1;
      if (!String()) return false;
      const absl::string_view key = t_.substr(key_begin, i_ - 1 - key_begin);
      // An escaped key could spell the array's: its meaning is the parser's.
      if (key.find('\\') != absl::string_view::npos) return false;
      Space();
      if (!At(':')) return false;
      ++i_;
      Space();
      const std::size_t value_begin = i_;
      if (key == array_key) {
        if (found) return false;
        found = true;
        out->array_member = out->members.size();
        if (!Array(&out->elements)) return false;
      } else if (!Value(1)) {
        return false;
      }
      out->members.push_back({key, {value_begin, i_}});
      const After after = Separator('}');
      if (after == After::kBroken) return false;
      if (after == After::kClosed) break;
    }
    Space();
    return found && i_ == t_.size();
  }

 private:
  bool At(char c) const { return i_ < t_.size() && t_[i_] == c; }
  static bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  void Space() {
    while (i_ < t_.size() && IsSpace(t_[i_])) ++i_;
  }
  // After a member or an element: a comma (the next follows), the
  // container's `close`, or neither.
  enum class After { kNext, kClosed, kBroken };
  After Separator(char close) {
    Space();
    if (At(',')) {
      ++i_;
      Space();
      return After::kNext;
    }
    if (!At(close)) return After::kBroken;
    ++i_;
    return After::kClosed;
  }
  void Progress() {
    if (i_ < next_report_) return;
    progress_(i_);
    next_report_ = i_ + kProgressBytes;
  }

  // At a '"': past the string's closing quote (one not escaped by an odd
  // run of backslashes); false when it has none.
  bool String() {
    const char* data = t_.data();
    std::size_t from = i_ + 1;
    while (from < t_.size()) {
      const void* quote = std::memchr(data + from, '"', t_.size() - from);
      if (quote == nullptr) return false;
      const std::size_t q = static_cast<std::size_t>(static_cast<const char*>(quote) - data);
      std::size_t run = q;
      while (run > from && data[run - 1] == '\\') --run;
      if ((q - run) % 2 == 0) {
        i_ = q + 1;
        return true;
      }
      from = q + 1;
    }
    return false;
  }

  // A value inside `depth` open containers, delimited: strings skipped,
  // brackets counted (each within max_depth_), a scalar up to the next
  // separator.
  bool Value(int depth) {
    if (i_ == t_.size()) return false;
    const char c = t_[i_];
    if (c == '"') return String();
    if (c != '[' && c != '{') {
      const std::size_t start = i_;
      while (i_ < t_.size() && !IsSpace(t_[i_]) &&
             absl::string_view(",:]}[{\"").find(t_[i_]) == absl::string_view::npos) {
        ++i_;
      }
      return i_ > start;
    }
    int level = 0;
    while (i_ < t_.size()) {
      const char b = t_[i_];
      if (b == '"') {
        if (!String()) return false;
        Progress();
        continue;
      }
      if (b == '[' || b == '{') {
        if (depth + ++level > max_depth_) return false;
      } else if (b == ']' || b == '}') {
        if (--level == 0) {
          ++i_;
          return true;
        }
      }
      ++i_;
    }
    return false;
  }

  // At the array member's value (inside the top-level object): each
  // element's range.
  bool Array(std::vector<JsonRange>* elements) {
    if (!At('[') || max_depth_ < 2) return false;
    ++i_;
    Space();
    if (At(']')) {
      ++i_;
      return true;
    }
    while (true) {
      const std::size_t begin = i_;
      if (!Value(2)) return false;
      elements->push_back({begin, i_});
      Progress();
      const After after = Separator(']');
      if (after != After::kNext) return after == After::kClosed;
    }
  }

  absl::string_view t_;
  int max_depth_;
  absl::FunctionRef<void(std::size_t)> progress_;
  std::size_t i_ = 0;
  std::size_t next_report_ = kProgressBytes;
};

}  // namespace

std::optional<JsonOutline> OutlineJson(absl::string_view text, absl::string_view array_key,
                                       int max_depth,
                                       absl::FunctionRef<void(std::size_t)> progress) {
  JsonOutline outline;
  if (!Outliner(text, max_depth, progress).Run(array_key, &outline)) return std::nullopt;
  return outline;
}

}  // namespace internal
}  // namespace semmap
