// The shortest complete semmap program: load an ONNX export and its
// manifest, map every node, print one line per node.
//
//   quickstart MODEL.onnx MANIFEST.json
#include <iostream>

#include "semmap/semmap.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: quickstart MODEL.onnx MANIFEST.json\n";
    return 2;
  }
  // Loads both files (on two threads) and maps; the mapper owns them.
  absl::StatusOr<semmap::SemanticMapper> mapper = semmap::SemanticMapper::Open(argv[1], argv[2]);
  if (!mapper.ok()) {
    std::cerr << mapper.status().message() << "\n";
    return 2;
  }
  const semmap::Graph& graph = mapper->graph();
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(graph.size()); ++i) {
    const semmap::Mapping& m = mapper->moduleFor(i);
    std::cout << graph.node(i).id << "\t" << m.module_path << "\t" << m.class_name
              << "\t" << m.confidence << "\t" << semmap::StrategyName(m.strategy) << "\n";
  }
  return 0;
}
