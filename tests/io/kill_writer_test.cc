// Writes never lose data: a writer killed with SIGKILL at any moment leaves
// the previous output byte-identical (or, if it got as far as the rename,
// the complete new output), never a mix.
//
// A forked child annotates a model carrying a 32 MB initializer over an
// existing output file; the parent kills it while the temporary file is
// being written (watching it grow) and at fixed delays. A killed writer
// cannot clean up: its temporary file, named ".<output>.tmp-<pid>-<n>-<t>"
// in the output's directory, may remain. It is hidden, names the dead
// process, holds a prefix of the new output, is never read, and the next
// write of the same output removes it (each run creates its own with
// O_EXCL). docs/robustness.md documents this.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"
#include "semmap/semmap.h"
#include "temp_dir.h"
#include "test_util.h"

using semmap_test::AddNode;
using semmap_test::ReadBytes;
using semmap_test::TempDir;
using semmap_test::WriteBytes;

namespace {

constexpr std::size_t kPayloadBytes = 32 << 20;

std::string BigModel() {
  auto model = semmap_test::MakeModel();
  onnx::GraphProto* graph = model.mutable_graph();
  for (int i = 0; i < 2000; ++i) {
    const std::string layer = "/encoder/layer." + std::to_string(i % 12);
    AddNode(graph, layer + "/dense/MatMul_" + std::to_string(i), "MatMul",
            {"h" + std::to_string(i), "w"}, {"h" + std::to_string(i + 1)});
  }
  onnx::TensorProto* w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::UINT8);
  w->add_dims(static_cast<std::int64_t>(kPayloadBytes));
  w->set_raw_data(std::string(kPayloadBytes, '\x5a'));
  return semmap_test::Serialize(model);
}

absl::Status AnnotateFile(const std::string& input, const std::string& output) {
  auto graph = semmap::Graph::Load(input);
  if (!graph.ok()) return graph.status();
  auto mapper = semmap::SemanticMapper::Create(*graph, nullptr);
  if (!mapper.ok()) return mapper.status();
  semmap::AnnotateOptions options;
  return semmap::Annotate(*mapper, input, output, options).status();
}

// Temporary files a writer left next to `output`.
std::vector<std::filesystem::path> Leftovers(const std::string& dir, const std::string& base) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("." + base + ".tmp-", 0) == 0) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::uintmax_t LargestLeftover(const std::string& dir, const std::string& base) {
  std::uintmax_t largest = 0;
  std::error_code ec;
  for (const auto& p : Leftovers(dir, base)) {
    const auto size = std::filesystem::file_size(p, ec);
    if (!ec && size > largest) largest = size;
  }
  return largest;
}

}  // namespace

TEST_CASE("A writer killed mid-write never damages the existing output", "[annotate][kill][waits]") {
  TempDir tmp;
  const std::string input = tmp.file("model.onnx");
  WriteBytes(input, BigModel());
  // The bytes a complete run writes.
  const std::string reference = tmp.file("reference.onnx");
  REQUIRE(AnnotateFile(input, reference).ok());
  const std::string complete = ReadBytes(reference);
  REQUIRE(complete.size() > kPayloadBytes);

  const std::string output = tmp.file("out.onnx");
  const std::string before = "the previous output, which must survive\n";

  // Kill points: while the temporary file holds 1/8 .. 7/8 of the new
  // bytes, then at fixed delays from the start (some before any write).
  struct KillPoint {
    double fraction;  // kill once the temp file has this share; 0: use delay
    int delay_ms;
  };
  std::vector<KillPoint> points;
  for (int eighth = 1; eighth <= 7; ++eighth) points.push_back({eighth / 8.0, 0});
  for (int ms : {0, 5, 20, 50, 100, 200}) points.push_back({0.0, ms});

  int killed_mid_write = 0;
  for (const KillPoint& point : points) {
    CAPTURE(point.fraction, point.delay_ms);
    WriteBytes(output, before);
    for (const auto& p : Leftovers(tmp.path(), "out.onnx")) std::filesystem::remove(p);

    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      const absl::Status s = AnnotateFile(input, output);
      ::_exit(s.ok() ? 0 : 1);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::chrono::duration<double> patience(60.0 * semmap_test::TimeScale());
    int status = 0;
    // The child, once reaped while waiting for the threshold (it finished
    // first: a busy machine), is not waited for again.
    bool reaped = false;
    if (point.fraction > 0) {
      const auto threshold = static_cast<std::uintmax_t>(point.fraction * complete.size());
      while (LargestLeftover(tmp.path(), "out.onnx") < threshold &&
             std::chrono::steady_clock::now() - start < patience) {
        if (::waitpid(child, &status, WNOHANG) == child) {
          reaped = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(point.delay_ms));
    }
    if (!reaped) {
      ::kill(child, SIGKILL);
      REQUIRE(::waitpid(child, &status, 0) == child);
    }
    const bool was_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    CAPTURE(was_killed);

    // The output is the old file or the whole new one, never a mix.
    const std::string after = ReadBytes(output);
    CHECK((after == before || after == complete));
    if (!was_killed) CHECK(after == complete);  // it finished first

    // A leftover is hidden, names the dead writer and holds a prefix of the
    // new bytes.
    for (const auto& p : Leftovers(tmp.path(), "out.onnx")) {
      const std::string name = p.filename().string();
      CAPTURE(name);
      CHECK(name.rfind(".out.onnx.tmp-" + std::to_string(child) + "-", 0) == 0);
      const std::string partial = ReadBytes(p.string());
      CHECK(partial.size() <= complete.size());
      CHECK(complete.compare(0, partial.size(), partial) == 0);
      if (!partial.empty() && partial.size() < complete.size()) ++killed_mid_write;
    }

    // The next run writes the complete output and removes the leftover:
    // its writer is gone and holds no lock on it.
    REQUIRE(AnnotateFile(input, output).ok());
    CHECK(ReadBytes(output) == complete);
    CHECK(Leftovers(tmp.path(), "out.onnx").empty());
  }
  // The watched kill points must really have hit a half-written file.
  CHECK(killed_mid_write >= 3);
}
