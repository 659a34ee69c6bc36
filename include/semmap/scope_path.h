// ScopePath: what an ONNX node name says about the module that produced it.
//
// The TorchScript exporter names a node after the chain of module scopes it
// was traced in, then its op type and a uniquifying ordinal:
//
//   /bert/encoder/layer.0/attention/self/query/MatMul
//     segments = {"bert", "encoder", "layer.0", "attention", "self", "query"}
//     op = "MatMul", ordinal = -1
//   /encoder/layer.0/attention/self/MatMul_1    -> op "MatMul", ordinal 1
//   /Constant                                    -> no segments (root scope)
//   Constant_94, Identity_0                      -> kUnscoped
//   node_MatMul_12, node_linear                  -> kDynamo (no scope)
//
// Segments are the exporter's *variable names*, not module-path atoms: a
// ModuleList child appears as one segment "layer.0", a called container
// repeats its name ("/layer1/layer1.0/conv1"), and a module called twice gets
// "_N" ("relu_1"). Turning segments into a module path needs the manifest;
// that is the mapper's job. DottedPath() is only the manifest-free guess.
//
// Parsing never fails. A ScopePath holds string_views into the name it was
// parsed from: the name must outlive it. Thread-safe (immutable after Parse).
#ifndef SEMMAP_INCLUDE_SEMMAP_SCOPE_PATH_H_
#define SEMMAP_INCLUDE_SEMMAP_SCOPE_PATH_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/export.h"

namespace semmap {

enum class NameStyle {
  kEmpty,     // "" : no information
  kScoped,    // "/a/b/Op_3" : TorchScript-style scope path
  kUnscoped,  // "Constant_94", "Identity_0", "Attention_0": no scope
  kDynamo,    // "node_MatMul_12", "node_linear": dynamo exporter names
};

// The stable lower-case name of a style ("scoped", "unscoped", ...).
SEMMAP_EXPORT absl::string_view NameStyleName(NameStyle style);

class SEMMAP_EXPORT ScopePath {
 public:
  // More segments than this are dropped (and truncated() is set), so a
  // hostile 1 MB name costs bounded memory.
  static constexpr std::size_t kDefaultMaxSegments = 1024;

  using Segments = absl::InlinedVector<absl::string_view, 8>;

  // Parses a node name (or a value name such as ".../MatMul_output_0").
  static ScopePath Parse(absl::string_view name,
                         std::size_t max_segments = kDefaultMaxSegments);

  NameStyle style() const { return style_; }
  bool scoped() const { return style_ == NameStyle::kScoped; }

  // Module-scope segments, outermost first; empty for the root scope and for
  // every style other than kScoped.
  const Segments& segments() const { return segments_; }

  // The last part of the name as written ("MatMul_1", "Constant_94").
  absl::string_view leaf() const { return leaf_; }
  // The op type the name claims ("MatMul"); for kDynamo the FX name part.
  absl::string_view op() const { return op_; }
  // The uniquifying number after the op ("MatMul_1" -> 1), or -1.
  std::int64_t ordinal() const { return ordinal_; }
  // Whatever follows op and ordinal: "quant" in "MatMul_quant",
  // "output_0" in a value name.
  absl::string_view suffix() const { return suffix_; }
  // True when segments beyond the limit were dropped.
  bool truncated() const { return truncated_; }

  // Manifest-free guess at the module path: segments joined with '.', where
  // a segment that repeats the previous one as a prefix ("layer1" then
  // "layer1.0") replaces it instead of extending it.
  std::string DottedPath() const;

 private:
  NameStyle style_ = NameStyle::kEmpty;
  Segments segments_;
  absl::string_view leaf_;
  absl::string_view op_;
  absl::string_view suffix_;
  std::int64_t ordinal_ = -1;
  bool truncated_ = false;
};

// The manifest-free module path of a list of scope segments (see
// ScopePath::DottedPath()).
SEMMAP_EXPORT std::string DottedPathOf(absl::Span<const absl::string_view> segments);

// Splits "relu_1" into base "relu" and call index 1; returns false (and
// leaves the outputs alone) when the segment has no "_<digits>" ending.
SEMMAP_EXPORT bool SplitCallSuffix(absl::string_view segment, absl::string_view* base,
                                   std::int64_t* call_index);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_SCOPE_PATH_H_
