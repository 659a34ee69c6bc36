// Where a writing command's output goes: a file, or standard output (`-`),
// and the check that standard output is not one of the command's inputs.
#ifndef SEMMAP_TOOLS_SEMMAP_OUTPUT_TARGET_H_
#define SEMMAP_TOOLS_SEMMAP_OUTPUT_TARGET_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace semmap_cli {

// True when the value of -o names standard output.
inline bool IsStandardOutput(const std::string& output) { return output == "-"; }

// The path a writer is given for -o `output`: "/dev/stdout" for `-` (the
// library streams into a pipe or a terminal and, when standard output is
// redirected to a file, replaces that file atomically like any output
// file, after the same check against the inputs), else `output` itself.
std::string OutputPath(const std::string& output);

// OK unless `output` is `-` and standard output appends to a regular file
// (`>>`, or an offset past its start): the library replaces a file whole,
// which would lose what the file held. InvalidArgument then, before any work.
absl::Status CheckStandardOutputTarget(const std::string& output);

// Where a writer prints what it wrote: standard error when the output
// itself goes to standard output, else standard output.
std::ostream& SummaryStream(const std::string& output);

// InvalidArgument, naming the input first, when standard output is a
// regular file that is one of `inputs` (same device and inode, after
// symlinks): `semmap sidecar M --manifest X >> X` would append to X. The
// check -o makes for an output file, made for the implicit output too.
absl::Status CheckStdoutIsNoInput(const std::vector<std::string>& inputs);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_OUTPUT_TARGET_H_
