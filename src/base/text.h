// Text helpers: quoting untrusted text in messages, and finding the name a
// tool's derived name was made from.
#ifndef SEMMAP_SRC_BASE_TEXT_H_
#define SEMMAP_SRC_BASE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// Returns `text` shortened to at most `max` bytes with an ellipsis, for
// quoting untrusted names in messages.
std::string Abbreviate(absl::string_view text, std::size_t max = 120);

// Tools name a tensor they derive from another after it, inside a longer
// name: a quantizer's int8 copy "q_output_model.embed_tokens.weight_1", an
// inliner's "If_0_else_branch__Inline_0__encoder.0.conv.weight". Returns the
// first proper part of `name` for which `known` is true, or an empty view:
// parts start at the beginning or after a '_', '/' or ':', and end at the
// end or before a '_', ':' or '/'; the leftmost start is tried first, and
// from it the longest part (the least the tool added). `name` itself is not
// tried, nor a part after a '.' (a dotted prefix is a wrapper's, which the
// root binding reads). Only parts `candidate` accepts are asked (a cheap
// test, so that names which cannot hold a tensor's name cost no lookup); at
// most kMaxEmbeddedStarts starts and kMaxEmbeddedEnds ends are tried, so
// the cost is bounded whatever the name.
inline constexpr int kMaxEmbeddedStarts = 16;
inline constexpr int kMaxEmbeddedEnds = 8;
absl::string_view FindEmbeddedName(absl::string_view name,
                                   absl::FunctionRef<bool(absl::string_view)> candidate,
                                   absl::FunctionRef<bool(absl::string_view)> known);

// "encoder.layer.0.output.dense.weight": dotted identifier atoms, as torch
// names parameters; not an exporter's own name ("onnx::MatMul_12",
// "val_3", "/encoder/.../Constant_output_0").
bool ParameterLikeName(absl::string_view name);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_TEXT_H_
