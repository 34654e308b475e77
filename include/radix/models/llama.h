#pragma once
/// Llama as a plain struct over radix::nn (RMSNorm, RoPE, SwiGLU, grouped KV heads, tied or
/// untied output), with the field names of Hugging Face checkpoints
/// ("model.layers.3.self_attn.q_proj.weight"; loadInto tries the "model." prefix) and a rename
/// table to llama.cpp's GGUF names ("blk.3.attn_q.weight"). Weights are {out, in} as stored.
/// The families that keep this layout (Mistral, Qwen2, Qwen3: radix/models/{mistral,qwen2,
/// qwen3}.h) are this struct with a Variant: biases on q/k/v, RMSNorm on q and k, a sliding
/// window, their GGUF arch name and RoPE layout.
///
/// RoPE: HF folders pair (x[i], x[i + hd/2]) ("rotate half"); llama.cpp's converter permutes the
/// rows of q and k of llama (and Mistral, which it writes as "llama") so that GGUF files pair
/// (x[2i], x[2i+1]) (interleaved), but not those of qwen2/qwen3 (NEOX RoPE: rotate half in
/// GGUF too). The layout follows the file format and the variant.
///
/// Tags: "s" tokens, "d" width, "hq"/"hkv" q and kv projections, "a" merged heads, "f" MLP
/// width, "voc" vocabulary, "h"/"hd" heads and head width, "k" cached positions.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "radix/io.h"
#include "radix/models/common.h"
#include "radix/module.h"
#include "radix/nn.h"

namespace radix::models::llama {

/// What a family with Llama's layout changes (radix/models/{mistral,qwen2,qwen3}.h).
/// Variant{.name = "qwen2", .qkvBias = true, .ggufRope = nn::RopeLayout::rotateHalf}
struct Variant {
  /// The "[name]" of errors and the prefix of GGUF keys ("qwen2.embedding_length").
  std::string name = "llama";
  /// Biases on q_proj, k_proj and v_proj (Qwen2). Without it, biases load where the checkpoint
  /// has them (Llama's attention_bias).
  bool qkvBias = false;
  /// RMSNorm over head_dim on q and k, before RoPE (Qwen3's q_norm / k_norm).
  bool qkNorm = false;
  /// Reads sliding_window (HF) / <name>.attention.sliding_window (GGUF): Mistral.
  bool slidingWindow = true;
  /// RoPE pairs in GGUF files: interleaved where llama.cpp's converter permutes q and k
  /// (LLAMA_ROPE_TYPE_NORM), rotateHalf where it does not (LLAMA_ROPE_TYPE_NEOX).
  nn::RopeLayout ggufRope = nn::RopeLayout::interleaved;
};

/// Hyperparameters, as config.json (hidden_size, ...) or GGUF (llama.embedding_length, ...) give them.
struct Config {
  int64_t vocab = 32000;
  int64_t positions = 2048;
  int64_t width = 4096;
  int64_t heads = 32;
  int64_t kvHeads = 32;
  int64_t headDim = 128;
  int64_t layers = 32;
  int64_t ffn = 11008;
  double eps = 1e-6;
  double ropeBase = 10000;
  bool tied = false;
  nn::RopeLayout rope = nn::RopeLayout::rotateHalf;
  /// Biases on q/k/v and on o_proj.
  bool qkvBias = false, outBias = false;
  /// q_norm / k_norm over head_dim.
  bool qkNorm = false;
  /// Keys visible to a query: the last `window` positions (sliding_window when smaller than
  /// the context), or all.
  std::optional<int64_t> window;

  /// Config::fromCheckpoint(io::Checkpoint::open("llama.gguf")).kvHeads -> 8
  /// Config::fromCheckpoint(io::Checkpoint::open("qwen2/"), {}, qwen2::variant()).qkvBias -> true
  static Config fromCheckpoint(const io::Checkpoint& checkpoint, const ConfigValues& extra = {},
                               const Variant& variant = {}) {
    const ConfigSource src{checkpoint, extra};
    const std::string& op = variant.name;
    auto key = [&](const char* suffix) { return variant.name + "." + suffix; };
    Config c;
    const io::TensorInfo* embed = findTensor(checkpoint, {"embed_tokens.weight", "token_embd.weight"});
    if (embed == nullptr || embed->dims.size() != 2)
      throw Error("[" + op + "] no 2-D token embedding (model.embed_tokens.weight or token_embd.weight) in the checkpoint");
    c.vocab = embed->dims[0];
    c.width = src.integer(op, {"hidden_size", key("embedding_length")});
    c.layers = src.integer(op, {"num_hidden_layers", key("block_count")});
    c.heads = src.integer(op, {"num_attention_heads", key("attention.head_count")});
    c.kvHeads = src.integer(op, {"num_key_value_heads", key("attention.head_count_kv")}, c.heads);
    c.ffn = src.integer(op, {"intermediate_size", key("feed_forward_length")});
    c.positions = src.integer(op, {"max_position_embeddings", key("context_length")}, 2048);
    c.eps = src.real(op, {"rms_norm_eps", key("attention.layer_norm_rms_epsilon")}, 1e-6);
    c.ropeBase = src.real(op, {"rope_theta", key("rope.freq_base")}, 10000);
    if (c.heads <= 0 || c.kvHeads <= 0 || c.width <= 0 || c.layers <= 0 || c.ffn <= 0 || c.positions <= 0 ||
        c.heads % c.kvHeads != 0 || (c.width % c.heads != 0 && !src.has({"head_dim", key("attention.key_length")})))
      throw Error("[" + op + "] bad config: hidden_size " + std::to_string(c.width) + ", heads " +
                  std::to_string(c.heads) + ", kv heads " + std::to_string(c.kvHeads) + ", layers " +
                  std::to_string(c.layers));
    c.headDim = src.integer(op, {"head_dim", key("attention.key_length"), key("rope.dimension_count")},
                            c.width / c.heads);
    if (c.headDim <= 0 || c.headDim % 2 != 0)
      throw Error("[" + op + "] bad config: head_dim " + std::to_string(c.headDim) + " (RoPE needs it even and > 0)");
    const bool gguf = isGguf(checkpoint);
    c.tied = findTensor(checkpoint, {"lm_head.weight", "output.weight"}) == nullptr;
    c.rope = gguf ? variant.ggufRope : nn::RopeLayout::rotateHalf;
    c.qkvBias = variant.qkvBias || findTensor(checkpoint, {"layers.0.self_attn.q_proj.bias", "blk.0.attn_q.bias"});
    c.outBias = findTensor(checkpoint, {"layers.0.self_attn.o_proj.bias", "blk.0.attn_output.bias"}) != nullptr;
    c.qkNorm = variant.qkNorm;
    if (variant.slidingWindow) {
      const int64_t window = src.integer(op, {"sliding_window", key("attention.sliding_window")}, 0);
      if (window < 0) throw Error("[" + op + "] bad config: sliding_window " + std::to_string(window));
      if (window > 0 && window < c.positions) c.window = window;
    } else if (src.integer(op, {"use_sliding_window"}, 0) != 0) {
      throw Error("[" + op + "] use_sliding_window is not supported (the config sets it)");
    }
    return c;
  }
};

/// Causal self-attention with RoPE and grouped KV heads, over a KV cache.
/// With q_norm / k_norm (Qwen3), q and k are RMS-normalized over "hd" before RoPE; with a
/// window (Mistral), each query sees the last `window` positions.
struct Attention {
  nn::Linear q_proj, k_proj, v_proj;  // d -> hq, d -> hkv, d -> hkv
  nn::Linear o_proj;                  // a -> d
  int64_t heads = 32, kvHeads = 32;
  nn::Rope rope;
  std::optional<nn::RMSNorm> q_norm, k_norm;  // {hd}
  std::optional<int64_t> window;

  /// x {s, d} at positions position.. -> q {q=s, h, hd}, k and v {h=kvHeads, k=s, hd}, with RoPE
  Qkv project(Tensor x, Tensor position) const {
    auto split = [&](const nn::Linear& l, Tag axis, int64_t n, Tag positions, const std::optional<nn::RMSNorm>* norm) {
      Tensor t = l.forward(x).splitAxis(axis, {{"h", n}, {"hd", -1}});  // {s, h, hd}
      if (norm != nullptr) {
        if (*norm) t = (*norm)->forward(t);
        t = rope.forward(t, position);
      }
      t = t.rename({{"s", positions}});
      return positions == Tag("k") ? t.transpose({"h", "k", "hd"}) : t;  // the cache's layout
    };
    return Qkv{split(q_proj, "hq", heads, "q", &q_norm), split(k_proj, "hkv", kvHeads, "k", &k_norm),
               split(v_proj, "hkv", kvHeads, "k", nullptr)};
  }

  /// q {q, h, hd} over a cache that holds its keys and values already -> {s=q, d}
  Tensor mix(Tensor q, const nn::KvCache& cache) const {
    nn::AttentionOptions options;
    options.window = window;
    return o_proj.forward(cache.attend(q, options).rename({{"q", "s"}}).mergeAxes({"h", "hd"}, "a"));
  }
};

/// down(silu(gate(x)) * up(x)), HF's names.
struct Mlp {
  nn::Linear gate_proj, up_proj, down_proj;

  /// {s, d} -> {s, d}
  Tensor forward(Tensor x) const { return down_proj.forward(gate_proj.forward(x).silu().mul(up_proj.forward(x))); }
};

/// A pre-norm decoder layer.
struct Layer {
  nn::RMSNorm input_layernorm;
  Attention self_attn;
  nn::RMSNorm post_attention_layernorm;
  Mlp mlp;

  /// x {s, d} at `position` -> {s, d}, and the cache with this step's keys and values written
  /// in place.
  std::pair<Tensor, nn::KvCache> forward(Tensor x, Tensor position, nn::KvCache cache) const {
    const Qkv p = self_attn.project(input_layernorm.forward(x), position);
    cache = cache.update(p.k, p.v);
    x = x.add(self_attn.mix(p.q, cache));
    return {x.add(mlp.forward(post_attention_layernorm.forward(x))), cache};
  }
};

/// The whole model; without lm_head the output projection is tied to embed_tokens.
struct Model {
  nn::Embedding embed_tokens;  // {voc, d}
  std::vector<Layer> layers;
  nn::RMSNorm norm;
  std::optional<nn::Linear> lm_head;  // d -> voc
  /// Tensor parallel: lm_head holds this process's rows of the vocabulary (tied: a view of
  /// embed_tokens' rows), whose logits are all-gathered.
  bool vocabParallel = false;
  /// Activations' dtype (weights are converted to it inside each layer).
  DType compute = DType::f32;

  /// One step, as gpt2::Model::forward: ids {s}:i32 (the first `length` real) at `position`.
  /// Returns the logits of token length - 1, {voc}:f32, and the cache.
  StepResult forward(Tensor ids, Tensor position, Tensor length, KvState cache) const {
    Tensor x = nn::detail::as(embed_tokens.forward(ids.withTags({"s"})), compute);
    position = position.convert(DType::i32);
    StepResult out;
    for (size_t i = 0; i < layers.size(); ++i) {
      nn::KvCache updated;
      std::tie(x, updated) = radix::call(layers[i], &Layer::forward, x, position, cache.layer(i, position));
      out.cache.k.push_back(updated.k);
      out.cache.v.push_back(updated.v);
    }
    const Tensor last = x.dynamicSlice1d("s", {.start = length.convert(DType::i32).addConstant(-1), .len = 1});
    const Tensor h = norm.forward(last);
    Tensor logits = lm_head ? lm_head->forward(h) : h.dot(embeddingTable(embed_tokens, compute), {"d"});
    if (vocabParallel) logits = allGather(logits, "voc");
    out.logits = nn::detail::as(logits.choose1d("s", 0), DType::f32);
    return out;
  }

  /// Placeholders with the dims and tags loadInto expects.
  /// Model::placeholders(config, DType::bf16).layers[0].self_attn.k_proj.weight -> {hkv=256,d=2048}:bf16
  static Model placeholders(const Config& c, DType dtype) {
    auto t = [&](std::vector<int64_t> dims, std::vector<Tag> tags) { return Tensor(Shape(dims, dtype).withTags(tags)); };
    auto linear = [&](int64_t in, int64_t out, Tag inTag, Tag outTag, bool bias = false) {
      return nn::Linear{t({out, in}, {outTag, inTag}), bias ? std::optional(t({out}, {outTag})) : std::nullopt, inTag,
                        outTag};
    };
    auto rms = [&] { return nn::RMSNorm{t({c.width}, {"d"}), c.eps}; };
    auto headNorm = [&] {
      return c.qkNorm ? std::optional(nn::RMSNorm{t({c.headDim}, {"hd"}), c.eps}) : std::nullopt;
    };
    const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
    Model m;
    m.embed_tokens = nn::Embedding{t({c.vocab, c.width}, {"voc", "d"})};
    for (int64_t i = 0; i < c.layers; ++i)
      m.layers.push_back(Layer{rms(),
                               Attention{linear(c.width, q, "d", "hq", c.qkvBias), linear(c.width, kv, "d", "hkv", c.qkvBias),
                                         linear(c.width, kv, "d", "hkv", c.qkvBias), linear(q, c.width, "a", "d", c.outBias),
                                         c.heads, c.kvHeads, nn::Rope{c.rope, c.ropeBase}, headNorm(), headNorm(),
                                         c.window},
                               rms(), Mlp{linear(c.width, c.ffn, "d", "f"), linear(c.width, c.ffn, "d", "f"),
                                          linear(c.ffn, c.width, "f", "d")}});
    m.norm = rms();
    if (!c.tied) m.lm_head = linear(c.width, c.vocab, "d", "voc");
    m.compute = dtype;
    return m;
  }

  /// How leaf paths map to GGUF names: "layers[3].self_attn.q_proj.weight" -> "blk.3.attn_q.weight".
  static std::string ggufName(std::string_view path) {
    auto [block, rest] = splitBlockPath(path, "layers");
    static const std::pair<const char*, const char*> kTop[] = {
        {"embed_tokens.", "token_embd."}, {"norm.", "output_norm."}, {"lm_head.", "output."}};
    static const std::pair<const char*, const char*> kBlock[] = {
        {"input_layernorm.", "attn_norm."},     {"self_attn.q_proj.", "attn_q."},  {"self_attn.k_proj.", "attn_k."},
        {"self_attn.v_proj.", "attn_v."},       {"self_attn.o_proj.", "attn_output."},
        {"self_attn.q_norm.", "attn_q_norm."},  {"self_attn.k_norm.", "attn_k_norm."},
        {"post_attention_layernorm.", "ffn_norm."}, {"mlp.gate_proj.", "ffn_gate."}, {"mlp.up_proj.", "ffn_up."},
        {"mlp.down_proj.", "ffn_down."}};
    for (const auto& [from, to] : block < 0 ? std::span<const std::pair<const char*, const char*>>(kTop)
                                          : std::span<const std::pair<const char*, const char*>>(kBlock))
      if (rest.starts_with(from)) {
        std::string name = to + rest.substr(std::string_view(from).size());
        return block < 0 ? name : "blk." + std::to_string(block) + "." + name;
      }
    return block < 0 ? rest : "layers." + std::to_string(block) + "." + rest;
  }

  /// Loads a Llama checkpoint (HF folder or file, or GGUF) with weights in `dtype`; activations
  /// in `compute`; `variant` for the families of the same layout. On a platform sharded over N
  /// processes (tensorParallel), each process loads its part of a Megatron split: q/k/v and
  /// gate/up by rows (its heads and its block of the MLP), o_proj and down_proj by columns
  /// (summed with one all-reduce each), the output projection by vocabulary rows when the
  /// partitions divide the vocabulary (its logits all-gathered; a tied one uses its rows of the
  /// embedding in place); embeddings and norms whole.
  /// Model::load(cpu, io::Checkpoint::open("llama.gguf"), DType::bf16)
  static Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype,
                    std::optional<DType> compute = {}, const ConfigValues& extra = {}, const Variant& variant = {}) {
    const Config c = Config::fromCheckpoint(checkpoint, extra, variant);
    Model m = placeholders(c, dtype);
    io::LoadSpec spec;
    spec.dtype = dtype;
    spec.ignoreExtra = {"rotary_emb\\.inv_freq$", "^rope_freqs\\.weight$"};
    if (isGguf(checkpoint)) {
      spec.rename = [](std::string_view path) { return ggufName(path); };
      useStoredQuantization(m, checkpoint, spec.rename);
    }
    const int parts = tensorParallel(platform);
    if (parts > 1) {
      checkTensorParallel(variant.name, parts, {{"heads", c.heads}, {"kv heads", c.kvHeads}, {"the MLP width", c.ffn}});
      for (Layer& l : m.layers) {
        for (nn::Linear* col : {&l.self_attn.q_proj, &l.self_attn.k_proj, &l.self_attn.v_proj, &l.mlp.gate_proj,
                                &l.mlp.up_proj})
          shardColumns(*col);
        shardRows(l.self_attn.o_proj, parts, dtype);
        shardRows(l.mlp.down_proj, parts, dtype);
      }
      if (m.lm_head && c.vocab % parts == 0) shardColumns(*m.lm_head);
    }
    io::loadInto(platform, m, checkpoint, spec);
    if (parts > 1) {
      localizeTensorParallel(m, parts);
      for (Layer& l : m.layers) l.self_attn.heads /= parts, l.self_attn.kvHeads /= parts;
      if (c.vocab % parts == 0) {
        if (!m.lm_head) m.lm_head = vocabRows(platform, m.embed_tokens, platform.partitionIndex(), parts);
        m.vocabParallel = true;
      }
    }
    m.compute = compute.value_or(dtype);
    return m;
  }
};

/// The family's config reader and loader, as the engine's registry calls them
/// (src/models/generate.cpp): llama::config(checkpoint, {}).layers -> 32
inline Config config(const io::Checkpoint& checkpoint, const ConfigValues& extra) {
  return Config::fromCheckpoint(checkpoint, extra);
}
/// llama::load(cpu, checkpoint, DType::f32, {}, {}).layers.size() -> 32
inline Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype, std::optional<DType> compute,
                  const ConfigValues& extra) {
  return Model::load(platform, checkpoint, dtype, compute, extra);
}

}  // namespace radix::models::llama
