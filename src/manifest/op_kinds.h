// The kinds of op the rules tell apart by ONNX op type alone, in one table:
// the rule file's key of each (an object {"pattern": "<RE2 on the op
// type>"}, docs/rules.md), compiled by Rules::Parse in the table's order,
// matched by RuleQueries::Is, and held per node by OpTraits. A new kind
// (a quantized op family) is a row here and its pattern in
// rules/default.json; nothing else is wired by hand.
#ifndef SEMMAP_SRC_MANIFEST_OP_KINDS_H_
#define SEMMAP_SRC_MANIFEST_OP_KINDS_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// One X(enumerator, rule file key) per kind.
#define SEMMAP_OP_KINDS(X)                                                    \
  /* ops that carry a weight to its reader unchanged in meaning (a */         \
  /* Transpose, a Cast, a DequantizeLinear) */                                \
  X(kWeightPassthrough, "weight_passthrough_ops")                             \
  /* ops that belong with their consumers (quantize, cast, constants) */      \
  X(kFollowsConsumers, "follow_consumers_ops")                                \
  /* ops reading only their input's shape (Shape, Size): the start of a */    \
  /* shape computation, which belongs with the node using the shape */        \
  X(kShapeSource, "shape_source_ops")                                         \
  /* ops whose inputs after the first are arguments computed for them (a */   \
  /* Reshape's shape, an Unsqueeze's axes) */                                 \
  X(kShapeOperands, "shape_operand_ops")                                      \
  /* ops turning a quantized tensor back into floats */                       \
  X(kDequantize, "dequantize_ops")                                            \
  /* ops whose second input is a weight packed in quantized blocks ([N, */    \
  /* blocks, bytes per block]) */                                             \
  X(kBlockwiseWeight, "blockwise_weight_ops")                                 \
  /* ops whose weight operand is stored [in, out], the transpose of a */      \
  /* Linear's [out, in] */                                                    \
  X(kTransposedWeight, "transposed_weight_ops")                               \
  /* ops a quantizer writes: their graph is GraphKind::kQuantized */          \
  X(kQuantizer, "quantized_ops")                                              \
  /* ops of the default domain whose inputs commute (Add, Mul, Max...): */    \
  /* the reference matcher compares their inputs as a multiset */             \
  X(kCommutative, "commutative_ops")

#define SEMMAP_OP_KIND_ENUMERATOR_(enumerator, key) enumerator,
enum class OpKind : int { SEMMAP_OP_KINDS(SEMMAP_OP_KIND_ENUMERATOR_) };
#undef SEMMAP_OP_KIND_ENUMERATOR_

#define SEMMAP_OP_KIND_ONE_(enumerator, key) +1
inline constexpr std::size_t kOpKindCount = 0 SEMMAP_OP_KINDS(SEMMAP_OP_KIND_ONE_);
#undef SEMMAP_OP_KIND_ONE_

// Each kind's rule file key, by OpKind.
#define SEMMAP_OP_KIND_KEY_(enumerator, key) key,
inline constexpr absl::string_view kOpKindKeys[kOpKindCount] = {
    SEMMAP_OP_KINDS(SEMMAP_OP_KIND_KEY_)};
#undef SEMMAP_OP_KIND_KEY_

// Whether a rule file without the key of `kind` takes the default rules'
// pattern for it rather than none: a kind that was fixed in code before it
// became a key (the commutative ops, before 2.1), so that a rule file
// written then keeps its meaning. Every other absent key means no op.
inline constexpr bool InheritedWhenAbsent(OpKind kind) { return kind == OpKind::kCommutative; }

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_OP_KINDS_H_
