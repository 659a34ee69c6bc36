#include "synth_manifest.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace semmap_bench {
namespace {

// The most events the manifest writer keeps in one forward
// (docs/manifest.md); a longer forward is left out.
constexpr std::uint64_t kMaxEvents = 10000;

// One module's `forward` list, as JSON text.
class Events {
 public:
  Events& Call(const std::string& path) {
    Next();
    text_ += R"({"call":")" + path + "\"}";
    return *this;
  }
  Events& Op(const char* op, const char* reads = nullptr) {
    Next();
    text_ += R"({"op":")";
    text_ += op;
    if (reads != nullptr) {
      text_ += R"(","reads":[")";
      text_ += reads;
      text_ += "\"]}";
    } else {
      text_ += "\"}";
    }
    return *this;
  }
  Events& Ops(std::initializer_list<const char*> ops) {
    for (const char* op : ops) Op(op);
    return *this;
  }
  std::uint64_t size() const { return size_; }
  const std::string& text() const { return text_; }

 private:
  void Next() {
    if (size_++) text_ += ",";
  }
  std::string text_;
  std::uint64_t size_ = 0;
};

class ManifestText {
 public:
  ManifestText(bool forward, ManifestCounts* counts) : forward_(forward), counts_(counts) {}

  std::string& text() { return j_; }

  // `events`: what the module's forward ran; nullptr for a module that
  // never runs (a ModuleList).
  void Module(const std::string& path, const std::string& cls, const std::string& qual,
              const std::vector<std::string>& children, const std::string& params,
              const std::string& buffers, const Events* events) {
    if (counts_->modules++) j_ += ",";
    const std::size_t dot = path.rfind('.');
    j_ += R"({"path":")" + path + R"(","class":")" + cls + R"(","qualified_class":")" + qual +
          R"(","parent":)";
    j_ += path.empty() ? "null"
                       : "\"" + (dot == std::string::npos ? std::string() : path.substr(0, dot)) +
                             "\"";
    j_ += R"(,"children":[)";
    for (std::size_t i = 0; i < children.size(); ++i) {
      j_ += (i ? ",\"" : "\"") + children[i] + "\"";
    }
    j_ += R"(],"parameters":)" + params + R"(,"buffers":)" + buffers;
    if (forward_ && events != nullptr && events->size() <= kMaxEvents) {
      j_ += R"(,"forward":[)" + events->text() + "]";
      ++counts_->forward_modules;
      counts_->forward_events += events->size();
    }
    j_ += "}";
  }

 private:
  bool forward_;
  ManifestCounts* counts_;
  std::string j_;
};

// transformers' modelling code, as the exporter's forward pass records it
// (fixtures/llama-causal-lm.torchscript/manifest.json; Mixtral's sparse
// block as its modelling code runs it).
Events LinearForward() { return std::move(Events().Op("linear", "weight")); }
Events NormForward() {
  return std::move(
      Events().Ops({"to", "pow", "mean", "add", "rsqrt", "mul", "to"}).Op("mul", "weight"));
}
Events AttentionForward(const std::string& a) {
  Events e;
  for (const char* proj : {".q_proj", ".k_proj", ".v_proj"}) {
    e.Call(a + proj).Ops({"view", "transpose"});
  }
  e.Ops({"unsqueeze", "unsqueeze", "mul", "getitem", "getitem", "neg", "cat", "mul", "add",
         "mul", "getitem", "getitem", "neg", "cat", "mul", "add", "getitem", "expand", "reshape",
         "getitem", "expand", "reshape", "getitem", "scaled_dot_product_attention", "transpose",
         "contiguous", "reshape", "contiguous"});
  return std::move(e.Call(a + ".o_proj"));
}
Events RotaryForward() {
  return std::move(Events().Op("getitem", "inv_freq").Ops(
      {"float", "expand", "to", "getitem", "float", "float", "float", "matmul", "transpose", "cat",
       "cos", "mul", "sin", "mul", "to", "to"}));
}

}  // namespace

std::string SynthManifestJson(const SynthModules& m, bool forward, ManifestCounts* counts) {
  *counts = ManifestCounts();
  const bool moe = m.shape == SynthShape::kMoe;
  const std::string family = moe ? "Mixtral" : "Llama";
  const std::string lib = moe ? "transformers.models.mixtral.modeling_mixtral."
                              : "transformers.models.llama.modeling_llama.";
  auto cls = [&](const char* name) { return family + name; };
  auto qual = [&](const char* name) { return lib + family + name; };
  const std::string kLinear = "torch.nn.modules.linear.Linear";
  const std::string kList = "torch.nn.modules.container.ModuleList";
  const std::string kAct = "transformers.activations.SiLUActivation";

  ManifestText out(forward, counts);
  std::string& j = out.text();
  j.reserve(m.layers * (moe ? 700 * (m.experts + 2) : 4000) * (forward ? 2 : 1) + 4096);
  j += R"({"format":"semmap.manifest","schema_version":)";
  j += forward ? "2" : "1";
  j += R"(,"generator":{"semmap":"synthetic"},"model":{"class":")" + cls("ForCausalLM") +
       R"(","qualified_class":")" + qual("ForCausalLM") + R"(","model_type":")" +
       (moe ? "mixtral" : "llama") + R"(","config":{"num_hidden_layers":)" +
       std::to_string(m.layers);
  if (moe) j += R"(,"num_local_experts":)" + std::to_string(m.experts);
  j += R"(}},"modules":[)";

  // A Linear's weight is [out, in]; the graph stores it transposed
  // ("onnx::MatMul_<k>", [in, out]), padded to the payload asked for.
  const std::string hidden = std::to_string(m.hidden);
  const std::string linear_p = R"([{"name":"weight","shape":[)" + std::to_string(m.linear_out) +
                               "," + hidden + R"(],"dtype":"float32"}])";
  const std::string gate_p = R"([{"name":"weight","shape":[)" + std::to_string(m.experts) + "," +
                             hidden + R"(],"dtype":"float32"}])";
  const std::string norm_p = R"([{"name":"weight","shape":[)" + hidden + R"(],"dtype":"float32"}])";
  const std::string none = "[]";
  const Events linear = LinearForward(), norm = NormForward();
  const Events silu = std::move(Events().Op("silu"));

  Events root;
  root.Call("model").Op("getitem").Call("lm_head");
  out.Module("", cls("ForCausalLM"), qual("ForCausalLM"), {"model", "lm_head"}, none, none, &root);
  Events model;
  model.Call("model.embed_tokens")
      .Ops({"arange", "unsqueeze", "to", "getitem", "arange", "getitem", "arange", "getitem",
            "arange", "getitem", "add", "new_ones", "le", "to", "bitwise_and", "getitem", "to",
            "bitwise_and", "expand"})
      .Call("model.rotary_emb");
  std::vector<std::string> layer_paths;
  for (std::uint64_t l = 0; l < m.layers; ++l) {
    layer_paths.push_back("model.layers." + std::to_string(l));
    model.Call(layer_paths.back());
  }
  model.Call("model.norm");
  out.Module("model", cls("Model"), qual("Model"),
             {"model.embed_tokens", "model.layers", "model.norm", "model.rotary_emb"}, none, none,
             &model);
  const Events embedding = std::move(Events().Op("embedding", "weight"));
  out.Module("model.embed_tokens", "Embedding", "torch.nn.modules.sparse.Embedding", {},
             R"([{"name":"weight","shape":[1000,)" + hidden + R"(],"dtype":"float32"}])", none,
             &embedding);
  out.Module("model.layers", "ModuleList", kList, layer_paths, none, none, nullptr);
  for (const std::string& p : layer_paths) {
    const std::string a = p + ".self_attn";
    const std::string block = p + (moe ? ".block_sparse_moe" : ".mlp");
    Events layer;
    layer.Call(p + ".input_layernorm").Call(a).Op("add").Call(p + ".post_attention_layernorm");
    layer.Call(block).Op("add");
    out.Module(p, cls("DecoderLayer"), qual("DecoderLayer"),
               {a, block, p + ".input_layernorm", p + ".post_attention_layernorm"}, none, none,
               &layer);
    const Events attention = AttentionForward(a);
    out.Module(a, cls("Attention"), qual("Attention"),
               {a + ".q_proj", a + ".k_proj", a + ".v_proj", a + ".o_proj"}, none, none,
               &attention);
    for (const char* proj : {".q_proj", ".k_proj", ".v_proj", ".o_proj"}) {
      out.Module(a + proj, "Linear", kLinear, {}, linear_p, none, &linear);
    }
    if (moe) {
      const std::string experts = block + ".experts";
      std::vector<std::string> expert_paths;
      Events sparse;
      sparse.Op("view").Call(block + ".gate");
      sparse.Ops({"softmax", "topk", "sum", "div", "to", "zeros", "one_hot", "permute", "sum",
                  "gt", "nonzero"});
      // The last layer lists the experts the graph has nodes of, as a
      // smaller model would.
      const std::uint64_t count = p == layer_paths.back() ? m.last_layer_experts : m.experts;
      for (std::uint64_t e = 0; e < count; ++e) {
        expert_paths.push_back(experts + "." + std::to_string(e));
        sparse.Ops({"getitem", "squeeze", "where", "getitem", "reshape"});
        sparse.Call(expert_paths.back()).Ops({"getitem", "mul", "to", "index_add"});
      }
      sparse.Op("reshape");
      out.Module(block, cls("SparseMoeBlock"), qual("SparseMoeBlock"), {block + ".gate", experts},
                 none, none, &sparse);
      out.Module(block + ".gate", "Linear", kLinear, {}, gate_p, none, &linear);
      out.Module(experts, "ModuleList", kList, expert_paths, none, none, nullptr);
      for (const std::string& x : expert_paths) {
        Events mlp;
        mlp.Call(x + ".w1").Call(x + ".act_fn").Call(x + ".w3").Op("mul").Call(x + ".w2");
        out.Module(x, cls("BlockSparseTop2MLP"), qual("BlockSparseTop2MLP"),
                   {x + ".w1", x + ".w2", x + ".w3", x + ".act_fn"}, none, none, &mlp);
        for (const char* w : {".w1", ".w2", ".w3"}) {
          out.Module(x + w, "Linear", kLinear, {}, linear_p, none, &linear);
        }
        out.Module(x + ".act_fn", "SiLUActivation", kAct, {}, none, none, &silu);
      }
    } else {
      Events mlp;
      mlp.Call(block + ".gate_proj").Call(block + ".act_fn").Call(block + ".up_proj");
      mlp.Op("mul").Call(block + ".down_proj");
      out.Module(block, cls("MLP"), qual("MLP"),
                 {block + ".gate_proj", block + ".up_proj", block + ".down_proj",
                  block + ".act_fn"},
                 none, none, &mlp);
      for (const char* proj : {".gate_proj", ".up_proj", ".down_proj"}) {
        out.Module(block + proj, "Linear", kLinear, {}, linear_p, none, &linear);
      }
      out.Module(block + ".act_fn", "SiLUActivation", kAct, {}, none, none, &silu);
    }
    out.Module(p + ".input_layernorm", cls("RMSNorm"), qual("RMSNorm"), {}, norm_p, none, &norm);
    out.Module(p + ".post_attention_layernorm", cls("RMSNorm"), qual("RMSNorm"), {}, norm_p,
               none, &norm);
  }
  out.Module("model.norm", cls("RMSNorm"), qual("RMSNorm"), {}, norm_p, none, &norm);
  const Events rotary = RotaryForward();
  out.Module("model.rotary_emb", cls("RotaryEmbedding"), qual("RotaryEmbedding"), {}, none,
             R"([{"name":"inv_freq","shape":[4],"dtype":"float32"}])", &rotary);
  out.Module("lm_head", "Linear", kLinear, {}, linear_p, none, &linear);
  j += "]}\n";
  return std::move(j);
}

}  // namespace semmap_bench
