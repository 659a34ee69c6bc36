#include "profiled_model.h"

#include <utility>

#include "progress.h"

namespace semmap_cli {

absl::StatusOr<ProfiledModel> LoadProfiledModel(const LoadRequest& request,
                                                const std::string* profile_path,
                                                const ModelLoader& load) {
  ProfiledModel out;
  if (profile_path != nullptr) {
    absl::StatusOr<semmap::Profile> profile;
    {
      Progress progress("reading " + *profile_path);
      profile = semmap::Profile::Load(*profile_path);
    }
    if (!profile.ok()) return profile.status();
    out.profile = *std::move(profile);
  }
  absl::StatusOr<std::unique_ptr<LoadedModel>> model = load(request);
  if (!model.ok()) return model.status();
  out.model = *std::move(model);
  if (out.profile) {
    absl::StatusOr<semmap::ProfileAttribution> attribution =
        semmap::AttributeProfile(*out.model->mapper, *out.profile);
    if (!attribution.ok()) return attribution.status();
    out.attribution = *std::move(attribution);
  }
  return out;
}

}  // namespace semmap_cli
