#include "semmap/graph.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "internal/file_io.h"
#include "internal/mapped_file.h"
#include "internal/out_of_memory.h"
#include "internal/protobuf_loader.h"
#include "internal/status_macros.h"
#include "internal/wire_loader.h"

namespace semmap {

Graph::Graph(const Graph& other)
    : nodes_(other.nodes_),
      subgraphs_(other.subgraphs_),
      initializers_(other.initializers_),
      inputs_(other.inputs_),
      outputs_(other.outputs_),
      ir_version_(other.ir_version_),
      opset_(other.opset_),
      producer_name_(other.producer_name_),
      producer_version_(other.producer_version_),
      model_metadata_(other.model_metadata_),
      defined_values_(other.defined_values_) {
  BuildIndexes();
}

Graph& Graph::operator=(const Graph& other) {
  if (this != &other) {
    Graph copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void Graph::BuildIndexes() {
  values_.clear();
  value_producer_.clear();
  consumer_offsets_.clear();
  consumer_nodes_.clear();
  initializer_index_.clear();

  if (by_id_.empty()) {
    // The first node with an id wins, as node order decides.
    by_id_.reserve(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      by_id_.try_emplace(nodes_[i].id, static_cast<NodeId>(i));
    }
  }
  std::size_t outputs = 0, inputs = 0;
  for (const Node& n : nodes_) {
    outputs += n.outputs.size();
    inputs += n.inputs.size();
  }
  values_.reserve(outputs + initializers_.size() + defined_values_.size());
  value_producer_.reserve(outputs + initializers_.size() + defined_values_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      const auto next = static_cast<std::uint32_t>(value_producer_.size());
      if (values_.try_emplace(ScopedName{n.subgraph, out}, next).second) {
        value_producer_.push_back(static_cast<NodeId>(i));  // the first producer wins
      }
    }
  }
  auto define = [this](int scope, absl::string_view name) {
    const auto next = static_cast<std::uint32_t>(value_producer_.size());
    if (values_.try_emplace(ScopedName{scope, name}, next).second) value_producer_.push_back(kNoNode);
  };
  for (std::size_t i = 0; i < initializers_.size(); ++i) {
    const TensorInfo& t = initializers_[i];
    define(t.subgraph, t.name);
    if (t.subgraph == 0) initializer_index_.emplace(t.name, i);
  }
  for (const auto& value : defined_values_) define(value.first, value.second);

  // (value, consumer) pairs in node order, then grouped by value (counting
  // sort), sorted and de-duplicated per value.
  std::vector<std::pair<std::uint32_t, NodeId>> uses;
  uses.reserve(inputs);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    for (const std::string& in : n.inputs) {
      if (in.empty()) continue;
      int scope = -1;
      const std::int64_t value = resolve(in, n.subgraph, &scope);
      if (value < 0) continue;
      uses.emplace_back(static_cast<std::uint32_t>(value), static_cast<NodeId>(i));
      // An outer value used inside a subgraph is consumed by every owner
      // between the use and the definition.
      for (int s = n.subgraph; s != scope && s > 0;) {
        const Subgraph& sub = subgraphs_[static_cast<std::size_t>(s)];
        if (sub.kind != Subgraph::Kind::kAttribute) break;
        uses.emplace_back(static_cast<std::uint32_t>(value), sub.owner);
        s = sub.parent;
      }
    }
  }
  const std::size_t count = value_producer_.size();
  std::vector<std::uint32_t> begin(count + 1, 0);
  for (const auto& use : uses) ++begin[use.first + 1];
  for (std::size_t v = 0; v < count; ++v) begin[v + 1] += begin[v];
  consumer_nodes_.resize(uses.size());
  {
    std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& use : uses) consumer_nodes_[fill[use.first]++] = use.second;
  }
  std::vector<std::pair<std::uint32_t, NodeId>>().swap(uses);
  consumer_offsets_.assign(count + 1, 0);
  std::uint32_t out = 0;
  for (std::size_t v = 0; v < count; ++v) {
    auto first = consumer_nodes_.begin() + begin[v];
    auto last = consumer_nodes_.begin() + begin[v + 1];
    if (!std::is_sorted(first, last)) std::sort(first, last);
    last = std::unique(first, last);
    consumer_offsets_[v] = out;
    for (auto it = first; it != last; ++it) consumer_nodes_[out++] = *it;
  }
  consumer_offsets_[count] = out;
  consumer_nodes_.resize(out);
}

std::int64_t Graph::resolve(absl::string_view value, int subgraph, int* scope) const {
  for (int s = subgraph; s >= 0 && s < static_cast<int>(subgraphs_.size());) {
    auto it = values_.find(ScopedName{s, value});
    if (it != values_.end()) {
      *scope = s;
      return it->second;
    }
    if (subgraphs_[static_cast<std::size_t>(s)].kind != Subgraph::Kind::kAttribute) break;
    s = subgraphs_[static_cast<std::size_t>(s)].parent;
  }
  return -1;
}

absl::StatusOr<Graph> Graph::Load(const std::string& path, const GraphOptions& options) try {
  if (options.loader == Loader::kProtobuf) {
    // Refuse what protobuf cannot parse before reading it into memory.
    const std::uint64_t limit = std::min<std::uint64_t>(options.max_file_bytes, INT_MAX);
    SEMMAP_ASSIGN_OR_RETURN(std::string bytes, internal::ReadFile(path, limit));
    return Parse(bytes, path, options);
  }
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile file,
                          internal::MappedFile::Open(path, options.max_file_bytes));
  absl::StatusOr<Graph> graph = Parse(file.bytes(), path, options);
  if (file.truncated()) {
    // What was parsed held zeros where the file's end used to be.
    return absl::DataLossError(absl::StrCat(
        path, ": the file shrank while it was read (truncated by another process?)"));
  }
  return graph;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(path, "loading the model");
} catch (const std::length_error&) {
  return internal::OutOfMemory(path, "loading the model");
}

absl::StatusOr<Graph> Graph::Parse(absl::string_view bytes, absl::string_view origin,
                                   const GraphOptions& options) try {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected an ONNX model"));
  }
  internal::GraphBuilder builder(origin, options);
  if (options.loader == Loader::kProtobuf) {
    SEMMAP_RETURN_IF_ERROR(internal::LoadWithProtobuf(bytes, origin, options, &builder));
  } else {
    SEMMAP_RETURN_IF_ERROR(internal::LoadWithWireScan(bytes, origin, options, &builder));
  }
  SEMMAP_RETURN_IF_ERROR(builder.CheckNames());
  return builder.Finish();
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the model");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the model");
}

NodeId Graph::find(absl::string_view id_or_name) const {
  // A name that is unique in the model is its node's id, so one lookup
  // answers both.
  auto it = by_id_.find(id_or_name);
  return it == by_id_.end() ? kNoNode : it->second;
}

NodeId Graph::producer(absl::string_view value, int subgraph) const {
  int scope;
  const std::int64_t v = resolve(value, subgraph, &scope);
  return v < 0 ? kNoNode : value_producer_[static_cast<std::size_t>(v)];
}

absl::Span<const NodeId> Graph::consumers(absl::string_view value, int subgraph) const {
  int scope;
  const std::int64_t v = resolve(value, subgraph, &scope);
  if (v < 0) return {};
  const std::uint32_t b = consumer_offsets_[static_cast<std::size_t>(v)];
  const std::uint32_t e = consumer_offsets_[static_cast<std::size_t>(v) + 1];
  return absl::Span<const NodeId>(consumer_nodes_.data() + b, e - b);
}

const TensorInfo* Graph::initializer(absl::string_view name) const {
  auto it = initializer_index_.find(name);
  return it == initializer_index_.end() ? nullptr : &initializers_[it->second];
}

}  // namespace semmap
