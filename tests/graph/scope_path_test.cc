#include <string>
#include <tuple>

#include "absl/strings/str_join.h"
#include "catch2/catch.hpp"
#include "semmap/scope_path.h"

using semmap::NameStyle;
using semmap::ScopePath;

TEST_CASE("ScopePath parses exporter names", "[scope_path]") {
  // name, style, segments joined by '|', op, ordinal, suffix
  auto row = GENERATE(table<std::string, NameStyle, std::string, std::string, long, std::string>({
      {"/bert/encoder/layer.0/attention/self/query/MatMul", NameStyle::kScoped,
       "bert|encoder|layer.0|attention|self|query", "MatMul", -1, ""},
      {"/encoder/layer.0/attention/self/MatMul_1", NameStyle::kScoped,
       "encoder|layer.0|attention|self", "MatMul", 1, ""},
      {"/Constant", NameStyle::kScoped, "", "Constant", -1, ""},
      {"/embeddings/Constant_3", NameStyle::kScoped, "embeddings", "Constant", 3, ""},
      {"/layer1/layer1.0/conv1/Conv", NameStyle::kScoped, "layer1|layer1.0|conv1", "Conv", -1, ""},
      {"/layer4/layer4.1/relu_1/Relu", NameStyle::kScoped, "layer4|layer4.1|relu_1", "Relu", -1, ""},
      {"/bert/encoder/layer.0/attention/self/query/MatMul_quant", NameStyle::kScoped,
       "bert|encoder|layer.0|attention|self|query", "MatMul", -1, "quant"},
      {"/a/b/MatMul_2_output_0", NameStyle::kScoped, "a|b", "MatMul", 2, "output_0"},
      {"/a//b/Add", NameStyle::kScoped, "a|b", "Add", -1, ""},
      {"Constant_94", NameStyle::kUnscoped, "", "Constant", 94, ""},
      {"Identity_0", NameStyle::kUnscoped, "", "Identity", 0, ""},
      {"Attention_0", NameStyle::kUnscoped, "", "Attention", 0, ""},
      {"SkipLayerNorm_AddBias_0", NameStyle::kUnscoped, "", "SkipLayerNorm", -1, "AddBias_0"},
      {"node_MatMul_12", NameStyle::kDynamo, "", "MatMul", 12, ""},
      {"node_linear", NameStyle::kDynamo, "", "linear", -1, ""},
      {"node_", NameStyle::kUnscoped, "", "node", -1, ""},
      {"", NameStyle::kEmpty, "", "", -1, ""},
      {"/", NameStyle::kScoped, "", "", -1, ""},
  }));
  const std::string& name = std::get<0>(row);
  CAPTURE(name);
  const ScopePath p = ScopePath::Parse(name);
  CHECK(p.style() == std::get<1>(row));
  CHECK(absl::StrJoin(p.segments(), "|") == std::get<2>(row));
  CHECK(std::string(p.op()) == std::get<3>(row));
  CHECK(p.ordinal() == std::get<4>(row));
  CHECK(std::string(p.suffix()) == std::get<5>(row));
  CHECK_FALSE(p.truncated());
}

TEST_CASE("DottedPath folds a called container's repeated name", "[scope_path]") {
  auto row = GENERATE(table<std::string, std::string>({
      {"/bert/encoder/layer.0/attention/self/query/MatMul", "bert.encoder.layer.0.attention.self.query"},
      {"/layer1/layer1.0/conv1/Conv", "layer1.0.conv1"},
      {"/net/layer1/layer1.0/conv1/Conv", "net.layer1.0.conv1"},
      {"/layer1/layer10/Conv", "layer1.layer10"},
      {"/Constant", ""},
  }));
  CAPTURE(std::get<0>(row));
  CHECK(ScopePath::Parse(std::get<0>(row)).DottedPath() == std::get<1>(row));
}

TEST_CASE("SplitCallSuffix", "[scope_path]") {
  absl::string_view base;
  long call = -1;
  CHECK(semmap::SplitCallSuffix("relu_1", &base, &call));
  CHECK(base == "relu");
  CHECK(call == 1);
  CHECK(semmap::SplitCallSuffix("conv_block_12", &base, &call));
  CHECK(base == "conv_block");
  CHECK(call == 12);
  CHECK_FALSE(semmap::SplitCallSuffix("relu", &base, &call));
  CHECK_FALSE(semmap::SplitCallSuffix("_1", &base, &call));
  CHECK_FALSE(semmap::SplitCallSuffix("relu_", &base, &call));
  CHECK_FALSE(semmap::SplitCallSuffix("relu_x1", &base, &call));
}

TEST_CASE("Hostile names are parsed in bounded memory", "[scope_path]") {
  std::string name;
  for (int i = 0; i < 1000000; ++i) name += "/s";
  name += "/Op";
  const ScopePath p = ScopePath::Parse(name);
  CHECK(p.scoped());
  CHECK(p.truncated());
  CHECK(p.segments().size() == ScopePath::kDefaultMaxSegments);
  CHECK(p.op() == "Op");

  const std::string megabyte(1 << 20, 'x');
  const ScopePath flat = ScopePath::Parse(megabyte);
  CHECK(flat.style() == NameStyle::kUnscoped);
  CHECK(flat.op().size() == megabyte.size());

  std::string binary = "/\xff\xfe/";
  binary.push_back('\0');
  binary += "a/Op";
  const ScopePath odd = ScopePath::Parse(binary);
  CHECK(odd.segments().size() == 2);
  CHECK(odd.op() == "Op");
}
