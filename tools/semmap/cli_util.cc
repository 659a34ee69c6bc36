#include "cli_util.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "output_target.h"

namespace semmap_cli {
namespace {

// "usage: SYNOPSIS", the description, then CLI11's list of the options.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter(const std::string* synopsis, const std::string* description,
                const std::string* footer)
      : synopsis_(synopsis), description_(description), footer_(footer) {
    column_width(30);
  }

  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode mode) const override {
    std::string out = absl::StrCat("usage: ", *synopsis_, "\n");
    if (!description_->empty()) absl::StrAppend(&out, "\n", *description_);
    absl::StrAppend(&out, make_groups(app, mode));
    // Option groups (CommandLine::ExactlyOne) under their own names.
    for (const CLI::App* group : app->get_subcommands({})) {
      std::vector<const CLI::Option*> options = group->get_options(
          [group](const CLI::Option* opt) { return opt != group->get_help_ptr(); });
      if (!options.empty()) absl::StrAppend(&out, make_group(group->get_group(), false, options));
    }
    if (!footer_->empty()) absl::StrAppend(&out, "\n", *footer_);
    // One blank line between the parts, however CLI11 ended its groups.
    while (absl::StrContains(out, "\n\n\n")) out = absl::StrReplaceAll(out, {{"\n\n\n", "\n\n"}});
    return out;
  }

  std::string make_group(std::string group, bool is_positional,
                         std::vector<const CLI::Option*> opts) const override {
    std::ostringstream out;
    out << "\n" << group << ":\n";
    for (const CLI::Option* opt : opts) out << make_option(opt, is_positional);
    return out.str();
  }

  // No "REQUIRED", "Needs:" or "Excludes:" tails: the descriptions say it.
  std::string make_option_opts(const CLI::Option* opt) const override {
    return opt->get_type_name().empty() ? std::string() : " " + opt->get_type_name();
  }

 private:
  const std::string* synopsis_;
  const std::string* description_;
  const std::string* footer_;
};

// The names of `option` as given in `names` ("-o,--output").
std::vector<std::string> SplitNames(const std::string& names) {
  std::vector<std::string> out;
  std::string current;
  for (char c : names) {
    if (c == ',') {
      out.push_back(current);
      current.clear();
    } else if (c != ' ') {
      current += c;
    }
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

// How many times `name` occurs in argv before "--", as NAME or NAME=VALUE.
int Occurrences(const std::string& name, int argc, char** argv) {
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == name || absl::StartsWith(arg, name + "=")) ++n;
  }
  return n;
}

}  // namespace

CommandLine::CommandLine(std::string tool, std::string synopsis, std::string description,
                         std::string footer)
    : tool_(std::move(tool)),
      synopsis_(std::move(synopsis)),
      description_(std::move(description)),
      footer_(std::move(footer)),
      app_("", tool_) {
  app_.formatter(std::make_shared<HelpFormatter>(&synopsis_, &description_, &footer_));
  app_.set_help_flag("-h,--help", "print this help and exit");
  app_.option_defaults()->group("Options");
  // Unknown options are reported in the tools' words (Check).
  app_.allow_extras();
  app_.add_option("arguments", positional_)->group("");
}

CLI::Option* CommandLine::Value(const std::string& names, const std::string& value_name,
                                const std::string& help) {
  CLI::Option* option = app_.add_option(names, help);
  option->type_name(value_name);
  // Kept for Check: a second value is an error, not a silent replacement.
  option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  declared_.push_back({option, SplitNames(names), false});
  return option;
}

CLI::Option* CommandLine::Input(const std::string& names, const std::string& value_name,
                                const std::string& help) {
  CLI::Option* option = Value(names, value_name, help);
  declared_.back().input = true;
  return option;
}

CLI::Option* CommandLine::Flag(const std::string& names, const std::string& help) {
  CLI::Option* option = app_.add_flag(names, help);
  declared_.push_back({option, SplitNames(names), true});
  return option;
}

void CommandLine::ExactlyOne(const std::string& group,
                             std::initializer_list<CLI::Option*> options, std::string message,
                             std::string none_message) {
  CLI::Option_group* g = app_.add_option_group(group);
  for (CLI::Option* option : options) g->add_option(option);
  g->require_option(1);
  groups_.push_back(
      {std::vector<CLI::Option*>(options), std::move(message), std::move(none_message)});
}

void CommandLine::Positionals(std::size_t min, std::size_t max, std::string message) {
  min_positional_ = min;
  max_positional_ = max;
  positional_message_ = std::move(message);
}

std::string CommandLine::Help() const { return app_.help(); }

int CommandLine::UsageError(const std::string& message) const {
  std::cerr << tool_ << ": " << Shortened(EscapeControls(message)) << "\n" << Help();
  return kExitBadInput;
}

std::string CommandLine::Describe(const CLI::ParseError& error, int argc, char** argv) const {
  // The problems CLI11 finds before Check can run.
  for (const Group& group : groups_) {
    std::size_t given = 0;
    for (const CLI::Option* option : group.options) given += option->count() > 0 ? 1 : 0;
    if (given == 0 && !group.none_message.empty()) return group.none_message;
    if (given != 1) return group.message;
  }
  const std::string what = error.what();
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    const std::size_t n = Arguments().size();
    if (n < min_positional_ || n > max_positional_) return positional_message_;
    for (const Declared& d : declared_) {
      if (d.option->get_required() && d.option->count() == 0) {
        return absl::StrCat("missing ", d.names.front(), " ", d.option->get_type_name());
      }
    }
  }
  if (dynamic_cast<const CLI::RequiresError*>(&error) != nullptr) {
    return absl::StrReplaceAll(what, {{" requires ", " needs "}});
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    // "--reference: 1 required ORIGINAL.onnx missing": a value option last.
    for (const Declared& d : declared_) {
      if (d.flag) continue;
      for (const std::string& name : d.names) {
        if (argc > 1 && argv[argc - 1] == name) return absl::StrCat(name, " needs a value");
      }
    }
    for (const Declared& d : declared_) {
      if (absl::StartsWith(what, d.option->get_name() + ":")) {
        return absl::StrCat(d.names.front(), " needs a value");
      }
    }
  }
  return what;
}

std::optional<std::string> CommandLine::CheckOptions(int argc, char** argv) const {
  for (const std::string& extra : app_.remaining()) {
    if (extra == "--") break;  // the rest are arguments
    if (absl::StartsWith(extra, "-") && extra != "-") {
      return absl::StrCat("unknown option ", extra.substr(0, extra.find('=')));
    }
  }
  for (const Declared& d : declared_) {
    if (d.flag || d.option->count() < 2) continue;
    std::vector<std::string> used;
    for (const std::string& name : d.names) {
      const int n = Occurrences(name, argc, argv);
      if (n > 1) return absl::StrCat(name, " given twice");
      if (n == 1) used.push_back(name);
    }
    // `-o a --output b`: the same option under two names.
    if (used.size() > 1) {
      return absl::StrCat(absl::StrJoin(used, " and "), " are one option: give it once");
    }
    return absl::StrCat(d.names.front(), " given twice");
  }
  return std::nullopt;
}

std::vector<std::string> CommandLine::Arguments() const {
  std::vector<std::string> out = positional_;
  for (const std::string& extra : app_.remaining()) {
    if (extra != "--") out.push_back(extra);
  }
  return out;
}

std::optional<Args> CommandLine::Parse(int argc, char** argv, int* exit_code) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << Help();
    *exit_code = kExitOk;
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    // An unknown or repeated option is the first thing to say, whatever
    // else CLI11 stopped at.
    std::optional<std::string> problem = CheckOptions(argc, argv);
    *exit_code = UsageError(problem ? *problem : Describe(e, argc, argv));
    return std::nullopt;
  }
  if (std::optional<std::string> problem = CheckOptions(argc, argv)) {
    *exit_code = UsageError(*problem);
    return std::nullopt;
  }
  Args args;
  args.positional = Arguments();
  args.inputs = args.positional;
  if (args.positional.size() < min_positional_ || args.positional.size() > max_positional_) {
    *exit_code = UsageError(positional_message_);
    return std::nullopt;
  }
  for (const Declared& d : declared_) {
    if (d.option->count() == 0) continue;
    for (const std::string& name : d.names) {
      if (d.flag) {
        args.flags.insert(name);
      } else {
        args.options[name] = d.option->results().back();
      }
    }
    if (d.input) args.inputs.push_back(d.option->results().back());
  }
  // What the command prints must not land in what it reads.
  if (!args.has("--allow-overwrite")) {
    if (absl::Status status = CheckStdoutIsNoInput(args.inputs); !status.ok()) {
      *exit_code = Fail(tool_.c_str(), status);
      return std::nullopt;
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

std::string Shortened(absl::string_view message) {
  constexpr std::size_t kHead = 640, kTail = 256;
  if (message.size() <= kMaxMessageBytes) return std::string(message);
  // Keep whole UTF-8 sequences: never cut before a continuation byte.
  auto boundary = [message](std::size_t i) {
    while (i < message.size() && (static_cast<unsigned char>(message[i]) & 0xc0) == 0x80) ++i;
    return i;
  };
  const std::size_t head = boundary(kHead);
  const std::size_t tail = boundary(message.size() - kTail);
  return absl::StrCat(message.substr(0, head), " [... ", tail - head, " bytes ...] ",
                      message.substr(tail));
}

int Fail(const char* tool, const absl::Status& status, int code) {
  std::cerr << tool << ": " << Shortened(EscapeControls(status.message())) << "\n";
  return code;
}

}  // namespace semmap_cli
