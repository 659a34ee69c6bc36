#include "semmap/extract.h"

#include <filesystem>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "internal/atomic_write.h"
#include "internal/file_io.h"
#include "internal/model_proto.h"
#include "internal/out_of_memory.h"
#include "internal/status_macros.h"
#include "onnx/onnx_pb.h"

namespace semmap {
namespace {

std::string Quoted(const std::string& s) { return absl::StrCat("\"", internal::Abbreviate(s), "\""); }

std::string DirectoryOf(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec).parent_path();
  std::filesystem::path canonical = std::filesystem::weakly_canonical(p, ec);
  return ec ? p.string() : canonical.string();
}

bool IsConstantSource(const Node& n) {
  return n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") &&
         n.inputs.empty();
}

// Names a subgraph body reads from enclosing scopes: used but not defined
// inside (ONNX names are unique across nested scopes, so no shadowing).
void CollectDefined(const onnx::GraphProto& g, absl::flat_hash_set<std::string>* defined) {
  for (const auto& i : g.input()) defined->insert(i.name());
  for (const auto& t : g.initializer()) defined->insert(t.name());
  for (const auto& t : g.sparse_initializer()) defined->insert(t.values().name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) defined->insert(o);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectDefined(a.g(), defined);
      for (const auto& body : a.graphs()) CollectDefined(body, defined);
    }
  }
}

void CollectUsed(const onnx::GraphProto& g, std::vector<std::string>* used) {
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) used->push_back(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectUsed(a.g(), used);
      for (const auto& body : a.graphs()) CollectUsed(body, used);
    }
  }
  for (const auto& o : g.output()) used->push_back(o.name());
}

// Every value a top-level node reads: its inputs, then the outer names its
// bodies read, in order, without duplicates.
std::vector<std::string> ValuesRead(const onnx::NodeProto& node) {
  std::vector<std::string> read(node.input().begin(), node.input().end());
  for (const auto& a : node.attribute()) {
    std::vector<const onnx::GraphProto*> bodies;
    if (a.has_g()) bodies.push_back(&a.g());
    for (const auto& body : a.graphs()) bodies.push_back(&body);
    for (const onnx::GraphProto* body : bodies) {
      absl::flat_hash_set<std::string> defined;
      CollectDefined(*body, &defined);
      std::vector<std::string> used;
      CollectUsed(*body, &used);
      for (std::string& u : used) {
        if (!u.empty() && !defined.contains(u)) read.push_back(std::move(u));
      }
    }
  }
  return read;
}

// The top-level node each Graph node belongs to (itself, or the main-graph
// node owning its subgraph); kNoNode inside model-local functions.
std::vector<NodeId> TopLevelOwners(const Graph& graph) {
  std::vector<NodeId> owner(graph.size(), kNoNode);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    int s = graph.node(static_cast<NodeId>(i)).subgraph;
    NodeId top = static_cast<NodeId>(i);
    while (s != 0) {
      const Subgraph& sub = graph.subgraphs()[s];
      if (sub.kind != Subgraph::Kind::kAttribute) {
        top = kNoNode;
        break;
      }
      top = sub.owner;
      s = graph.node(sub.owner).subgraph;
    }
    owner[i] = top;
  }
  return owner;
}

}  // namespace

absl::StatusOr<ExtractResult> ExtractModule(const SemanticMapper& mapper, const std::string& input,
                                            const std::string& module_path,
                                            const std::string& output,
                                            const ExtractOptions& options) try {
  SEMMAP_RETURN_IF_ERROR(
      internal::CheckOutputFor(output,
                               {{input, "the input model"}, {options.manifest_path, "the manifest"}},
                               options.allow_overwrite));
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  const ModuleId module = manifest.find(module_path);
  if (module == kNoModule) {
    return absl::NotFoundError(absl::StrCat("no module ", Quoted(module_path), " in the manifest"));
  }

  // The region, as Graph node ids of main-graph nodes.
  std::vector<bool> in_region(graph.size(), false);
  std::size_t region_size = 0, nested = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Mapping& m = mapper.moduleFor(static_cast<NodeId>(i));
    if (!m.mapped() || !manifest.isAncestorOrSelf(module, m.module)) continue;
    if (graph.node(static_cast<NodeId>(i)).subgraph != 0) {
      ++nested;
      continue;
    }
    in_region[i] = true;
    ++region_size;
  }
  if (region_size == 0) {
    if (nested > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "module ", Quoted(module_path), ": its ", nested,
          " nodes live only inside If/Loop/Scan bodies; extract the module of the node "
          "holding them instead"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("module ", Quoted(module_path), " holds no node of ", input));
  }
  ExtractResult result;
  result.module = module_path;
  SEMMAP_ASSIGN_OR_RETURN(
      onnx::ModelProto source,
      internal::LoadModelProto(input, options.max_file_bytes, options.max_subgraph_depth));
  const onnx::GraphProto& g = source.graph();
  // Main-graph proto node k is the k-th Graph node with subgraph 0.
  std::vector<NodeId> graph_id_of;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    if (graph.node(static_cast<NodeId>(i)).subgraph == 0) graph_id_of.push_back(static_cast<NodeId>(i));
  }
  if (graph_id_of.size() != static_cast<std::size_t>(g.node_size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", g.node_size(), " top-level nodes but the mapped graph has ",
        graph_id_of.size(), "; was the file changed?"));
  }
  for (int k = 0; k < g.node_size(); ++k) {
    const Node& n = graph.node(graph_id_of[k]);
    if (n.name != g.node(k).name() || n.op_type != g.node(k).op_type()) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": node ", k, " (", Quoted(g.node(k).name()),
          ") differs from the graph that was mapped; was the file changed?"));
    }
  }

  // Constants the region reads come along; they are never outputs.
  std::vector<bool> copied(graph.size(), false);
  for (int k = 0; k < g.node_size(); ++k) {
    if (!in_region[graph_id_of[k]] || copied[graph_id_of[k]]) continue;
    for (const std::string& v : ValuesRead(g.node(k))) {
      if (v.empty()) continue;
      const NodeId p = graph.producer(v, 0);
      if (p != kNoNode && !in_region[p] && IsConstantSource(graph.node(p))) {
        in_region[p] = copied[p] = true;
        ++result.copied_constants;
      }
    }
  }

  absl::flat_hash_map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& t : g.initializer()) initializers.emplace(t.name(), &t);
  absl::flat_hash_map<std::string, const onnx::SparseTensorProto*> sparse;
  for (const auto& t : g.sparse_initializer()) sparse.emplace(t.values().name(), &t);
  absl::flat_hash_map<std::string, const onnx::ValueInfoProto*> types;
  for (const auto& v : g.value_info()) types.emplace(v.name(), &v);
  for (const auto& v : g.output()) types[v.name()] = &v;
  for (const auto& v : g.input()) types[v.name()] = &v;
  absl::flat_hash_set<std::string> graph_outputs;
  for (const auto& v : g.output()) graph_outputs.insert(v.name());

  onnx::ModelProto out;
  out.set_ir_version(source.ir_version());
  *out.mutable_opset_import() = source.opset_import();
  out.set_producer_name(source.producer_name());
  out.set_producer_version(source.producer_version());
  out.set_domain(source.domain());
  out.set_model_version(source.model_version());
  *out.mutable_functions() = source.functions();
  auto* meta = out.add_metadata_props();
  meta->set_key("semmap.extracted_module");
  meta->set_value(module_path);
  onnx::GraphProto* og = out.mutable_graph();
  og->set_name(absl::StrCat(g.name().empty() ? "graph" : g.name(), ":",
                            module_path.empty() ? "<root>" : module_path));

  const std::vector<NodeId> top_owner = TopLevelOwners(graph);
  const std::string in_dir = DirectoryOf(input), out_dir = DirectoryOf(output);
  absl::flat_hash_set<std::string> produced, seen;
  auto add_type = [&](onnx::ValueInfoProto* vi, const std::string& name) {
    auto it = types.find(name);
    if (it != types.end() && it->second->has_type()) {
      *vi = *it->second;
    } else {
      vi->set_name(name);
      ++result.untyped;
    }
  };
  for (int k = 0; k < g.node_size(); ++k) {
    if (!in_region[graph_id_of[k]]) continue;
    const onnx::NodeProto& node = g.node(k);
    for (const std::string& v : ValuesRead(node)) {
      if (v.empty() || produced.contains(v) || !seen.insert(v).second) continue;
      if (auto it = initializers.find(v); it != initializers.end()) {
        const onnx::TensorProto& t = *it->second;
        if (t.data_location() == onnx::TensorProto::EXTERNAL) {
          ++result.external_tensors;
          if (in_dir != out_dir) {
            std::string location;
            for (const auto& e : t.external_data()) {
              if (e.key() == "location") location = e.value();
            }
            return absl::FailedPreconditionError(absl::StrCat(
                output, ": initializer ", Quoted(v), " keeps its data in external file ",
                Quoted(location), " relative to ", in_dir,
                "; write the extracted model into that directory"));
          }
        }
        *og->add_initializer() = t;
        result.initializers.push_back(v);
      } else if (auto sp = sparse.find(v); sp != sparse.end()) {
        *og->add_sparse_initializer() = *sp->second;
        result.initializers.push_back(v);
      } else {
        add_type(og->add_input(), v);
        result.inputs.push_back(v);
      }
    }
    *og->add_node() = node;
    ++result.nodes;
    if (copied[graph_id_of[k]]) {
      produced.insert(node.output().begin(), node.output().end());
      continue;
    }
    for (const std::string& v : node.output()) {
      if (v.empty()) continue;
      produced.insert(v);
      bool leaves = graph_outputs.contains(v);
      for (NodeId c : graph.consumers(v, 0)) {
        leaves = leaves || top_owner[c] == kNoNode || !in_region[top_owner[c]];
      }
      if (leaves) {
        add_type(og->add_output(), v);
        result.outputs.push_back(v);
      }
    }
  }
  if (result.outputs.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "module ", Quoted(module_path), ": its nodes produce no value read outside them"));
  }
  std::string bytes;
  if (!out.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat(output, ": cannot serialize the extracted model"));
  }
  SEMMAP_RETURN_IF_ERROR(internal::WriteFileAtomically(output, bytes));
  result.bytes_written = bytes.size();
  return result;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "extracting the module");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "extracting the module");
}

}  // namespace semmap
