// `semmap map` and `semmap-query`: one node's mapping, or a summary of the
// whole model (counts, strategies, module tree), as text or JSON.
#ifndef SEMMAP_TOOLS_SEMMAP_MAP_COMMAND_H_
#define SEMMAP_TOOLS_SEMMAP_MAP_COMMAND_H_

#include <ostream>
#include <string>

#include "loaded_model.h"
#include "semmap/semmap.h"

namespace semmap_cli {

// The aligned "node: ... evidence: ..." block, and "origins:" for a node
// doing several modules' work.
void PrintMapping(std::ostream& out, const semmap::SemanticMapper& mapper, semmap::NodeId id);

// Model, manifest, root binding, coverage, strategies and the module tree to
// `max_depth` (0 = no tree); or the same as JSON.
void PrintSummary(std::ostream& out, const LoadedModel& model, int max_depth, bool json);

// The whole `semmap-query` / `semmap map` command: parses argv (argv[0] is
// the command name), loads with `load`, prints, returns the exit code.
// `tool` names the command in usage and errors.
int RunMap(const std::string& tool, int argc, char** argv, const ModelLoader& load = LoadModel);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_MAP_COMMAND_H_
