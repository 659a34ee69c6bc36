#include "graph/graph_builder.h"

#include <algorithm>
#include <new>

#include "absl/strings/str_cat.h"
#include "base/huge_pages.h"
#include "base/name_table.h"
#include "base/parallel.h"
#include "base/text.h"

namespace semmap {
namespace internal {
namespace {

// Makes `*to` `size` entries long, the new ones unwritten (UninitVector),
// taking the storage of `*first` when `*to` is empty: `*first`'s entries are
// then in place and `*first` is left empty (CopyInto copies nothing).
template <typename Vector>
void SizeFor(Vector* to, Vector* first, std::size_t size) {
  if (to->empty()) to->swap(*first);
  to->reserve(size);  // no copy when the walk reserved enough
  to->resize(size);
}

// Copies `*from` into `*to` from index `at`, and frees it.
template <typename Vector>
void CopyInto(Vector* from, Vector* to, std::size_t at) {
  std::copy(from->begin(), from->end(), to->begin() + static_cast<std::ptrdiff_t>(at));
  Vector().swap(*from);
}

// A record's subgraph, list sizes and where its lists begin (`strings`,
// `metadata`: offsets the caller checked).
void SetLists(const NodeFields& f, int subgraph, std::size_t strings, std::size_t metadata,
              NodeRecord* r) {
  r->subgraph = subgraph;
  r->strings = static_cast<std::uint32_t>(strings);
  r->inputs = static_cast<std::uint32_t>(f.inputs.size());
  r->outputs = static_cast<std::uint32_t>(f.outputs.size());
  r->attributes = static_cast<std::uint32_t>(f.attribute_names.size());
  r->metadata = static_cast<std::uint32_t>(metadata);
  r->metadata_count = static_cast<std::uint32_t>(f.metadata.size());
}

}  // namespace

GraphBuilder::GraphBuilder(absl::string_view origin, const GraphOptions& options,
                           std::shared_ptr<const void> backing, bool durable)
    : origin_(origin), options_(options), durable_(durable), rep_(std::make_shared<GraphRep>()) {
  rep_->backing = std::move(backing);
  // Index 0 of both tables is "": the default domain, and the doc string
  // of most nodes.
  rep_->interned.emplace_back();
  interned_index_.emplace(absl::string_view(), 0);
  rep_->doc_strings.emplace_back();
}

absl::string_view GraphBuilder::Keep(absl::string_view s) {
  if (durable_ || s.empty()) return s;
  rep_->owned.emplace_back(s.data(), s.size());
  return rep_->owned.back();
}

std::uint32_t GraphBuilder::Intern(absl::string_view s) {
  // Most models have a few dozen op types and domains: one probe of a small
  // map a string.
  auto it = interned_index_.find(s);
  if (it != interned_index_.end()) return it->second;
  const auto index = static_cast<std::uint32_t>(rep_->interned.size());
  const absl::string_view kept = Keep(s);
  rep_->interned.push_back(kept);
  interned_index_.emplace(kept, index);
  return index;
}

void GraphBuilder::SetModelInfo(std::int64_t ir_version, absl::string_view producer_name,
                                absl::string_view producer_version, std::int64_t opset) {
  rep_->ir_version = ir_version;
  rep_->producer_name = Keep(producer_name);
  rep_->producer_version = Keep(producer_version);
  rep_->opset = opset;
}

void GraphBuilder::AddModelMetadata(absl::string_view key, absl::string_view value) {
  rep_->model_metadata.emplace_back(Keep(key), Keep(value));
}

void GraphBuilder::SetGraphDocString(absl::string_view text) {
  rep_->graph_doc_string = Keep(text);
}

absl::Status OpsetOutOfRange(absl::string_view origin, std::int64_t version) {
  return absl::InvalidArgumentError(absl::StrCat(
      origin, ": opset_import version ", version, " is out of range (not a valid ONNX model)"));
}

absl::Status GraphBuilder::Charge(std::size_t n) {
  list_entries_ += n;
  if (list_entries_ > options_.max_list_entries) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": more than ", options_.max_list_entries,
        " inputs, outputs, attributes, metadata entries and dims (GraphOptions::max_list_entries)"));
  }
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddMainInput(absl::string_view name) {
  if (absl::Status s = Charge(1); !s.ok()) return s;
  rep_->inputs.push_back(Keep(name));
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddMainOutput(absl::string_view name) {
  if (absl::Status s = Charge(1); !s.ok()) return s;
  rep_->outputs.push_back(Keep(name));
  return absl::OkStatus();
}

absl::Status GraphBuilder::DefineValue(int subgraph, absl::string_view name) {
  if (absl::Status s = Charge(1); !s.ok()) return s;
  rep_->defined_values.emplace_back(subgraph, Keep(name));
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddInitializer(absl::string_view name, std::int32_t elem_type,
                                          absl::Span<const std::int64_t> dims, bool external,
                                          int subgraph) {
  if (absl::Status s = Charge(1 + dims.size()); !s.ok()) return s;
  TensorInfo info;
  info.name = Keep(name);
  info.elem_type = elem_type;
  info.external = external;
  info.subgraph = subgraph;
  // The span is laid out in Finish; until then its size says how many of
  // `dims` are this tensor's, in order.
  info.dims = absl::Span<const std::int64_t>(nullptr, dims.size());
  rep_->dims.insert(rep_->dims.end(), dims.begin(), dims.end());
  rep_->initializers.push_back(info);
  return absl::OkStatus();
}

absl::Status GraphBuilder::CheckNesting(int parent) const {
  if (rep_->subgraphs[static_cast<std::size_t>(parent)].depth + 1 > options_.max_subgraph_depth) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": subgraphs nested deeper than ", options_.max_subgraph_depth,
        " levels (GraphOptions::max_subgraph_depth)"));
  }
  return absl::OkStatus();
}

int GraphBuilder::AddSubgraph(Subgraph s) {
  if (s.kind == Subgraph::Kind::kAttribute) {
    s.depth = rep_->subgraphs[static_cast<std::size_t>(s.parent)].depth + 1;
  }
  s.name = Keep(s.name);
  s.attribute = Keep(s.attribute);
  s.domain = Keep(s.domain);
  rep_->subgraphs.push_back(s);
  return static_cast<int>(rep_->subgraphs.size()) - 1;
}

void GraphBuilder::ReserveNodes(std::size_t n) {
  // A file listing more nodes than allowed fails in AddNode, with the
  // limit named; it reserves no more than the limit on the way.
  n = std::min(n, options_.max_nodes);
  rep_->nodes.reserve(n);
  name_hashes_.reserve(n);
  AdviseHugePages(rep_->nodes.data(), n * sizeof(NodeRecord));
}

absl::Status GraphBuilder::AddNode(int subgraph, const NodeFields& f, NodeId* id) {
  auto& nodes = rep_->nodes;
  if (nodes.size() >= options_.max_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": more than ", options_.max_nodes, " nodes (GraphOptions::max_nodes)"));
  }
  const std::size_t max_name = maxNameBytes();
  const std::size_t longest = LongestNodeName(f);
  if (longest > max_name) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": node ", nodes.size(), " (", Abbreviate(f.name, 80), ") has a name of ",
        longest, " bytes, above the limit of ", max_name, " (GraphOptions::max_name_bytes)"));
  }
  auto& strings = rep_->node_strings;
  const std::size_t lists = f.inputs.size() + f.outputs.size() + f.attribute_names.size();
  // The lists were charged (max_list_entries), but a record's offsets are
  // 32-bit whatever the limit says.
  if (strings.size() + lists > UINT32_MAX ||
      rep_->node_metadata.size() + f.metadata.size() > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": node ", nodes.size(), " (", Abbreviate(f.name, 80),
        ") takes the inputs, outputs and attributes of all nodes, or their metadata entries, "
        "above ", UINT32_MAX, ", the most a Graph holds"));
  }
  *id = static_cast<NodeId>(nodes.size());
  NodeRecord& r = nodes.emplace_back(NodeRecord());
  const absl::string_view name = Keep(f.name);
  r.name = name.data();
  r.name_size = static_cast<std::uint32_t>(name.size());
  r.op_type = Intern(f.op_type);
  r.domain = Intern(f.domain);
  if (!f.doc_string.empty()) {
    r.doc_string = static_cast<std::uint32_t>(rep_->doc_strings.size());
    rep_->doc_strings.push_back(Keep(f.doc_string));
  }
  SetLists(f, subgraph, strings.size(), rep_->node_metadata.size(), &r);
  inputs_ += f.inputs.size();
  outputs_ += f.outputs.size();
  name_hashes_.push_back(NameHash(name));
  for (const auto* list : {&f.inputs, &f.outputs, &f.attribute_names}) {
    for (absl::string_view v : *list) {
      strings.push_back(Keep(v));
      string_hashes_.push_back(NameHash(v));
    }
  }
  for (const MetadataEntry& kv : f.metadata) {
    rep_->node_metadata.emplace_back(Keep(kv.first), Keep(kv.second));
  }
  return absl::OkStatus();
}

std::size_t LongestNodeName(const NodeFields& f) {
  std::size_t longest = std::max(f.name.size(), f.op_type.size());
  for (absl::string_view v : f.inputs) longest = std::max(longest, v.size());
  for (absl::string_view v : f.outputs) longest = std::max(longest, v.size());
  return longest;
}

std::size_t GraphBuilder::maxNameBytes() const {
  // A record keeps the name's length in 32 bits.
  return std::min<std::size_t>(options_.max_name_bytes, UINT32_MAX);
}

std::uint32_t NodeBatch::Intern(absl::string_view s) {
  auto it = interned_index.find(s);
  if (it != interned_index.end()) return it->second;
  const auto index = static_cast<std::uint32_t>(interned.size());
  interned.push_back(s);
  interned_index.emplace(s, index);
  return index;
}

bool NodeBatch::Add(int subgraph, const NodeFields& f, std::size_t max_name) {
  if (LongestNodeName(f) > max_name) return false;
  // The record is unwritten memory (BatchNodes): every field is set.
  NodeRecord& r = nodes[count++];
  r = NodeRecord();
  r.name = f.name.data();
  r.name_size = static_cast<std::uint32_t>(f.name.size());
  r.op_type = f.op_type.empty() ? 0 : Intern(f.op_type);
  r.domain = f.domain.empty() ? 0 : Intern(f.domain);
  if (!f.doc_string.empty()) {
    doc_strings.push_back(f.doc_string);
    r.doc_string = static_cast<std::uint32_t>(doc_strings.size());
  }
  // Offsets within the batch: 64-bit sums are checked when appended.
  SetLists(f, subgraph, strings.size(), metadata.size(), &r);
  inputs += f.inputs.size();
  outputs += f.outputs.size();
  name_hashes.push_back(NameHash(f.name));
  for (const auto* list : {&f.inputs, &f.outputs, &f.attribute_names}) {
    strings.insert(strings.end(), list->begin(), list->end());
    for (absl::string_view v : *list) string_hashes.push_back(NameHash(v));
  }
  metadata.insert(metadata.end(), f.metadata.begin(), f.metadata.end());
  return true;
}

void NodeBatch::Reserve(std::size_t nodes_in_all, std::size_t max_entries) {
  if (count == 0) return;
  const double estimate = static_cast<double>(strings.size()) / static_cast<double>(count) *
                          static_cast<double>(nodes_in_all) * 1.125;
  const std::size_t room =
      estimate < static_cast<double>(max_entries) ? static_cast<std::size_t>(estimate) : max_entries;
  try {
    name_hashes.reserve(nodes_in_all);
    strings.reserve(room);
    string_hashes.reserve(room);
  } catch (const std::bad_alloc&) {
    // An estimate too large for this machine: the lists grow as they go.
  }
}

NodeRecord* GraphBuilder::BatchNodes(std::size_t n) {
  auto& nodes = rep_->nodes;
  if (!durable_ || n > options_.max_nodes - std::min(options_.max_nodes, nodes.size())) {
    return nullptr;
  }
  nodes.resize(nodes.size() + n);
  return nodes.data() + (nodes.size() - n);
}

void GraphBuilder::DropBatchNodes(std::size_t n) { rep_->nodes.resize(rep_->nodes.size() - n); }

// Long (about 60 lines): the limits of AddNode checked on the sums; each
// batch's offsets, op types and domains (interned in batch order: first
// seen first, as one by one) and its few metadata entries and doc strings,
// in order; then the lists sized once and each batch copied into place and
// its records fixed up, by `workers` threads.
bool GraphBuilder::AppendBatches(std::vector<NodeBatch>* batches, std::size_t workers) {
  std::vector<NodeBatch>& all = *batches;
  std::size_t entries = 0, strings = rep_->node_strings.size(),
              metadata = rep_->node_metadata.size(), docs = rep_->doc_strings.size();
  for (const NodeBatch& b : all) {
    entries += b.entries;
    strings += b.strings.size();
    metadata += b.metadata.size();
    docs += b.doc_strings.size();
  }
  if (list_entries_ + entries > options_.max_list_entries || strings > UINT32_MAX ||
      metadata > UINT32_MAX || docs > UINT32_MAX) {
    return false;
  }
  list_entries_ += entries;
  struct Shift {
    std::uint32_t strings, metadata, docs;
    std::size_t names;  // index of the batch's first name hash
    std::vector<std::uint32_t> interned;
  };
  std::vector<Shift> shifts(all.size());
  std::size_t at_string = rep_->node_strings.size(), at_name = name_hashes_.size();
  for (std::size_t w = 0; w < all.size(); ++w) {
    NodeBatch& b = all[w];
    Shift& s = shifts[w];
    s.strings = static_cast<std::uint32_t>(at_string);
    s.names = at_name;
    at_string += b.strings.size();
    at_name += b.name_hashes.size();
    s.metadata = static_cast<std::uint32_t>(rep_->node_metadata.size());
    s.docs = static_cast<std::uint32_t>(rep_->doc_strings.size()) - 1;
    for (absl::string_view t : b.interned) s.interned.push_back(Intern(t));
    inputs_ += b.inputs;
    outputs_ += b.outputs;
    rep_->node_metadata.insert(rep_->node_metadata.end(), b.metadata.begin(), b.metadata.end());
    rep_->doc_strings.insert(rep_->doc_strings.end(), b.doc_strings.begin(), b.doc_strings.end());
    decltype(b.metadata)().swap(b.metadata);
    decltype(b.doc_strings)().swap(b.doc_strings);
  }
  SizeFor(&rep_->node_strings, &all[0].strings, at_string);
  SizeFor(&string_hashes_, &all[0].string_hashes, at_string);
  SizeFor(&name_hashes_, &all[0].name_hashes, at_name);
  const std::size_t threads = std::max<std::size_t>(1, std::min(workers, all.size()));
  RunWorkers(threads, [this, &all, &shifts, threads](std::size_t worker) {
    for (std::size_t w = worker; w < all.size(); w += threads) {
      const Shift& s = shifts[w];
      CopyInto(&all[w].strings, &rep_->node_strings, s.strings);
      CopyInto(&all[w].string_hashes, &string_hashes_, s.strings);
      CopyInto(&all[w].name_hashes, &name_hashes_, s.names);
      for (NodeRecord* r = all[w].nodes; r != all[w].nodes + all[w].count; ++r) {
        r->strings += s.strings;
        r->metadata += s.metadata;
        if (r->doc_string != 0) r->doc_string += s.docs;
        r->op_type = s.interned[r->op_type];
        r->domain = s.interned[r->domain];
      }
    }
  });
  return true;
}

Graph GraphBuilder::Finish() {
  GraphRep& rep = *rep_;
  decltype(interned_index_)().swap(interned_index_);
  rep.node_values.assign(rep.node_strings.size(), kNoValue);
  std::size_t dims = 0;
  for (TensorInfo& t : rep.initializers) {
    const std::size_t count = t.dims.size();
    t.dims = absl::MakeConstSpan(rep.dims.data() + dims, count);
    dims += count;
  }
  BuildIndexes();
  return Graph(std::move(rep_));
}

}  // namespace internal
}  // namespace semmap
