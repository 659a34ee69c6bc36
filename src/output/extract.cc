#include "semmap/extract.h"

#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "graph/node_kinds.h"
#include "graph/onnx_fields.h"
#include "graph/wire_model_index.h"
#include "graph/wire_writer.h"
#include "io/atomic_write.h"
#include "io/json_writer.h"
#include "io/mapped_file.h"
#include "io/paths.h"

namespace semmap {
namespace {

std::string Quoted(const std::string& s) { return absl::StrCat("\"", internal::Abbreviate(s), "\""); }

// The extracted model's bytes: views into the source file and the few
// buffers built here, in order.
class Pieces {
 public:
  explicit Pieces(std::deque<std::string>* owned) : owned_(owned) {}
  void View(absl::string_view bytes) {
    pieces_.push_back(bytes);
    size_ += bytes.size();
  }
  void Own(std::string bytes) {
    owned_->push_back(std::move(bytes));
    View(owned_->back());
  }
  // A length-delimited field whose payload is `payload` (not copied).
  void LenField(std::uint32_t number, absl::string_view payload) {
    std::string header;
    internal::AppendLenHeader(&header, number, payload.size());
    Own(std::move(header));
    View(payload);
  }
  void VarintField(std::uint32_t number, std::uint64_t value) {
    std::string field;
    internal::AppendVarint(&field, std::uint64_t{number} << 3);
    internal::AppendVarint(&field, value);
    Own(std::move(field));
  }
  // A message field made of `inner`'s pieces.
  void Message(std::uint32_t number, const Pieces& inner) {
    std::string header;
    internal::AppendLenHeader(&header, number, inner.size_);
    Own(std::move(header));
    pieces_.insert(pieces_.end(), inner.pieces_.begin(), inner.pieces_.end());
    size_ += inner.size_;
  }
  const std::vector<absl::string_view>& pieces() const { return pieces_; }
  std::uint64_t size() const { return size_; }

 private:
  std::deque<std::string>* owned_;  // element addresses never move
  std::vector<absl::string_view> pieces_;
  std::uint64_t size_ = 0;
};

// onnx.proto's field numbers (onnx/onnx_fields.h).
namespace model_field = internal::model_field;
namespace graph_field = internal::graph_field;
using internal::kEntryKey;
using internal::kEntryValue;
using internal::kValueInfoName;

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

// The region of `module`: its main-graph nodes, as a mask over Graph node
// ids. FailedPrecondition when it holds none (its nodes, if any, all in
// bodies of If/Loop/Scan).
absl::StatusOr<std::vector<bool>> Region(const SemanticMapper& mapper, ModuleId module,
                                         const std::string& module_path,
                                         const std::string& input) {
  const Graph& graph = mapper.graph();
  std::vector<bool> in_region(graph.size(), false);
  std::size_t region_size = 0, nested = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Mapping& m = mapper.moduleFor(static_cast<NodeId>(i));
    if (!m.mapped() || !mapper.manifest().isAncestorOrSelf(module, m.module)) continue;
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
  return in_region;
}

// The Graph node id of each of the file's main-graph nodes (main-graph node
// k is the k-th Graph node with subgraph 0); FailedPrecondition when the
// file no longer holds the graph that was mapped.
absl::StatusOr<std::vector<NodeId>> TopLevelIds(const Graph& graph,
                                                const std::vector<internal::WireNode>& nodes,
                                                const std::string& input) {
  std::vector<NodeId> graph_id_of;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    if (graph.node(static_cast<NodeId>(i)).subgraph == 0) graph_id_of.push_back(static_cast<NodeId>(i));
  }
  if (graph_id_of.size() != nodes.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", nodes.size(), " top-level nodes but the mapped graph has ",
        graph_id_of.size(), "; was the file changed?"));
  }
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = graph.node(graph_id_of[k]);
    if (n.name != nodes[k].name || n.op_type != nodes[k].op_type) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": node ", k, " (", Quoted(std::string(nodes[k].name)),
          ") differs from the graph that was mapped; was the file changed?"));
    }
  }
  return graph_id_of;
}

// Constants the region reads come along (added to `*in_region`, counted in
// `*count`); they are never outputs. Returns them as a mask.
std::vector<bool> AddReadConstants(const Graph& graph, const internal::WireModel& source,
                                   const std::vector<NodeId>& graph_id_of,
                                   std::vector<bool>* in_region, std::size_t* count) {
  std::vector<bool> copied(graph.size(), false);
  for (std::size_t k = 0; k < source.nodes.size(); ++k) {
    if (!(*in_region)[graph_id_of[k]] || copied[graph_id_of[k]]) continue;
    for (absl::string_view v : internal::ValuesRead(source.nodes[k])) {
      const NodeId p = graph.producer(v, 0);
      if (p != kNoNode && !(*in_region)[p] && internal::IsConstantSource(graph.node(p))) {
        (*in_region)[p] = copied[p] = true;
        ++*count;
      }
    }
  }
  return copied;
}

// The extracted GraphProto's parts, each in protobuf's field order.
struct GraphParts {
  explicit GraphParts(std::deque<std::string>* owned)
      : nodes(owned), initializers(owned), inputs(owned), outputs(owned), sparse(owned) {}
  Pieces nodes, initializers, inputs, outputs, sparse;
};

// Adds the region's nodes (`in_region`, constants `copied` in included) to
// `parts` in file order, with the initializers they read, as inputs the
// other values they read, as outputs the values read outside the region;
// fills `result`'s lists. FailedPrecondition for an initializer with
// external data when `in_dir` != `out_dir`.
// About 65 lines: the per-value decisions share the seen and produced sets,
// as in stages.cc's BuildStage.
absl::Status AddRegion(const Graph& graph, const internal::WireModel& source,
                       const std::vector<NodeId>& graph_id_of, const std::vector<bool>& in_region,
                       const std::vector<bool>& copied, const std::string& in_dir,
                       const std::string& out_dir, const std::string& output,
                       std::deque<std::string>* owned, GraphParts* parts, ExtractResult* result) {
  const std::vector<NodeId> top_owner = TopLevelOwners(graph);
  absl::flat_hash_set<absl::string_view> produced, seen;
  auto add_type = [&](Pieces* list, std::uint32_t field, absl::string_view name) {
    auto it = source.types.find(name);
    if (it != source.types.end() && it->second.typed) {
      list->LenField(field, it->second.bytes);
    } else {
      std::string info;
      internal::AppendLenField(&info, kValueInfoName, name);
      owned->push_back(std::move(info));
      list->LenField(field, owned->back());
      ++result->untyped;
    }
  };
  for (std::size_t k = 0; k < source.nodes.size(); ++k) {
    if (!in_region[graph_id_of[k]]) continue;
    const internal::WireNode& node = source.nodes[k];
    for (absl::string_view v : internal::ValuesRead(node)) {
      if (produced.contains(v) || !seen.insert(v).second) continue;
      if (auto it = source.initializers.find(v); it != source.initializers.end()) {
        const internal::WireTensor& t = it->second;
        if (t.external) {
          ++result->external_tensors;
          if (in_dir != out_dir) {
            return absl::FailedPreconditionError(absl::StrCat(
                output, ": initializer ", Quoted(std::string(v)), " keeps its data in external file ",
                Quoted(std::string(t.location)), " relative to ", in_dir,
                "; write the extracted model into that directory"));
          }
        }
        parts->initializers.LenField(graph_field::kInitializer, t.bytes);
        result->initializers.emplace_back(v);
      } else if (auto sp = source.sparse_initializers.find(v);
                 sp != source.sparse_initializers.end()) {
        parts->sparse.LenField(graph_field::kSparseInitializer, sp->second);
        result->initializers.emplace_back(v);
      } else {
        add_type(&parts->inputs, graph_field::kInput, v);
        result->inputs.emplace_back(v);
      }
    }
    parts->nodes.LenField(graph_field::kNode, node.bytes);
    ++result->nodes;
    if (copied[graph_id_of[k]]) {
      produced.insert(node.outputs.begin(), node.outputs.end());
      continue;
    }
    for (absl::string_view v : node.outputs) {
      if (v.empty()) continue;
      produced.insert(v);
      bool leaves = source.graph_outputs.contains(v);
      for (NodeId c : graph.consumers(v, 0)) {
        leaves = leaves || top_owner[c] == kNoNode || !in_region[top_owner[c]];
      }
      if (leaves) {
        add_type(&parts->outputs, graph_field::kOutput, v);
        result->outputs.emplace_back(v);
      }
    }
  }
  return absl::OkStatus();
}

// The ModelProto: what the source says of itself, the graph (`parts` and
// its name), the opsets, the functions, and which module this is.
Pieces ModelPieces(const internal::WireModel& source, const GraphParts& parts,
                   const std::string& module_path, std::deque<std::string>* owned) {
  Pieces og(owned);  // the GraphProto, fields in protobuf's order
  for (absl::string_view piece : parts.nodes.pieces()) og.View(piece);
  std::string name;
  internal::AppendLenField(&name, graph_field::kName,
                           absl::StrCat(source.graph_name.empty() ? "graph" : source.graph_name,
                                        ":", module_path.empty() ? "<root>" : module_path));
  og.Own(std::move(name));
  for (const Pieces* part : {&parts.initializers, &parts.inputs, &parts.outputs, &parts.sparse}) {
    for (absl::string_view piece : part->pieces()) og.View(piece);
  }
  Pieces out(owned);
  out.VarintField(model_field::kIrVersion, source.ir_version);
  out.LenField(model_field::kProducerName, source.producer_name);
  out.LenField(model_field::kProducerVersion, source.producer_version);
  out.LenField(model_field::kDomain, source.domain);
  out.VarintField(model_field::kModelVersion, source.model_version);
  out.Message(model_field::kGraph, og);
  for (absl::string_view opset : source.opset_imports) out.LenField(model_field::kOpsetImport, opset);
  std::string entry;
  internal::AppendLenField(&entry, kEntryKey, kExtractedModuleKey);
  internal::AppendLenField(&entry, kEntryValue, module_path);
  owned->push_back(std::move(entry));
  out.LenField(model_field::kMetadataProps, owned->back());
  for (absl::string_view fn : source.functions) out.LenField(model_field::kFunctions, fn);
  return out;
}

}  // namespace

absl::StatusOr<ExtractResult> ExtractModule(const SemanticMapper& mapper, const std::string& input,
                                            const std::string& module_path,
                                            const std::string& output,
                                            const ExtractOptions& options) try {
  SEMMAP_RETURN_IF_ERROR(
      internal::CheckOutputFor(output,
                               {{input, "the input model"}, {options.manifest_path, "the manifest"}},
                               options.protected_paths, options.allow_overwrite));
  const Graph& graph = mapper.graph();
  const ModuleId module = mapper.manifest().find(module_path);
  if (module == kNoModule) {
    return absl::NotFoundError(absl::StrCat("no module ", Quoted(module_path), " in the manifest"));
  }
  SEMMAP_ASSIGN_OR_RETURN(std::vector<bool> in_region, Region(mapper, module, module_path, input));
  ExtractResult result;
  result.module = module_path;
  // The file's own bytes, mapped and indexed at the wire level: no protobuf
  // parse, no 2 GB limit; tensor payloads are copied, never decoded.
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile file,
                          internal::MappedFile::Open(input, options.max_file_bytes));
  SEMMAP_ASSIGN_OR_RETURN(
      const internal::WireModel source,
      internal::IndexWireModel(file.bytes(), input, options.max_subgraph_depth));
  SEMMAP_ASSIGN_OR_RETURN(const std::vector<NodeId> graph_id_of,
                          TopLevelIds(graph, source.nodes, input));

  const std::vector<bool> copied =
      AddReadConstants(graph, source, graph_id_of, &in_region, &result.copied_constants);

  std::deque<std::string> owned;
  GraphParts parts(&owned);
  SEMMAP_RETURN_IF_ERROR(AddRegion(graph, source, graph_id_of, in_region, copied,
                                   internal::ResolvedDirectoryOf(input),
                                   internal::ResolvedDirectoryOf(output), output, &owned,
                                   &parts, &result));
  if (result.outputs.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "module ", Quoted(module_path), ": its nodes produce no value read outside them"));
  }
  const Pieces out = ModelPieces(source, parts, module_path, &owned);

  // The pieces are views into the mapping (WriteMappedPiecesAtomically).
  SEMMAP_RETURN_IF_ERROR(internal::WriteMappedPiecesAtomically(output, out.pieces(), file, input));
  result.bytes_written = out.size();
  return result;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "extracting the module");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "extracting the module");
}

std::string ExtractResultJson(const ExtractResult& result, const std::string& model,
                              const std::string& output) {
  std::string text;
  internal::JsonWriter w(&text);
  w.BeginObject();
  w.Key("bytes").Integer(result.bytes_written);
  w.Key("copied_constants").Integer(result.copied_constants);
  w.Key("external_tensors").Integer(result.external_tensors);
  w.Key("initializers").Integer(result.initializers.size());
  w.Key("inputs").Strings(result.inputs);
  w.Key("model").String(model);
  w.Key("module").String(result.module);
  w.Key("nodes").Integer(result.nodes);
  w.Key("output").String(output);
  w.Key("outputs").Strings(result.outputs);
  w.Key("untyped").Integer(result.untyped);
  w.EndObject();
  return text;
}

}  // namespace semmap
