// Directories of file paths, one behaviour each: the lexical directory a
// path names (where a file of that name is created), and the resolved one
// (to ask whether two files sit in one directory).
#ifndef SEMMAP_SRC_IO_PATHS_H_
#define SEMMAP_SRC_IO_PATHS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// The text before `path`'s last '/', read without the file system:
//   "a/b/c.onnx" -> "a/b"    "c.onnx" -> "."    "" -> "."
//   "/c.onnx"    -> "/"      "a/b/"   -> "a/b"  (a directory, named as
//                                                itself; no file is there)
// A path ending in '/' names a directory, so its directory is that
// directory itself: an output path "out/" is then refused as "out", not as
// its parent. Repeated slashes are kept as written ("a//c" -> "a/").
std::string DirectoryOf(absl::string_view path);

// DirectoryOf(path), absolute, with ".", ".." and symbolic links resolved
// as far as they exist (std::filesystem::weakly_canonical) and no trailing
// '/' but the root's, for comparing two files' directories: external data
// paths are relative to a model's directory, so a copy written to another
// one no longer finds them. The absolute, unresolved directory when the
// file system cannot be asked.
std::string ResolvedDirectoryOf(absl::string_view path);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_PATHS_H_
