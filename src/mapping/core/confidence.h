// The confidence each mapping strategy gives its answers, in one place.
//
// Calibration: every number below was set by measuring how often answers
// of that kind are right over the fixture corpus (semmap-eval per fixture,
// scripts/eval-corpus over all of them, which prints accuracy per
// confidence bucket; the README shows the table) and on the corpus's
// name-stripped and post-processed copies. The rule that ties them
// together is Mapping::confident() (kConfidentFloor, 0.9, mapping.h): no
// answer at or above 0.9 has been wrong on the corpus, so only evidence
// that has never failed there may reach it; kinds that measurably fail
// stay below it, the less reliable the lower. Changing a number means
// re-running scripts/eval-corpus --check (the corpus_accuracy test) and
// updating docs/mapping.md, which quotes them.
#ifndef SEMMAP_SRC_MAPPING_CORE_CONFIDENCE_H_
#define SEMMAP_SRC_MAPPING_CORE_CONFIDENCE_H_

namespace semmap {
namespace internal {
namespace confidence {

// Scopes and exporter metadata resolved against the manifest (mapper.cc,
// mapping/steps/resolve_scopes.cc).
namespace scope {
inline constexpr double kExact = 1.0;
inline constexpr double kExactCallSuffix = 0.97;  // a "_N" call suffix was folded
inline constexpr double kExactAmbiguous = 0.6;    // some step matched several modules
inline constexpr double kPrefix = 0.7;            // only a prefix of the scope resolved
inline constexpr double kClassMismatch = 0.7;     // the exporter names another class
}  // namespace scope

// Without a manifest (module paths derived from the scopes), every answer
// is multiplied by this.
inline constexpr double kNoManifestFactor = 0.8;

// Names of the values a node reads and writes (mapping/core/tensor_evidence.cc).
namespace tensor {
inline constexpr double kProducedParameter = 0.9;
inline constexpr double kOutputScope = 0.85;
inline constexpr double kWeightRead = 0.8;
inline constexpr double kDisagree = 0.6;
inline constexpr double kRewritten = 0.85;   // a node the exporter rewrote from several
inline constexpr double kFusedDominant = 0.8;  // the part a fusion still is
}  // namespace tensor

// The graph's structure and order, for nodes without names
// (mapping/strategies/structure.cc). Measured on name-stripped copies of the corpus:
// all stay below 0.9.
namespace structure {
// A node whose name numbers the op call it computes, placed at that call of
// the expanded forward signatures after the checks of op_calls.h.
inline constexpr double kOpCall = 0.9;
// An unplaced node whose window of calls (between those producing its
// inputs and the first reading it) holds compatible ops of one module only.
inline constexpr double kOpWindow = 0.82;
inline constexpr double kAlignedWeight = 0.8;
// A node matched, in order, with an operation the manifest's forward
// signatures run between its two anchors (forward_signature.h). A value of
// its own, so that the calibration (fitted per raw value) tells it apart.
inline constexpr double kSignature = 0.78;
inline constexpr double kHead = 0.7;
inline constexpr double kNameFamily = 0.75;
inline constexpr double kTail = 0.7;
inline constexpr double kModuleOps = 0.7;
inline constexpr double kInterval = 0.6;
inline constexpr double kLca = 0.4;
// A node of an op type one module's forward alone may export
// (Pass::OnlyRunner).
inline constexpr double kOnlyRunner = 0.8;
// Order-based answers in a re-sorted graph (anchors out of the manifest's
// module order) are worth less.
inline constexpr double kDisorderFactor = 0.5;
}  // namespace structure

// Neighbours' answers (mapping/strategies/neighbourhood.cc), before the weakest
// neighbour's factor: the consumer rules for constants, casts and quantize
// nodes are right almost always; joins of producers and consumers far less
// often, mostly in graphs whose names were stripped.
namespace neighbourhood {
inline constexpr double kFollowAgreeing = 0.85;
inline constexpr double kSourceAgreeing = 0.9;
inline constexpr double kDisagreeing = 0.6;
inline constexpr double kBothSides = 0.15;
inline constexpr double kOneSide = 0.1;
inline constexpr double kWeightToConsumer = 0.7;
// A shape computation read only as an argument (rules
// "shape_operand_ops") by nodes of several modules: a tool merged their
// copies; the first consumer's module computed the first copy.
inline constexpr double kFirstOfMerged = 0.8;
// Consumers this sure were mapped by their own names or metadata.
inline constexpr double kNamed = 0.9;
}  // namespace neighbourhood

// Answers carried over from a reference export
// (mapping/strategies/reference_transfer.cc), multiplied by the reference mapping's
// own. Measured on the corpus's post-processed fixtures (semmap-eval
// --reference): an exact pairing carries the reference's answer unchanged.
namespace reference {
inline constexpr double kExactPair = 1.0;
inline constexpr double kAmbiguousPair = 0.95;  // equal signatures paired by order
inline constexpr double kConstantPair = 0.95;
inline constexpr double kSpanOneModule = 0.9;   // replaced nodes of one module
inline constexpr double kSpanLca = 0.8;         // their lowest common ancestor
inline constexpr double kSpanDominant = 0.85;   // the part the fused node still is
inline constexpr double kDerived = 0.9;
inline constexpr double kConsumersAgree = 0.85;
inline constexpr double kConsumersLca = 0.6;
}  // namespace reference

}  // namespace confidence
}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_CONFIDENCE_H_
