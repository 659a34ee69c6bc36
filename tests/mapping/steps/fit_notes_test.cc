// The notes a fitting manifest carries (mapping/steps/fit_notes.h): what a
// NoteTally collects per kind and how its notes read.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "mapping/steps/fit_notes.h"
#include "semmap/manifest_fit.h"

namespace {

using semmap::FitNote;
using semmap::FitNoteKind;
using semmap::internal::NoteTally;

// Pins the tally: counts and nodes summed per kind, the example the first
// in text order whatever the order of adding or merging, notes only for
// kinds present and in FitNoteKind order.
TEST_CASE("A NoteTally keeps per kind a count, the nodes and the first example in text order") {
  NoteTally a;
  CHECK(a.Notes().empty());
  a.Add(FitNoteKind::kOutsideManifestRoot, "/decoder/fc", 2);
  a.Add(FitNoteKind::kReusedCall, "/m/relu_2", 1);
  a.Add(FitNoteKind::kReusedCall, "/m/relu_1", 3);
  CHECK(a.count(FitNoteKind::kReusedCall) == 2);
  CHECK(a.count(FitNoteKind::kStoredReshaped) == 0);

  NoteTally b;
  b.Add(FitNoteKind::kReusedCall, "/a/act_1", 4);
  b.Add(FitNoteKind::kOutsideManifestRoot, "/head", 1);
  b.Add(FitNoteKind::kFoldedByExporter, "blocks.1.bn", 0);
  a.Merge(b);
  a.Merge(NoteTally());  // an empty tally changes nothing

  const std::vector<FitNote> notes = a.Notes();
  REQUIRE(notes.size() == 3);
  CHECK(notes[0].kind == FitNoteKind::kReusedCall);
  CHECK(notes[0].count == 3);
  CHECK(notes[0].nodes == 8);
  CHECK(notes[0].example == "/a/act_1");
  CHECK(notes[1].kind == FitNoteKind::kFoldedByExporter);
  CHECK(notes[1].example == "blocks.1.bn");
  CHECK(notes[2].kind == FitNoteKind::kOutsideManifestRoot);
  CHECK(notes[2].count == 2);
  CHECK(notes[2].example == "/decoder/fc");  // before "/head"
}

// Pins the wording: one or many by the count, the reason of the kind, the
// example quoted and abbreviated.
TEST_CASE("A note reads its count, its reason and an example") {
  NoteTally t;
  t.Add(FitNoteKind::kReusedCall, "/layer1/layer1.0/relu_1", 2);
  t.Add(FitNoteKind::kCreatedInForward, "embed.embed_scale", 0);
  t.Add(FitNoteKind::kCreatedInForward, "embed.scale_x", 0);
  const std::string long_name = "/" + std::string(200, 'a');
  t.Add(FitNoteKind::kStoredReshaped, long_name, 0);
  const std::vector<FitNote> notes = t.Notes();
  REQUIRE(notes.size() == 3);
  CHECK(notes[0].text ==
        "1 scope is a later call of a module called more than once in forward "
        "(e.g. \"/layer1/layer1.0/relu_1\")");
  CHECK(notes[1].kind == FitNoteKind::kStoredReshaped);
  CHECK(notes[1].example.size() < long_name.size());
  CHECK(absl::StartsWith(notes[1].text, "1 parameter is stored in another shape"));
  CHECK(absl::StrContains(notes[1].text, notes[1].example));
  CHECK(absl::StartsWith(notes[2].text, "2 initializers are named under a module but none of "
                                        "its parameters"));
  CHECK(absl::EndsWith(notes[2].text, "(e.g. \"embed.embed_scale\")"));
}

}  // namespace
