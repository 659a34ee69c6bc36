// Small helpers shared by semmap's command-line tools: argument parsing and
// uniform error exits.
#ifndef SEMMAP_EXAMPLES_CLI_UTIL_H_
#define SEMMAP_EXAMPLES_CLI_UTIL_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap_cli {

// Exit codes shared by every tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNotFound = 1;  // e.g. --node names no node
inline constexpr int kExitBadInput = 2;  // bad usage, unreadable or invalid input

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // "--manifest" -> value
  std::set<std::string> flags;                 // "--json"
  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
  const std::string* option(const std::string& name) const {
    auto it = options.find(name);
    return it == options.end() ? nullptr : &it->second;
  }
};

// Parses argv: `value_options` take a value ("--manifest X" or
// "--manifest=X"), `flag_options` take none. Unknown options are
// InvalidArgument.
absl::StatusOr<Args> ParseArgs(int argc, char** argv,
                               const std::set<std::string>& value_options,
                               const std::set<std::string>& flag_options);

// `text` with the bytes a terminal would act on (C0 controls, DEL and the
// UTF-8 encoded C1 controls) written as \xNN: messages quote names from
// hostile files, which must not move the cursor, ring or retitle the
// terminal.
std::string EscapeControls(absl::string_view text);

// Prints "<tool>: <message>" on one line to stderr, control characters
// escaped, and returns `code`.
int Fail(const char* tool, const absl::Status& status, int code = kExitBadInput);

}  // namespace semmap_cli

#endif  // SEMMAP_EXAMPLES_CLI_UTIL_H_
