#include "graph/wire_writer.h"

#include <algorithm>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/string_blocks.h"
#include "graph/onnx_fields.h"
#include "graph/wire_reader.h"

namespace semmap {
namespace internal {
namespace {

using Spans = absl::InlinedVector<absl::string_view, 1>;


}  // namespace

void AppendVarint(std::string* out, std::uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void AppendLenHeader(std::string* out, std::uint32_t number, std::uint64_t length) {
  AppendVarint(out, (std::uint64_t{number} << 3) | static_cast<std::uint64_t>(WireType::kLen));
  AppendVarint(out, length);
}

void AppendLenField(std::string* out, std::uint32_t number, absl::string_view bytes) {
  AppendLenHeader(out, number, bytes.size());
  out->append(bytes.data(), bytes.size());
}

namespace {

// A metadata_props entry; onnx.proto is proto2, so an empty value is still
// written, as StringStringEntryProto::set_value("") serializes it.
void AppendEntry(std::string* out, absl::string_view key, absl::string_view value,
                 std::string* scratch) {
  scratch->clear();
  AppendLenField(scratch, kEntryKey, key);
  AppendLenField(scratch, kEntryValue, value);
  AppendLenField(out, node_field::kMetadataProps, *scratch);
}

}  // namespace

// Stable storage for the bytes the pieces point to (base/string_blocks.h).
class ModelRewrite::Arena : public StringBlocks {};

ModelRewrite::ModelRewrite() : arena_(std::make_unique<Arena>()) {}
ModelRewrite::ModelRewrite(ModelRewrite&&) noexcept = default;
ModelRewrite& ModelRewrite::operator=(ModelRewrite&&) noexcept = default;
ModelRewrite::~ModelRewrite() = default;

std::string ModelRewrite::ToString() const {
  std::string out;
  out.reserve(size_);
  for (absl::string_view piece : pieces_) out.append(piece.data(), piece.size());
  return out;
}

void NodeEdit::Clear() {
  drop_keys.clear();
  drop_key_prefixes.clear();
  add_metadata.clear();
  name.reset();
  doc_string.reset();
}

class RewritePlanner {
 public:
  RewritePlanner(absl::string_view file, absl::string_view origin, const NodeEditor& editor,
                 int max_subgraph_depth, ModelRewrite* out)
      : file_(file), origin_(origin), editor_(editor), max_depth_(max_subgraph_depth),
        out_(out) {}

  absl::Status Run() {
    SEMMAP_RETURN_IF_ERROR(IndexModel());
    // Byte order visits nodes by increasing address; Graph's order differs
    // only when a file puts functions before the graph, or an attribute's
    // graphs before its g.
    auto by_address = [](const NodeRecord& a, const NodeRecord& b) {
      return a.payload < b.payload;
    };
    if (!std::is_sorted(records_.begin(), records_.end(), by_address)) {
      std::sort(records_.begin(), records_.end(), by_address);
    }
    SEMMAP_RETURN_IF_ERROR(EmitModel());
    if (next_record_ != records_.size()) {
      return absl::InternalError(absl::StrCat(
          origin_, ": the byte-order walk met ", next_record_, " of ", records_.size(),
          " nodes"));
    }
    out_->nodes_ = records_.size();
    out_->size_ = total_;
    return absl::OkStatus();
  }

 private:
  // A change inside one node: [begin, end) replaced by `replacement`
  // (removed when empty); begin == end == the node's end appends.
  struct Splice {
    const char* begin;
    const char* end;
    absl::string_view replacement;
  };
  struct NodeRecord {
    const char* payload;  // first byte of the NodeProto's payload
    std::size_t first_splice;
    std::size_t splices;
  };
  // A field of the node being indexed that an edit may replace or remove.
  enum class Editable { kName, kDocString, kMetadata };
  struct EditableField {
    Editable kind;
    const char* begin;
    const char* end;
    absl::string_view key;  // metadata: the entry's key
  };

  // ---- Pass 1: Graph's order (as wire_loader.cc numbers nodes). ----

  absl::Status IndexModel() {
    Spans graphs;
    std::vector<absl::string_view> functions;
    WireReader r(file_);
    WireField f;
    while (r.Next(&f)) {
      if (!IsLen(f)) continue;
      if (f.number == model_field::kGraph) graphs.push_back(f.bytes);
      if (f.number == model_field::kFunctions) functions.push_back(f.bytes);
    }
    if (!r.ok()) return Malformed(r, "ModelProto");
    if (std::none_of(graphs.begin(), graphs.end(),
                     [](absl::string_view g) { return !g.empty(); })) {
      return absl::InvalidArgumentError(absl::StrCat(origin_, ": not an ONNX model (no graph)"));
    }
    SEMMAP_RETURN_IF_ERROR(IndexGraph(graphs, 0, /*count_external=*/true));
    for (absl::string_view fn : functions) {
      WireReader nodes(fn);
      while (nodes.Next(&f)) {
        if (f.number == function_field::kNode && IsLen(f)) {
          SEMMAP_RETURN_IF_ERROR(IndexNode(f.bytes, 0));
        }
      }
      if (!nodes.ok()) return Malformed(nodes, "FunctionProto");
    }
    return absl::OkStatus();
  }

  absl::Status IndexGraph(const Spans& spans, int depth, bool count_external) {
    for (absl::string_view span : spans) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (!IsLen(f)) continue;
        if (f.number == graph_field::kNode) {
          SEMMAP_RETURN_IF_ERROR(IndexNode(f.bytes, depth));
        } else if (f.number == graph_field::kInitializer && count_external) {
          bool external = false;
          SEMMAP_RETURN_IF_ERROR(IsExternal(f.bytes, &external));
          out_->external_tensors_ += external ? 1 : 0;
        }
      }
      if (!r.ok()) return Malformed(r, "GraphProto");
    }
    return absl::OkStatus();
  }

  absl::Status IsExternal(absl::string_view tensor, bool* external) {
    std::int32_t location = 0;
    WireReader r(tensor);
    WireField f;
    while (r.Next(&f)) {
      if (f.number == tensor_field::kDataLocation && IsVarint(f)) {
        const auto v = static_cast<std::int32_t>(f.varint);
        if (v == 0 || v == tensor_field::kExternal) location = v;
      }
    }
    if (!r.ok()) return Malformed(r, "TensorProto");
    *external = location == tensor_field::kExternal;
    return absl::OkStatus();
  }

  // Long (about 70 lines): one case per NodeProto field the editor may
  // rewrite, in onnx.proto's order, recording where each lies.
  absl::Status IndexNode(absl::string_view bytes, int depth) {
    NodeView view;
    view.index = records_.size();
    view.offset = static_cast<std::uint64_t>(bytes.data() - file_.data());
    fields_.clear();
    bool has_attributes = false;
    WireReader r(bytes);
    WireField f;
    const char* at = r.position();
    while (r.Next(&f)) {
      const char* end = r.position();
      if (IsLen(f)) {
        switch (f.number) {
          case node_field::kName:
            view.name = f.bytes;
            fields_.push_back({Editable::kName, at, end, {}});
            break;
          case node_field::kOpType:
            view.op_type = f.bytes;
            break;
          case node_field::kDocString:
            fields_.push_back({Editable::kDocString, at, end, {}});
            break;
          case node_field::kMetadataProps: {
            absl::string_view key;
            if (ReadEntryKey(f.bytes, &key)) fields_.push_back({Editable::kMetadata, at, end, key});
            break;
          }
          case node_field::kAttribute:
            has_attributes = true;
            break;
          default:
            break;
        }
      }
      at = end;
    }
    if (!r.ok()) return Malformed(r, "NodeProto");
    edit_.Clear();
    SEMMAP_RETURN_IF_ERROR(editor_(view, &edit_));
    AddRecord(bytes);
    if (!has_attributes) return absl::OkStatus();
    // The bodies right after their node, in attribute order: g, then graphs.
    WireReader again(bytes);
    while (again.Next(&f)) {
      if (f.number != node_field::kAttribute || !IsLen(f)) continue;
      std::int32_t type = 0;
      Spans g, graphs;
      WireReader a(f.bytes);
      WireField af;
      while (a.Next(&af)) {
        if (af.number == attribute_field::kType && IsVarint(af)) {
          const auto v = static_cast<std::int32_t>(af.varint);
          if (v >= 0 && v <= attribute_field::kMaxKnownType) type = v;
        } else if (af.number == attribute_field::kG && IsLen(af)) {
          g.push_back(af.bytes);
        } else if (af.number == attribute_field::kGraphs && IsLen(af)) {
          graphs.push_back(af.bytes);
        }
      }
      if (!a.ok()) return Malformed(a, "AttributeProto");
      if (type == attribute_field::kTypeGraph || !g.empty()) {
        SEMMAP_RETURN_IF_ERROR(CheckDepth(depth + 1));
        SEMMAP_RETURN_IF_ERROR(IndexGraph(g, depth + 1, true));
      }
      for (absl::string_view body : graphs) {
        SEMMAP_RETURN_IF_ERROR(CheckDepth(depth + 1));
        SEMMAP_RETURN_IF_ERROR(IndexGraph(Spans{body}, depth + 1, true));
      }
    }
    return absl::OkStatus();
  }

  // The key of a StringStringEntryProto (the last one, as protobuf reads
  // it); false for an entry protobuf would not parse.
  static bool ReadEntryKey(absl::string_view entry, absl::string_view* key) {
    WireReader r(entry);
    WireField f;
    while (r.Next(&f)) {
      if (f.number == kEntryKey && IsLen(f)) *key = f.bytes;
    }
    return r.ok();
  }

  bool Drops(absl::string_view key) const {
    for (const std::string& k : edit_.drop_keys) {
      if (key == k) return true;
    }
    for (const std::string& p : edit_.drop_key_prefixes) {
      if (absl::StartsWith(key, p)) return true;
    }
    return false;
  }

  // Turns edit_ into the node's splices.
  void AddRecord(absl::string_view bytes) {
    NodeRecord record{bytes.data(), splices_.size(), 0};
    bool name_done = false, doc_done = false;
    for (const EditableField& field : fields_) {
      switch (field.kind) {
        case Editable::kName:
          if (!edit_.name.has_value()) break;
          scratch_.clear();
          if (!name_done) AppendLenField(&scratch_, node_field::kName, *edit_.name);
          AddSplice(field.begin, field.end, scratch_);
          name_done = true;
          break;
        case Editable::kDocString:
          if (!edit_.doc_string.has_value()) break;
          scratch_.clear();
          if (!doc_done) AppendLenField(&scratch_, node_field::kDocString, *edit_.doc_string);
          AddSplice(field.begin, field.end, scratch_);
          doc_done = true;
          break;
        case Editable::kMetadata:
          if (Drops(field.key)) AddSplice(field.begin, field.end, {});
          break;
      }
    }
    tail_.clear();
    if (edit_.name.has_value() && !name_done) {
      AppendLenField(&tail_, node_field::kName, *edit_.name);
    }
    if (edit_.doc_string.has_value() && !doc_done) {
      AppendLenField(&tail_, node_field::kDocString, *edit_.doc_string);
    }
    for (const auto& [key, value] : edit_.add_metadata) AppendEntry(&tail_, key, value, &scratch_);
    const char* end = bytes.data() + bytes.size();
    if (!tail_.empty()) AddSplice(end, end, tail_);
    record.splices = splices_.size() - record.first_splice;
    records_.push_back(record);
  }

  void AddSplice(const char* begin, const char* end, absl::string_view replacement) {
    splices_.push_back({begin, end, out_->arena_->Store(replacement)});
  }

  absl::Status CheckDepth(int depth) const {
    if (depth > max_depth_) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin_, ": subgraphs nested deeper than ", max_depth_, " levels"));
    }
    return absl::OkStatus();
  }

  // ---- Pass 2: byte order; new sizes bottom-up, pieces in order. ----

  // Whether a node not yet emitted lies inside `payload`.
  bool HoldsNodes(absl::string_view payload) const {
    return next_record_ < records_.size() &&
           records_[next_record_].payload < payload.data() + payload.size();
  }

  void Add(absl::string_view piece) {
    if (piece.empty()) return;
    std::vector<absl::string_view>& pieces = out_->pieces_;
    total_ += piece.size();
    if (pieces.size() > sealed_ && pieces.back().data() + pieces.back().size() == piece.data()) {
      pieces.back() = absl::string_view(pieces.back().data(), pieces.back().size() + piece.size());
      return;
    }
    pieces.push_back(piece);
  }

  // Emits the length-delimited field that starts at `field` and whose
  // payload `emit` rebuilds: the bytes pending since *copy and the field's
  // tag verbatim, then its new length, then the new payload.
  template <typename Fn>
  absl::Status Rebuild(const char** copy, const char* field, absl::string_view payload, Fn emit) {
    const char* tag_end = field;
    std::uint64_t tag;
    WireReader::ReadVarint(&tag_end, payload.data(), &tag);  // read once already
    Add(absl::string_view(*copy, static_cast<std::size_t>(tag_end - *copy)));
    std::vector<absl::string_view>& pieces = out_->pieces_;
    const std::size_t slot = pieces.size();
    pieces.emplace_back();
    sealed_ = pieces.size();
    const std::uint64_t before = total_;
    SEMMAP_RETURN_IF_ERROR(emit(payload));
    scratch_.clear();
    AppendVarint(&scratch_, total_ - before);
    pieces[slot] = out_->arena_->Store(scratch_);
    total_ += scratch_.size();
    *copy = payload.data() + payload.size();
    return absl::OkStatus();
  }

  absl::Status EmitModel() {
    const char* copy = file_.data();
    WireReader r(file_);
    WireField f;
    const char* at = r.position();
    while (r.Next(&f)) {
      if (IsLen(f) && HoldsNodes(f.bytes)) {
        if (f.number == model_field::kGraph) {
          SEMMAP_RETURN_IF_ERROR(Rebuild(&copy, at, f.bytes, [&](absl::string_view g) {
            return EmitGraph(g, 0);
          }));
        } else if (f.number == model_field::kFunctions) {
          SEMMAP_RETURN_IF_ERROR(Rebuild(&copy, at, f.bytes, [&](absl::string_view fn) {
            return EmitNodes(fn, function_field::kNode, "FunctionProto", 0);
          }));
        }
      }
      at = r.position();
    }
    if (!r.ok()) return Malformed(r, "ModelProto");
    Add(absl::string_view(copy, static_cast<std::size_t>(file_.data() + file_.size() - copy)));
    return absl::OkStatus();
  }

  absl::Status EmitGraph(absl::string_view graph, int depth) {
    return EmitNodes(graph, graph_field::kNode, "GraphProto", depth);
  }

  // A GraphProto or FunctionProto: its nodes are field `node_field_number`.
  absl::Status EmitNodes(absl::string_view message, std::uint32_t node_field_number,
                         const char* what, int depth) {
    if (depth > max_depth_ + 1) return CheckDepth(depth);
    const char* copy = message.data();
    WireReader r(message);
    WireField f;
    const char* at = r.position();
    while (r.Next(&f)) {
      if (f.number == node_field_number && IsLen(f)) {
        SEMMAP_RETURN_IF_ERROR(Rebuild(&copy, at, f.bytes, [&](absl::string_view node) {
          return EmitNode(node, depth);
        }));
      }
      at = r.position();
    }
    if (!r.ok()) return Malformed(r, what);
    Add(absl::string_view(copy, static_cast<std::size_t>(message.data() + message.size() - copy)));
    return absl::OkStatus();
  }

  absl::Status EmitNode(absl::string_view node, int depth) {
    if (next_record_ >= records_.size() || records_[next_record_].payload != node.data()) {
      return absl::InternalError(absl::StrCat(
          origin_, ": byte offset ", node.data() - file_.data(),
          ": a node the Graph-order walk did not see"));
    }
    const NodeRecord& record = records_[next_record_++];
    std::size_t s = record.first_splice;
    const std::size_t s_end = record.first_splice + record.splices;
    const char* copy = node.data();
    WireReader r(node);
    WireField f;
    const char* at = r.position();
    while (r.Next(&f)) {
      const char* end = r.position();
      if (s < s_end && splices_[s].begin == at) {
        Add(absl::string_view(copy, static_cast<std::size_t>(at - copy)));
        Add(splices_[s].replacement);
        copy = splices_[s].end;
        ++s;
      } else if (f.number == node_field::kAttribute && IsLen(f) && HoldsNodes(f.bytes)) {
        SEMMAP_RETURN_IF_ERROR(Rebuild(&copy, at, f.bytes, [&](absl::string_view attribute) {
          return EmitAttribute(attribute, depth);
        }));
      }
      at = end;
    }
    if (!r.ok()) return Malformed(r, "NodeProto");
    Add(absl::string_view(copy, static_cast<std::size_t>(node.data() + node.size() - copy)));
    for (; s < s_end; ++s) Add(splices_[s].replacement);  // appended at the end
    return absl::OkStatus();
  }

  absl::Status EmitAttribute(absl::string_view attribute, int depth) {
    const char* copy = attribute.data();
    WireReader r(attribute);
    WireField f;
    const char* at = r.position();
    while (r.Next(&f)) {
      if ((f.number == attribute_field::kG || f.number == attribute_field::kGraphs) && IsLen(f) &&
          HoldsNodes(f.bytes)) {
        SEMMAP_RETURN_IF_ERROR(Rebuild(&copy, at, f.bytes, [&](absl::string_view g) {
          return EmitGraph(g, depth + 1);
        }));
      }
      at = r.position();
    }
    if (!r.ok()) return Malformed(r, "AttributeProto");
    Add(absl::string_view(copy,
                          static_cast<std::size_t>(attribute.data() + attribute.size() - copy)));
    return absl::OkStatus();
  }

  absl::Status Malformed(const WireReader& r, const char* message) const {
    return MalformedOnnx(origin_, file_, r, message);
  }

  absl::string_view file_;
  absl::string_view origin_;
  const NodeEditor& editor_;
  const int max_depth_;
  ModelRewrite* out_;

  std::vector<NodeRecord> records_;
  std::vector<Splice> splices_;
  NodeEdit edit_;                      // reused per node
  std::vector<EditableField> fields_;  // of the node being indexed
  std::string scratch_, tail_;

  std::size_t next_record_ = 0;
  std::uint64_t total_ = 0;
  std::size_t sealed_ = 0;  // pieces below this index are never extended
};

absl::StatusOr<ModelRewrite> ModelRewrite::Plan(absl::string_view model, absl::string_view origin,
                                                const NodeEditor& editor,
                                                int max_subgraph_depth) {
  if (model.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected an ONNX model"));
  }
  ModelRewrite rewrite;
  SEMMAP_RETURN_IF_ERROR(
      RewritePlanner(model, origin, editor, max_subgraph_depth, &rewrite).Run());
  return rewrite;
}

}  // namespace internal
}  // namespace semmap
