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
  absl::StatusOr<semmap::Graph> graph = semmap::Graph::Load(argv[1]);
  if (!graph.ok()) {
    std::cerr << graph.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<semmap::Manifest> manifest = semmap::Manifest::Load(argv[2]);
  if (!manifest.ok()) {
    std::cerr << manifest.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<semmap::SemanticMapper> mapper =
      semmap::SemanticMapper::Create(*graph, &*manifest);
  if (!mapper.ok()) {
    std::cerr << mapper.status().message() << "\n";
    return 2;
  }
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(graph->size()); ++i) {
    const semmap::Mapping& m = mapper->moduleFor(i);
    std::cout << graph->node(i).id << "\t" << m.module_path << "\t" << m.class_name
              << "\t" << m.confidence << "\t" << semmap::StrategyName(m.strategy) << "\n";
  }
  return 0;
}
