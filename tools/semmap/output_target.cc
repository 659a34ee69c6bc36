#include "output_target.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>

#include "absl/strings/str_cat.h"

namespace semmap_cli {

std::string OutputPath(const std::string& output) {
  return IsStandardOutput(output) ? std::string("/dev/stdout") : output;
}

absl::Status CheckStandardOutputTarget(const std::string& output) {
  struct stat out;
  if (!IsStandardOutput(output) || fstat(STDOUT_FILENO, &out) != 0 || !S_ISREG(out.st_mode)) {
    return absl::OkStatus();
  }
  const int flags = fcntl(STDOUT_FILENO, F_GETFL);
  const off_t offset = lseek(STDOUT_FILENO, 0, SEEK_CUR);
  if ((flags != -1 && (flags & O_APPEND) != 0) || offset > 0) {
    return absl::InvalidArgumentError(
        "-o -: standard output appends to a file, which this command would replace whole; "
        "redirect with > or give -o FILE");
  }
  return absl::OkStatus();
}

std::ostream& SummaryStream(const std::string& output) {
  return IsStandardOutput(output) ? std::cerr : std::cout;
}

absl::Status CheckStdoutIsNoInput(const std::vector<std::string>& inputs) {
  struct stat out;
  if (fstat(STDOUT_FILENO, &out) != 0 || !S_ISREG(out.st_mode)) return absl::OkStatus();
  for (const std::string& input : inputs) {
    struct stat in;
    if (stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      return absl::InvalidArgumentError(absl::StrCat(
          input, ": is also standard output, where this command would write into the input; "
                 "redirect standard output elsewhere (or give --allow-overwrite where the "
                 "command takes it)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace semmap_cli
