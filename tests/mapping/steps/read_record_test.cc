// The provenance record's reader and the pieces its writer shares
// (mapping/steps/read_record.h), on small models: where a record is looked
// for, which copy wins, and the helpers that compare what a record holds.
// A real record's contents, every malformed one and the mapper's use of
// them are tested in ../record_test.cc.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/steps/read_record.h"
#include "semmap/semmap.h"
#include "test_util.h"

namespace {

using semmap_test::ManifestJson;

// A one-node model carrying `entries` (key, value) as model metadata and
// `doc` as its graph's doc_string.
semmap::Graph Carrying(const std::vector<std::pair<std::string, std::string>>& entries,
                       const std::string& doc = "") {
  onnx::ModelProto model = semmap_test::MakeModel();
  semmap_test::AddNode(model.mutable_graph(), "/m/Relu", "Relu", {"x"}, {"y"});
  model.mutable_graph()->set_doc_string(doc);
  for (const auto& [key, value] : entries) {
    auto* e = model.add_metadata_props();
    e->set_key(key);
    e->set_value(value);
  }
  return semmap_test::ParseGraph(model);
}

absl::Status ReadStatus(const semmap::Graph& g) {
  return semmap::internal::ReadRecord(g, "m.onnx", semmap::GraphOptions{}).status();
}

}  // namespace

TEST_CASE("the record's doc_string line keeps the rest of the doc and is found again", "[record]") {
  using semmap::internal::RecordDocLine;
  using semmap::internal::WithRecordDocLine;
  CHECK(WithRecordDocLine("", "v") == "semmap.record=v");
  CHECK(WithRecordDocLine("a graph\nof two lines\n", "v") == "a graph\nof two lines\nsemmap.record=v");
  CHECK(WithRecordDocLine("a\nsemmap.record=old\nb", "new") == "a\nb\nsemmap.record=new");
  CHECK(WithRecordDocLine("a\nsemmap.record=old", "") == "a");
  CHECK(RecordDocLine("a\nsemmap.record=v\nb") == "v");
  CHECK(RecordDocLine("no record here").empty());
  CHECK(RecordDocLine(" semmap.record=not at a line's start").empty());
}

// Pins ReadRecord's choice of value: none without the key or a doc line
// (not an error), the last entry when the key repeats, the metadata entry
// before the doc line, each error naming the file and the copy it read.
// The two values are told apart by their errors: a newer format version
// is FailedPrecondition, another prefix InvalidArgument.
TEST_CASE("ReadRecord reads the last metadata entry, else the doc_string line", "[record]") {
  const std::string newer = "semmap-record/2:3:AAAA";
  const std::string other = "hello";
  {
    const semmap::Graph none = Carrying({{"producer", "x"}}, "a graph");
    CHECK_FALSE(semmap::internal::CarriesRecord(none));
    auto read = semmap::internal::ReadRecord(none, "m.onnx", semmap::GraphOptions{});
    REQUIRE(read.ok());
    CHECK_FALSE(read->has_value());
  }
  {
    const semmap::Graph g = Carrying({{semmap::kRecordKey, newer}, {semmap::kRecordKey, other}});
    CHECK(semmap::internal::CarriesRecord(g));
    const absl::Status s = ReadStatus(g);
    CHECK(absl::IsInvalidArgument(s));
    CHECK(absl::StartsWith(s.message(), "m.onnx: metadata_props \"semmap.record\""));
    CHECK(absl::IsFailedPrecondition(
        ReadStatus(Carrying({{semmap::kRecordKey, other}, {semmap::kRecordKey, newer}}))));
  }
  {
    const semmap::Graph doc_only = Carrying({}, "exported\nsemmap.record=" + newer);
    CHECK(semmap::internal::CarriesRecord(doc_only));
    const absl::Status s = ReadStatus(doc_only);
    CHECK(absl::IsFailedPrecondition(s));
    CHECK(absl::StrContains(s.message(), "the graph's doc_string line"));
    // Both copies: the metadata entry wins.
    CHECK(absl::IsInvalidArgument(
        ReadStatus(Carrying({{semmap::kRecordKey, other}}, "semmap.record=" + newer))));
  }
}

// Pins SameModules (paths and classes, in order: a record's module indexes
// are only another manifest's when both agree) and FingerprintText's width.
TEST_CASE("SameModules compares paths and classes in order; fingerprints are 16 digits",
          "[record]") {
  auto parse = [](const std::string& json) {
    auto m = semmap::Manifest::Parse(json, "m.json");
    REQUIRE(m.ok());
    return *std::move(m);
  };
  const semmap::Manifest a = parse(ManifestJson({"enc", "enc.fc", "head"}));
  CHECK(semmap::internal::SameModules(a, parse(ManifestJson({"enc", "enc.fc", "head"}))));
  CHECK_FALSE(semmap::internal::SameModules(a, parse(ManifestJson({"enc", "enc.fc"}))));
  CHECK_FALSE(semmap::internal::SameModules(a, parse(ManifestJson({"enc", "enc.fc", "tail"}))));
  std::string other_class = ManifestJson({"enc", "enc.fc", "head"});
  const std::size_t head = other_class.find(R"("path":"head","class":"M","qualified_class":"t.M")");
  REQUIRE(head != std::string::npos);
  other_class.replace(other_class.find("t.M", head), 3, "t.N");
  CHECK_FALSE(semmap::internal::SameModules(a, parse(other_class)));
  CHECK(semmap::internal::FingerprintText(0x1234) == "0000000000001234");
  CHECK(semmap::internal::FingerprintText(~std::uint64_t{0}) == "ffffffffffffffff");
}
