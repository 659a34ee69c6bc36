#include "synth_model.h"

#include "synth_manifest.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace semmap_bench {
namespace {

constexpr std::int64_t kHidden = 8;  // shape of the tiny weights

// Minimal protobuf wire encoder.
class Enc {
 public:
  void Varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void Tag(int field, int wire_type) { Varint((static_cast<std::uint64_t>(field) << 3) | wire_type); }
  void Int(int field, std::int64_t v) {
    Tag(field, 0);
    Varint(static_cast<std::uint64_t>(v));
  }
  void Bytes(int field, const std::string& s) {
    Tag(field, 2);
    Varint(s.size());
    out_ += s;
  }
  void Msg(int field, const Enc& m) { Bytes(field, m.out_); }
  const std::string& str() const { return out_; }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

std::size_t VarintSize(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

struct Weight {
  std::string name;
  std::vector<std::int64_t> dims;
  std::uint64_t bytes = 0;  // raw_data size
  bool linear = false;      // a Linear's weight: padded to the payload asked for
};

// One op of the layer template: scope below /model/layers.N, leaf name, op
// type and what it reads besides the previous output.
struct Op {
  const char* scope;
  const char* leaf;
  const char* op;
  enum Extra { kNone, kLinear, kNorm, kConst, kResidual } extra;
};

#define NORM(s)                                                                       \
  {s, "Cast", "Cast", Op::kNone}, {s, "Constant", "Constant", Op::kNone},             \
      {s, "Pow", "Pow", Op::kConst}, {s, "ReduceMean", "ReduceMean", Op::kNone},      \
      {s, "Constant_1", "Constant", Op::kNone}, {s, "Add", "Add", Op::kConst},        \
      {s, "Sqrt", "Sqrt", Op::kNone}, {s, "Div", "Div", Op::kNone},                   \
      {s, "Mul", "Mul", Op::kNone}, {s, "Cast_1", "Cast", Op::kNone},                 \
      {s, "Mul_1", "Mul", Op::kNorm}

const Op kLayer[] = {
    NORM("input_layernorm"),
    {"self_attn/q_proj", "MatMul", "MatMul", Op::kLinear},
    {"self_attn/k_proj", "MatMul", "MatMul", Op::kLinear},
    {"self_attn/v_proj", "MatMul", "MatMul", Op::kLinear},
    {"self_attn", "Shape", "Shape", Op::kNone},
    {"self_attn", "Constant", "Constant", Op::kNone},
    {"self_attn", "Gather", "Gather", Op::kConst},
    {"self_attn", "Unsqueeze", "Unsqueeze", Op::kNone},
    {"self_attn", "Concat", "Concat", Op::kNone},
    {"self_attn", "Reshape", "Reshape", Op::kNone},
    {"self_attn", "Transpose", "Transpose", Op::kNone},
    {"self_attn", "Reshape_1", "Reshape", Op::kNone},
    {"self_attn", "Transpose_1", "Transpose", Op::kNone},
    {"self_attn", "Reshape_2", "Reshape", Op::kNone},
    {"self_attn", "Transpose_2", "Transpose", Op::kNone},
    {"self_attn", "Mul", "Mul", Op::kNone},
    {"self_attn", "Slice", "Slice", Op::kNone},
    {"self_attn", "Slice_1", "Slice", Op::kNone},
    {"self_attn", "Neg", "Neg", Op::kNone},
    {"self_attn", "Concat_1", "Concat", Op::kNone},
    {"self_attn", "Mul_1", "Mul", Op::kNone},
    {"self_attn", "Add", "Add", Op::kNone},
    {"self_attn", "Mul_2", "Mul", Op::kNone},
    {"self_attn", "Slice_2", "Slice", Op::kNone},
    {"self_attn", "Slice_3", "Slice", Op::kNone},
    {"self_attn", "Neg_1", "Neg", Op::kNone},
    {"self_attn", "Concat_2", "Concat", Op::kNone},
    {"self_attn", "Mul_3", "Mul", Op::kNone},
    {"self_attn", "Add_1", "Add", Op::kNone},
    {"self_attn", "Transpose_3", "Transpose", Op::kNone},
    {"self_attn", "MatMul", "MatMul", Op::kNone},
    {"self_attn", "Constant_1", "Constant", Op::kNone},
    {"self_attn", "Div", "Div", Op::kConst},
    {"self_attn", "Add_2", "Add", Op::kNone},
    {"self_attn", "Softmax", "Softmax", Op::kNone},
    {"self_attn", "MatMul_1", "MatMul", Op::kNone},
    {"self_attn", "Transpose_4", "Transpose", Op::kNone},
    {"self_attn", "Reshape_3", "Reshape", Op::kNone},
    {"self_attn/o_proj", "MatMul", "MatMul", Op::kLinear},
    {"", "Add", "Add", Op::kResidual},
    NORM("post_attention_layernorm"),
    {"mlp/gate_proj", "MatMul", "MatMul", Op::kLinear},
    {"mlp/act_fn", "Sigmoid", "Sigmoid", Op::kNone},
    {"mlp/act_fn", "Mul", "Mul", Op::kNone},
    {"mlp/up_proj", "MatMul", "MatMul", Op::kLinear},
    {"mlp", "Mul", "Mul", Op::kNone},
    {"mlp/down_proj", "MatMul", "MatMul", Op::kLinear},
    {"", "Add_1", "Add", Op::kResidual},
};
constexpr std::size_t kLayerOps = sizeof(kLayer) / sizeof(kLayer[0]);
// Per layer, besides kLayer: two unscoped Identity_N (norm weights shared
// with layer 0, as torch de-duplicates them) and one unscoped Constant_N.
constexpr std::size_t kUnscopedPerLayer = 3;
constexpr std::size_t kPrefix = 2;   // embed_tokens Gather, rotary_emb
constexpr std::size_t kSuffix = 12;  // model.norm (11) + lm_head

class Writer {
 public:
  explicit Writer(const SynthOptions& o) : o_(o) {}

  void Build() {
    std::uint64_t body = o_.nodes > kPrefix + kSuffix ? o_.nodes - kPrefix - kSuffix : 0;
    const std::uint64_t per_layer = PerLayer();
    layers_ = (body + per_layer - 1) / per_layer;
    if (layers_ == 0) layers_ = 1;
    AddWeight("model.embed_tokens.weight", {1000, kHidden});
    Node("/model/embed_tokens/Gather", "Gather", {"input_ids", "model.embed_tokens.weight"},
         "/model/embed_tokens/Gather_output_0");
    Node("/model/rotary_emb/Cos", "Cos", {"position_ids"}, "/model/rotary_emb/Cos_output_0");
    std::string hidden = "/model/embed_tokens/Gather_output_0";
    for (std::uint64_t l = 0; l < layers_ && emitted_ + kSuffix < o_.nodes; ++l) {
      hidden = Layer(l, hidden);
    }
    AddWeight("model.norm.weight", {kHidden});
    for (std::size_t i = 0; i < 11 && emitted_ < o_.nodes; ++i) {
      const Op& op = kLayer[i];
      const std::string name = std::string("/model/norm/") + op.leaf;
      std::vector<std::string> in = {hidden};
      if (op.extra == Op::kNorm) in.push_back("model.norm.weight");
      if (op.extra == Op::kConst) in.push_back(std::string("/model/norm/Constant_output_0"));
      hidden = name + "_output_0";
      Node(name, op.op, in, hidden);
    }
    if (emitted_ < o_.nodes) {
      const std::string w = LinearWeight();
      Node("/lm_head/MatMul", "MatMul", {hidden, w}, "logits");
      hidden = "logits";
    }
    output_ = hidden;
  }

  bool WriteModel(const std::string& path, std::uint64_t* size, std::string* error) {
    // Distribute the payload over the linear weights.
    std::uint64_t linear = 0;
    for (const Weight& w : weights_) linear += w.linear;
    for (Weight& w : weights_) {
      std::int64_t elems = 1;
      for (std::int64_t d : w.dims) elems *= d;
      w.bytes = static_cast<std::uint64_t>(elems) * 4;
      if (o_.weight_bytes > 0 && linear > 0 && w.linear) {
        const std::uint64_t cols = (o_.weight_bytes / linear / 4 / kHidden) + 1;
        w.dims = {kHidden, static_cast<std::int64_t>(cols)};
        w.bytes = cols * kHidden * 4;
        linear_out_ = static_cast<std::int64_t>(cols);
      }
    }
    // Tensor headers (everything but raw_data) and the graph's length.
    std::vector<std::string> heads;
    std::uint64_t graph_len = nodes_.str().size();
    for (const Weight& w : weights_) {
      Enc t;
      for (std::int64_t d : w.dims) t.Int(1, d);
      t.Int(2, 1);  // FLOAT
      t.Bytes(8, w.name);
      const std::uint64_t raw = 1 + VarintSize(w.bytes) + w.bytes;  // field 9
      const std::uint64_t tensor = t.str().size() + raw;
      graph_len += 1 + VarintSize(tensor) + tensor;
      heads.push_back(std::move(t.str()));
    }
    Enc tail;
    tail.Bytes(2, "main_graph");
    for (const char* in : {"input_ids", "position_ids"}) {
      Enc vi;
      vi.Bytes(1, in);
      tail.Msg(11, vi);
    }
    Enc out;
    out.Bytes(1, output_);
    tail.Msg(12, out);
    graph_len += tail.str().size();
    // The graph's fields are in field-number order as protobuf writes them:
    // node (1), name (2), initializer (5), input (11), output (12).

    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (f == nullptr) {
      *error = path + ": cannot open for writing";
      return false;
    }
    Enc head;
    head.Int(1, 8);  // ir_version
    head.Bytes(2, "pytorch");
    head.Bytes(3, "2.9.1");
    head.Tag(7, 2);
    head.Varint(graph_len);
    bool ok = Put(f.get(), head.str()) && Put(f.get(), nodes_.str());
    std::string chunk(1 << 20, '\0');
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 131 + 7);
    for (std::size_t i = 0; ok && i < weights_.size(); ++i) {
      const Weight& w = weights_[i];
      Enc th;
      const std::uint64_t tensor = heads[i].size() + 1 + VarintSize(w.bytes) + w.bytes;
      th.Tag(5, 2);
      th.Varint(tensor);
      th.str() += heads[i];
      th.Tag(9, 2);
      th.Varint(w.bytes);
      ok = Put(f.get(), th.str());
      for (std::uint64_t left = w.bytes; ok && left > 0;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
        ok = std::fwrite(chunk.data(), 1, n, f.get()) == n;
        left -= n;
      }
    }
    Enc model_tail;
    Enc opset;
    opset.Bytes(1, "");
    opset.Int(2, 17);
    model_tail.Msg(8, opset);
    ok = ok && Put(f.get(), tail.str()) && Put(f.get(), model_tail.str());
    ok = ok && std::fflush(f.get()) == 0;
    if (!ok) {
      *error = path + ": write failed";
      return false;
    }
    *size = static_cast<std::uint64_t>(std::ftell(f.get()));
    return true;
  }

  bool WriteManifests(const std::string& path, const std::string& forward_path,
                      SynthResult* result, std::string* error) const {
    SynthModules m;
    m.shape = o_.shape;
    m.layers = layers_;
    m.experts = o_.experts;
    m.last_layer_experts = last_layer_experts_;
    m.hidden = kHidden;
    m.linear_out = linear_out_;
    ManifestCounts counts;
    if (!WriteText(path, SynthManifestJson(m, false, &counts), error)) return false;
    result->modules = counts.modules;
    if (forward_path.empty()) return true;
    if (!WriteText(forward_path, SynthManifestJson(m, true, &counts), error)) return false;
    result->forward_modules = counts.forward_modules;
    result->forward_events = counts.forward_events;
    return true;
  }

  std::uint64_t nodes() const { return emitted_; }
  std::uint64_t layers() const { return layers_; }

 private:
  static bool Put(std::FILE* f, const std::string& s) {
    return std::fwrite(s.data(), 1, s.size(), f) == s.size();
  }

  static bool WriteText(const std::string& path, const std::string& text, std::string* error) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (f == nullptr || !Put(f.get(), text) || std::fflush(f.get()) != 0) {
      *error = path + ": write failed";
      return false;
    }
    return true;
  }

  void AddWeight(std::string name, std::vector<std::int64_t> dims, bool linear = false) {
    Weight w;
    w.name = std::move(name);
    w.dims = std::move(dims);
    w.linear = linear;
    weights_.push_back(std::move(w));
  }

  // TorchScript stores a Linear's transposed weight as "onnx::MatMul_<k>";
  // `padded`: its output width grows with the payload asked for (the
  // router's, one column per expert, does not).
  std::string LinearWeight(std::int64_t out = kHidden, bool padded = true) {
    std::string name = "onnx::MatMul_" + std::to_string(next_id_++);
    AddWeight(name, {kHidden, out}, padded);
    return name;
  }

  void Node(const std::string& name, const char* op, const std::vector<std::string>& inputs,
            const std::string& output) {
    if (emitted_ >= o_.nodes) return;
    Enc n;
    for (const std::string& in : inputs) n.Bytes(1, in);
    n.Bytes(2, output);
    n.Bytes(3, name);
    n.Bytes(4, op);
    if (std::string(op) == "Constant") {
      Enc attr;
      attr.Bytes(1, "value");
      attr.Int(20, 4);  // TENSOR
      Enc t;
      t.Int(1, 1);
      t.Int(2, 7);  // INT64
      t.Bytes(9, std::string(8, '\1'));
      attr.Msg(5, t);
      n.Msg(5, attr);
    } else if (std::string(op) == "Softmax" || std::string(op) == "Gather" ||
               std::string(op) == "Concat") {
      Enc attr;
      attr.Bytes(1, "axis");
      attr.Int(20, 2);  // INT
      attr.Int(3, -1);
      n.Msg(5, attr);
    }
    nodes_.Msg(1, n);
    ++emitted_;
  }

  std::string Layer(std::uint64_t l, const std::string& input) {
    const std::string base = "/model/layers." + std::to_string(l) + "/";
    const std::string dotted = "model.layers." + std::to_string(l) + ".";
    // Norm weights: layer 0 owns them; later layers read Identity copies
    // named after their own parameters.
    for (const char* norm : {"input_layernorm", "post_attention_layernorm"}) {
      const std::string own = dotted + norm + ".weight";
      if (l == 0) {
        AddWeight(own, {kHidden});
      } else {
        Node("Identity_" + std::to_string(next_id_++), "Identity",
             {std::string("model.layers.0.") + norm + ".weight"}, own);
      }
    }
    const std::string shape_const = "onnx::Reshape_" + std::to_string(next_id_);
    Node("Constant_" + std::to_string(next_id_++), "Constant", {}, shape_const);
    if (l == 0) {  // layer 0 has no Identity nodes: keep the per-layer count
      Node(base + "Constant_pre", "Constant", {}, base + "Constant_pre_output_0");
      Node(base + "Constant_pre_1", "Constant", {}, base + "Constant_pre_1_output_0");
    }
    std::string x = input;
    std::string residual = input;
    std::string last_const;
    const bool moe = o_.shape == SynthShape::kMoe;
    for (std::size_t i = 0; i < kLayerOps; ++i) {
      if (moe && i == MlpStart()) {
        x = SparseMoeBlock(base + "block_sparse_moe/", x, shape_const);
        i = kLayerOps - 1;  // the MLP's ops are the block's; the residual Add_1 follows
      }
      const Op& op = kLayer[i];
      const std::string scope = op.scope[0] ? base + op.scope + "/" : base;
      const std::string name = scope + op.leaf;
      const std::string out = name + "_output_0";
      std::vector<std::string> in;
      if (std::string(op.op) != "Constant") in.push_back(x);
      switch (op.extra) {
        case Op::kLinear:
          in.push_back(LinearWeight());
          break;
        case Op::kNorm:
          in.push_back(dotted + (std::string(op.scope) == "input_layernorm"
                                     ? "input_layernorm.weight"
                                     : "post_attention_layernorm.weight"));
          break;
        case Op::kConst:
          in.push_back(last_const);
          break;
        case Op::kResidual:
          in.push_back(residual);
          break;
        case Op::kNone:
          break;
      }
      if (std::string(op.leaf) == "Reshape") in.push_back(shape_const);
      Node(name, op.op, in, out);
      if (std::string(op.op) == "Constant") {
        last_const = out;
        continue;  // constants do not advance the data flow
      }
      x = out;
      if (op.extra == Op::kResidual) residual = out;
    }
    return x;
  }

  // Where the MLP's ops begin in kLayer.
  static std::size_t MlpStart() {
    std::size_t i = 0;
    while (i < kLayerOps && std::string(kLayer[i].scope).rfind("mlp", 0) != 0) ++i;
    return i;
  }

  // Nodes of one layer: kLayer, with kMoe the sparse block for the MLP.
  std::uint64_t PerLayer() const {
    if (o_.shape == SynthShape::kLlama) return kLayerOps + kUnscopedPerLayer;
    return MlpStart() + 1 + kUnscopedPerLayer + kRouterNodes + kExpertNodes * o_.experts + 1;
  }

  // The ops of one scope, named as the exporter names them: the op type,
  // then _1, _2, ... for its later ones.
  class ScopeNames {
   public:
    explicit ScopeNames(std::string scope) : scope_(std::move(scope)) {}
    std::string operator()(const std::string& op) {
      const int n = seen_[op]++;
      return scope_ + op + (n ? "_" + std::to_string(n) : std::string());
    }

   private:
    std::string scope_;
    std::map<std::string, int> seen_;
  };

  // Mixtral's MixtralSparseMoeBlock as TorchScript exports it, every
  // expert hit: the router (gate), then per expert the tokens routed to it
  // gathered, its MLP (w1, act_fn, w3, w2) and the weighted result added
  // back (index_add_ becomes ScatterND); kRouterNodes + kExpertNodes per
  // expert + 1 nodes.
  static constexpr std::uint64_t kRouterNodes = 13;
  static constexpr std::uint64_t kExpertNodes = 19;
  std::string SparseMoeBlock(const std::string& scope, const std::string& input,
                             const std::string& shape_const) {
    ScopeNames name(scope);
    // Emits one node of the block's own scope; returns its output.
    auto own = [&](const char* op, std::vector<std::string> in) {
      const std::string n = name(op);
      Node(n, op, in, n + "_output_0");
      return n + "_output_0";
    };
    const std::string flat = own("Reshape", {input, shape_const});
    const std::string logits = scope + "gate/MatMul_output_0";
    Node(scope + "gate/MatMul", "MatMul",
         {flat, LinearWeight(static_cast<std::int64_t>(o_.experts), false)}, logits);
    const std::string probs = own("Softmax", {logits});
    const std::string topk = own("TopK", {probs, shape_const});
    const std::string sum = own("ReduceSum", {topk});
    const std::string routing = own("Cast", {own("Div", {topk, sum})});
    std::string acc = own("ConstantOfShape", {shape_const});
    const std::string mask = own("Transpose", {own("OneHot", {topk, shape_const})});
    own("NonZero", {own("Greater", {own("ReduceSum", {mask}), shape_const})});
    last_layer_experts_ = 0;
    for (std::uint64_t e = 0; e < o_.experts; ++e) {
      if (emitted_ < o_.nodes) ++last_layer_experts_;
      const std::string hit = own("NonZero", {own("Squeeze", {own("Gather", {mask})})});
      const std::string where = own("Transpose", {hit});
      const std::string idx = own("Gather", {where});
      const std::string top_x = own("Gather", {where});
      const std::string state = own("Reshape", {own("Gather", {flat, top_x}), shape_const});
      const std::string x = scope + "experts." + std::to_string(e) + "/";
      Node(x + "w1/MatMul", "MatMul", {state, LinearWeight()}, x + "w1/MatMul_output_0");
      Node(x + "act_fn/Sigmoid", "Sigmoid", {x + "w1/MatMul_output_0"},
           x + "act_fn/Sigmoid_output_0");
      Node(x + "act_fn/Mul", "Mul", {x + "w1/MatMul_output_0", x + "act_fn/Sigmoid_output_0"},
           x + "act_fn/Mul_output_0");
      Node(x + "w3/MatMul", "MatMul", {state, LinearWeight()}, x + "w3/MatMul_output_0");
      Node(x + "Mul", "Mul", {x + "act_fn/Mul_output_0", x + "w3/MatMul_output_0"},
           x + "Mul_output_0");
      Node(x + "w2/MatMul", "MatMul", {x + "Mul_output_0", LinearWeight()},
           x + "w2/MatMul_output_0");
      const std::string weight = own("Unsqueeze", {own("Gather", {routing, top_x, idx})});
      const std::string weighted = own("Cast", {own("Mul", {x + "w2/MatMul_output_0", weight})});
      acc = own("ScatterND", {acc, top_x, weighted});
    }
    return own("Reshape", {acc, shape_const});
  }

  const SynthOptions& o_;
  Enc nodes_;
  std::vector<Weight> weights_;
  std::uint64_t emitted_ = 0;
  std::uint64_t layers_ = 0;
  std::uint64_t last_layer_experts_ = 0;  // kMoe: experts with nodes in the last layer
  std::uint64_t next_id_ = 1;
  std::int64_t linear_out_ = kHidden;  // a Linear's output width (WriteModel pads it)
  std::string output_;
};

}  // namespace

bool WriteSynthetic(const SynthOptions& options, const std::string& model_path,
                    const std::string& manifest_path, const std::string& forward_manifest_path,
                    SynthResult* result, std::string* error) {
  Writer w(options);
  w.Build();
  result->nodes = w.nodes();
  result->layers = w.layers();
  return w.WriteModel(model_path, &result->model_bytes, error) &&
         w.WriteManifests(manifest_path, forward_manifest_path, result, error);
}

}  // namespace semmap_bench
