// A model loaded and mapped together with an ONNX Runtime profile of it,
// attributed to its nodes: what `graphml`, `node-data`, `report`, `profile`
// and `extract --stages` share.
#ifndef SEMMAP_TOOLS_SEMMAP_PROFILED_MODEL_H_
#define SEMMAP_TOOLS_SEMMAP_PROFILED_MODEL_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "loaded_model.h"
#include "semmap/semmap.h"

namespace semmap_cli {

struct ProfiledModel {
  std::unique_ptr<LoadedModel> model;
  // Set when a profile was given.
  std::optional<semmap::Profile> profile;
  std::optional<semmap::ProfileAttribution> attribution;

  // The attribution, or null without a profile.
  const semmap::ProfileAttribution* attributionOrNull() const {
    return attribution ? &*attribution : nullptr;
  }
};

// Reads the profile at `profile_path` (none when null) first, so that a
// profile that cannot be read fails before the slow load; then loads and
// maps what `request` names with `load` and attributes the profile's
// kernel time to the model's nodes. Errors: those of Profile::Load, of
// `load` and of AttributeProfile, each naming its file.
absl::StatusOr<ProfiledModel> LoadProfiledModel(const LoadRequest& request,
                                                const std::string* profile_path,
                                                const ModelLoader& load);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_PROFILED_MODEL_H_
