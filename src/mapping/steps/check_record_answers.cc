#include "mapping/steps/check_record_answers.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace semmap {
namespace internal {
namespace {

// Evidence the file carries itself: its node's scope or the exporter's
// metadata, or the parameters the node reads or writes.
bool FromOwnEvidence(const MappingRecord& m) {
  return m.mapped() && (m.strategy == Strategy::kExactScope ||
                        m.strategy == Strategy::kExporterMetadata ||
                        m.strategy == Strategy::kTensorNames);
}

}  // namespace

RecordAnswerCheck CheckRecordAnswers(absl::Span<const ModuleId> record,
                                     absl::Span<const MappingRecord> own) {
  RecordAnswerCheck c;
  for (std::size_t i = 0; i < record.size() && i < own.size(); ++i) {
    const ModuleId r = record[i];
    const MappingRecord& o = own[i];
    if (r == kNoModule || !o.mapped()) continue;
    // The same module, not one inside the file's: the next module in the
    // manifest's order often is, which is what a record whose indexes were
    // shifted gives; a genuine record gives the file's own where it says.
    const bool agree = r == o.module;
    ++c.judged_all;
    c.agreeing_all += agree;
    if (!FromOwnEvidence(o)) continue;
    ++c.judged;
    c.agreeing += agree;
  }
  const bool own_evidence = c.judged >= kMinOwnEvidence;
  const std::size_t judged = own_evidence ? c.judged : c.judged_all;
  const std::size_t agreeing = own_evidence ? c.agreeing : c.agreeing_all;
  if (!own_evidence && judged < kMinInferred) return c;  // nothing in the file to judge by
  if (static_cast<double>(agreeing) >= kMinAgreement * static_cast<double>(judged)) return c;
  c.trusted = false;
  c.note = absl::StrFormat(
      "its answers disagree with the file's own: of the %d nodes the file places %s, the record "
      "puts %d elsewhere (%.1f%% agree; a record's fingerprint covers its graph, not its "
      "answers or its manifest: an edited or forged record)",
      judged, own_evidence ? "by its scopes, metadata or parameter names" : "on its own evidence",
      judged - agreeing, 100.0 * static_cast<double>(agreeing) / static_cast<double>(judged));
  return c;
}

}  // namespace internal
}  // namespace semmap
