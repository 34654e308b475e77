#pragma once
/// Gemma 2 as a plain struct over radix::nn, with the field names of Hugging Face checkpoints
/// ("model.layers.3.pre_feedforward_layernorm.weight") and a rename table to llama.cpp's "gemma2"
/// GGUF names ("blk.3.ffn_norm.weight").
///
/// What differs from Llama: embeddings scaled by sqrt(width) (the factor rounded to the compute
/// dtype, as HF does); RMSNorm computed in f32 and scaled by (1 + w); norms before and after
/// attention and the MLP; a GELU-tanh gated MLP; scores scaled by query_pre_attn_scalar^-1/2 and
/// soft-capped (cap * tanh(x / cap)), as are the final logits; a sliding window on the even layers;
/// head_dim apart from width / heads; the output tied to the embedding.
///
/// llama.cpp's converter stores the norm weights with the 1 already added, so a GGUF's norms are
/// loaded with shift 0 and an HF folder's with shift 1. GGUF has no query_pre_attn_scalar: the
/// scale is llama.cpp's (1/sqrt(width / heads) for the 46-layer 27B, else 1/sqrt(head_dim)). RoPE
/// is rotate-half in both forms (llama.cpp runs gemma2 with NEOX RoPE; nothing is permuted).
///
/// Tags: "s" tokens, "d" width, "hq"/"hkv" q and kv projections, "a" merged heads, "f" MLP
/// width, "voc" vocabulary, "h"/"hd" heads and head width, "k" cached positions.
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "radix/io.h"
#include "radix/models/common.h"
#include "radix/module.h"
#include "radix/nn.h"

namespace radix::models::gemma2 {

/// Hyperparameters, as config.json (hidden_size, query_pre_attn_scalar, ...) or GGUF
/// (gemma2.embedding_length, gemma2.attn_logit_softcapping, ...) give them; defaults are
/// Gemma2Config's (HF) or llama.cpp's (GGUF).
struct Config {
  int64_t vocab = 256000;
  int64_t positions = 8192;
  int64_t width = 2304;
  int64_t heads = 8;
  int64_t kvHeads = 4;
  int64_t headDim = 256;
  int64_t layers = 26;
  int64_t ffn = 9216;
  double eps = 1e-6;
  double ropeBase = 10000;
  /// Scores are multiplied by queryScale^-1/2 (query_pre_attn_scalar).
  double queryScale = 256;
  /// Sliding window of the even layers (sliding_window).
  int64_t window = 4096;
  /// Soft caps; none when config.json gives null.
  std::optional<double> attnSoftcap = 50.0, finalSoftcap = 30.0;
  /// Added to the stored norm weights: 1 for HF files, 0 for GGUF (stored with the 1 added).
  double normShift = 1;
  /// The MLP's GELU: tanh approximation (gelu_pytorch_tanh) or exact (gelu).
  bool geluTanh = true;

  /// Config::fromCheckpoint(io::Checkpoint::open("gemma2.gguf")).normShift -> 0
  static Config fromCheckpoint(const io::Checkpoint& checkpoint, const ConfigValues& extra = {}) {
    const ConfigSource src{checkpoint, extra};
    const bool gguf = isGguf(checkpoint);
    Config c;
    const io::TensorInfo* embed = findTensor(checkpoint, {"embed_tokens.weight", "token_embd.weight"});
    if (embed == nullptr || embed->dims.size() != 2)
      throw Error("[gemma2] no 2-D token embedding (model.embed_tokens.weight or token_embd.weight) in the checkpoint");
    c.vocab = embed->dims[0];
    c.width = src.integer("gemma2", {"hidden_size", "gemma2.embedding_length"});
    c.layers = src.integer("gemma2", {"num_hidden_layers", "gemma2.block_count"});
    c.heads = src.integer("gemma2", {"num_attention_heads", "gemma2.attention.head_count"});
    c.kvHeads = src.integer("gemma2", {"num_key_value_heads", "gemma2.attention.head_count_kv"}, c.heads);
    c.ffn = src.integer("gemma2", {"intermediate_size", "gemma2.feed_forward_length"});
    c.positions = src.integer("gemma2", {"max_position_embeddings", "gemma2.context_length"}, 8192);
    c.eps = src.real("gemma2", {"rms_norm_eps", "gemma2.attention.layer_norm_rms_epsilon"}, 1e-6);
    c.ropeBase = src.real("gemma2", {"rope_theta", "gemma2.rope.freq_base"}, 10000);
    if (c.heads <= 0 || c.kvHeads <= 0 || c.width <= 0 || c.layers <= 0 || c.ffn <= 0 || c.heads % c.kvHeads != 0)
      throw Error("[gemma2] bad config: hidden_size " + std::to_string(c.width) + ", heads " + std::to_string(c.heads) +
                  ", kv heads " + std::to_string(c.kvHeads) + ", layers " + std::to_string(c.layers));
    c.headDim = gguf ? src.integer("gemma2", {"gemma2.attention.key_length"}, c.width / c.heads)
                     : src.integer("gemma2", {"head_dim"}, 256);
    c.window = src.integer("gemma2", {"sliding_window", "gemma2.attention.sliding_window"}, 4096);
    if (gguf)
      c.queryScale = double(c.layers == 46 ? c.width / c.heads : c.headDim);
    else
      c.queryScale = src.real("gemma2", {"query_pre_attn_scalar"}, 256);
    c.attnSoftcap = cap(src, checkpoint, gguf ? "gemma2.attn_logit_softcapping" : "attn_logit_softcapping", 50.0);
    c.finalSoftcap = cap(src, checkpoint, gguf ? "gemma2.final_logit_softcapping" : "final_logit_softcapping", 30.0);
    c.normShift = gguf ? 0 : 1;
    if (const io::MetaValue* act = checkpoint.meta("hidden_activation");
        act && act->kind() == io::MetaValue::Kind::string) {
      const std::string& name = act->asString();
      if (name != "gelu_pytorch_tanh" && name != "gelu")
        throw Error("[gemma2] hidden_activation \"" + name + "\" is not supported (gelu_pytorch_tanh, gelu)");
      c.geluTanh = name == "gelu_pytorch_tanh";
    }
    if (const io::MetaValue* bias = checkpoint.meta("attention_bias");
        bias && bias->kind() == io::MetaValue::Kind::boolean && bias->asBool())
      throw Error("[gemma2] attention_bias = true is not supported");
    if (c.headDim <= 0 || c.headDim % 2 != 0 || c.window <= 0 || !(c.queryScale > 0) ||
        (c.attnSoftcap && !(*c.attnSoftcap > 0)) || (c.finalSoftcap && !(*c.finalSoftcap > 0)))
      throw Error("[gemma2] bad config: head_dim " + std::to_string(c.headDim) + ", sliding_window " +
                  std::to_string(c.window) + ", query_pre_attn_scalar " + std::to_string(c.queryScale) +
                  " (soft caps must be > 0)");
    return c;
  }

 private:
  /// A soft cap: the key's value, none when config.json says null, `fallback` when absent.
  static std::optional<double> cap(const ConfigSource& src, const io::Checkpoint& checkpoint, std::string_view key,
                                   double fallback) {
    const io::MetaValue* v = checkpoint.meta(key);
    if (v && v->kind() == io::MetaValue::Kind::null && !src.extra.contains(key)) return std::nullopt;
    return src.real("gemma2", {key}, fallback);
  }
};

/// x / sqrt(mean(x²) + eps) * (shift + w), computed in f32 and converted back (Gemma's RMSNorm).
/// RMSNorm{w {d=8}, 1e-6, 1}.forward({s=3,d=8}) -> {s=3,d=8}
struct RMSNorm {
  Tensor weight;
  double eps = 1e-6;
  double shift = 1;

  Tensor forward(Tensor x) const {
    const Tensor xf = nn::detail::as(x, DType::f32);
    const Tensor y = xf.mul(xf.mul(xf).mean(-1).addConstant(eps).rsqrt());
    const Tensor scale = nn::detail::as(weight, DType::f32).addConstant(shift).broadcast(y.shape(), {x.rank() - 1});
    return nn::detail::as(y.mul(scale), x.dtype());
  }
};

/// Causal self-attention with RoPE, grouped KV heads, a scale, an optional window and soft cap.
struct Attention {
  nn::Linear q_proj, k_proj, v_proj;  // d -> hq, d -> hkv, d -> hkv
  nn::Linear o_proj;                  // a -> d
  int64_t heads = 8, kvHeads = 4;
  nn::Rope rope;
  double scale = 1.0 / 16;
  /// Set on the sliding layers.
  std::optional<int64_t> window;
  std::optional<double> softcap;

  /// x {s, d} at positions position.. -> q {q=s, h, hd}, k and v {h=kvHeads, k=s, hd}, with RoPE
  Qkv project(Tensor x, Tensor position) const {
    auto split = [&](const nn::Linear& l, Tag axis, int64_t n, Tag positions, bool rotate) {
      Tensor t = l.forward(x).splitAxis(axis, {{"h", n}, {"hd", -1}});  // {s, h, hd}
      if (rotate) t = rope.forward(t, position);
      t = t.rename({{"s", positions}});
      return positions == Tag("k") ? t.transpose({"h", "k", "hd"}) : t;  // the cache's layout
    };
    return Qkv{split(q_proj, "hq", heads, "q", true), split(k_proj, "hkv", kvHeads, "k", true),
               split(v_proj, "hkv", kvHeads, "k", false)};
  }

  /// q {q, h, hd} over a cache that holds its keys and values already -> {s=q, d}
  Tensor mix(Tensor q, const nn::KvCache& cache) const {
    nn::AttentionOptions options;
    options.scale = scale;
    options.softcap = softcap;
    if (window && *window < cache.k.dim("k")) options.window = *window;
    return o_proj.forward(cache.attend(q, options).rename({{"q", "s"}}).mergeAxes({"h", "hd"}, "a"));
  }
};

/// down(gelu(gate(x)) * up(x)), HF's names.
struct Mlp {
  nn::Linear gate_proj, up_proj, down_proj;
  bool tanh = true;

  /// {s, d} -> {s, d}
  Tensor forward(Tensor x) const {
    const Tensor gate = gate_proj.forward(x);
    return down_proj.forward((tanh ? gate.gelu() : gate.geluErf()).mul(up_proj.forward(x)));
  }
};

/// A decoder layer with norms before and after each block.
struct Layer {
  RMSNorm input_layernorm;
  Attention self_attn;
  RMSNorm post_attention_layernorm;
  RMSNorm pre_feedforward_layernorm;
  Mlp mlp;
  RMSNorm post_feedforward_layernorm;

  /// x {s, d} at `position` -> {s, d}, and the cache with this step's keys and values written
  /// in place.
  std::pair<Tensor, nn::KvCache> forward(Tensor x, Tensor position, nn::KvCache cache) const {
    const Qkv p = self_attn.project(input_layernorm.forward(x), position);
    cache = cache.update(p.k, p.v);
    x = x.add(post_attention_layernorm.forward(self_attn.mix(p.q, cache)));
    return {x.add(post_feedforward_layernorm.forward(mlp.forward(pre_feedforward_layernorm.forward(x)))), cache};
  }
};

/// The whole model; the output projection is tied to embed_tokens.
struct Model {
  nn::Embedding embed_tokens;  // {voc, d}
  std::vector<Layer> layers;
  RMSNorm norm;
  std::optional<double> finalSoftcap;
  /// Activations' dtype (weights are converted to it inside each layer).
  DType compute = DType::f32;

  /// One step, as gpt2::Model::forward: ids {s}:i32 (the first `length` real) at `position`.
  /// Returns the logits of token length - 1, {voc}:f32, and the cache.
  StepResult forward(Tensor ids, Tensor position, Tensor length, KvState cache) const {
    Tensor x = nn::detail::as(embed_tokens.forward(ids.withTags({"s"})), compute);
    x = x.mulConstant(std::sqrt(double(x.dim("d"))));  // the factor in the compute dtype, as HF rounds it
    position = position.convert(DType::i32);
    StepResult out;
    for (size_t i = 0; i < layers.size(); ++i) {
      nn::KvCache updated;
      std::tie(x, updated) = radix::call(layers[i], &Layer::forward, x, position, cache.layer(i, position));
      out.cache.k.push_back(updated.k);
      out.cache.v.push_back(updated.v);
    }
    const Tensor last = x.dynamicSlice1d("s", {.start = length.convert(DType::i32).addConstant(-1), .len = 1});
    Tensor logits = norm.forward(last).dot(embeddingTable(embed_tokens, compute), {"d"});
    if (finalSoftcap) logits = logits.divConstant(*finalSoftcap).tanh().mulConstant(*finalSoftcap);
    out.logits = nn::detail::as(logits.choose1d("s", 0), DType::f32);
    return out;
  }

  /// Placeholders with the dims and tags loadInto expects; layer i slides when i is even.
  /// Model::placeholders(config, DType::bf16).layers[0].self_attn.window -> 4096
  static Model placeholders(const Config& c, DType dtype) {
    auto t = [&](std::vector<int64_t> dims, std::vector<Tag> tags) { return Tensor(Shape(dims, dtype).withTags(tags)); };
    auto linear = [&](int64_t in, int64_t out, Tag inTag, Tag outTag) {
      return nn::Linear{t({out, in}, {outTag, inTag}), std::nullopt, inTag, outTag};
    };
    auto rms = [&] { return RMSNorm{t({c.width}, {"d"}), c.eps, c.normShift}; };
    const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
    Model m;
    m.embed_tokens = nn::Embedding{t({c.vocab, c.width}, {"voc", "d"})};
    for (int64_t i = 0; i < c.layers; ++i) {
      Attention attention{linear(c.width, q, "d", "hq"),
                          linear(c.width, kv, "d", "hkv"),
                          linear(c.width, kv, "d", "hkv"),
                          linear(q, c.width, "a", "d"),
                          c.heads,
                          c.kvHeads,
                          nn::Rope{nn::RopeLayout::rotateHalf, c.ropeBase},
                          1.0 / std::sqrt(c.queryScale),
                          i % 2 == 0 ? std::optional<int64_t>(c.window) : std::nullopt,
                          c.attnSoftcap};
      m.layers.push_back(Layer{rms(), std::move(attention), rms(), rms(),
                               Mlp{linear(c.width, c.ffn, "d", "f"), linear(c.width, c.ffn, "d", "f"),
                                   linear(c.ffn, c.width, "f", "d"), c.geluTanh},
                               rms()});
    }
    m.norm = rms();
    m.finalSoftcap = c.finalSoftcap;
    m.compute = dtype;
    return m;
  }

  /// How leaf paths map to GGUF names: "layers[3].pre_feedforward_layernorm.weight" ->
  /// "blk.3.ffn_norm.weight", "layers[3].post_feedforward_layernorm.weight" -> "blk.3.post_ffw_norm.weight".
  static std::string ggufName(std::string_view path) {
    auto [block, rest] = splitBlockPath(path, "layers");
    static const std::pair<const char*, const char*> kTop[] = {{"embed_tokens.", "token_embd."},
                                                               {"norm.", "output_norm."}};
    static const std::pair<const char*, const char*> kBlock[] = {
        {"input_layernorm.", "attn_norm."},
        {"self_attn.q_proj.", "attn_q."},
        {"self_attn.k_proj.", "attn_k."},
        {"self_attn.v_proj.", "attn_v."},
        {"self_attn.o_proj.", "attn_output."},
        {"post_attention_layernorm.", "post_attention_norm."},
        {"pre_feedforward_layernorm.", "ffn_norm."},
        {"mlp.gate_proj.", "ffn_gate."},
        {"mlp.up_proj.", "ffn_up."},
        {"mlp.down_proj.", "ffn_down."},
        {"post_feedforward_layernorm.", "post_ffw_norm."}};
    for (const auto& [from, to] : block < 0 ? std::span<const std::pair<const char*, const char*>>(kTop)
                                          : std::span<const std::pair<const char*, const char*>>(kBlock))
      if (rest.starts_with(from)) {
        std::string name = to + rest.substr(std::string_view(from).size());
        return block < 0 ? name : "blk." + std::to_string(block) + "." + name;
      }
    return block < 0 ? rest : "layers." + std::to_string(block) + "." + rest;
  }

  /// Loads a Gemma 2 checkpoint (HF folder or file, or GGUF) with weights in `dtype`; activations
  /// in `compute`. Model::load(cpu, io::Checkpoint::open("gemma-2-2b/"), DType::bf16)
  static Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype,
                    std::optional<DType> compute = {}, const ConfigValues& extra = {}) {
    if (tensorParallel(platform) > 1)
      throw Error("[gemma2] tensor parallel (a platform sharded over processes) is not supported for gemma2; GPT-2 and the Llama families (llama, mistral, qwen2, qwen3) are");
    const Config c = Config::fromCheckpoint(checkpoint, extra);
    Model m = placeholders(c, dtype);
    io::LoadSpec spec;
    spec.dtype = dtype;
    // Tied: llama.cpp's converter drops lm_head.weight (AutoAWQ files carry it), and so do we.
    spec.ignoreExtra = {"rotary_emb\\.inv_freq$", "^lm_head\\.weight$", "^output\\.weight$"};
    if (isGguf(checkpoint)) {
      spec.rename = [](std::string_view path) { return ggufName(path); };
      useStoredQuantization(m, checkpoint, spec.rename);
    }
    io::loadInto(platform, m, checkpoint, spec);
    m.compute = compute.value_or(dtype);
    return m;
  }
};

}  // namespace radix::models::gemma2
