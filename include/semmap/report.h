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
// Errors from WriteReport (messages start with the output path):
//   InvalidArgument   output is the model or manifest file (without
//                     allow_overwrite), or a directory
//   NotFound          output directory missing
//   PermissionDenied  output directory not writable
// The file is written atomically. Thread-safe: the mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_REPORT_H_
#define SEMMAP_INCLUDE_SEMMAP_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/profile.h"

namespace semmap {

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
