// Fuzz target for the writers, end to end: the model (and manifest) of a
// fuzz_pipeline input are written to files, loaded, mapped and written by
// every writer: Annotate (plain and with scoped names), ExtractModule,
// WriteSidecar, WriteReport, WriteGraphml, WriteModelExplorerNodeData.
//
// Input: ONNX model bytes, optionally followed by kSeparator and manifest
// JSON (fuzz_pipeline's seeds). Properties:
//   - every writer asked to write over one of its inputs (the model, the
//     manifest, another protected file) refuses with InvalidArgument and
//     leaves the input's bytes as they were;
//   - an error names a file first and stays under 1 KB beyond it;
//   - an annotated model loads again with the same nodes, op types in
//     order, and every node carries module@semmap;
//   - the sidecar and the node data are valid JSON; the report holds its
//     data element;
//   - no temporary file is left next to the outputs.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"

namespace {

constexpr absl::string_view kSeparator = "#SEMMAP#MANIFEST#";

// One directory for the whole run, emptied before each input and removed
// at exit.
struct WorkDirectory {
  std::string path;
  WorkDirectory() {
    path = (std::filesystem::temp_directory_path() / "semmap-fuzz-XXXXXX").string();
    SEMMAP_FUZZ_CHECK(::mkdtemp(path.data()) != nullptr);
  }
  ~WorkDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const std::string& WorkDir() {
  static const WorkDirectory dir;
  return dir.path;
}

void WriteFile(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  SEMMAP_FUZZ_CHECK(out.good());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// An error names one of the files (or, from ExtractModule, the module at
// fault) and stays short.
void CheckError(const absl::Status& status, const std::string& dir) {
  SEMMAP_FUZZ_CHECK(!status.ok());
  SEMMAP_FUZZ_CHECK(absl::StartsWith(status.message(), dir) ||
                    absl::StartsWith(status.message(), "module ") ||
                    absl::StartsWith(status.message(), "no module"));
  SEMMAP_FUZZ_CHECK(status.message().size() <= 2 * dir.size() + 1024);
}

void CheckWritten(const absl::Status& status, const std::string& dir) {
  if (!status.ok()) CheckError(status, dir);
}

bool ValidJson(const std::string& text) {
  return !nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false).is_discarded();
}

// Every writer refuses to write over `victim`, an input, without changing it.
void CheckRefusals(const semmap::SemanticMapper& mapper, const std::string& model,
                   const std::string& manifest, const std::string& victim,
                   const std::string& other, const std::string& dir) {
  const std::string before = ReadFile(victim);
  auto refused = [&](const absl::Status& s) {
    SEMMAP_FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CheckError(s, dir);
  };
  semmap::AnnotateOptions annotate;
  annotate.manifest_path = manifest;
  annotate.protected_paths = {other};
  refused(semmap::Annotate(mapper, model, victim, annotate).status());
  semmap::SidecarOptions sidecar;
  sidecar.model_path = model;
  sidecar.manifest_path = manifest;
  sidecar.protected_paths = {other};
  refused(semmap::WriteSidecar(mapper, victim, sidecar));
  semmap::ReportOptions report;
  report.model_path = model;
  report.manifest_path = manifest;
  report.profile_path = other;
  refused(semmap::WriteReport(mapper, victim, report));
  semmap::GraphmlOptions graphml;
  graphml.protected_paths = {model, manifest, other};
  refused(semmap::WriteGraphml(mapper, victim, graphml).status());
  semmap::NodeDataOptions node_data;
  node_data.protected_paths = {model, manifest, other};
  refused(semmap::WriteModelExplorerNodeData(mapper, nullptr, victim, node_data).status());
  semmap::ExtractOptions extract;
  extract.manifest_path = manifest;
  extract.protected_paths = {other};
  refused(semmap::ExtractModule(mapper, model, "", victim, extract).status());
  SEMMAP_FUZZ_CHECK(ReadFile(victim) == before);
}

void CheckOutputs(const semmap::SemanticMapper& mapper, const std::string& model,
                  const std::string& dir) {
  const semmap::Graph& graph = mapper.graph();
  for (bool scoped : {false, true}) {
    semmap::AnnotateOptions options;
    options.scoped_names = scoped;
    options.scoped_name_min_confidence = semmap::kConfidentFloor;
    const std::string out = dir + "/annotated.onnx";
    absl::StatusOr<semmap::AnnotateResult> r = semmap::Annotate(mapper, model, out, options);
    if (!r.ok()) {
      CheckError(r.status(), dir);
      continue;
    }
    SEMMAP_FUZZ_CHECK(r->nodes == graph.size());
    absl::StatusOr<semmap::Graph> back = semmap::Graph::Load(out);
    SEMMAP_FUZZ_CHECK(back.ok());
    SEMMAP_FUZZ_CHECK(back->size() == graph.size());
    for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(graph.size()); ++i) {
      SEMMAP_FUZZ_CHECK(back->node(i).op_type == graph.node(i).op_type);
      bool labelled = false;
      for (const semmap::MetadataEntry& entry : back->node(i).metadata) {
        labelled |= entry.first == semmap::kModuleKey;
      }
      SEMMAP_FUZZ_CHECK(labelled);
    }
  }
  semmap::SidecarOptions sidecar;
  sidecar.model_path = model;
  const std::string sidecar_out = dir + "/sidecar.json";
  const absl::Status s = semmap::WriteSidecar(mapper, sidecar_out, sidecar);
  CheckWritten(s, dir);
  if (s.ok()) SEMMAP_FUZZ_CHECK(ValidJson(ReadFile(sidecar_out)));
  const std::string report_out = dir + "/report.html";
  const absl::Status r = semmap::WriteReport(mapper, report_out, {});
  CheckWritten(r, dir);
  if (r.ok()) SEMMAP_FUZZ_CHECK(absl::StrContains(ReadFile(report_out), "id=\"semmap-data\""));
  CheckWritten(semmap::WriteGraphml(mapper, dir + "/model.graphml", {}).status(), dir);
  const std::string node_data_out = dir + "/node_data.json";
  auto nd = semmap::WriteModelExplorerNodeData(mapper, nullptr, node_data_out, {});
  CheckWritten(nd.status(), dir);
  if (nd.ok()) SEMMAP_FUZZ_CHECK(ValidJson(ReadFile(node_data_out)));
  const semmap::Manifest& manifest = mapper.manifest();
  const std::string path = manifest.size() > 1 ? std::string(manifest.path(1)) : std::string();
  CheckWritten(semmap::ExtractModule(mapper, model, path, dir + "/extracted.onnx").status(), dir);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    SEMMAP_FUZZ_CHECK(!absl::StrContains(entry.path().filename().string(), ".tmp-"));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t sep = input.find(kSeparator);
  const absl::string_view model_bytes = input.substr(0, sep);
  const std::string& dir = WorkDir();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::remove(entry.path());
  }
  const std::string model = dir + "/model.onnx";
  const std::string manifest = dir + "/manifest.json";
  const std::string other = dir + "/profile.json";
  WriteFile(model, model_bytes);
  WriteFile(other, "[]");
  if (sep != absl::string_view::npos) WriteFile(manifest, input.substr(sep + kSeparator.size()));

  semmap::SemanticMapper::OpenOptions options;
  options.mapper.allow_manifest_mismatch = true;
  options.graph.max_subgraph_depth = 16;
  absl::StatusOr<semmap::SemanticMapper> mapper = semmap::SemanticMapper::Open(
      model, sep == absl::string_view::npos ? std::string() : manifest, options);
  if (!mapper.ok()) return 0;
  for (const std::string& victim : {model, other}) {
    CheckRefusals(*mapper, model, sep == absl::string_view::npos ? std::string() : manifest,
                  victim, other, dir);
  }
  if (sep != absl::string_view::npos) CheckRefusals(*mapper, model, manifest, manifest, other, dir);
  CheckOutputs(*mapper, model, dir);
  return 0;
}
