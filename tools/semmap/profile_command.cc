// semmap profile: an ONNX Runtime profile's kernel time by module, layer,
// class and semantic category.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "commands.h"
#include "progress.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap profile";

std::string Ms(std::int64_t us) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(us) / 1000.0);
  return buffer;
}

std::string Share(std::int64_t us, std::int64_t total) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%",
                total > 0 ? 100.0 * static_cast<double>(us) / static_cast<double>(total) : 0.0);
  return buffer;
}

std::string Row(std::int64_t us, std::int64_t total, std::int64_t calls, std::size_t nodes) {
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%10s %6s %7lld %6zu  ", Ms(us).c_str(),
                Share(us, total).c_str(), static_cast<long long>(calls), nodes);
  return buffer;
}

std::string ModuleLabel(const semmap::Manifest& manifest, semmap::ModuleId id) {
  const semmap::ModuleInfo& info = manifest.module(id);
  std::string label = info.path.empty() ? "<root>" : EscapeControls(info.path);
  if (!info.class_name.empty()) absl::StrAppend(&label, " (", EscapeControls(info.class_name), ")");
  return label;
}

constexpr char kHeader[] = "   time_ms  share   calls  nodes  ";

void PrintModules(const semmap::Manifest& manifest, const semmap::ProfileAttribution& a,
                  bool subtree, std::size_t top) {
  std::vector<const semmap::ModuleTime*> rows;
  for (const semmap::ModuleTime& m : a.modules) {
    if ((subtree ? m.subtree_us : m.own_us) > 0) rows.push_back(&m);
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const auto* x, const auto* y) {
    return subtree ? x->subtree_us > y->subtree_us : x->own_us > y->own_us;
  });
  std::cout << "\nmodules by " << (subtree ? "subtree" : "own") << " time"
            << (top && rows.size() > top ? absl::StrCat(" (top ", top, " of ", rows.size(), ")")
                                         : std::string())
            << ":\n" << kHeader << "module\n";
  for (std::size_t i = 0; i < rows.size() && (top == 0 || i < top); ++i) {
    const semmap::ModuleTime& m = *rows[i];
    std::cout << (subtree ? Row(m.subtree_us, a.attributed_us, m.subtree_calls, m.subtree_nodes)
                          : Row(m.own_us, a.attributed_us, m.own_calls, m.own_nodes))
              << ModuleLabel(manifest, m.module) << "\n";
  }
}

void PrintGroups(const char* title, const char* column,
                 const std::vector<semmap::GroupTime>& groups, std::int64_t total,
                 std::size_t top, const char* empty_name) {
  std::cout << "\n" << title
            << (top && groups.size() > top
                    ? absl::StrCat(" (top ", top, " of ", groups.size(), ")")
                    : std::string())
            << ":\n" << kHeader << column << "\n";
  for (std::size_t i = 0; i < groups.size() && (top == 0 || i < top); ++i) {
    const semmap::GroupTime& g = groups[i];
    std::cout << Row(g.us, total, g.calls, g.nodes)
              << (g.name.empty() ? empty_name : EscapeControls(g.name))
              << "\n";
  }
}

// Layers: per repeated container, its items in index order, so the layers
// of one stack read side by side.
void PrintLayers(const semmap::Manifest& manifest, const semmap::ProfileAttribution& a,
                 std::size_t top) {
  if (a.layers.empty()) return;
  std::cout << "\nlayers (items of repeated containers, whole subtrees):\n" << kHeader << "item\n";
  semmap::ModuleId container = semmap::kNoModule;
  std::size_t shown = 0;
  for (const semmap::LayerTime& l : a.layers) {
    if (l.container != container) {
      container = l.container;
      shown = 0;
    }
    if (top != 0 && shown++ >= top) continue;
    std::cout << Row(l.us, a.attributed_us, l.calls, l.nodes) << ModuleLabel(manifest, l.item)
              << "\n";
  }
}

const char* ReasonText(semmap::UnattributedReason reason) {
  switch (reason) {
    case semmap::UnattributedReason::kNotInGraph:
      return "name no node of the model (the session ran another graph: pass the one "
             "saved with SessionOptions.optimized_model_filepath, with --reference "
             "set to the export)";
    case semmap::UnattributedReason::kOpTypeMismatch:
      return "name a node of another op type (the session ran another graph)";
    case semmap::UnattributedReason::kUnmapped:
      return "are nodes semmap maps to no module";
  }
  return "";
}

}  // namespace

namespace {

// The text report of `semmap profile`: the profile, what was attributed,
// then the tables of `n` rows.
void PrintProfileText(const LoadedModel& model, const std::string& profile_path,
                      const semmap::Profile& profile, const semmap::ProfileAttribution& a,
                      std::size_t n) {
  const semmap::Manifest& manifest = model.mapper->manifest();
  std::cout << "profile:  " << profile_path << " (" << profile.runs() << " runs, "
            << profile.kernel_events() << " kernel events of " << a.profiled_nodes
            << " nodes, " << Ms(a.kernel_us) << " ms kernel time";
  if (profile.runs() > 0) {
    std::cout << ", " << Ms(profile.run_us() / profile.runs()) << " ms per run";
  }
  for (const std::string& p : profile.providers()) std::cout << ", " << p;
  std::cout << ")\nmodel:    " << model.model_path << " (" << model.graph().size() << " nodes)";
  if (model.reference_path) std::cout << ", reference " << *model.reference_path;
  std::cout << "\nattributed: " << Ms(a.attributed_us) << " of " << Ms(a.kernel_us) << " ms ("
            << Share(a.attributed_us, a.kernel_us) << "), " << a.attributed_nodes << " of "
            << a.profiled_nodes << " profiled nodes\n";
  if (a.split_nodes > 0) {
    std::cout << "split (estimate): " << Ms(a.split_us) << " ms of " << a.split_nodes
              << " fused nodes divided over their origins by the export's nodes each part "
                 "replaced\n";
  }
  for (const semmap::UnattributedTime& u : a.unattributed) {
    std::cout << "not attributed: " << Ms(u.us) << " ms (" << Share(u.us, a.kernel_us) << "), "
              << u.nodes << " nodes " << ReasonText(u.reason) << "; e.g. "
              << EscapeControls(u.examples.empty() ? std::string() : u.examples.front()) << "\n";
  }
  PrintModules(manifest, a, /*subtree=*/true, n);
  PrintModules(manifest, a, /*subtree=*/false, n);
  PrintLayers(manifest, a, n);
  PrintGroups("classes (own time)", "class", a.classes, a.attributed_us, n, "(no class)");
  PrintGroups("categories", "category", a.categories, a.attributed_us, n, "(no category)");
  PrintGroups("op types", "op type", a.op_types, a.attributed_us, n, "");
}

// The options of `semmap profile`.
void AddProfileOptions(CommandLine& command_line) {
  command_line.Input("--ort-profile", "PROFILE.json",
                     "the profile JSON written by ONNX Runtime")
      ->required();
  command_line.Value("--top", "N",
                     "rows per table (default 10, 0 = all)");
  command_line.Flag("--split-fused",
                    "divide the time of a node fused from several modules'\n"
                    "nodes (paired with the export by --reference or the\n"
                    "model's provenance record) over those modules, by the\n"
                    "export's nodes each one's part replaced: an estimate");
  command_line.Flag("--json",
                     "everything as JSON (every module with time, every layer,\n"
                     "class, category and op type, each reason for\n"
                     "unattributed time with examples)");
}

}  // namespace

int RunProfileCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool,
      "semmap profile MODEL.onnx --ort-profile PROFILE.json [--manifest MANIFEST.json]\n"
      "                      [--top N] [--split-fused] [--json]",
      "Reads ONNX Runtime's profiler output (SessionOptions.enable_profiling) and\n"
      "gives each node's kernel time to its module: modules ranked by subtree and by\n"
      "own time, each item of every repeated container (layers), classes and semantic\n"
      "categories, with time, share of the attributed time, kernel calls and profiled\n"
      "nodes. MODEL.onnx must be the graph the session ran: ONNX Runtime optimizes\n"
      "the export before running it, so save that graph with\n"
      "SessionOptions.optimized_model_filepath and pass it here, with --reference\n"
      "set to the export. Time that goes to no module is listed by reason.\n",
      "Exit codes: 0 ok (unattributed time is reported, not an error), 2 bad usage\n"
      "or input, or a profile that names none of MODEL.onnx's nodes.\n");
  AddProfileOptions(command_line);
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string* profile_path = args->option("--ort-profile");
  int top = 10;
  if (const std::string* t = args->option("--top")) {
    if (!absl::SimpleAtoi(*t, &top) || top < 0 || top > 1000000) {
      return command_line.UsageError(
          absl::StrCat("--top needs an integer from 0 to 1000000, got \"", *t, "\""));
    }
  }
  const std::string& input = args->positional[0];
  auto loaded = LoadProfiledWithProgress(RequestOf(*args, input), profile_path);
  if (!loaded.ok()) return Fail(kTool, loaded.status());
  const std::unique_ptr<LoadedModel>& model = loaded->model;
  const std::optional<semmap::Profile>& profile = loaded->profile;
  if (args->has("--split-fused")) {
    semmap::AttributionOptions options;
    options.split_fused = true;
    absl::StatusOr<semmap::ProfileAttribution> split =
        semmap::AttributeProfile(*model->mapper, *profile, options);
    if (!split.ok()) return Fail(kTool, split.status());
    loaded->attribution = *std::move(split);
  }
  const semmap::ProfileAttribution& a = *loaded->attribution;

  std::size_t found = a.attributed_nodes;
  for (const semmap::UnattributedTime& u : a.unattributed) {
    if (u.reason == semmap::UnattributedReason::kUnmapped) found += u.nodes;
  }
  if (a.profiled_nodes == 0) {
    return Fail(kTool, absl::InvalidArgumentError(absl::StrCat(
                           *profile_path, ": no kernel events (cat \"Node\", name "
                           "\"<node>_kernel_time\"): not a profile of a run")));
  }
  if (found == 0) {
    return Fail(kTool, absl::InvalidArgumentError(absl::StrCat(
                           *profile_path, ": none of its ", a.profiled_nodes,
                           " profiled nodes is a node of ", input,
                           " (first: \"", EscapeControls(profile->nodes().front().name),
                           "\"); profile the graph the "
                           "session ran: save it with SessionOptions.optimized_model_filepath "
                           "and pass that file, with --reference ", input)));
  }
  for (const semmap::UnattributedTime& u : a.unattributed) {
    if (u.reason == semmap::UnattributedReason::kUnmapped) continue;
    std::cerr << kTool << ": warning: " << u.nodes << " profiled nodes ("
              << Share(u.us, a.kernel_us) << " of kernel time) " << ReasonText(u.reason) << "\n";
  }
  if (args->has("--json")) {
    const semmap::ProfileSources sources = {model->model_path, model->manifest_path,
                                            model->reference_path, *profile_path};
    semmap::WriteProfileJson(std::cout, *model->mapper, *profile, a, sources);
    return kExitOk;
  }
  PrintProfileText(*model, *profile_path, *profile, a, static_cast<std::size_t>(top));
  return kExitOk;
}

}  // namespace semmap_cli
