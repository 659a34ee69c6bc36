// Writing output files so that readers never see half a file and inputs
// are never clobbered by accident.
#ifndef SEMMAP_SRC_IO_ATOMIC_WRITE_H_
#define SEMMAP_SRC_IO_ATOMIC_WRITE_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "io/mapped_file.h"

namespace semmap {
namespace internal {

// Checks, before any work is done, that `output` can be written: its
// directory exists and is writable, and `output` is missing, a regular
// file, a FIFO or a character device (after following symlinks).
// NotFound (missing directory), PermissionDenied (read-only directory),
// InvalidArgument (output or its directory is of another kind). Messages
// start with `output`.
absl::Status CheckOutputPath(const std::string& output);

// InvalidArgument when `output` and `input` name the same existing file
// (symlinks and other spellings included); `what` names the input in the
// message ("the input model").
absl::Status CheckNotSameFile(const std::string& output, const std::string& input,
                              absl::string_view what);

// A file a write must not replace by accident, and how messages name it.
struct ProtectedInput {
  const std::string& path;  // empty: nothing to protect
  absl::string_view what;   // "the input model", "the manifest"
};

// CheckOutputPath(output), then, unless `allow_overwrite`, CheckNotSameFile
// for every non-empty input, the named ones and `other_inputs` (a
// reference, a profile: every file the command reads): the checks every
// writing command makes before doing any work.
absl::Status CheckOutputFor(const std::string& output,
                            std::initializer_list<ProtectedInput> inputs,
                            const std::vector<std::string>& other_inputs,
                            bool allow_overwrite);

// Writes `bytes` to a temporary file in `path`'s directory, flushes and
// fsyncs it, then renames it over `path`: readers see the old file or the
// new one, never a mix. An existing file's owner, group and permission
// bits are kept (PermissionDenied, nothing replaced, when this process
// cannot give them to the new file). On failure the temporary file is
// removed and `path` is untouched.
//
// A symlink is followed: its target is replaced, never the link; a link
// that leads nowhere (dangling, a loop) is InvalidArgument. A FIFO or
// a character device (/dev/null, /dev/stdout on a pipe or a terminal) is
// opened and streamed into, never replaced; other special files are
// refused. Temporary files that killed writers left for the same output
// (semmap's name pattern, writer pid gone, unchanged for an hour) are
// removed first. A full disk or quota is ResourceExhausted.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes);

// The same, with the file's bytes given as pieces written in order (views
// into a memory-mapped input and a few new buffers): nothing is
// concatenated in memory, so the output may be far larger than memory.
// `before_commit`, when given, runs after the bytes are written and before
// the rename (or the end of the stream): an error from it removes the
// temporary file, leaves `path` untouched and is returned.
//
// `source`, when given, names the file that `source->mapping` maps: large
// pieces inside the mapping are then copied by the kernel from the file
// itself (copy_file_range), so the input's pages are never faulted into
// this process. Only while `source->path` still names the mapped file
// (same device and inode); elsewhere, or where the kernel cannot copy (other
// file systems, a stream output), the mapping is read.
struct PieceSource {
  absl::string_view mapping;
  std::string path;
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
};
absl::Status WritePiecesAtomically(const std::string& path,
                                   absl::Span<const absl::string_view> pieces,
                                   const std::function<absl::Status()>& before_commit = nullptr,
                                   const PieceSource* source = nullptr);

// WritePiecesAtomically for pieces that view `file`, the mapping of
// `input`: the kernel copies large pieces from the file, and the output is
// refused (NotTruncated, nothing written) when the file shrank while it was
// read, since the mapping then reads as zeros.
absl::Status WriteMappedPiecesAtomically(const std::string& path,
                                         absl::Span<const absl::string_view> pieces,
                                         const MappedFile& file, const std::string& input);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_ATOMIC_WRITE_H_
