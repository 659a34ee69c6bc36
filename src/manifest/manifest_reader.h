// How Manifest::Load and Manifest::Parse read a manifest's text
// (manifest_reader.cc), in two ways that give the same manifest and the
// same errors:
//
// - outlined: one validating pass over the text finds the byte range of
//   each module (io/json_outline.h); the rest of the document is parsed
//   alone, then each module's text with one reused parser, its record built
//   before the next is parsed. No document of the whole file is alive, and
//   the mapped file's pages are given back as the passes leave them.
// - one document: the whole text parsed at once, then the modules built
//   from it. It words every error (the first syntax error over the whole
//   text before any error of meaning), so the outlined way hands over to
//   it on anything unexpected: a syntax or nesting error, a key it does not
//   read alone, an error of meaning in any module.
#ifndef SEMMAP_SRC_MANIFEST_MANIFEST_READER_H_
#define SEMMAP_SRC_MANIFEST_MANIFEST_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "io/mapped_file.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

class ManifestReader {
 public:
  enum class Way {
    kAny,          // outlined, else one document (what Load and Parse do)
    kOutlined,     // outlined only: an error when it hands over (for tests)
    kOneDocument,  // one document only
  };

  // The manifest in `text`, named `origin` in errors. `owned`, when it holds
  // the text (padded, see io/file_io.h), is released once the text is
  // parsed; `mapped`, when the text is its bytes, has its pages released.
  static absl::StatusOr<Manifest> Read(absl::string_view text, absl::string_view origin,
                                       const ManifestOptions& options, Way way,
                                       std::string* owned = nullptr,
                                       const MappedFile* mapped = nullptr);

 private:
  static absl::StatusOr<Manifest> ReadOutlined(absl::string_view text, absl::string_view origin,
                                               const ManifestOptions& options,
                                               const MappedFile* mapped);
  static absl::StatusOr<Manifest> ReadOneDocument(absl::string_view text,
                                                  absl::string_view origin,
                                                  const ManifestOptions& options,
                                                  std::string* owned, const MappedFile* mapped);
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_MANIFEST_READER_H_
