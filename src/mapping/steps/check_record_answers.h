// Do a record's stored answers agree with what the file says itself? The
// record's fingerprint covers its weightless graph, not its manifest or
// its answers: an edited or forged record can state the right fingerprint
// and place every node in one module. Before its answers are carried over
// they are compared, node by node, with the answers the file gives on its
// own evidence (its node scopes, the exporter's metadata, the parameters a
// node reads; the mapping made beside the carried-over one: mapper.cc),
// and a record that disagrees is not used (docs/record.md, "What a record
// proves"). Reads the two answer lists; writes nothing but its result.
#ifndef SEMMAP_SRC_MAPPING_STEPS_CHECK_RECORD_ANSWERS_H_
#define SEMMAP_SRC_MAPPING_STEPS_CHECK_RECORD_ANSWERS_H_

#include <cstddef>
#include <string>

#include "absl/types/span.h"
#include "mapping/core/mapping_record.h"
#include "semmap/manifest.h"  // ModuleId

namespace semmap {
namespace internal {

struct RecordAnswerCheck {
  // Nodes the file places itself by a scope, the exporter's metadata or the
  // parameters it reads, and the record answers; of those, the ones whose
  // record answer is the file's module.
  std::size_t judged = 0;
  std::size_t agreeing = 0;
  // The same over every node both answer (the file's inference included),
  // which judges where the file's own evidence is scarce.
  std::size_t judged_all = 0;
  std::size_t agreeing_all = 0;
  bool trusted = true;
  std::string note;  // why not, when not trusted
};

// A record is judged on the nodes the file places on its own evidence when
// there are at least kMinOwnEvidence of them; else on every node both
// answer, when there are at least kMinInferred; else nothing in the file
// can judge it. It is trusted when its answers are the file's on at least
// kMinAgreement of the nodes judged. Measured on the corpus (every
// processed fixture given its source's record, 409 files): genuine records
// agree on 0.78 of them or more (tv-swin-v2.torchscript.stripped, 18 of
// 23), forged ones (every node in one module, the modules shuffled or
// shifted by one) on 0.18 at most.
inline constexpr std::size_t kMinOwnEvidence = 4;
inline constexpr std::size_t kMinInferred = 16;
inline constexpr double kMinAgreement = 0.5;

// `record`: per node of the graph, the record's answer for it (kNoModule
// where the record says nothing of it); `own`: the file's own answers, in
// the same manifest's ids, calibrated. Both indexed like the graph's nodes.
RecordAnswerCheck CheckRecordAnswers(absl::Span<const ModuleId> record,
                                     absl::Span<const MappingRecord> own);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_CHECK_RECORD_ANSWERS_H_
