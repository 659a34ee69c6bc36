// semmap_bench: one measurement of semmap on one model, in a fresh process
// so peak RSS belongs to that measurement alone.
//
//   semmap_bench MODEL.onnx MANIFEST.json [--loader wire|protobuf]
//                [--repeat N] [--no-map]
//   semmap_bench --manifest-only MANIFEST.json [--repeat N]
//   semmap_bench --open MODEL.onnx MANIFEST.json|- [--reference REF.onnx]
//                [--no-record] [--repeat N]
//
// Loads the graph, loads the manifest, maps every node, writes what
// `semmap map --json` writes (WriteSummaryJson, into a stream that counts
// and discards), and prints one JSON line: nodes, load_s, manifest_s,
// map_s, total_s (load + manifest + map), write_s and json_bytes, nodes/s
// of each step, mapped nodes, peak_rss_mb (VmHWM) and the file size. With
// --repeat the fastest of N rounds is reported for each step, and
// map_phases, the map step's own phases of its fastest round (name and
// seconds, in the order they ended; side-by-side phases overlap).
// --manifest-only loads only the manifest and prints modules, manifest_s,
// modules/s, peak_rss_mb (the manifest's alone, the process's start-up
// included) and the file size.
// --open times SemanticMapper::Open (the one load path of the tool: model
// and manifest on two threads, then the reference, the record and the
// map; "-" names no manifest, so a model carrying a provenance record is
// mapped with it) and the summary's write, and prints open_s, write_s,
// the mapper's phases of the fastest round (name and seconds, in the order
// they ended; side-by-side phases overlap), peak_rss_mb and how the record
// was used.
// Exit codes: 0 ok, 2 bad usage or input.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <ostream>
#include <streambuf>
#include <string>

#include "base/parallel.h"  // the thread threshold, printed with the figures
#include "mapping/core/mapper_access.h"  // the phases of Open
#include "semmap/semmap.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Peak resident set size in MiB: VmHWM, or getrusage where /proc is absent.
double PeakRssMb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

// Resident set size now, in MiB (VmRSS); 0 where /proc is absent.
double CurrentRssMb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0.0;
}

// Counts what is written to it and keeps none of it: the write step's
// cost without a disk's.
class CountingBuffer : public std::streambuf {
 public:
  std::size_t bytes() const { return bytes_; }

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) ++bytes_;
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes_ += static_cast<std::size_t>(n);
    return n;
  }

 private:
  std::size_t bytes_ = 0;
};

int Usage() {
  std::cerr << "usage: semmap_bench MODEL.onnx MANIFEST.json [--loader wire|protobuf] "
               "[--repeat N] [--no-map]\n"
               "       semmap_bench --open MODEL.onnx MANIFEST.json|- [--reference REF.onnx] "
               "[--no-record] [--repeat N]\n"
               "       semmap_bench --manifest-only MANIFEST.json [--repeat N]\n";
  return 2;
}

double FileMb(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size / 1048576.0 : 0.0;
}

// Manifest::Load alone, the fastest of `repeat` rounds.
int ManifestOnly(const std::string& path, int repeat) {
  double best = std::numeric_limits<double>::infinity();
  std::size_t modules = 0;
  for (int round = 0; round < repeat; ++round) {
    const double t0 = Now();
    auto manifest = semmap::Manifest::Load(path);
    const double t1 = Now();
    if (!manifest.ok()) {
      std::cerr << "semmap_bench: " << manifest.status().message() << "\n";
      return 2;
    }
    modules = manifest->size();
    best = std::min(best, t1 - t0);
  }
  std::printf(
      "{\"modules\":%zu,\"manifest_s\":%.6f,\"modules_per_s\":%.0f,\"peak_rss_mb\":%.1f,"
      "\"manifest_file_mb\":%.1f}\n",
      modules, best, best > 0 ? static_cast<double>(modules) / best : 0.0, PeakRssMb(),
      FileMb(path));
  return 0;
}

// A JSON string of `text`, which holds no byte that needs escaping but '"'
// and '\\' (the phases' names, a record use's name).
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The mapper's phases (MapperAccess::Phases) as JSON array elements:
// ["name",seconds],...
std::string PhasesJson(const semmap::SemanticMapper& mapper) {
  std::string out;
  for (const auto& phase : semmap::internal::MapperAccess::Phases(mapper).phases()) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.6f", phase.seconds);
    out += (out.empty() ? "[" : ",[") + Quoted(phase.name) + "," + seconds + "]";
  }
  return out;
}

// SemanticMapper::Open (model and manifest read on two threads, then the
// reference, the record and the map) and the summary's write.
int OpenOnly(const std::string& model, const std::string& manifest,
             const semmap::SemanticMapper::OpenOptions& options, int repeat) {
  double best = std::numeric_limits<double>::infinity(), write_s = best;
  std::size_t nodes = 0, mapped = 0;
  std::string phases, record;
  for (int round = 0; round < repeat; ++round) {
    const double t0 = Now();
    auto mapper = semmap::SemanticMapper::Open(model, manifest, options);
    const double t1 = Now();
    if (!mapper.ok()) {
      std::cerr << "semmap_bench: " << mapper.status().message() << "\n";
      return 2;
    }
    CountingBuffer counter;
    std::ostream out(&counter);
    semmap::JsonSources sources;
    sources.model = model;
    sources.manifest = manifest;
    semmap::WriteSummaryJson(out, *mapper, sources);
    write_s = std::min(write_s, Now() - t1);
    nodes = mapper->graph().size();
    mapped = mapper->mappedCount();
    if (t1 - t0 < best) {
      best = t1 - t0;
      phases = PhasesJson(*mapper);
    }
    record = std::string(semmap::RecordUseName(mapper->provenance().record));
  }
  std::printf(
      "{\"nodes\":%zu,\"mapped\":%zu,\"open_s\":%.6f,\"write_s\":%.6f,\"threads\":2,"
      "\"peak_rss_mb\":%.1f,\"record\":%s,\"phases\":[%s]}\n",
      nodes, mapped, best, write_s, PeakRssMb(), Quoted(record).c_str(), phases.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, manifest_path, loader_name = "wire";
  int repeat = 1;
  bool map = true;
  bool manifest_only = false;
  bool open = false;
  semmap::SemanticMapper::OpenOptions open_options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--loader" && i + 1 < argc) {
      loader_name = argv[++i];
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--no-map") {
      map = false;
    } else if (arg == "--open") {
      open = true;
    } else if (arg == "--reference" && i + 1 < argc) {
      open_options.reference_path = argv[++i];
    } else if (arg == "--no-record") {
      open_options.use_record = false;
    } else if (arg == "--manifest-only") {
      manifest_only = true;
    } else if (!arg.empty() && arg[0] != '-' && model.empty()) {
      model = arg;
    } else if ((arg == "-" || (!arg.empty() && arg[0] != '-')) && manifest_path.empty()) {
      manifest_path = arg;
    } else {
      return Usage();
    }
  }
  if (manifest_only) {
    // The one path given is the manifest.
    if (model.empty() || !manifest_path.empty()) return Usage();
    return ManifestOnly(model, repeat);
  }
  if (model.empty() || manifest_path.empty()) return Usage();
  if (open) return OpenOnly(model, manifest_path == "-" ? "" : manifest_path, open_options, repeat);
  semmap::GraphOptions options;
  if (loader_name == "wire") {
    options.loader = semmap::Loader::kWireScan;
  } else if (loader_name == "protobuf") {
    options.loader = semmap::Loader::kProtobuf;
  } else {
    return Usage();
  }

  const double inf = std::numeric_limits<double>::infinity();
  double load_s = inf, manifest_s = inf, map_s = inf, total_s = inf, write_s = inf;
  std::size_t nodes = 0, mapped = 0, json_bytes = 0;
  // Resident memory after each step of the last round: where the peak goes.
  double rss_load = 0, rss_manifest = 0, rss_map = 0;
  std::string map_phases;  // of the fastest map step
  for (int round = 0; round < repeat; ++round) {
    const double t0 = Now();
    auto graph = semmap::Graph::Load(model, options);
    const double t1 = Now();
    rss_load = CurrentRssMb();
    if (!graph.ok()) {
      std::cerr << "semmap_bench: " << graph.status().message() << "\n";
      return 2;
    }
    nodes = graph->size();
    double t2 = t1, t3 = t1, t4 = t1;
    if (map) {
      auto manifest = semmap::Manifest::Load(manifest_path);
      t2 = Now();
      rss_manifest = CurrentRssMb();
      if (!manifest.ok()) {
        std::cerr << "semmap_bench: " << manifest.status().message() << "\n";
        return 2;
      }
      auto mapper = semmap::SemanticMapper::Create(
          *graph, std::make_shared<const semmap::Manifest>(*std::move(manifest)));
      t3 = Now();
      if (!mapper.ok()) {
        std::cerr << "semmap_bench: " << mapper.status().message() << "\n";
        return 2;
      }
      mapped = mapper->mappedCount();
      rss_map = CurrentRssMb();
      if (t3 - t2 < map_s) map_phases = PhasesJson(*mapper);
      CountingBuffer counter;
      std::ostream out(&counter);
      semmap::JsonSources sources;
      sources.model = model;
      sources.manifest = manifest_path;
      const double t3w = Now();
      semmap::WriteSummaryJson(out, *mapper, sources);
      t4 = Now();
      json_bytes = counter.bytes();
      write_s = std::min(write_s, t4 - t3w);
    }
    load_s = std::min(load_s, t1 - t0);
    manifest_s = std::min(manifest_s, t2 - t1);
    map_s = std::min(map_s, t3 - t2);
    total_s = std::min(total_s, t3 - t0);
  }
  if (!map) write_s = 0;
  const double file_mb = FileMb(model);
  const double n = static_cast<double>(nodes);
  std::printf(
      "{\"loader\":\"%s\",\"nodes\":%zu,\"mapped\":%zu,\"load_s\":%.6f,\"manifest_s\":%.6f,"
      "\"map_s\":%.6f,\"total_s\":%.6f,\"load_nodes_per_s\":%.0f,\"map_nodes_per_s\":%.0f,"
      "\"peak_rss_mb\":%.1f,\"rss_after_load_mb\":%.1f,\"rss_after_manifest_mb\":%.1f,"
      "\"rss_after_map_mb\":%.1f,\"file_mb\":%.1f,\"threads\":%d,\"write_s\":%.6f,"
      "\"json_bytes\":%zu,\"map_phases\":[%s]}\n",
      loader_name.c_str(), nodes, mapped, load_s, manifest_s, map_s, total_s,
      load_s > 0 ? n / load_s : 0.0, map && map_s > 0 ? n / map_s : 0.0, PeakRssMb(), rss_load, rss_manifest,
      rss_map, file_mb, nodes >= semmap::internal::kParallelNodes ? 2 : 1, write_s, json_bytes,
      map_phases.c_str());
  return 0;
}
