// Whether an unnamed weight of the graph may be a parameter of the
// manifest, by shape alone.
#ifndef SEMMAP_SRC_MAPPING_CORE_WEIGHT_SHAPES_H_
#define SEMMAP_SRC_MAPPING_CORE_WEIGHT_SHAPES_H_

#include <cstdint>

#include "absl/types/span.h"

namespace semmap {
namespace internal {

// A floating-point element type (onnx TensorProto.DataType FLOAT, FLOAT16,
// DOUBLE, BFLOAT16): a weight's, not a shape's or an index's.
inline bool IsFloat(std::int32_t elem_type) {
  return elem_type == 1 || elem_type == 10 || elem_type == 11 || elem_type == 16;
}

// The same dims, or a matrix's transpose (an exporter folds a Linear's
// weight through its Transpose).
inline bool Compatible(absl::Span<const std::int64_t> dims, absl::Span<const std::int64_t> shape) {
  if (dims.size() != shape.size()) return false;
  if (dims == shape) return true;
  return dims.size() == 2 && dims[0] == shape[1] && dims[1] == shape[0];
}

// A weight packed in quantized blocks ([N, blocks, bytes per block]: rules
// "blockwise_weight_ops") stands for an [N, K] parameter (or its transpose)
// whose K fills `blocks` blocks at 2, 4 or 8 bits per value: the packing
// drops K and the bit width, the block count keeps them to a block.
inline bool BlockwiseCompatible(absl::Span<const std::int64_t> dims,
                                absl::Span<const std::int64_t> shape) {
  // Sizes from the file: bounded before any product (a hostile [N, 2^62,
  // 2^62] must not overflow).
  constexpr std::int64_t kMax = std::int64_t{1} << 31;
  if (dims.size() != 3 || shape.size() != 2 || dims[1] <= 0 || dims[2] <= 0 ||
      dims[1] > kMax || dims[2] > kMax) {
    return false;
  }
  for (int n = 0; n < 2; ++n) {
    if (shape[n] != dims[0]) continue;
    const std::int64_t k = shape[1 - n];
    for (const std::int64_t bits : {2, 4, 8}) {
      const std::int64_t block = dims[2] * 8 / bits;
      if (k > (dims[1] - 1) * block && k <= dims[1] * block) return true;
    }
  }
  return false;
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_WEIGHT_SHAPES_H_
