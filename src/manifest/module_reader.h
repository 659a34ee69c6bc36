// One module object of a manifest (docs/manifest.md) read into the
// ManifestBuilder, and what it says of other modules (its parent, its
// children, the modules its forward calls) kept for when every module is
// known. Shared by the two ways the reader walks the modules
// (manifest_reader.cc): one document of the whole file, or each module's
// text parsed alone.
#ifndef SEMMAP_SRC_MANIFEST_MODULE_READER_H_
#define SEMMAP_SRC_MANIFEST_MODULE_READER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "base/string_blocks.h"
#include "io/json_reader.h"
#include "manifest/manifest_rep.h"

namespace semmap {
namespace internal {

// What the modules say of their parents, children and callees, as views:
// of the JSON document's strings while it lives, or (with a keeper) of
// copies that outlive the document each module was parsed from.
struct Links {
  std::vector<absl::string_view> parent;  // per module; unused for the root
  std::vector<absl::string_view> children;  // every module's, back to back
  std::vector<std::size_t> first_child;     // per module, plus the end
  // Forward calls (schema version 2): module, event index, callee path.
  struct Call {
    std::size_t module;
    std::size_t event;
    absl::string_view path;
  };
  std::vector<Call> calls;
  StringBlocks* keeper = nullptr;

  absl::string_view Keep(absl::string_view s) const {
    return keeper == nullptr ? s : keeper->Store(s);
  }
};

// Module `i` (the JSON value `m`, a manifest of schema `version`): fields
// checked in schema order (path, class, qualified_class, parent, children,
// parameters, buffers; from schema version 2, forward), the module, its
// tensors and forward events added to `builder`, its links appended to
// `links`. `shape` is scratch. InvalidArgument at the value's JSON pointer.
absl::Status ReadModule(const JsonValue& m, std::size_t i, int version, ManifestBuilder* builder,
                        Links* links, std::vector<std::int64_t>* shape);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_MODULE_READER_H_
