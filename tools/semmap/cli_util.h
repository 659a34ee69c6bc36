// Small helpers shared by semmap's command-line tools: the command line
// (declared once per command with CLI11, which parses it, checks it and
// writes the help) and uniform error exits.
#ifndef SEMMAP_TOOLS_SEMMAP_CLI_UTIL_H_
#define SEMMAP_TOOLS_SEMMAP_CLI_UTIL_H_

#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace semmap_cli {

// Exit codes shared by every tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNotFound = 1;  // e.g. --node names no node
inline constexpr int kExitBadInput = 2;  // bad usage, unreadable or invalid input

// A parsed command line. An option's value (or a flag's presence) is found
// under each of its names: option("-o") and option("--output") agree.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // "--manifest" -> value
  std::set<std::string> flags;                 // "--json"
  // Every file the command reads: the positional arguments and the values
  // of options declared with CommandLine::Input. A writing command protects
  // all of them (the library's protected_paths).
  std::vector<std::string> inputs;
  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
  const std::string* option(const std::string& name) const {
    auto it = options.find(name);
    return it == options.end() ? nullptr : &it->second;
  }
};

// One command's options, declared once. CLI11 parses argv with them,
// enforces what is declared (each value option at most once, under any of
// its names; Needs / Excludes on the returned CLI::Option; ExactlyOne) and
// writes the help: "usage: SYNOPSIS", the description, the options with
// their descriptions, the footer.
//
//   CommandLine cl("semmap tree", "semmap tree MODEL.onnx [--depth N]", "Prints ...");
//   cl.Value("--depth", "N", "show modules down to depth N");
//   std::optional<Args> args = cl.Parse(argc, argv, &exit_code);
class CommandLine {
 public:
  // `synopsis` follows "usage: " (continuation lines indented by the
  // caller); `description` and `footer` are printed as given.
  CommandLine(std::string tool, std::string synopsis, std::string description,
              std::string footer);

  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // An option taking one value; `names` as CLI11 spells them ("-o,--output").
  CLI::Option* Value(const std::string& names, const std::string& value_name,
                     const std::string& help);
  // An option whose value is a file the command reads (Args::inputs).
  CLI::Option* Input(const std::string& names, const std::string& value_name,
                     const std::string& help);
  // An option taking no value.
  CLI::Option* Flag(const std::string& names, const std::string& help);
  // Exactly one of `options` must be given; otherwise the usage error is
  // `message`, or `none_message` when none is (if not empty).
  void ExactlyOne(const std::string& group, std::initializer_list<CLI::Option*> options,
                  std::string message, std::string none_message = "");
  // The number of positional arguments, from `min` to `max`; otherwise the
  // usage error is `message`.
  void Positionals(std::size_t min, std::size_t max, std::string message);

  // The help text (what --help prints).
  std::string Help() const;

  // Parses argv (argv[0] is the command's name). Returns nullopt after
  // printing the help for --help / -h (stdout, *exit_code 0) or
  // "TOOL: problem" and the help for bad usage (stderr, *exit_code 2).
  std::optional<Args> Parse(int argc, char** argv, int* exit_code);

  // Prints "TOOL: message" and the help on stderr; returns kExitBadInput.
  int UsageError(const std::string& message) const;

  const std::string& tool() const { return tool_; }

 private:
  struct Declared {
    CLI::Option* option;
    std::vector<std::string> names;  // "-o", "--output"
    bool flag;
    bool input = false;  // the value names a file the command reads
  };
  struct Group {
    std::vector<CLI::Option*> options;
    std::string message;
    std::string none_message;
  };

  // The problem a parse error stands for, in the tools' words.
  std::string Describe(const CLI::ParseError& error, int argc, char** argv) const;
  // An unknown option, or a value option given twice (under any names).
  std::optional<std::string> CheckOptions(int argc, char** argv) const;
  // The positional arguments, "--" left out.
  std::vector<std::string> Arguments() const;

  std::string tool_;
  std::string synopsis_;
  std::string description_;
  std::string footer_;
  CLI::App app_;
  std::vector<std::string> positional_;
  std::vector<Declared> declared_;
  std::vector<Group> groups_;
  std::size_t min_positional_ = 0;
  std::size_t max_positional_ = static_cast<std::size_t>(-1);
  std::string positional_message_;
};

// `text` with the bytes a terminal would act on (C0 controls, DEL and the
// UTF-8 encoded C1 controls) written as \xNN: messages quote names from
// hostile files, which must not move the cursor, ring or retitle the
// terminal.
std::string EscapeControls(absl::string_view text);

// Messages quote arguments and names whole; above this many bytes they are
// shortened in the middle (Shortened), so that the file, the place and the
// cause stay readable whatever the input's size.
inline constexpr std::size_t kMaxMessageBytes = 1000;

// `message` itself when at most kMaxMessageBytes long; otherwise its head
// and tail around "[... N bytes ...]".
std::string Shortened(absl::string_view message);

// Prints "<tool>: <message>" on one line to stderr, shortened, control
// characters escaped, and returns `code`.
int Fail(const char* tool, const absl::Status& status, int code = kExitBadInput);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_CLI_UTIL_H_
