// Report: one self-contained HTML page showing a model's module tree with
// what the ONNX graph holds, for people rather than tools.
//
//   semmap::ReportOptions options;
//   options.model_path = "model.onnx";
//   absl::Status s = semmap::WriteReport(*mapper, "report.html", options);
//
// The page needs no network and no other file: CSS and JavaScript are
// inline, and the data is one JSON document in a
// <script type="application/json" id="semmap-data"> element (format
// "semmap.report", described in docs/report.md). It shows the module tree
// (collapsible; node and parameter counts, op-type mix, mean and minimum
// mapping confidence as colour), a search box filtering module paths,
// classes and node names, and for the selected module its nodes with their
// mapping, strategy and evidence. The URL fragment "#q=TEXT" pre-fills the
// search and "#m=PATH" selects a module ("#q=attn&m=transformer.h.1").
//
// Names come from the model file and are untrusted: the JSON has every
// '<', '>' and '&' escaped (so no "</script>" can end the element early)
// and the page inserts text only through textContent, never as HTML.
//
// With numerics (ReadReportNumerics: a "semmap.numerics" document of
// `semmap compare-numerics`, docs/numerics.md) the page gains a "numerics"
// tab: the error along the model (leaf modules in graph order, log scale,
// the ten first of the ranking highlighted and numbered) and the ranked
// tables, each row linking to its module; the tree and the selected module
// show each module's error. Modules are matched by path: both files of a
// comparison share them, so either side can be reported on (the page says
// which, or that the model is neither).
//
// Errors from WriteReport (messages start with the output path):
//   InvalidArgument   output is the model or manifest file (without
//                     allow_overwrite), or a directory
//   NotFound          output directory missing
//   PermissionDenied  output directory not writable
// The file is written atomically. Thread-safe: the mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_REPORT_H_
#define SEMMAP_INCLUDE_SEMMAP_REPORT_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/profile.h"

namespace semmap {

// One row of a view of a "semmap.numerics" document. A figure the document
// gives as null (not measured, not finite, or absent) is NaN.
struct SEMMAP_EXPORT NumericsRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string module;      // module path; "" is the root
  std::string class_name;  // "class"
  int rank = 0;            // 1 for the most error; 0: not ranked (nothing paired)
  std::int64_t order = -1;  // the module's first node in the reference; -1 unknown
  double added_error = kNone;
  double input_error = kNone;
  double output_rel_l2 = kNone;  // output_error's figures
  double sqnr_db = kNone;        // NaN also when the values are identical
  double cosine = kNone;
  double max_abs = kNone;
  double local_rel_l2 = kNone;  // local_error.rel_l2 (leaf view, isolated run)
  double impact = kNone;
  bool introduces_nonfinite = false;
  std::vector<std::string> fused;  // modules merged into this row (leaf view)
};

// What the report shows of a "semmap.numerics" document (format version 1).
struct SEMMAP_EXPORT ReportNumerics {
  std::string reference_path;  // the two files compared, as the document names them
  std::string deployed_path;
  std::string provider;
  std::string inputs_note;      // how the inputs were made or read
  std::string leaf_ranked_by;   // "local" or "added"
  double final_error = NumericsRow::kNone;
  std::vector<NumericsRow> leaf;     // each module's own nodes, in the file's order
  std::vector<NumericsRow> subtree;  // each module with everything below it
};

// Reads `path`, a document of `semmap compare-numerics --json`. Messages
// start with the path:
//   NotFound         no such file
//   InvalidArgument  not JSON (with the byte offset), not "semmap.numerics",
//                    another version, or a field of the wrong type (with its
//                    JSON pointer); larger than `max_bytes`
SEMMAP_EXPORT absl::StatusOr<ReportNumerics> ReadReportNumerics(
    const std::string& path, std::uint64_t max_bytes = std::uint64_t{1} << 30);
// The same from text; `origin` starts every message.
SEMMAP_EXPORT absl::StatusOr<ReportNumerics> ParseReportNumerics(
    absl::string_view text, absl::string_view origin,
    std::uint64_t max_bytes = std::uint64_t{1} << 30);

struct SEMMAP_EXPORT ReportOptions {
  // Shown in the page and recorded in the data; also the files WriteReport
  // refuses to overwrite. Empty: not shown.
  std::string model_path;
  std::string manifest_path;
  // Every other file the command read (a reference, a profile, a rule
  // file): protected like the input.
  std::vector<std::string> protected_paths;
  // Allow the output to be any of these files (profile_path included).
  bool allow_overwrite = false;
  // Kernel time from an ONNX Runtime profile of this graph (AttributeProfile
  // with the same mapper), or null. With it the page gains a time column in
  // the module tree (subtree time, coloured by its share of the attributed
  // time) and in the node table, and the data gains "profile",
  // modules.time_us / own_time_us and nodes.time_us (docs/report.md). An
  // attribution of another graph is ignored.
  const ProfileAttribution* profile = nullptr;
  std::string profile_path;  // shown in the page; protected like the model
  // Per-module error from ReadReportNumerics, or null. With it the data
  // gains "numerics" (docs/report.md).
  const ReportNumerics* numerics = nullptr;
  std::string numerics_path;  // shown in the page; protected like the model
};

// The embedded data document (JSON text, not yet escaped for HTML).
SEMMAP_EXPORT std::string ReportDataJson(const SemanticMapper& mapper,
                                         const ReportOptions& options = {});

// The whole page.
SEMMAP_EXPORT std::string ReportHtml(const SemanticMapper& mapper,
                                     const ReportOptions& options = {});

SEMMAP_EXPORT absl::Status WriteReport(const SemanticMapper& mapper, const std::string& output,
                                       const ReportOptions& options = {});

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_REPORT_H_
