#include "synth_model.h"

#include <cstdio>
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
constexpr std::size_t kPerLayer = kLayerOps + kUnscopedPerLayer;
constexpr std::size_t kPrefix = 2;   // embed_tokens Gather, rotary_emb
constexpr std::size_t kSuffix = 12;  // model.norm (11) + lm_head

class Writer {
 public:
  explicit Writer(const SynthOptions& o) : o_(o) {}

  void Build() {
    std::uint64_t body = o_.nodes > kPrefix + kSuffix ? o_.nodes - kPrefix - kSuffix : 0;
    layers_ = (body + kPerLayer - 1) / kPerLayer;
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
    for (const Weight& w : weights_) linear += w.name.rfind("onnx::MatMul_", 0) == 0;
    for (Weight& w : weights_) {
      std::int64_t elems = 1;
      for (std::int64_t d : w.dims) elems *= d;
      w.bytes = static_cast<std::uint64_t>(elems) * 4;
      if (o_.weight_bytes > 0 && linear > 0 && w.name.rfind("onnx::MatMul_", 0) == 0) {
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

  bool WriteManifest(const std::string& out_path, std::uint64_t* modules, std::string* error) {
    std::string j;
    j.reserve(layers_ * 4000 + 4096);
    j += R"({"format":"semmap.manifest","schema_version":1,)"
         R"("generator":{"semmap":"synthetic"},)"
         R"("model":{"class":"LlamaForCausalLM",)"
         R"("qualified_class":"transformers.models.llama.modeling_llama.LlamaForCausalLM",)"
         R"("model_type":"llama","config":{"num_hidden_layers":)" +
         std::to_string(layers_) + R"(}},"modules":[)";
    std::uint64_t count = 0;
    auto mod = [&](const std::string& path, const char* cls, const char* qual,
                   const std::vector<std::string>& children, const char* params,
                   const char* buffers) {
      if (count++) j += ",";
      const std::size_t dot = path.rfind('.');
      j += R"({"path":")" + path + R"(","class":")" + cls + R"(","qualified_class":")" + qual +
           R"(","parent":)";
      j += path.empty() ? "null"
                        : "\"" + (dot == std::string::npos ? std::string() : path.substr(0, dot)) +
                              "\"";
      j += R"(,"children":[)";
      for (std::size_t i = 0; i < children.size(); ++i) {
        j += (i ? ",\"" : "\"") + children[i] + "\"";
      }
      j += R"(],"parameters":)";
      j += params;
      j += R"(,"buffers":)";
      j += buffers;
      j += "}";
    };
    // A Linear's weight is [out, in]; the graph stores it transposed
    // ("onnx::MatMul_<k>", [in, out]), padded to the payload asked for.
    const std::string linear_params = R"([{"name":"weight","shape":[)" +
                                      std::to_string(linear_out_) + "," +
                                      std::to_string(kHidden) + R"(],"dtype":"float32"}])";
    const char* kLinearP = linear_params.c_str();
    const char* kNormP = R"([{"name":"weight","shape":[8],"dtype":"float32"}])";
    const char* kNone = "[]";
    const std::string llama = "transformers.models.llama.modeling_llama.";
    mod("", "LlamaForCausalLM", (llama + "LlamaForCausalLM").c_str(), {"model", "lm_head"}, kNone,
        kNone);
    mod("model", "LlamaModel", (llama + "LlamaModel").c_str(),
        {"model.embed_tokens", "model.layers", "model.norm", "model.rotary_emb"}, kNone, kNone);
    mod("model.embed_tokens", "Embedding", "torch.nn.modules.sparse.Embedding", {},
        R"([{"name":"weight","shape":[1000,8],"dtype":"float32"}])", kNone);
    std::vector<std::string> layer_paths;
    for (std::uint64_t l = 0; l < layers_; ++l) layer_paths.push_back("model.layers." + std::to_string(l));
    mod("model.layers", "ModuleList", "torch.nn.modules.container.ModuleList", layer_paths, kNone,
        kNone);
    for (const std::string& p : layer_paths) {
      const std::string a = p + ".self_attn", m = p + ".mlp";
      mod(p, "LlamaDecoderLayer", (llama + "LlamaDecoderLayer").c_str(),
          {a, m, p + ".input_layernorm", p + ".post_attention_layernorm"}, kNone, kNone);
      mod(a, "LlamaAttention", (llama + "LlamaAttention").c_str(),
          {a + ".q_proj", a + ".k_proj", a + ".v_proj", a + ".o_proj"}, kNone, kNone);
      for (const char* proj : {".q_proj", ".k_proj", ".v_proj", ".o_proj"}) {
        mod(a + proj, "Linear", "torch.nn.modules.linear.Linear", {}, kLinearP, kNone);
      }
      mod(m, "LlamaMLP", (llama + "LlamaMLP").c_str(),
          {m + ".gate_proj", m + ".up_proj", m + ".down_proj", m + ".act_fn"}, kNone, kNone);
      for (const char* proj : {".gate_proj", ".up_proj", ".down_proj"}) {
        mod(m + proj, "Linear", "torch.nn.modules.linear.Linear", {}, kLinearP, kNone);
      }
      mod(m + ".act_fn", "SiLUActivation", "transformers.activations.SiLUActivation", {}, kNone,
          kNone);
      mod(p + ".input_layernorm", "LlamaRMSNorm", (llama + "LlamaRMSNorm").c_str(), {}, kNormP,
          kNone);
      mod(p + ".post_attention_layernorm", "LlamaRMSNorm", (llama + "LlamaRMSNorm").c_str(), {},
          kNormP, kNone);
    }
    mod("model.norm", "LlamaRMSNorm", (llama + "LlamaRMSNorm").c_str(), {}, kNormP, kNone);
    mod("model.rotary_emb", "LlamaRotaryEmbedding", (llama + "LlamaRotaryEmbedding").c_str(), {},
        kNone, R"([{"name":"inv_freq","shape":[4],"dtype":"float32"}])");
    mod("lm_head", "Linear", "torch.nn.modules.linear.Linear", {}, kLinearP, kNone);
    j += "]}\n";
    *modules = count;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(out_path.c_str(), "wb"),
                                                      &std::fclose);
    if (f == nullptr || !Put(f.get(), j) || std::fflush(f.get()) != 0) {
      *error = out_path + ": write failed";
      return false;
    }
    return true;
  }

  std::uint64_t nodes() const { return emitted_; }
  std::uint64_t layers() const { return layers_; }

 private:
  static bool Put(std::FILE* f, const std::string& s) {
    return std::fwrite(s.data(), 1, s.size(), f) == s.size();
  }

  void AddWeight(std::string name, std::vector<std::int64_t> dims) {
    Weight w;
    w.name = std::move(name);
    w.dims = std::move(dims);
    weights_.push_back(std::move(w));
  }

  // TorchScript stores a Linear's transposed weight as "onnx::MatMul_<k>".
  std::string LinearWeight() {
    std::string name = "onnx::MatMul_" + std::to_string(next_id_++);
    AddWeight(name, {kHidden, kHidden});
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
    for (std::size_t i = 0; i < kLayerOps; ++i) {
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

  const SynthOptions& o_;
  Enc nodes_;
  std::vector<Weight> weights_;
  std::uint64_t emitted_ = 0;
  std::uint64_t layers_ = 0;
  std::uint64_t next_id_ = 1;
  std::int64_t linear_out_ = kHidden;  // a Linear's output width (WriteModel pads it)
  std::string output_;
};

}  // namespace

bool WriteSynthetic(const SynthOptions& options, const std::string& model_path,
                    const std::string& manifest_path, SynthResult* result, std::string* error) {
  Writer w(options);
  w.Build();
  result->nodes = w.nodes();
  result->layers = w.layers();
  return w.WriteModel(model_path, &result->model_bytes, error) &&
         w.WriteManifest(manifest_path, &result->modules, error);
}

}  // namespace semmap_bench
