#include "cli_util.h"

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace semmap_cli {

absl::StatusOr<Args> ParseArgs(int argc, char** argv,
                               const std::set<std::string>& value_options,
                               const std::set<std::string>& flag_options) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) args.positional.emplace_back(argv[i]);
      break;
    }
    if (!absl::StartsWith(arg, "-") || arg == "-") {
      args.positional.push_back(std::move(arg));
      continue;
    }
    std::string value;
    bool inline_value = false;
    const std::size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    if (value_options.count(arg)) {
      if (!inline_value) {
        if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(arg, " needs a value"));
        value = argv[++i];
      }
      args.options[arg] = value;
    } else if (flag_options.count(arg)) {
      if (inline_value) return absl::InvalidArgumentError(absl::StrCat(arg, " takes no value"));
      args.flags.insert(arg);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
    }
  }
  return args;
}

int Fail(const char* tool, const absl::Status& status, int code) {
  std::cerr << tool << ": " << status.message() << "\n";
  return code;
}

}  // namespace semmap_cli
