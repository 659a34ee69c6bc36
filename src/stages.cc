#include "semmap/stages.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "internal/atomic_write.h"
#include "internal/file_io.h"
#include "internal/mapped_file.h"
#include "internal/model_proto.h"
#include "internal/out_of_memory.h"
#include "internal/status_macros.h"
#include "internal/wire_model_index.h"
#include "onnx/onnx_pb.h"
#include "semmap/query.h"

namespace semmap {
namespace {

std::string Quoted(absl::string_view s) {
  return absl::StrCat("\"", internal::Abbreviate(s), "\"");
}

std::string DirectoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool IsConstantSource(const Node& n) {
  return n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") &&
         n.inputs.empty();
}

}  // namespace

std::string StagePath(const std::string& output, std::size_t index) {
  const std::size_t slash = output.rfind('/');
  const std::size_t dot = output.rfind('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  const std::string tag = absl::StrCat(".stage", index);
  return has_ext ? absl::StrCat(output.substr(0, dot), tag, output.substr(dot))
                 : absl::StrCat(output, tag);
}

absl::StatusOr<StagesResult> SplitStages(const SemanticMapper& mapper, const std::string& input,
                                         const std::string& output,
                                         const StageOptions& options) try {
  const bool by_list = !options.boundaries.empty();
  if (by_list == (options.stages != 0)) {
    return absl::InvalidArgumentError("give either a number of stages or boundary modules");
  }
  if (!by_list && (options.stages < 1 || options.stages > 100000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of stages must be from 1 to 100000, got ", options.stages));
  }
  const std::size_t n_stages = by_list ? options.boundaries.size() + 1
                                       : static_cast<std::size_t>(options.stages);
  for (std::size_t k = 0; k < n_stages; ++k) {
    SEMMAP_RETURN_IF_ERROR(internal::CheckOutputFor(
        StagePath(output, k),
        {{input, "the input model"}, {options.manifest_path, "the manifest"}},
        options.allow_overwrite));
  }
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  const ProfileAttribution* profile = options.profile;
  if (profile != nullptr && profile->node_us.size() != graph.size()) {
    return absl::InvalidArgumentError("the profile attribution is of another graph");
  }

  // Top-level nodes in file order; the owner of every node.
  std::vector<NodeId> top;
  std::vector<NodeId> owner(graph.size(), kNoNode);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(static_cast<NodeId>(i));
    if (n.subgraph == 0) {
      top.push_back(static_cast<NodeId>(i));
      owner[i] = static_cast<NodeId>(i);
    } else {
      NodeId o = graph.subgraphs()[n.subgraph].owner;
      owner[i] = o == kNoNode ? kNoNode : owner[o];
    }
  }
  const absl::flat_hash_set<std::string> model_outputs(graph.outputs().begin(),
                                                       graph.outputs().end());
  auto floating = [&](NodeId id) {
    const Node& n = graph.node(id);
    if (!IsConstantSource(n)) return false;
    for (absl::string_view o : n.outputs) {
      if (model_outputs.contains(o)) return false;
    }
    return true;
  };

  // Units: modules kept whole. Layer containers and their ancestors are not
  // units; without any, only the root is not.
  const SemanticQuery query(mapper);
  std::vector<bool> above(manifest.size(), false);
  above[manifest.root()] = true;
  for (const RepeatedContainer* c : query.layerContainers()) {
    for (ModuleId a = c->module; a != kNoModule; a = manifest.module(a).parent) above[a] = true;
  }
  auto unit_of = [&](NodeId id) {
    const Mapping& m = mapper.moduleFor(id);
    ModuleId unit = kNoModule;
    if (!m.mapped()) return unit;
    for (ModuleId a = m.module; a != kNoModule; a = manifest.module(a).parent) {
      if (!above[a]) unit = a;
    }
    return unit;
  };

  // Positions: non-floating top-level nodes.
  std::vector<NodeId> pos;
  for (NodeId id : top) {
    if (!floating(id)) pos.push_back(id);
  }
  if (pos.empty()) return absl::FailedPreconditionError(absl::StrCat(input, ": no nodes to split"));
  const std::size_t P = pos.size();
  std::vector<ModuleId> unit(P);
  absl::flat_hash_map<ModuleId, std::pair<std::size_t, std::size_t>> span;
  for (std::size_t p = 0; p < P; ++p) {
    unit[p] = unit_of(pos[p]);
    if (unit[p] == kNoModule) continue;
    auto [it, inserted] = span.try_emplace(unit[p], p, p);
    if (!inserted) it->second.second = p;
  }
  // Cut before position p is allowed unless it splits a unit.
  std::vector<int> split(P + 1, 0);
  for (const auto& [u, s] : span) {
    ++split[s.first + 1];
    --split[s.second + 1];
  }
  std::vector<bool> allowed(P, false);
  std::size_t allowed_cuts = 0;
  int open = 0;  // units with first < p <= last
  for (std::size_t p = 0; p < P; ++p) {
    open += split[p];
    if (p == 0) continue;
    allowed[p] = open == 0;
    allowed_cuts += allowed[p] ? 1 : 0;
  }

  // Weights and cuts.
  std::vector<std::int64_t> before(P + 1, 0);
  const bool by_time = profile != nullptr;
  for (std::size_t p = 0; p < P; ++p) {
    before[p + 1] = before[p] + (by_time ? profile->node_us[pos[p]] : 1);
  }
  if (by_time && before[P] == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(input, ": the profile gives no kernel time to any node; "
                     "cannot balance by time"));
  }
  std::vector<std::size_t> cuts;  // positions starting stages 1..
  if (!by_list) {
    if (n_stages - 1 > allowed_cuts) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": ", n_stages, " stages need ", n_stages - 1, " cuts, but only ", allowed_cuts,
          " positions do not split a layer or module (at most ", allowed_cuts + 1, " stages)"));
    }
    std::vector<std::size_t> candidates;
    for (std::size_t p = 1; p < P; ++p) {
      if (allowed[p]) candidates.push_back(p);
    }
    std::size_t next = 0;  // first candidate still free
    for (std::size_t k = 1; k < n_stages; ++k) {
      const double target = static_cast<double>(before[P]) * static_cast<double>(k) /
                            static_cast<double>(n_stages);
      const std::size_t last = candidates.size() - (n_stages - 1 - k);  // leave room
      std::size_t best = next;
      for (std::size_t c = next; c < last; ++c) {
        if (std::abs(static_cast<double>(before[candidates[c]]) - target) <
            std::abs(static_cast<double>(before[candidates[best]]) - target)) {
          best = c;
        }
      }
      cuts.push_back(candidates[best]);
      next = best + 1;
    }
  } else {
    for (const std::string& path : options.boundaries) {
      const ModuleId m = manifest.find(path);
      if (m == kNoModule) {
        return absl::InvalidArgumentError(
            absl::StrCat("boundary ", Quoted(path), ": no such module in the manifest"));
      }
      std::size_t first = P;
      for (std::size_t p = 0; p < P && first == P; ++p) {
        const Mapping& mp = mapper.moduleFor(pos[p]);
        if (mp.mapped() && manifest.isAncestorOrSelf(m, mp.module)) first = p;
      }
      if (first == P) {
        return absl::FailedPreconditionError(
            absl::StrCat("boundary ", Quoted(path), ": no top-level node of ", input,
                         " maps to it"));
      }
      if (first == 0 || !allowed[first]) {
        return absl::FailedPreconditionError(absl::StrCat(
            "boundary ", Quoted(path), ": its first node (", Quoted(graph.node(pos[first]).name),
            ") ", first == 0 ? "is the model's first node" : "does not start a unit: a cut there "
            "would split a layer or module"));
      }
      if (!cuts.empty() && first <= cuts.back()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "boundary ", Quoted(path), ": starts before or with the previous boundary; list "
            "boundaries in model order"));
      }
      cuts.push_back(first);
    }
  }

  // Stage of each top-level non-floating node.
  std::vector<int> stage_of(graph.size(), -1);
  {
    std::size_t k = 0;
    for (std::size_t p = 0; p < P; ++p) {
      while (k < cuts.size() && p >= cuts[k]) ++k;
      stage_of[pos[p]] = static_cast<int>(k);
    }
  }

  SEMMAP_ASSIGN_OR_RETURN(
      onnx::ModelProto source,
      internal::LoadModelProto(input, options.max_file_bytes, options.max_subgraph_depth));
  const onnx::GraphProto& g = source.graph();
  if (top.size() != static_cast<std::size_t>(g.node_size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", g.node_size(), " top-level nodes but the mapped graph has ", top.size(),
        "; was the file changed?"));
  }
  // What each top-level node reads (its inputs, then what its bodies read
  // from outside), from the wire-level index extract reads too.
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile file,
                          internal::MappedFile::Open(input, options.max_file_bytes));
  SEMMAP_ASSIGN_OR_RETURN(
      const internal::WireModel wire,
      internal::IndexWireModel(file.bytes(), input, options.max_subgraph_depth));
  if (wire.nodes.size() != top.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", wire.nodes.size(), " top-level nodes but the mapped graph has ",
        top.size(), "; was the file changed?"));
  }
  absl::flat_hash_map<NodeId, int> proto_index;
  for (int k = 0; k < g.node_size(); ++k) {
    const Node& n = graph.node(top[k]);
    if (n.name != g.node(k).name() || n.op_type != g.node(k).op_type()) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": node ", k, " (", Quoted(g.node(k).name()),
          ") differs from the graph that was mapped; was the file changed?"));
    }
    proto_index[top[k]] = k;
  }
  absl::flat_hash_map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& t : g.initializer()) initializers.emplace(t.name(), &t);
  absl::flat_hash_map<std::string, const onnx::SparseTensorProto*> sparse;
  for (const auto& t : g.sparse_initializer()) sparse.emplace(t.values().name(), &t);
  absl::flat_hash_map<std::string, const onnx::ValueInfoProto*> types;
  for (const auto& v : g.value_info()) types.emplace(v.name(), &v);
  for (const auto& v : g.output()) types[v.name()] = &v;
  for (const auto& v : g.input()) types[v.name()] = &v;

  StagesResult result;
  result.allowed_cuts = allowed_cuts;
  result.by_time = by_time;
  std::vector<std::string> bytes(n_stages);
  const std::string in_dir = DirectoryOf(input);
  for (std::size_t k = 0; k < n_stages; ++k) {
    StageInfo info;
    info.path = StagePath(output, k);
    const std::size_t first = k == 0 ? 0 : cuts[k - 1];
    const std::size_t end = k < cuts.size() ? cuts[k] : P;
    info.weight = before[end] - before[first];
    for (std::size_t p = first; p < end; ++p) {
      if (unit[p] == kNoModule) continue;
      if (info.first_unit.empty()) info.first_unit = manifest.module(unit[p]).path;
      info.last_unit = manifest.module(unit[p]).path;
    }
    onnx::ModelProto out;
    out.set_ir_version(source.ir_version());
    *out.mutable_opset_import() = source.opset_import();
    out.set_producer_name(source.producer_name());
    out.set_producer_version(source.producer_version());
    out.set_domain(source.domain());
    out.set_model_version(source.model_version());
    *out.mutable_functions() = source.functions();
    auto* meta = out.add_metadata_props();
    meta->set_key("semmap.stage");
    meta->set_value(absl::StrCat(k, " of ", n_stages));
    meta = out.add_metadata_props();
    meta->set_key("semmap.stage_units");
    meta->set_value(absl::StrCat(info.first_unit, " .. ", info.last_unit));
    onnx::GraphProto* og = out.mutable_graph();
    og->set_name(absl::StrCat(g.name().empty() ? "graph" : g.name(), ":stage", k));
    auto add_type = [&](onnx::ValueInfoProto* vi, const std::string& name) {
      auto it = types.find(name);
      if (it != types.end() && it->second->has_type()) {
        *vi = *it->second;
      } else {
        vi->set_name(name);
        ++info.untyped;
      }
    };
    // Constants first (they read nothing), then the stage's nodes in order.
    absl::flat_hash_set<std::string> seen;
    absl::flat_hash_set<NodeId> constants;
    std::vector<int> body;  // proto indices
    for (std::size_t p = first; p < end; ++p) {
      body.push_back(proto_index[pos[p]]);
      for (absl::string_view v : internal::ValuesRead(wire.nodes[body.back()])) {
        const NodeId producer = graph.producer(v, 0);
        if (producer != kNoNode && floating(producer) && constants.insert(producer).second) {
          *og->add_node() = g.node(proto_index[producer]);
          ++info.copied_constants;
        }
      }
    }
    absl::flat_hash_set<std::string> produced;
    for (NodeId c : constants) {
      const auto& outs = graph.node(c).outputs;
      produced.insert(outs.begin(), outs.end());
    }
    for (int index : body) {
      const onnx::NodeProto* node = &g.node(index);
      for (absl::string_view read : internal::ValuesRead(wire.nodes[index])) {
        const std::string v(read);
        if (produced.contains(v) || !seen.insert(v).second) continue;
        if (auto it = initializers.find(v); it != initializers.end()) {
          if (it->second->data_location() == onnx::TensorProto::EXTERNAL &&
              DirectoryOf(info.path) != in_dir) {
            return absl::FailedPreconditionError(absl::StrCat(
                info.path, ": initializer ", Quoted(v), " keeps its data in an external file "
                "relative to ", in_dir, "; write the stages into that directory"));
          }
          *og->add_initializer() = *it->second;
          ++info.initializers;
        } else if (auto sp = sparse.find(v); sp != sparse.end()) {
          *og->add_sparse_initializer() = *sp->second;
          ++info.initializers;
        } else {
          add_type(og->add_input(), v);
          info.inputs.push_back(v);
        }
      }
      *og->add_node() = *node;
      for (const std::string& v : node->output()) {
        if (v.empty()) continue;
        produced.insert(v);
        bool leaves = model_outputs.contains(v);
        for (NodeId c : graph.consumers(v, 0)) {
          const NodeId o = owner[c];
          leaves = leaves || (o != kNoNode && !floating(o) && stage_of[o] > static_cast<int>(k));
        }
        if (leaves) {
          add_type(og->add_output(), v);
          info.outputs.push_back(v);
        }
      }
    }
    info.nodes = static_cast<std::size_t>(og->node_size());
    if (!out.SerializeToString(&bytes[k])) {
      return absl::InternalError(absl::StrCat(info.path, ": cannot serialize the stage"));
    }
    info.bytes = bytes[k].size();
    result.stages.push_back(std::move(info));
  }
  for (std::size_t k = 0; k < n_stages; ++k) {
    SEMMAP_RETURN_IF_ERROR(internal::WriteFileAtomically(result.stages[k].path, bytes[k]));
  }
  return result;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "splitting the model into stages");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "splitting the model into stages");
}

}  // namespace semmap
