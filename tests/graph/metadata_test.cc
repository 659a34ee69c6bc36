#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "graph/exporter_metadata.h"

using semmap::internal::ModuleStack;
using semmap::internal::ParsePythonStringList;
using semmap::internal::ReadModuleStack;

TEST_CASE("Python list reprs parse", "[metadata]") {
  std::vector<std::string> out;
  CHECK(ParsePythonStringList("['', 'bert', 'bert.encoder']", &out));
  CHECK(out == std::vector<std::string>{"", "bert", "bert.encoder"});
  CHECK(ParsePythonStringList("[]", &out));
  CHECK(out.empty());
  CHECK(ParsePythonStringList(R"(["it's", 'a\'b', 'c\\d'])", &out));
  CHECK(out == std::vector<std::string>{"it's", "a'b", "c\\d"});
  CHECK_FALSE(ParsePythonStringList("['unterminated", &out));
  CHECK_FALSE(ParsePythonStringList("'a', 'b'", &out));
  CHECK_FALSE(ParsePythonStringList("[1, 2]", &out));
  CHECK_FALSE(ParsePythonStringList("['a' 'b']", &out));
  CHECK_FALSE(ParsePythonStringList("['a\\", &out));
}

TEST_CASE("Module stacks come from name_scopes, else namespace", "[metadata]") {
  ModuleStack s;
  CHECK(ReadModuleStack(
      {{"pkg.torch.onnx.name_scopes", "['', 'bert', 'bert.pooler', 'linear']"},
       {"pkg.torch.onnx.class_hierarchy",
        "['t.Root', 't.BertModel', 'torch.nn.modules.linear.Linear', 'aten.linear.default']"}},
      &s));
  CHECK(s.paths == std::vector<std::string>{"", "bert", "bert.pooler"});
  CHECK(s.deepest() == "bert.pooler");
  CHECK(s.deepestClass() == "torch.nn.modules.linear.Linear");

  CHECK(ReadModuleStack(
      {{"namespace", ": t.ResNet/avgpool: torch.nn.AdaptiveAvgPool2d/node_x: aten.mean"}}, &s));
  CHECK(s.paths == std::vector<std::string>{"", "avgpool"});
  CHECK(s.deepestClass() == "torch.nn.AdaptiveAvgPool2d");

  // semmap's own annotation is not exporter evidence, in this version's
  // spelling and in the earlier one.
  CHECK_FALSE(ReadModuleStack(
      {{"namespace", ": t.ResNet/avgpool: torch.nn.AdaptiveAvgPool2d/Op: Op"}, {"module@semmap", "avgpool"}},
      &s));
  CHECK_FALSE(ReadModuleStack(
      {{"namespace", ": t.ResNet/avgpool: torch.nn.AdaptiveAvgPool2d/Op: Op"}, {"semmap.module", "avgpool"}},
      &s));
  CHECK_FALSE(ReadModuleStack({}, &s));
  CHECK_FALSE(ReadModuleStack({{"pkg.torch.onnx.name_scopes",
                                "['_empty_nn_module_stack_from_metadata_hook', 'sym_size']"}},
                              &s));
  CHECK_FALSE(ReadModuleStack({{"pkg.torch.onnx.name_scopes", "garbage"}}, &s));
}
