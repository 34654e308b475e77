#pragma once
/// Phi-3 and Phi-3.5 (mini, medium; Phi-4-mini's layout too) as a plain struct over radix::nn,
/// with the field names of Hugging Face checkpoints ("model.layers.3.self_attn.qkv_proj.weight")
/// and a rename table to llama.cpp's "phi3" GGUF names ("blk.3.attn_qkv.weight").
///
/// The fused projections stay fused: qkv_proj {qkv = (heads + 2 kvHeads) * hd, d} and
/// gate_up_proj {gu = 2 ffn, d} (GGUF's attn_qkv and ffn_up) are bound as stored and their
/// outputs split by tag, so no weight is copied. RoPE is rotate-half in both file forms (llama.cpp
/// runs phi3 with NEOX RoPE and its converter permutes nothing), over the first rotaryDim values of
/// each head (partial_rotary_factor). longrope (Phi-3 128k, Phi-3.5) divides each frequency by a
/// per-frequency factor and scales cos and sin by an attention factor; like llama.cpp, the short
/// factors serve contexts (KV cache lengths) up to original_max_position_embeddings and the long
/// factors longer ones. A sliding window (sliding_window) masks keys older than the window, as
/// Hugging Face does.
///
/// Tags: "s" tokens, "d" width, "qkv" the fused projection, "a" merged heads, "gu" the fused MLP
/// input, "f" MLP width, "voc" vocabulary, "h"/"hd" heads and head width, "k" cached positions.
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

namespace radix::models::phi3 {

/// longrope scaling: frequency i is divided by shortFactor[i] (contexts up to originalContext)
/// or longFactor[i] (longer), and cos/sin are multiplied by attentionFactor.
struct LongRope {
  std::vector<double> shortFactor, longFactor;
  int64_t originalContext = 4096;
  double attentionFactor = 1;
};

/// Hyperparameters, as config.json (hidden_size, rope_scaling, ...) or GGUF (phi3.*, and the
/// rope_factors_long / rope_factors_short tensors) give them.
struct Config {
  int64_t vocab = 32064;
  int64_t positions = 4096;
  int64_t width = 3072;
  int64_t heads = 32;
  int64_t kvHeads = 32;
  int64_t headDim = 96;
  /// Leading values of each head that RoPE rotates (headDim * partial_rotary_factor).
  int64_t rotaryDim = 96;
  int64_t layers = 32;
  int64_t ffn = 8192;
  double eps = 1e-5;
  double ropeBase = 10000;
  /// sliding_window (Phi-3-mini-4k: 2047); none when absent, null or 0.
  std::optional<int64_t> window;
  std::optional<LongRope> longRope;
  bool tied = false;

  /// Reads and checks the config; "[phi3] ..." errors name what is missing or unsupported
  /// (rope_scaling types other than longrope, activations other than silu, factor lists of the
  /// wrong length). Config::fromCheckpoint(io::Checkpoint::open("phi3.gguf")).rotaryDim -> 96
  static Config fromCheckpoint(const io::Checkpoint& checkpoint, const ConfigValues& extra = {});
};

/// cos and sin {s, hd = rotaryDim / 2} of one step, shared by every layer.
struct RopeTables {
  Tensor cos, sin;
};

/// Rotary embedding with optional longrope factors; computed once per step.
struct RotaryEmbedding {
  double base = 10000;
  int64_t dims = 96;
  std::optional<LongRope> longRope;

  /// Tables for `s` positions from `offset` ({}:i32), in `dtype`, for a KV cache of `context`
  /// positions (which picks longrope's factors). Angles are computed in f32.
  /// rotary.tables(16, pos, 32, DType::f32).cos -> {s=16,hd=48}:f32
  RopeTables tables(int64_t s, const Tensor& offset, int64_t context, DType dtype) const {
    const int64_t half = dims / 2;
    const std::vector<double>* factors = nullptr;
    if (longRope) factors = context > longRope->originalContext ? &longRope->longFactor : &longRope->shortFactor;
    std::vector<double> inverse(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
      const double factor = factors ? (*factors)[size_t(i)] : 1.0;
      inverse[size_t(i)] = 1.0 / (factor * std::pow(base, 2.0 * double(i) / double(dims)));
    }
    const Tensor positions = Tensor::arange(s, DType::f32).withTags({"s"}).add(offset.convert(DType::f32));
    const Tensor frequencies = Tensor::constantTensor(Shape({half}, DType::f32).withTags({"hd"}), inverse);
    const Shape grid = Shape({s, half}, DType::f32).withTags({"s", "hd"});
    const Tensor angles = positions.broad(grid).mul(frequencies.broad(grid));
    const double scale = longRope ? longRope->attentionFactor : 1.0;
    return RopeTables{angles.cos().mulConstant(scale).convert(dtype), angles.sin().mulConstant(scale).convert(dtype)};
  }
};

/// Rotates the first 2 * tables' "hd" values of t {s, h, hd} (rotate-half pairs); the rest pass.
/// rotate({s=5,h=4,hd=16}, tables of hd=6) -> {s=5,h=4,hd=16}
inline Tensor rotate(const Tensor& t, const RopeTables& tables) {
  const int64_t half = tables.cos.dim("hd"), hd = t.dim("hd");
  const Tensor re = t.slice1d("hd", {.end = half}), im = t.slice1d("hd", {.start = half, .end = 2 * half});
  const Tensor cos = tables.cos.broad(re.shape()), sin = tables.sin.broad(re.shape());
  std::vector<Tensor> parts = {re.mul(cos).sub(im.mul(sin)), re.mul(sin).add(im.mul(cos))};
  if (2 * half < hd) parts.push_back(t.slice1d("hd", {.start = 2 * half}));
  return Tensor::concatenate(parts, "hd");
}

/// Causal self-attention with a fused {d -> q, k, v} projection and grouped KV heads.
struct Attention {
  nn::Linear qkv_proj;  // d -> qkv
  nn::Linear o_proj;    // a -> d
  int64_t heads = 32, kvHeads = 32, headDim = 96;
  std::optional<int64_t> window;

  /// x {s, d} -> q {q=s, h, hd}, k and v {h=kvHeads, k=s, hd}, with RoPE
  Qkv project(Tensor x, RopeTables rope) const {
    const std::vector<Tensor> parts = qkv_proj.forward(x).split(
        "qkv", {heads * headDim, kvHeads * headDim, kvHeads * headDim});  // {s, qkv} each
    auto heads3 = [&](const Tensor& t, int64_t n) { return t.splitAxis("qkv", {{"h", n}, {"hd", -1}}); };
    auto cached = [](const Tensor& t) { return t.rename({{"s", "k"}}).transpose({"h", "k", "hd"}); };
    return Qkv{rotate(heads3(parts[0], heads), rope).rename({{"s", "q"}}),
               cached(rotate(heads3(parts[1], kvHeads), rope)), cached(heads3(parts[2], kvHeads))};
  }

  /// q {q, h, hd} over a cache that holds its keys and values already -> {s=q, d}
  Tensor mix(Tensor q, const nn::KvCache& cache) const {
    nn::AttentionOptions options;
    if (window && *window < cache.k.dim("k")) options.window = *window;
    return o_proj.forward(cache.attend(q, options).rename({{"q", "s"}}).mergeAxes({"h", "hd"}, "a"));
  }
};

/// down(up * silu(gate)) with gate and up from one fused projection, HF's names.
struct Mlp {
  nn::Linear gate_up_proj;  // d -> gu (gate, then up)
  nn::Linear down_proj;     // f -> d

  /// {s, d} -> {s, d}
  Tensor forward(Tensor x) const {
    const std::vector<Tensor> gateUp = gate_up_proj.forward(x).chunkExact("gu", 2);
    return down_proj.forward(gateUp[0].silu().mul(gateUp[1]).rename({{"gu", "f"}}));
  }
};

/// A pre-norm decoder layer.
struct Layer {
  nn::RMSNorm input_layernorm;
  Attention self_attn;
  nn::RMSNorm post_attention_layernorm;
  Mlp mlp;

  /// x {s, d} with the step's RoPE tables -> {s, d}, and the cache with this step's keys and
  /// values written in place.
  std::pair<Tensor, nn::KvCache> forward(Tensor x, RopeTables rope, nn::KvCache cache) const {
    const Qkv p = self_attn.project(input_layernorm.forward(x), rope);
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
  RotaryEmbedding rotary;
  /// Activations' dtype (weights are converted to it inside each layer).
  DType compute = DType::f32;

  /// One step, as gpt2::Model::forward: ids {s}:i32 (the first `length` real) at `position`.
  /// Returns the logits of token length - 1, {voc}:f32, and the cache.
  StepResult forward(Tensor ids, Tensor position, Tensor length, KvState cache) const {
    Tensor x = nn::detail::as(embed_tokens.forward(ids.withTags({"s"})), compute);
    position = position.convert(DType::i32);
    const RopeTables rope = rotary.tables(ids.dim(0), position, cache.k.at(0).dim("k"), compute);
    StepResult out;
    for (size_t i = 0; i < layers.size(); ++i) {
      nn::KvCache updated;
      std::tie(x, updated) = radix::call(layers[i], &Layer::forward, x, rope, cache.layer(i, position));
      out.cache.k.push_back(updated.k);
      out.cache.v.push_back(updated.v);
    }
    const Tensor last = x.dynamicSlice1d("s", {.start = length.convert(DType::i32).addConstant(-1), .len = 1});
    const Tensor h = norm.forward(last);
    const Tensor logits = lm_head ? lm_head->forward(h) : h.dot(embeddingTable(embed_tokens, compute), {"d"});
    out.logits = nn::detail::as(logits.choose1d("s", 0), DType::f32);
    return out;
  }

  /// Placeholders with the dims and tags loadInto expects.
  /// Model::placeholders(config, DType::f32).layers[0].self_attn.qkv_proj.weight -> {qkv=9216,d=3072}
  static Model placeholders(const Config& c, DType dtype) {
    auto t = [&](std::vector<int64_t> dims, std::vector<Tag> tags) { return Tensor(Shape(dims, dtype).withTags(tags)); };
    auto linear = [&](int64_t in, int64_t out, Tag inTag, Tag outTag) {
      return nn::Linear{t({out, in}, {outTag, inTag}), std::nullopt, inTag, outTag};
    };
    auto rms = [&] { return nn::RMSNorm{t({c.width}, {"d"}), c.eps}; };
    const int64_t q = c.heads * c.headDim, qkv = (c.heads + 2 * c.kvHeads) * c.headDim;
    Model m;
    m.embed_tokens = nn::Embedding{t({c.vocab, c.width}, {"voc", "d"})};
    for (int64_t i = 0; i < c.layers; ++i)
      m.layers.push_back(Layer{rms(),
                               Attention{linear(c.width, qkv, "d", "qkv"), linear(q, c.width, "a", "d"), c.heads,
                                         c.kvHeads, c.headDim, c.window},
                               rms(), Mlp{linear(c.width, 2 * c.ffn, "d", "gu"), linear(c.ffn, c.width, "f", "d")}});
    m.norm = rms();
    if (!c.tied) m.lm_head = linear(c.width, c.vocab, "d", "voc");
    m.rotary = RotaryEmbedding{c.ropeBase, c.rotaryDim, c.longRope};
    m.compute = dtype;
    return m;
  }

  /// How leaf paths map to GGUF names: "layers[3].mlp.gate_up_proj.weight" -> "blk.3.ffn_up.weight".
  static std::string ggufName(std::string_view path) {
    auto [block, rest] = splitBlockPath(path, "layers");
    static const std::pair<const char*, const char*> kTop[] = {
        {"embed_tokens.", "token_embd."}, {"norm.", "output_norm."}, {"lm_head.", "output."}};
    static const std::pair<const char*, const char*> kBlock[] = {
        {"input_layernorm.", "attn_norm."},         {"self_attn.qkv_proj.", "attn_qkv."},
        {"self_attn.o_proj.", "attn_output."},      {"post_attention_layernorm.", "ffn_norm."},
        {"mlp.gate_up_proj.", "ffn_up."},           {"mlp.down_proj.", "ffn_down."}};
    for (const auto& [from, to] : block < 0 ? std::span<const std::pair<const char*, const char*>>(kTop)
                                          : std::span<const std::pair<const char*, const char*>>(kBlock))
      if (rest.starts_with(from)) {
        std::string name = to + rest.substr(std::string_view(from).size());
        return block < 0 ? name : "blk." + std::to_string(block) + "." + name;
      }
    return block < 0 ? rest : "layers." + std::to_string(block) + "." + rest;
  }

  /// Loads a Phi-3 checkpoint (HF folder or file, or GGUF) with weights in `dtype`; activations
  /// in `compute`. Model::load(cpu, io::Checkpoint::open("phi3.gguf"), DType::bf16)
  static Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype,
                    std::optional<DType> compute = {}, const ConfigValues& extra = {}) {
    if (tensorParallel(platform) > 1)
      throw Error("[phi3] tensor parallel (a platform sharded over processes) is not supported for phi3; GPT-2 and the Llama families (llama, mistral, qwen2, qwen3) are");
    const Config c = Config::fromCheckpoint(checkpoint, extra);
    Model m = placeholders(c, dtype);
    io::LoadSpec spec;
    spec.dtype = dtype;
    // The longrope factors are config values (read by Config), not weights.
    spec.ignoreExtra = {"rotary_emb\\.inv_freq$", "^rope_factors_(long|short)\\.weight$"};
    if (isGguf(checkpoint)) {
      spec.rename = [](std::string_view path) { return ggufName(path); };
      useStoredQuantization(m, checkpoint, spec.rename);
    }
    io::loadInto(platform, m, checkpoint, spec);
    m.compute = compute.value_or(dtype);
    return m;
  }
};

}  // namespace radix::models::phi3
