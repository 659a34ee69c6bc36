#include "graph/wire_loader.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/parallel.h"
#include "base/status_macros.h"
#include "graph/onnx_fields.h"
#include "graph/wire_messages.h"
#include "graph/wire_reader.h"

namespace semmap {
namespace internal {
namespace {

// A parallel walk splits the main graph's nodes into runs of this many, and
// gives each worker at least kParallelWalkNodes: below, a thread costs more
// than it saves.
constexpr std::size_t kChunkNodes = 1024;
constexpr std::size_t kParallelWalkNodes = std::size_t{1} << 15;

class WireWalker {
 public:
  WireWalker(const WireSource& source, GraphBuilder* b, std::size_t workers)
      : source_(source), b_(b), workers_(workers), nodes_(source) {}

  absl::Status Walk() {
    ModelFields model;
    SEMMAP_RETURN_IF_ERROR(ReadModel(source_, &model));
    std::int64_t opset = 0;
    for (absl::string_view o : model.opset_imports) {
      SEMMAP_RETURN_IF_ERROR(ReadOpset(source_, o, &opset));
    }
    std::vector<MetadataEntry> metadata;
    for (absl::string_view entry : model.metadata_props) {
      SEMMAP_RETURN_IF_ERROR(b_->Charge(1));
      SEMMAP_RETURN_IF_ERROR(ReadEntry(source_, entry, &metadata.emplace_back()));
    }
    const auto ir_version = static_cast<std::int64_t>(model.ir_version);
    // An empty GraphProto (zero bytes) is no graph: nothing in it to map.
    const bool has_graph = std::any_of(model.graph.begin(), model.graph.end(),
                                       [](absl::string_view g) { return !g.empty(); });
    if (!has_graph || ir_version <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_.origin, ": not an ONNX model (", !has_graph ? "no graph" : "no ir_version",
          "; is this a different protobuf message?)"));
    }
    b_->SetModelInfo(ir_version, model.producer_name, model.producer_version, opset);
    for (const MetadataEntry& kv : metadata) b_->AddModelMetadata(kv.first, kv.second);
    SEMMAP_RETURN_IF_ERROR(AddGraph(model.graph, Subgraph()));
    for (absl::string_view fn : model.functions) SEMMAP_RETURN_IF_ERROR(AddFunction(fn));
    return absl::OkStatus();
  }

 private:
  // `s` describes the graph (kind, owner, attribute, parent); its name is
  // read here. Initializers, then sparse initializers, then inputs define
  // values; then the nodes, each followed by its subgraphs. Long (about 85
  // lines): one case per GraphProto field, then the definitions in that
  // order.
  absl::Status AddGraph(const Spans& spans, Subgraph s) {
    const int index = b_->subgraphCount();
    const bool main = s.kind == Subgraph::Kind::kMain;
    std::vector<absl::string_view> sparse;
    absl::string_view name;
    std::size_t nodes = 0;
    // Where every kChunkNodes-th node begins, for a parallel walk.
    std::vector<const char*> starts;
    for (absl::string_view span : spans) {
      WireReader r(span);
      WireField f;
      for (const char* at = r.position(); r.Next(&f); at = r.position()) {
        if (!IsLen(f)) continue;
        switch (f.number) {
          case graph_field::kNode:
            if (main && nodes % kChunkNodes == 0) starts.push_back(at);
            ++nodes;
            // The first to read the node fields: most of its time was
            // waiting for each one's first bytes.
            PrefetchAhead(f.bytes.data());
            break;
          case graph_field::kName:
            name = f.bytes;
            break;
          case graph_field::kDocString:
            if (main) b_->SetGraphDocString(f.bytes);  // protobuf keeps the last
            break;
          case graph_field::kInitializer:
            SEMMAP_RETURN_IF_ERROR(AddTensor(Spans{f.bytes}, index));
            break;
          case graph_field::kSparseInitializer:
            sparse.push_back(f.bytes);
            break;
          case graph_field::kInput: {
            absl::string_view value;
            bool typed;
            SEMMAP_RETURN_IF_ERROR(ReadValueInfo(source_, f.bytes, &value, &typed));
            if (main) SEMMAP_RETURN_IF_ERROR(b_->AddMainInput(value));
            SEMMAP_RETURN_IF_ERROR(b_->DefineValue(index, value));
            break;
          }
          case graph_field::kOutput:
            if (main) {
              absl::string_view value;
              bool typed;
              SEMMAP_RETURN_IF_ERROR(ReadValueInfo(source_, f.bytes, &value, &typed));
              SEMMAP_RETURN_IF_ERROR(b_->AddMainOutput(value));
            }
            break;
          default:
            break;
        }
      }
      if (!r.ok()) return source_.Malformed(r, "GraphProto");
    }
    s.name = name;
    b_->AddSubgraph(s);
    if (main) b_->ReserveNodes(nodes);
    for (absl::string_view st : sparse) {
      Spans values;
      SEMMAP_RETURN_IF_ERROR(ReadSparseValues(source_, st, &values));
      SEMMAP_RETURN_IF_ERROR(AddTensor(values, index));
    }
    // The main graph of a large file is walked on every core; a graph
    // written in several pieces (a merged message) or holding bodies is
    // walked here, node after node.
    const std::size_t workers =
        workers_ != 0 ? std::min(workers_, nodes) : WorkerCount(nodes, kParallelWalkNodes);
    if (main && spans.size() == 1 && workers > 1 &&
        AddNodesInParallel(spans[0], starts, nodes, workers)) {
      return absl::OkStatus();
    }
    for (absl::string_view span : spans) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (f.number == graph_field::kNode && IsLen(f)) {
          SEMMAP_RETURN_IF_ERROR(AddNode(f.bytes, index));
        }
      }
      // Already walked once without error.
    }
    return absl::OkStatus();
  }

  absl::Status AddNode(absl::string_view bytes, int subgraph) {
    NodeFields n;
    bool has_body = false;
    SEMMAP_RETURN_IF_ERROR(
        nodes_.Read(bytes, [this](std::size_t k) { return b_->Charge(k); }, &n, &has_body));
    NodeId id;
    SEMMAP_RETURN_IF_ERROR(b_->AddNode(subgraph, n, &id));
    if (!has_body) return absl::OkStatus();
    // Descend right after the owning node, in attribute order (the lists
    // above are stored: the reader's scratch lists are free again).
    return ForEachBody(source_, bytes, [&](absl::string_view attribute, const Spans& body) {
      SEMMAP_RETURN_IF_ERROR(b_->CheckNesting(subgraph));
      Subgraph s;
      s.kind = Subgraph::Kind::kAttribute;
      s.owner = id;
      s.attribute = attribute;
      s.parent = subgraph;
      return AddGraph(body, s);
    });
  }

  // One worker's share of a parallel walk: the GraphProto fields `range`
  // (already checked) holding `expected` node fields, and the nodes and the
  // bytes (`room_bytes`, each list entry taking 2 or more) its lists are
  // sized for.
  struct NodeRange {
    absl::string_view range;
    std::size_t expected = 0;
    std::size_t room_nodes = 0;
    std::size_t room_bytes = 0;
  };

  // The main graph's nodes, walked on `workers` threads: `starts` holds
  // where every kChunkNodes-th node field begins in `graph`, `count` the
  // nodes in all. False when the serial walk must do it (a node with a
  // body, malformed bytes, a limit reached: it then says which, as
  // always); nothing is kept then.
  bool AddNodesInParallel(absl::string_view graph, const std::vector<const char*>& starts,
                          std::size_t count, std::size_t workers) {
    NodeRecord* records = b_->BatchNodes(count);
    if (records == nullptr) return false;
    const std::size_t chunks = starts.size();
    const std::size_t max_name = b_->maxNameBytes();
    std::vector<NodeBatch> batches(workers);
    std::vector<char> ok(workers, 0);
    RunWorkers(workers, [&](std::size_t w) {
      const std::size_t first = chunks * w / workers, last = chunks * (w + 1) / workers;
      if (first == last) {
        ok[w] = 1;
        return;
      }
      const char* begin = starts[first];
      const char* end = last < chunks ? starts[last] : graph.data() + graph.size();
      NodeRange part;
      part.range = absl::string_view(begin, static_cast<std::size_t>(end - begin));
      part.expected = std::min(count, last * kChunkNodes) - first * kChunkNodes;
      // The first batch's lists become the graph's (AppendBatches): sized
      // for every node.
      part.room_nodes = w == 0 ? count : part.expected;
      part.room_bytes = w == 0 ? graph.size() : part.range.size();
      NodeBatch& batch = batches[w];
      batch.nodes = records + first * kChunkNodes;
      ok[w] = WireWalker(source_, nullptr, 1).WalkNodeRange(part, max_name, &batch);
    });
    if (std::find(ok.begin(), ok.end(), 0) != ok.end() || !b_->AppendBatches(&batches, workers)) {
      b_->DropBatchNodes(count);
      return false;
    }
    return true;
  }

  // One worker's part of AddNodesInParallel: the node fields of `part`
  // into `batch`, its lists sized after the first run of nodes by what
  // they held.
  bool WalkNodeRange(const NodeRange& part, std::size_t max_name, NodeBatch* batch) {
    NodeFields n;
    bool has_body = false;
    auto charge = [batch](std::size_t k) {
      batch->entries += k;
      return absl::OkStatus();
    };
    WireReader r(part.range);
    WireField f;
    while (r.Next(&f)) {
      if (f.number != graph_field::kNode || !IsLen(f)) continue;
      if (batch->count == part.expected || !nodes_.Read(f.bytes, charge, &n, &has_body).ok() ||
          has_body || !batch->Add(0, n, max_name)) {
        return false;
      }
      if (batch->count == kChunkNodes) batch->Reserve(part.room_nodes, part.room_bytes / 2);
    }
    return r.ok() && batch->count == part.expected;
  }

  absl::Status AddFunction(absl::string_view bytes) {
    Subgraph s;
    s.kind = Subgraph::Kind::kFunction;
    std::vector<absl::string_view> inputs;
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      if (!IsLen(f)) continue;
      if (f.number == function_field::kName) s.name = f.bytes;
      if (f.number == function_field::kDomain) s.domain = f.bytes;
      if (f.number == function_field::kInput) inputs.push_back(f.bytes);
    }
    if (!r.ok()) return source_.Malformed(r, "FunctionProto");
    const int index = b_->AddSubgraph(s);
    for (absl::string_view in : inputs) SEMMAP_RETURN_IF_ERROR(b_->DefineValue(index, in));
    WireReader nodes(bytes);
    while (nodes.Next(&f)) {
      if (f.number == function_field::kNode && IsLen(f)) {
        SEMMAP_RETURN_IF_ERROR(AddNode(f.bytes, index));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddTensor(const Spans& spans, int subgraph) {
    TensorFields t;
    dims_.clear();
    SEMMAP_RETURN_IF_ERROR(ReadTensor(source_, spans, &t, &dims_));
    return b_->AddInitializer(t.name, t.elem_type, dims_, t.external, subgraph);
  }

  const WireSource source_;
  GraphBuilder* b_;
  const std::size_t workers_;  // 0: one per core
  NodeReader nodes_;
  std::vector<std::int64_t> dims_;  // scratch list of AddTensor
};

}  // namespace

absl::Status LoadWithWireScan(absl::string_view bytes, absl::string_view origin,
                              const GraphOptions& options, GraphBuilder* builder,
                              std::size_t workers) {
  return WireWalker(WireSource{bytes, origin}, builder, workers).Walk();
}

}  // namespace internal
}  // namespace semmap
