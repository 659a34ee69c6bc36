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
      // A second value would silently replace the first (`-o a -o b`).
      if (!args.options.emplace(arg, value).second) {
        return absl::InvalidArgumentError(absl::StrCat(arg, " given twice"));
      }
    } else if (flag_options.count(arg)) {
      if (inline_value) return absl::InvalidArgumentError(absl::StrCat(arg, " takes no value"));
      args.flags.insert(arg);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
    }
  }
  return args;
}

std::string EscapeControls(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char c) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F
      escape(c);
      escape(next);
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int Fail(const char* tool, const absl::Status& status, int code) {
  std::cerr << tool << ": " << EscapeControls(status.message()) << "\n";
  return code;
}

}  // namespace semmap_cli
