#include "semmap/extract.h"

#include <deque>
#include <filesystem>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "internal/atomic_write.h"
#include "internal/file_io.h"
#include "internal/mapped_file.h"
#include "internal/onnx_fields.h"
#include "internal/out_of_memory.h"
#include "internal/status_macros.h"
#include "internal/wire_model_index.h"
#include "internal/wire_writer.h"

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

// onnx.proto's field numbers (internal/onnx_fields.h).
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
  // The file's own bytes, mapped and indexed at the wire level: no protobuf
  // parse, no 2 GB limit; tensor payloads are copied, never decoded.
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile file,
                          internal::MappedFile::Open(input, options.max_file_bytes));
  SEMMAP_ASSIGN_OR_RETURN(
      const internal::WireModel source,
      internal::IndexWireModel(file.bytes(), input, options.max_subgraph_depth));
  const std::vector<internal::WireNode>& nodes = source.nodes;
  const int node_count = static_cast<int>(nodes.size());
  // Main-graph node k is the k-th Graph node with subgraph 0.
  std::vector<NodeId> graph_id_of;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    if (graph.node(static_cast<NodeId>(i)).subgraph == 0) graph_id_of.push_back(static_cast<NodeId>(i));
  }
  if (graph_id_of.size() != nodes.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", nodes.size(), " top-level nodes but the mapped graph has ",
        graph_id_of.size(), "; was the file changed?"));
  }
  for (int k = 0; k < node_count; ++k) {
    const Node& n = graph.node(graph_id_of[k]);
    if (n.name != nodes[k].name || n.op_type != nodes[k].op_type) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": node ", k, " (", Quoted(std::string(nodes[k].name)),
          ") differs from the graph that was mapped; was the file changed?"));
    }
  }

  // Constants the region reads come along; they are never outputs.
  std::vector<bool> copied(graph.size(), false);
  for (int k = 0; k < node_count; ++k) {
    if (!in_region[graph_id_of[k]] || copied[graph_id_of[k]]) continue;
    for (absl::string_view v : internal::ValuesRead(nodes[k])) {
      const NodeId p = graph.producer(v, 0);
      if (p != kNoNode && !in_region[p] && IsConstantSource(graph.node(p))) {
        in_region[p] = copied[p] = true;
        ++result.copied_constants;
      }
    }
  }

  std::deque<std::string> owned;
  Pieces og(&owned);  // the GraphProto, fields in protobuf's order
  Pieces initializers(&owned), inputs(&owned), outputs(&owned), sparse(&owned);
  const std::vector<NodeId> top_owner = TopLevelOwners(graph);
  const std::string in_dir = DirectoryOf(input), out_dir = DirectoryOf(output);
  absl::flat_hash_set<absl::string_view> produced, seen;
  auto add_type = [&](Pieces* list, std::uint32_t field, absl::string_view name) {
    auto it = source.types.find(name);
    if (it != source.types.end() && it->second.typed) {
      list->LenField(field, it->second.bytes);
    } else {
      std::string info;
      internal::AppendLenField(&info, kValueInfoName, name);
      owned.push_back(std::move(info));
      list->LenField(field, owned.back());
      ++result.untyped;
    }
  };
  for (int k = 0; k < node_count; ++k) {
    if (!in_region[graph_id_of[k]]) continue;
    const internal::WireNode& node = nodes[k];
    for (absl::string_view v : internal::ValuesRead(node)) {
      if (produced.contains(v) || !seen.insert(v).second) continue;
      if (auto it = source.initializers.find(v); it != source.initializers.end()) {
        const internal::WireTensor& t = it->second;
        if (t.external) {
          ++result.external_tensors;
          if (in_dir != out_dir) {
            return absl::FailedPreconditionError(absl::StrCat(
                output, ": initializer ", Quoted(std::string(v)), " keeps its data in external file ",
                Quoted(std::string(t.location)), " relative to ", in_dir,
                "; write the extracted model into that directory"));
          }
        }
        initializers.LenField(graph_field::kInitializer, t.bytes);
        result.initializers.emplace_back(v);
      } else if (auto sp = source.sparse_initializers.find(v);
                 sp != source.sparse_initializers.end()) {
        sparse.LenField(graph_field::kSparseInitializer, sp->second);
        result.initializers.emplace_back(v);
      } else {
        add_type(&inputs, graph_field::kInput, v);
        result.inputs.emplace_back(v);
      }
    }
    og.LenField(graph_field::kNode, node.bytes);
    ++result.nodes;
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
        add_type(&outputs, graph_field::kOutput, v);
        result.outputs.emplace_back(v);
      }
    }
  }
  if (result.outputs.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "module ", Quoted(module_path), ": its nodes produce no value read outside them"));
  }
  og.Own([&] {
    std::string name;
    internal::AppendLenField(
        &name, graph_field::kName,
        absl::StrCat(source.graph_name.empty() ? "graph" : source.graph_name, ":",
                     module_path.empty() ? "<root>" : module_path));
    return name;
  }());
  for (const Pieces* part : {&initializers, &inputs, &outputs, &sparse}) {
    for (absl::string_view piece : part->pieces()) og.View(piece);
  }

  // The ModelProto: what the source says of itself, the graph, the opsets,
  // the functions, and which module this is.
  Pieces out(&owned);
  out.VarintField(model_field::kIrVersion, source.ir_version);
  out.LenField(model_field::kProducerName, source.producer_name);
  out.LenField(model_field::kProducerVersion, source.producer_version);
  out.LenField(model_field::kDomain, source.domain);
  out.VarintField(model_field::kModelVersion, source.model_version);
  out.Message(model_field::kGraph, og);
  for (absl::string_view opset : source.opset_imports) out.LenField(model_field::kOpsetImport, opset);
  std::string entry;
  internal::AppendLenField(&entry, kEntryKey, "semmap.extracted_module");
  internal::AppendLenField(&entry, kEntryValue, module_path);
  owned.push_back(std::move(entry));
  out.LenField(model_field::kMetadataProps, owned.back());
  for (absl::string_view fn : source.functions) out.LenField(model_field::kFunctions, fn);

  // The pieces are views into the mapping: a file that shrank meanwhile
  // reads as zeros there, so the output is checked before it replaces any.
  // Tensor payloads are copied by the kernel from the input file.
  const internal::PieceSource from_file{file.bytes(), input, file.device(), file.inode()};
  SEMMAP_RETURN_IF_ERROR(internal::WritePiecesAtomically(output, out.pieces(), [&] {
    return file.truncated() ? absl::DataLossError(absl::StrCat(
                                  input, ": the file shrank while it was read (truncated by "
                                         "another process?); nothing written"))
                            : absl::OkStatus();
  }, &from_file));
  result.bytes_written = out.size();
  return result;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "extracting the module");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "extracting the module");
}

}  // namespace semmap
