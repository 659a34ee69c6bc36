// The parts of a fused node (mapping/core/fusion.h): how much of a fused op
// type a part's op type is, and the one module a fused node still is.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "mapping/core/fusion.h"
#include "semmap/manifest.h"
#include "test_util.h"

namespace {

using semmap::kNoModule;
using semmap::Manifest;
using semmap::ModuleId;
using semmap::internal::DominantModule;
using semmap::internal::FusedPart;
using semmap::internal::OpTypeOverlap;

TEST_CASE("OpTypeOverlap: a part's op type on the fused op type's word boundaries") {
  CHECK(OpTypeOverlap("Conv", "Conv") == 4);
  CHECK(OpTypeOverlap("FusedConv", "Conv") == 4);
  CHECK(OpTypeOverlap("ConvInteger", "Conv") == 4);
  CHECK(OpTypeOverlap("QLinearConv", "Conv") == 4);
  CHECK(OpTypeOverlap("SkipLayerNormalization", "LayerNormalization") == 18);
  CHECK(OpTypeOverlap("MatMulInteger", "MatMul") == 6);
  // "Mul" is a word of "MatMul" too: the longer part wins in DominantPart.
  CHECK(OpTypeOverlap("FusedMatMul", "Mul") == 3);
  CHECK(OpTypeOverlap("FusedMatMul", "MatMul") == 6);
  // Not on a word boundary, or not there at all.
  CHECK(OpTypeOverlap("Convolution", "Conv") == 0);
  CHECK(OpTypeOverlap("Attention", "MatMul") == 0);
  CHECK(OpTypeOverlap("Attention", "Softmax") == 0);
  CHECK(OpTypeOverlap("Gemm", "Add") == 0);
  CHECK(OpTypeOverlap("Conv", "FusedConv") == 0);
  CHECK(OpTypeOverlap("Conv", "") == 0);
}

// Pins the CamelCase word boundaries at both ends of the part, and that a
// later occurrence is tried when an earlier one is inside a word.
TEST_CASE("OpTypeOverlap tries each occurrence of the part, on both its boundaries") {
  CHECK(OpTypeOverlap("ConvTranspose", "Conv") == 4);
  CHECK(OpTypeOverlap("SkipLayerNorm", "kipLayer") == 0);  // starts inside a word
  CHECK(OpTypeOverlap("ConvolutionConv", "Conv") == 4);   // the second occurrence
  CHECK(OpTypeOverlap("Gemm", "Conv") == 0);
}

Manifest Modules() {
  auto m = Manifest::Parse(
      semmap_test::ManifestJson({"enc", "enc.conv", "enc.conv.inner", "enc.bn", "enc.q", "enc.k",
                                 "head"}),
      "fusion.json");
  REQUIRE(m.ok());
  return *std::move(m);
}

// Pins DominantModule's rule: the module of the parts with the largest
// overlap, when they are of one module and every weight read is that
// module's or below it; kNoModule otherwise.
TEST_CASE("A fused node is the module of the parts whose op it carries") {
  const Manifest m = Modules();
  const ModuleId conv = m.find("enc.conv");
  const ModuleId bn = m.find("enc.bn");
  const ModuleId q = m.find("enc.q");
  const ModuleId k = m.find("enc.k");
  REQUIRE(conv != kNoModule);
  // A Conv with its BatchNorm folded in is still the Conv.
  const std::vector<FusedPart> conv_bn = {{"Conv", conv}, {"BatchNormalization", bn}};
  CHECK(DominantModule("FusedConv", conv_bn, {}, m) == conv);
  CHECK(DominantModule("FusedConv", conv_bn, {conv, m.find("enc.conv.inner")}, m) == conv);
  // It reads a weight of a module outside the Conv: no single module.
  CHECK(DominantModule("FusedConv", conv_bn, {m.find("head")}, m) == kNoModule);
  // Unknown owners do not count.
  CHECK(DominantModule("FusedConv", conv_bn, {kNoModule}, m) == conv);
  // Parts of two modules carry the op equally (three projections' MatMuls).
  CHECK(DominantModule("FusedMatMul", {{"MatMul", q}, {"MatMul", k}}, {}, m) == kNoModule);
  // A part without a module is passed over, also for the largest overlap.
  CHECK(DominantModule("FusedMatMul", {{"MatMul", kNoModule}, {"Add", q}}, {}, m) == kNoModule);
  CHECK(DominantModule("FusedMatMul", {{"MatMul", kNoModule}, {"MatMul", k}}, {}, m) == k);
  // No part's op in the fused op type, or no parts.
  CHECK(DominantModule("Attention", {{"MatMul", q}}, {}, m) == kNoModule);
  CHECK(DominantModule("FusedConv", {}, {}, m) == kNoModule);
}

}  // namespace
