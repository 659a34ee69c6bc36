#include "semmap/stages.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "google/protobuf/io/coded_stream.h"
#include "graph/graph_rep.h"
#include "graph/node_kinds.h"
#include "graph/wire_model_index.h"
#include "io/atomic_write.h"
#include "io/json_writer.h"
#include "io/mapped_file.h"
#include "io/paths.h"
#include "onnx/onnx_pb.h"
#include "semmap/query.h"

namespace semmap {
namespace {

std::string Quoted(absl::string_view s) {
  return absl::StrCat("\"", internal::Abbreviate(s), "\"");
}

// Where the graph may be cut: its top-level nodes, the positions among them
// (the nodes that are not floating constants, which go with their readers),
// each position's unit (the module kept whole) and whether a cut before it
// splits no unit.
struct Frame {
  std::vector<NodeId> top;       // top-level nodes in file order
  std::vector<NodeId> owner;     // per node: the top-level node holding it
  absl::flat_hash_set<std::string> model_outputs;
  std::vector<NodeId> pos;       // positions
  std::vector<ModuleId> unit;    // per position: its unit, or kNoModule
  std::vector<bool> allowed;     // per position: a cut before it is allowed
  std::size_t allowed_cuts = 0;

  // A Constant that no model output names: copied into every stage that
  // reads it instead of taking a position.
  bool Floating(const Graph& graph, NodeId id) const {
    const Node& n = graph.node(id);
    if (!internal::IsConstantSource(n)) return false;
    for (absl::string_view o : n.outputs) {
      if (model_outputs.contains(o)) return false;
    }
    return true;
  }
};

// The units: modules kept whole. Layer containers and their ancestors are
// not units; without any, only the root is not.
std::vector<ModuleId> Units(const SemanticMapper& mapper, const std::vector<NodeId>& pos) {
  const Manifest& manifest = mapper.manifest();
  const SemanticQuery query(mapper);
  std::vector<bool> above(manifest.size(), false);
  above[manifest.root()] = true;
  for (const RepeatedContainer* c : query.layerContainers()) {
    for (ModuleId a = c->module; a != kNoModule; a = manifest.parent(a)) above[a] = true;
  }
  std::vector<ModuleId> unit(pos.size(), kNoModule);
  for (std::size_t p = 0; p < pos.size(); ++p) {
    const Mapping& m = mapper.moduleFor(pos[p]);
    if (!m.mapped()) continue;
    for (ModuleId a = m.module; a != kNoModule; a = manifest.parent(a)) {
      if (!above[a]) unit[p] = a;
    }
  }
  return unit;
}

absl::StatusOr<Frame> LayOut(const SemanticMapper& mapper, const std::string& input) {
  const Graph& graph = mapper.graph();
  Frame f;
  f.owner.assign(graph.size(), kNoNode);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(static_cast<NodeId>(i));
    if (n.subgraph == 0) {
      f.top.push_back(static_cast<NodeId>(i));
      f.owner[i] = static_cast<NodeId>(i);
    } else {
      NodeId o = graph.subgraphs()[n.subgraph].owner;
      f.owner[i] = o == kNoNode ? kNoNode : f.owner[o];
    }
  }
  f.model_outputs.insert(graph.outputs().begin(), graph.outputs().end());
  for (NodeId id : f.top) {
    if (!f.Floating(graph, id)) f.pos.push_back(id);
  }
  if (f.pos.empty()) return absl::FailedPreconditionError(absl::StrCat(input, ": no nodes to split"));
  const std::size_t P = f.pos.size();
  f.unit = Units(mapper, f.pos);
  absl::flat_hash_map<ModuleId, std::pair<std::size_t, std::size_t>> span;
  for (std::size_t p = 0; p < P; ++p) {
    if (f.unit[p] == kNoModule) continue;
    auto [it, inserted] = span.try_emplace(f.unit[p], p, p);
    if (!inserted) it->second.second = p;
  }
  // Cut before position p is allowed unless it splits a unit.
  std::vector<int> split(P + 1, 0);
  for (const auto& [u, s] : span) {
    ++split[s.first + 1];
    --split[s.second + 1];
  }
  f.allowed.assign(P, false);
  int open = 0;  // units with first < p <= last
  for (std::size_t p = 0; p < P; ++p) {
    open += split[p];
    if (p == 0) continue;
    f.allowed[p] = open == 0;
    f.allowed_cuts += f.allowed[p] ? 1 : 0;
  }
  return f;
}

// `n_stages` - 1 cuts at allowed positions, each nearest the even share of
// the total weight (`before[p]`: weight of the positions before p).
absl::StatusOr<std::vector<std::size_t>> CutsByWeight(const Frame& f,
                                                      const std::vector<std::int64_t>& before,
                                                      std::size_t n_stages,
                                                      const std::string& input) {
  const std::size_t P = f.pos.size();
  if (n_stages - 1 > f.allowed_cuts) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": ", n_stages, " stages need ", n_stages - 1, " cuts, but only ", f.allowed_cuts,
        " positions do not split a layer or module (at most ", f.allowed_cuts + 1, " stages)"));
  }
  std::vector<std::size_t> candidates;
  for (std::size_t p = 1; p < P; ++p) {
    if (f.allowed[p]) candidates.push_back(p);
  }
  std::vector<std::size_t> cuts;  // positions starting stages 1..
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
  return cuts;
}

// A cut before the first position of each boundary module, in order.
absl::StatusOr<std::vector<std::size_t>> CutsAtBoundaries(const SemanticMapper& mapper,
                                                          const Frame& f,
                                                          const std::vector<std::string>& boundaries,
                                                          const std::string& input) {
  const Manifest& manifest = mapper.manifest();
  const std::size_t P = f.pos.size();
  std::vector<std::size_t> cuts;
  for (const std::string& path : boundaries) {
    const ModuleId m = manifest.find(path);
    if (m == kNoModule) {
      return absl::InvalidArgumentError(
          absl::StrCat("boundary ", Quoted(path), ": no such module in the manifest"));
    }
    std::size_t first = P;
    for (std::size_t p = 0; p < P && first == P; ++p) {
      const Mapping& mp = mapper.moduleFor(f.pos[p]);
      if (mp.mapped() && manifest.isAncestorOrSelf(m, mp.module)) first = p;
    }
    if (first == P) {
      return absl::FailedPreconditionError(
          absl::StrCat("boundary ", Quoted(path), ": no top-level node of ", input,
                       " maps to it"));
    }
    if (first == 0 || !f.allowed[first]) {
      return absl::FailedPreconditionError(absl::StrCat(
          "boundary ", Quoted(path), ": its first node (",
          Quoted(mapper.graph().node(f.pos[first]).name), ") ",
          first == 0 ? "is the model's first node" : "does not start a unit: a cut there "
          "would split a layer or module"));
    }
    if (!cuts.empty() && first <= cuts.back()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "boundary ", Quoted(path), ": starts before or with the previous boundary; list "
          "boundaries in model order"));
    }
    cuts.push_back(first);
  }
  return cuts;
}

// The source model, read once: the bytes the mapper's graph was loaded
// from (the file mapped again only when the graph holds no mapping of it),
// indexed at the wire level. Nodes, initializers and value types are
// parsed with protobuf one by one, when a stage copies them: no 2 GB limit
// on the model, and no tensor decoded that no stage takes.
struct Source {
  std::optional<internal::MappedFile> own;  // when the graph's mapping is not the file
  const internal::MappedFile* file = nullptr;
  std::string path;
  int max_depth = 0;  // StageOptions::max_subgraph_depth
  internal::WireModel wire;
  onnx::ModelProto header;  // what every stage copies: opsets, functions, ...
  absl::flat_hash_map<NodeId, int> proto_index;  // top-level Graph node -> wire node

  // Parses the piece `bytes` of the file into `message`; InvalidArgument
  // naming the file, the byte offset and the message type when protobuf
  // cannot.
  absl::Status Parse(absl::string_view bytes, google::protobuf::MessageLite* message,
                     const char* type) const {
    if (bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      google::protobuf::io::CodedInputStream stream(
          reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
      // As the whole-model parse allowed: three message levels a subgraph.
      stream.SetRecursionLimit(max_depth * 3 + 16);
      if (message->ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage()) {
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid ONNX model: byte offset ", bytes.data() - file->bytes().data(),
        ": ", type, " of ", bytes.size(), " bytes cannot be parsed by protobuf"));
  }
};

// The header fields of the source model the stages copy.
absl::Status ReadHeader(Source* source) {
  const internal::WireModel& w = source->wire;
  onnx::ModelProto& h = source->header;
  h.set_ir_version(static_cast<std::int64_t>(w.ir_version));
  for (absl::string_view opset : w.opset_imports) {
    SEMMAP_RETURN_IF_ERROR(source->Parse(opset, h.add_opset_import(), "OperatorSetIdProto"));
  }
  h.set_producer_name(std::string(w.producer_name));
  h.set_producer_version(std::string(w.producer_version));
  h.set_domain(std::string(w.domain));
  h.set_model_version(static_cast<std::int64_t>(w.model_version));
  for (absl::string_view function : w.functions) {
    SEMMAP_RETURN_IF_ERROR(source->Parse(function, h.add_functions(), "FunctionProto"));
  }
  h.mutable_graph()->set_name(std::string(w.graph_name));
  return absl::OkStatus();
}

// Loads `input` into `*source`; FailedPrecondition when its top-level nodes
// are not those of the mapped graph (`top`).
absl::Status LoadSource(const Graph& graph, const std::vector<NodeId>& top,
                        const std::string& input, const StageOptions& options, Source* source) {
  source->path = input;
  source->max_depth = options.max_subgraph_depth;
  source->file = internal::GraphSource(graph, input);
  if (source->file == nullptr || source->file->bytes().size() > options.max_file_bytes) {
    SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile file,
                            internal::MappedFile::Open(input, options.max_file_bytes));
    source->own.emplace(std::move(file));
    source->file = &*source->own;
  }
  SEMMAP_ASSIGN_OR_RETURN(
      source->wire,
      internal::IndexWireModel(source->file->bytes(), input, options.max_subgraph_depth));
  const std::vector<internal::WireNode>& nodes = source->wire.nodes;
  if (nodes.size() != top.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", nodes.size(), " top-level nodes but the mapped graph has ", top.size(),
        "; was the file changed?"));
  }
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = graph.node(top[k]);
    if (n.name != nodes[k].name || n.op_type != nodes[k].op_type) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": node ", k, " (", Quoted(nodes[k].name),
          ") differs from the graph that was mapped; was the file changed?"));
    }
    source->proto_index[top[k]] = static_cast<int>(k);
  }
  return ReadHeader(source);
}

// The source's model header with the stage's own metadata; the graph named
// after the source's.
onnx::ModelProto StageModel(const onnx::ModelProto& source, std::size_t k, std::size_t n_stages,
                            const StageInfo& info) {
  onnx::ModelProto out;
  out.set_ir_version(source.ir_version());
  *out.mutable_opset_import() = source.opset_import();
  out.set_producer_name(source.producer_name());
  out.set_producer_version(source.producer_version());
  out.set_domain(source.domain());
  out.set_model_version(source.model_version());
  *out.mutable_functions() = source.functions();
  auto* meta = out.add_metadata_props();
  meta->set_key(std::string(kStageKey));
  meta->set_value(absl::StrCat(k, " of ", n_stages));
  meta = out.add_metadata_props();
  meta->set_key(std::string(kStageUnitsKey));
  meta->set_value(absl::StrCat(info.first_unit, " .. ", info.last_unit));
  const std::string& name = source.graph().name();
  out.mutable_graph()->set_name(absl::StrCat(name.empty() ? "graph" : name, ":stage", k));
  return out;
}

// The number of stages `options` asks for, once each stage's output path
// is known to be writable (internal::CheckOutputFor).
absl::StatusOr<std::size_t> StageCount(const std::string& input, const std::string& output,
                                       const StageOptions& options) {
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
        options.protected_paths, options.allow_overwrite));
  }
  return n_stages;
}

// One stage: the positions [first, end) of `f`.
struct StageSpan {
  std::size_t index = 0;
  std::size_t count = 0;  // stages in all
  std::size_t first = 0, end = 0;
};

// Adds to `og` the floating constants the proto nodes `body` read, in order
// of first read, counting them in `*copied`; returns the values they make.
absl::StatusOr<absl::flat_hash_set<std::string>> CopyFloatingConstants(
    const Graph& graph, const Frame& f, const Source& source, const std::vector<int>& body,
    onnx::GraphProto* og, std::size_t* copied) {
  absl::flat_hash_set<NodeId> constants;
  for (int index : body) {
    for (absl::string_view v : internal::ValuesRead(source.wire.nodes[index])) {
      const NodeId producer = graph.producer(v, 0);
      if (producer != kNoNode && f.Floating(graph, producer) && constants.insert(producer).second) {
        const internal::WireNode& node = source.wire.nodes[source.proto_index.at(producer)];
        SEMMAP_RETURN_IF_ERROR(source.Parse(node.bytes, og->add_node(), "NodeProto"));
        ++*copied;
      }
    }
  }
  absl::flat_hash_set<std::string> produced;
  for (NodeId c : constants) {
    const auto& outs = graph.node(c).outputs;
    produced.insert(outs.begin(), outs.end());
  }
  return produced;
}

// Stage `span` as a model (serialized into `*bytes`): the floating
// constants its nodes read first (they read nothing), then its nodes in
// order; the initializers they read; as inputs the other values they read,
// as outputs the values that later stages or the model's outputs read.
// `stage_of`: per top-level node, its stage (-1 for floating constants).
// About 75 lines: the per-value decisions (initializer, sparse
// initializer, input, output) share the stage's seen and produced sets.
absl::StatusOr<StageInfo> BuildStage(const SemanticMapper& mapper, const Frame& f,
                                     const Source& source, const std::vector<int>& stage_of,
                                     const StageSpan& span, const std::string& path,
                                     const std::string& in_dir, std::string* bytes) {
  const Graph& graph = mapper.graph();
  StageInfo info;
  info.path = path;
  const bool elsewhere = internal::ResolvedDirectoryOf(path) != in_dir;
  for (std::size_t p = span.first; p < span.end; ++p) {
    if (f.unit[p] == kNoModule) continue;
    if (info.first_unit.empty()) info.first_unit = std::string(mapper.manifest().path(f.unit[p]));
    info.last_unit = std::string(mapper.manifest().path(f.unit[p]));
  }
  onnx::ModelProto out = StageModel(source.header, span.index, span.count, info);
  onnx::GraphProto* og = out.mutable_graph();
  auto add_type = [&](onnx::ValueInfoProto* vi, const std::string& name) {
    auto it = source.wire.types.find(name);
    if (it != source.wire.types.end() && it->second.typed) {
      return source.Parse(it->second.bytes, vi, "ValueInfoProto");
    }
    vi->set_name(name);
    ++info.untyped;
    return absl::OkStatus();
  };
  std::vector<int> body;  // proto indices
  for (std::size_t p = span.first; p < span.end; ++p) body.push_back(source.proto_index.at(f.pos[p]));
  SEMMAP_ASSIGN_OR_RETURN(
      absl::flat_hash_set<std::string> produced,
      CopyFloatingConstants(graph, f, source, body, og, &info.copied_constants));
  absl::flat_hash_set<std::string> seen;
  for (int index : body) {
    for (absl::string_view read : internal::ValuesRead(source.wire.nodes[index])) {
      const std::string v(read);
      if (produced.contains(v) || !seen.insert(v).second) continue;
      if (auto it = source.wire.initializers.find(v); it != source.wire.initializers.end()) {
        if (it->second.external && elsewhere) {
          return absl::FailedPreconditionError(absl::StrCat(
              info.path, ": initializer ", Quoted(v), " keeps its data in an external file "
              "relative to ", in_dir, "; write the stages into that directory"));
        }
        SEMMAP_RETURN_IF_ERROR(
            source.Parse(it->second.bytes, og->add_initializer(), "TensorProto"));
        ++info.initializers;
      } else if (auto sp = source.wire.sparse_initializers.find(v);
                 sp != source.wire.sparse_initializers.end()) {
        SEMMAP_RETURN_IF_ERROR(
            source.Parse(sp->second, og->add_sparse_initializer(), "SparseTensorProto"));
        ++info.initializers;
      } else {
        SEMMAP_RETURN_IF_ERROR(add_type(og->add_input(), v));
        info.inputs.push_back(v);
      }
    }
    onnx::NodeProto* node = og->add_node();
    SEMMAP_RETURN_IF_ERROR(source.Parse(source.wire.nodes[index].bytes, node, "NodeProto"));
    for (const std::string& v : node->output()) {
      if (v.empty()) continue;
      produced.insert(v);
      bool leaves = f.model_outputs.contains(v);
      for (NodeId c : graph.consumers(v, 0)) {
        const NodeId o = f.owner[c];
        leaves = leaves || (o != kNoNode && !f.Floating(graph, o) &&
                            stage_of[o] > static_cast<int>(span.index));
      }
      if (leaves) {
        SEMMAP_RETURN_IF_ERROR(add_type(og->add_output(), v));
        info.outputs.push_back(v);
      }
    }
  }
  info.nodes = static_cast<std::size_t>(og->node_size());
  if (!out.SerializeToString(bytes)) {
    return absl::InternalError(absl::StrCat(info.path, ": cannot serialize the stage"));
  }
  info.bytes = bytes->size();
  return info;
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
  SEMMAP_ASSIGN_OR_RETURN(const std::size_t n_stages, StageCount(input, output, options));
  const Graph& graph = mapper.graph();
  const ProfileAttribution* profile = options.profile;
  if (profile != nullptr && profile->node_us.size() != graph.size()) {
    return absl::InvalidArgumentError("the profile attribution is of another graph");
  }
  SEMMAP_ASSIGN_OR_RETURN(const Frame f, LayOut(mapper, input));
  const std::size_t P = f.pos.size();

  // Weights (kernel time with a profile, else one per node) and cuts.
  std::vector<std::int64_t> before(P + 1, 0);
  const bool by_time = profile != nullptr;
  for (std::size_t p = 0; p < P; ++p) {
    before[p + 1] = before[p] + (by_time ? profile->node_us[f.pos[p]] : 1);
  }
  if (by_time && before[P] == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(input, ": the profile gives no kernel time to any node; "
                     "cannot balance by time"));
  }
  SEMMAP_ASSIGN_OR_RETURN(const std::vector<std::size_t> cuts,
                          by_list ? CutsAtBoundaries(mapper, f, options.boundaries, input)
                                  : CutsByWeight(f, before, n_stages, input));
  std::vector<int> stage_of(graph.size(), -1);
  for (std::size_t p = 0, k = 0; p < P; ++p) {
    while (k < cuts.size() && p >= cuts[k]) ++k;
    stage_of[f.pos[p]] = static_cast<int>(k);
  }

  Source source;
  SEMMAP_RETURN_IF_ERROR(LoadSource(graph, f.top, input, options, &source));
  StagesResult result;
  result.allowed_cuts = f.allowed_cuts;
  result.by_time = by_time;
  std::vector<std::string> bytes(n_stages);
  const std::string in_dir = internal::ResolvedDirectoryOf(input);
  for (std::size_t k = 0; k < n_stages; ++k) {
    StageSpan span;
    span.index = k;
    span.count = n_stages;
    span.first = k == 0 ? 0 : cuts[k - 1];
    span.end = k < cuts.size() ? cuts[k] : P;
    SEMMAP_ASSIGN_OR_RETURN(StageInfo info, BuildStage(mapper, f, source, stage_of, span,
                                                       StagePath(output, k), in_dir, &bytes[k]));
    info.weight = before[span.end] - before[span.first];
    result.stages.push_back(std::move(info));
  }
  // The values read came from the mapping.
  SEMMAP_RETURN_IF_ERROR(internal::NotTruncated(*source.file, input));
  for (std::size_t k = 0; k < n_stages; ++k) {
    SEMMAP_RETURN_IF_ERROR(internal::WriteFileAtomically(result.stages[k].path, bytes[k]));
  }
  return result;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "splitting the model into stages");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "splitting the model into stages");
}

std::string StagesResultJson(const StagesResult& result, const std::string& model) {
  std::string text;
  internal::JsonWriter w(&text);
  w.BeginObject();
  w.Key("allowed_cuts").Integer(result.allowed_cuts);
  w.Key("balance").String(result.by_time ? "time_us" : "nodes");
  w.Key("model").String(model);
  w.Key("stages").BeginArray();
  for (const StageInfo& s : result.stages) {
    w.BeginObject();
    w.Key("bytes").Integer(s.bytes);
    w.Key("copied_constants").Integer(s.copied_constants);
    w.Key("first_unit").String(s.first_unit);
    w.Key("initializers").Integer(s.initializers);
    w.Key("inputs").Strings(s.inputs);
    w.Key("last_unit").String(s.last_unit);
    w.Key("nodes").Integer(s.nodes);
    w.Key("outputs").Strings(s.outputs);
    w.Key("path").String(s.path);
    w.Key("untyped").Integer(s.untyped);
    w.Key("weight").Integer(s.weight);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return text;
}

}  // namespace semmap
