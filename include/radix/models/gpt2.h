#pragma once
/// GPT-2 as a plain struct over radix::nn, with the field names of Hugging Face checkpoints
/// ("h.3.attn.c_attn.weight"), so that io::loadInto binds it by name. Conv1D weights are stored
/// {in, out} in HF files and {out, in} in GGUF files: the placeholders are tagged accordingly and
/// nn::Linear contracts the axis tagged `in`, so neither layout is copied.
///
/// Tags: "s" tokens, "d" width, "qkv" the fused projection, "a" merged heads, "f" MLP width,
/// "voc" vocabulary, "p" positions, "h"/"hd" heads and head width, "k" cached positions.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "radix/io.h"
#include "radix/models/common.h"
#include "radix/module.h"
#include "radix/nn.h"

namespace radix::models::gpt2 {

/// Hyperparameters, as config.json (n_embd, ...) or GGUF (gpt2.embedding_length, ...) give them.
struct Config {
  int64_t vocab = 50257;
  int64_t positions = 1024;
  int64_t width = 768;
  int64_t heads = 12;
  int64_t layers = 12;
  int64_t inner = 3072;
  double eps = 1e-5;

  /// Config::fromCheckpoint(io::Checkpoint::open("gpt2/")).layers -> 12
  static Config fromCheckpoint(const io::Checkpoint& checkpoint, const ConfigValues& extra = {}) {
    const ConfigSource src{checkpoint, extra};
    Config c;
    const io::TensorInfo* wte = findTensor(checkpoint, {"wte.weight", "token_embd.weight"});
    if (wte == nullptr || wte->dims.size() != 2)
      throw Error("[gpt2] no 2-D token embedding (wte.weight or token_embd.weight) in the checkpoint");
    c.vocab = wte->dims[0];
    c.width = src.integer("gpt2", {"n_embd", "gpt2.embedding_length"});
    c.layers = src.integer("gpt2", {"n_layer", "gpt2.block_count"});
    c.heads = src.integer("gpt2", {"n_head", "gpt2.attention.head_count"});
    c.positions = src.integer("gpt2", {"n_positions", "n_ctx", "gpt2.context_length"});
    c.inner = src.integer("gpt2", {"n_inner", "gpt2.feed_forward_length"}, 4 * c.width);
    c.eps = src.real("gpt2", {"layer_norm_epsilon", "gpt2.attention.layer_norm_epsilon"}, 1e-5);
    if (c.width <= 0 || c.heads <= 0 || c.width % c.heads != 0 || c.layers <= 0 || c.positions <= 0 || c.inner <= 0)
      throw Error("[gpt2] bad config: n_embd " + std::to_string(c.width) + ", n_head " + std::to_string(c.heads) +
                  ", n_layer " + std::to_string(c.layers) + ", n_positions " + std::to_string(c.positions));
    return c;
  }
};

/// Causal self-attention with a fused {d -> 3d} projection, over a KV cache.
struct Attention {
  nn::Linear c_attn;  // d -> qkv
  nn::Linear c_proj;  // a -> d
  int64_t heads = 12;

  /// x {s, d} -> q {q=s, h, hd}, k and v {h, k=s, hd}
  Qkv project(Tensor x) const {
    const std::vector<Tensor> qkv = c_attn.forward(x).chunkExact("qkv", 3);
    auto split = [&](const Tensor& t, Tag positions) {
      return t.splitAxis("qkv", {{"h", heads}, {"hd", -1}}).rename({{"s", positions}});
    };
    auto cached = [&](const Tensor& t) { return split(t, "k").transpose({"h", "k", "hd"}); };  // the cache's layout
    return Qkv{split(qkv[0], "q"), cached(qkv[1]), cached(qkv[2])};
  }

  /// q {q, h, hd} over a cache that holds its keys and values already -> {s=q, d}
  Tensor mix(Tensor q, const nn::KvCache& cache) const {
    return c_proj.forward(cache.attend(q).rename({{"q", "s"}}).mergeAxes({"h", "hd"}, "a"));
  }
};

/// down(gelu(up(x))), GPT-2's names.
struct Mlp {
  nn::Linear c_fc;    // d -> f
  nn::Linear c_proj;  // f -> d

  /// {s, d} -> {s, d}
  Tensor forward(Tensor x) const { return c_proj.forward(c_fc.forward(x).gelu()); }
};

/// A pre-norm transformer block.
struct Block {
  nn::LayerNorm ln_1;
  Attention attn;
  nn::LayerNorm ln_2;
  Mlp mlp;

  /// x {s, d} -> {s, d}, and the cache with this step's keys and values written in place.
  std::pair<Tensor, nn::KvCache> forward(Tensor x, nn::KvCache cache) const {
    const Qkv p = attn.project(ln_1.forward(x));
    cache = cache.update(p.k, p.v);
    x = x.add(attn.mix(p.q, cache));
    return {x.add(mlp.forward(ln_2.forward(x))), cache};
  }
};

/// The whole model; the output projection is tied to wte.
struct Model {
  nn::Embedding wte;  // {voc, d}
  nn::Embedding wpe;  // {p, d}
  std::vector<Block> h;
  nn::LayerNorm ln_f;
  /// Activations' dtype (weights are converted to it inside each layer).
  DType compute = DType::f32;

  /// One step: `ids` {s}:i32 (padded; the first `length` are real) at positions position ..
  /// position + s - 1, with the cache written at `position`. Returns the logits of token
  /// length - 1, {voc}:f32, and the cache.
  /// compile(cpu, &Model::forward, m, ids {s=16}:i32, pos {}:i32, len {}:i32, cache)
  StepResult forward(Tensor ids, Tensor position, Tensor length, KvState cache) const {
    const int64_t s = ids.dim(0);
    ids = ids.withTags({"s"});
    const Tensor positions = Tensor::arange(s, DType::i32).withTags({"s"}).add(position.convert(DType::i32));
    Tensor x = nn::detail::as(wte.forward(ids), compute).add(nn::detail::as(wpe.forward(positions), compute));
    StepResult out;
    for (size_t i = 0; i < h.size(); ++i) {
      nn::KvCache updated;
      std::tie(x, updated) = radix::call(h[i], &Block::forward, x, cache.layer(i, position));
      out.cache.k.push_back(updated.k);
      out.cache.v.push_back(updated.v);
    }
    const Tensor last = x.dynamicSlice1d("s", {.start = length.convert(DType::i32).addConstant(-1), .len = 1});
    const Tensor logits = ln_f.forward(last).dot(embeddingTable(wte, compute), {"d"});  // {s=1, voc}
    out.logits = nn::detail::as(logits.choose1d("s", 0), DType::f32);
    return out;
  }

  /// Placeholders with the dims and tags loadInto expects. Conv1D weights are {in, out} in HF
  /// files (`transposed` false) and {out, in} in GGUF files.
  /// Model::placeholders(config, DType::f32, false).h[0].attn.c_attn.weight -> {d=768,qkv=2304}
  static Model placeholders(const Config& c, DType dtype, bool transposed) {
    auto t = [&](std::vector<int64_t> dims, std::vector<Tag> tags) {
      return Tensor(Shape(dims, dtype).withTags(tags));
    };
    auto linear = [&](int64_t in, int64_t out, Tag inTag, Tag outTag) {
      Tensor w = transposed ? t({out, in}, {outTag, inTag}) : t({in, out}, {inTag, outTag});
      return nn::Linear{w, t({out}, {outTag}), inTag, outTag};
    };
    auto norm = [&] { return nn::LayerNorm{t({c.width}, {"d"}), t({c.width}, {"d"}), c.eps}; };
    Model m;
    m.wte = nn::Embedding{t({c.vocab, c.width}, {"voc", "d"})};
    m.wpe = nn::Embedding{t({c.positions, c.width}, {"p", "d"})};
    for (int64_t i = 0; i < c.layers; ++i)
      m.h.push_back(Block{norm(),
                          Attention{linear(c.width, 3 * c.width, "d", "qkv"), linear(c.width, c.width, "a", "d"), c.heads},
                          norm(), Mlp{linear(c.width, c.inner, "d", "f"), linear(c.inner, c.width, "f", "d")}});
    m.ln_f = norm();
    m.compute = dtype;
    return m;
  }

  /// How leaf paths map to GGUF names (llama.cpp's gpt2 tensors): "h[3].attn.c_attn.weight" ->
  /// "blk.3.attn_qkv.weight", "wte.weight" -> "token_embd.weight".
  static std::string ggufName(std::string_view path) {
    auto [block, rest] = splitBlockPath(path, "h");
    static const std::pair<const char*, const char*> kTop[] = {
        {"wte.", "token_embd."}, {"wpe.", "position_embd."}, {"ln_f.", "output_norm."}};
    static const std::pair<const char*, const char*> kBlock[] = {
        {"ln_1.", "attn_norm."}, {"attn.c_attn.", "attn_qkv."}, {"attn.c_proj.", "attn_output."},
        {"ln_2.", "ffn_norm."},  {"mlp.c_fc.", "ffn_up."},      {"mlp.c_proj.", "ffn_down."}};
    for (const auto& [from, to] : block < 0 ? std::span<const std::pair<const char*, const char*>>(kTop)
                                          : std::span<const std::pair<const char*, const char*>>(kBlock))
      if (rest.starts_with(from)) {
        std::string name = to + rest.substr(std::string_view(from).size());
        return block < 0 ? name : "blk." + std::to_string(block) + "." + name;
      }
    return block < 0 ? rest : "h." + std::to_string(block) + "." + rest;
  }

  /// Loads a GPT-2 checkpoint (HF folder or file, or GGUF) with weights in `dtype`; activations
  /// in `compute`. On a platform sharded over N processes (tensorParallel), each process loads
  /// its part of a Megatron split: its heads' columns of c_attn, c_fc by columns, both c_proj by
  /// rows (summed with one all-reduce each); embeddings and norms whole.
  /// Model::load(cpu, io::Checkpoint::open("gpt2/"), DType::f32)
  static Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype,
                    std::optional<DType> compute = {}, const ConfigValues& extra = {}) {
    const Config c = Config::fromCheckpoint(checkpoint, extra);
    const bool gguf = isGguf(checkpoint);
    Model m = placeholders(c, dtype, gguf);
    io::LoadSpec spec;
    spec.dtype = dtype;
    // HF GPT-2 files carry the causal-mask buffers; GGUF files may repeat wte as output.weight.
    spec.ignoreExtra = {"attn\\.bias$", "attn\\.masked_bias$", "^lm_head\\.weight$", "^output\\.weight$"};
    if (gguf) {
      spec.rename = [](std::string_view path) { return ggufName(path); };
      useStoredQuantization(m, checkpoint, spec.rename);
    }
    const int parts = tensorParallel(platform);
    if (parts > 1) {
      checkTensorParallel("gpt2", parts, {{"heads", c.heads}, {"the MLP width", c.inner}});
      for (Block& b : m.h) {
        shardRows(b.attn.c_proj, parts, dtype);
        shardColumns(b.mlp.c_fc);
        shardRows(b.mlp.c_proj, parts, dtype);
      }
    }
    io::loadInto(platform, m, checkpoint, spec);
    if (parts > 1) {
      localizeTensorParallel(m, parts);
      const int part = platform.partitionIndex();
      for (Block& b : m.h) {
        nn::Linear& qkv = b.attn.c_attn;  // q | k | v along its output axis: this process's heads of each
        qkv.weight = takeGroupedShard(platform, qkv.weight, internal::axisTagged(qkv.weight, qkv.out, 0), 3, part, parts);
        if (qkv.bias) qkv.bias = takeGroupedShard(platform, *qkv.bias, 0, 3, part, parts);
        b.attn.heads /= parts;
      }
    }
    m.compute = compute.value_or(dtype);
    return m;
  }
};

}  // namespace radix::models::gpt2
