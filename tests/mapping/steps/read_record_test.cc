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
