#include "loaded_model.h"

#include <iostream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"

namespace semmap_cli {

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const LoadRequest& request) {
  auto loaded = std::make_unique<LoadedModel>();
  loaded->model_path = request.model_path;
  if (request.manifest_path != nullptr) loaded->manifest_path = *request.manifest_path;
  semmap::SemanticMapper::OpenOptions options;
  options.mapper.allow_manifest_mismatch = request.allow_manifest_mismatch;
  options.use_record = request.use_record;
  if (request.reference_path != nullptr) {
    loaded->reference_path = *request.reference_path;
    options.reference_path = *request.reference_path;
  }
  auto mapper = semmap::SemanticMapper::Open(
      request.model_path, loaded->manifest_path.value_or(std::string()), options);
  // The hint only where the flag would change the outcome: a misfit ("is
  // of another model", SemanticMapper::Open), not a schema version or a
  // record this build cannot read, which are FailedPrecondition too.
  if (absl::IsFailedPrecondition(mapper.status()) && loaded->manifest_path &&
      !request.allow_manifest_mismatch &&
      absl::StrContains(mapper.status().message(), " is of another model: ")) {
    return absl::FailedPreconditionError(absl::StrCat(
        mapper.status().message(), "; pass --allow-manifest-mismatch to map anyway"));
  }
  if (!mapper.ok()) return mapper.status();
  loaded->mapper.emplace(*std::move(mapper));
  return loaded;
}

void PrintFitNotes(const LoadedModel& loaded) {
  if (!loaded.mapper) return;
  if (loaded.manifest_path) {
    for (const semmap::FitNote& note : loaded.mapper->manifestFit().notes) {
      std::cerr << "semmap: note: manifest " << EscapeControls(*loaded.manifest_path)
                << " fits with notes: " << EscapeControls(note.text) << "\n";
    }
  }
  const semmap::Provenance& provenance = loaded.mapper->provenance();
  if (provenance.record == semmap::RecordUse::kRejected) {
    std::cerr << "semmap: warning: " << EscapeControls(loaded.model_path)
              << ": its provenance record is not used: " << EscapeControls(provenance.note)
              << "\n";
  }
  if (loaded.reference_path) {
    for (const std::string& warning : loaded.mapper->referenceCheck().warnings) {
      std::cerr << "semmap: warning: reference " << EscapeControls(*loaded.reference_path) << ": "
                << warning << "\n";
    }
  }
}

}  // namespace semmap_cli
