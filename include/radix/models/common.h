#pragma once
/// Pieces shared by the model structs of radix/models/: the KV cache of a whole model, what one
/// step returns, and reading a config from checkpoint metadata (HF config.json or GGUF keys).
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "radix/error.h"
#include "radix/io.h"
#include "radix/detail/visit.h"
#include "radix/nn.h"
#include "radix/quant.h"
#include "radix/tensor.h"

namespace radix::models {

/// Keys and values of past positions, one {h=kvHeads, k=context, hd} tensor per layer each,
/// written in place by a step (their buffers are donated to the step's results). Heads first:
/// each head's keys are one contiguous {k, hd} matrix, which attention reads without a copy.
/// KvState{{k0, k1}, {v0, v1}}
struct KvState {
  std::vector<Tensor> k, v;

  /// Zero-filled buffers for `layers` layers: KvState::zeros(cpu, 12, 1024, 12, 64, DType::f32)
  static KvState zeros(const Platform& platform, int64_t layers, int64_t context, int64_t kvHeads, int64_t headDim,
                       DType dtype) {
    const Shape shape = Shape({kvHeads, context, headDim}, dtype).withTags({"h", "k", "hd"});
    const std::vector<uint8_t> bytes(shape.byteSize(), 0);
    KvState s;
    for (int64_t i = 0; i < 2 * layers; ++i)
      (i < layers ? s.k : s.v).push_back(Tensor::fromBytes(platform, shape, bytes.data(), bytes.size()));
    return s;
  }

  /// Layer i as an nn::KvCache whose next keys go at `position`.
  nn::KvCache layer(size_t i, const Tensor& position) const { return nn::KvCache{k.at(i), v.at(i), position}; }
};

/// One step's attention inputs: queries {q, h, hd}, and the new keys and values in the cache's
/// layout {h=kvHeads, k, hd}.
struct Qkv {
  Tensor q, k, v;
};

/// What one step of a model returns: the logits of the last real token, {voc}:f32, and the
/// updated cache.
struct StepResult {
  Tensor logits;
  KvState cache;
};

/// Numeric config values given apart from a checkpoint (the numbers of a config.json that is
/// not in the checkpoint's folder, such as an embedded model's); they win over its metadata.
using ConfigValues = std::map<std::string, double, std::less<>>;

/// Where Config::fromCheckpoint reads hyperparameters: the checkpoint's metadata (config.json
/// keys for HF folders, GGUF keys), and `extra` first.
struct ConfigSource {
  const io::Checkpoint& checkpoint;
  const ConfigValues& extra;

  /// An integer value: the first key present (and not null), else `fallback`, else a "[op] ..."
  /// error naming the keys. src.integer("gpt2", {"n_layer", "gpt2.block_count"}) -> 12
  int64_t integer(std::string_view op, std::initializer_list<std::string_view> keys,
                  std::optional<int64_t> fallback = {}) const {
    return static_cast<int64_t>(number(op, keys, fallback ? std::optional<double>(double(*fallback)) : std::nullopt, true));
  }
  /// True when one of the keys is present and not null: src.has({"head_dim"}) -> false
  bool has(std::initializer_list<std::string_view> keys) const {
    for (std::string_view key : keys) {
      if (extra.contains(key)) return true;
      const io::MetaValue* v = checkpoint.meta(key);
      if (v != nullptr && v->kind() != io::MetaValue::Kind::null) return true;
    }
    return false;
  }
  /// A real value, as integer(): src.real("llama", {"rms_norm_eps"}, 1e-6) -> 1e-5
  double real(std::string_view op, std::initializer_list<std::string_view> keys, std::optional<double> fallback = {}) const {
    return number(op, keys, fallback, false);
  }

 private:
  double number(std::string_view op, std::initializer_list<std::string_view> keys, std::optional<double> fallback,
                bool integral) const {
    for (std::string_view key : keys) {
      if (auto it = extra.find(key); it != extra.end()) return it->second;
      const io::MetaValue* v = checkpoint.meta(key);
      if (v == nullptr || v->kind() == io::MetaValue::Kind::null) continue;
      return integral ? static_cast<double>(v->asInt()) : v->asFloat();
    }
    if (fallback) return *fallback;
    std::string names;
    for (std::string_view k : keys) names += (names.empty() ? "" : ", ") + std::string(k);
    throw Error("[" + std::string(op) + "] the checkpoint's config has none of " + names);
  }
};

/// The stored tensor of the first name present (with the "transformer." / "model." prefixes
/// tried too), or nullptr: findTensor(ckpt, {"wte.weight", "token_embd.weight"})
inline const io::TensorInfo* findTensor(const io::Checkpoint& checkpoint, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names)
    for (std::string_view prefix : {"", "transformer.", "model."})
      if (const io::TensorInfo* t = checkpoint.find(std::string(prefix) + std::string(name))) return t;
  return nullptr;
}

/// True for a GGUF checkpoint ("blk.N.*" tensor names, "<arch>.*" metadata keys).
inline bool isGguf(const io::Checkpoint& checkpoint) { return checkpoint.format() == "gguf"; }

/// The "h[3]." / "layers[3]." prefix of a leaf path split into (block index, rest), or
/// (-1, path): splitBlockPath("h[3].attn.c_attn.weight", "h") -> {3, "attn.c_attn.weight"}
inline std::pair<int64_t, std::string> splitBlockPath(std::string_view path, std::string_view field) {
  if (path.starts_with(".")) path.remove_prefix(1);
  const std::string open = std::string(field) + "[";
  if (!path.starts_with(open)) return {-1, std::string(path)};
  const size_t close = path.find("].", open.size());
  if (close == std::string_view::npos) return {-1, std::string(path)};
  return {std::stoll(std::string(path.substr(open.size(), close - open.size()))), std::string(path.substr(close + 2))};
}


namespace internal {
/// Calls fn(path, layer) for every nn::Linear and nn::Embedding of a model struct, with
/// the path loadInto gives its weight's parent ("layers[3].self_attn.q_proj").
template <class F, class T>
void walkLayers(F& fn, radix::detail::PathBuilder& path, T& x) {
  using U = std::remove_cv_t<T>;
  auto part = [&](auto& y, const radix::detail::PathStep& step) {
    path.enter(step);
    walkLayers(fn, path, y);
    path.leave();
  };
  if constexpr (std::is_same_v<U, nn::Linear> || std::is_same_v<U, nn::Embedding>) {
    fn(path.path.starts_with('.') ? path.path.substr(1) : path.path, x);
  } else if constexpr (radix::detail::IsVector<U>::value || radix::detail::IsStdArray<U>::value) {
    size_t i = 0;
    for (auto& e : x) part(e, radix::detail::PathStep{{}, i++, false});
  } else if constexpr (radix::detail::IsOptional<U>::value) {
    if (x) walkLayers(fn, path, *x);
  } else if constexpr (std::is_class_v<U> && std::is_aggregate_v<U>) {
    boost::pfr::for_each_field(x, [&](auto& field, auto index) {
      constexpr size_t I = decltype(index)::value;
      part(field, radix::detail::PathStep{radix::detail::fieldName<U, I>(), I, true});
    });
  }
}
}  // namespace internal

/// Calls fn(path, layer) for every nn::Linear and nn::Embedding of `model` (a struct over nn):
/// forEachLayer(m, [](const std::string& path, auto& layer) { ... })  // "layers[0].mlp.up_proj"
template <class Model, class F>
void forEachLayer(Model& model, F&& fn) {
  radix::detail::PathBuilder path;
  internal::walkLayers(fn, path, model);
}

/// Makes the placeholders of `model` take a GGUF file's quantized weights as they are stored:
/// each nn::Linear / nn::Embedding whose weight is stored in a block type Radix computes in
/// (io::TensorInfo::quant: Q8_0 .. Q6_K, any mix) gets `quant` and `cols` set and its weight
/// placeholder replaced by the packed u8 {rows, rowBytes} (tags kept), which loadInto binds
/// zero-copy from the mmap. `rename` maps leaf paths to stored names (the loader's LoadSpec).
/// useStoredQuantization(m, ckpt, &llama::Model::ggufName)  // q_proj: {hq=64,d=144}:u8, q4_k
template <class Model>
void useStoredQuantization(Model& model, const io::Checkpoint& checkpoint,
                           const std::function<std::string(std::string_view)>& rename) {
  forEachLayer(model, [&](const std::string& path, auto& layer) {
    const io::TensorInfo* t = checkpoint.find(rename(path + ".weight"));
    const Shape& want = layer.weight.shape();
    if (t == nullptr || t->quant == QuantType::none || want.rank() != 2 || t->dims != want.dims()) return;
    std::vector<Tag> tags;
    for (int64_t a = 0; a < want.rank(); ++a) tags.push_back(want.tag(a));
    layer.quant = t->quant;
    layer.cols = want.dim(1);
    Shape packed({want.dim(0), rowBytes(t->quant, want.dim(1))}, DType::u8);
    layer.weight = Tensor(want.isTagged() ? packed.withTags(tags) : packed);
  });
}

/// An embedding's table {voc, d} in `dtype` for a tied output projection: dequantized in the
/// graph (fused into the consuming dot) when the embedding is quantized.
/// embeddingTable(m.wte, DType::f32) -> {voc=50257,d=768}:f32
inline Tensor embeddingTable(const nn::Embedding& e, DType dtype) {
  if (e.quant == QuantType::none) return nn::detail::as(e.weight, dtype);
  QuantizedTensor q;
  q.data = e.weight;
  q.type = e.quant;
  q.cols = e.cols;
  const Tensor w = q.dequantize(dtype);
  return w.withTags({e.weight.shape().isTagged() ? e.weight.shape().tag(0) : Tag("voc"),
                     e.weight.shape().isTagged() ? e.weight.shape().tag(1) : Tag("d")});
}

/// The partitions of tensor parallelism on `platform`: numPartitions on a platform sharded over
/// processes (docs/sharding.md), else 1. Under `mpirun -np 2`:
/// tensorParallel(cpu.withSharding({.numPartitions = 2})) -> 2
inline int tensorParallel(const Platform& platform) {
  const Sharding& s = platform.sharding();
  return s.enabled && s.numPartitions > 1 ? s.numPartitions : 1;
}

namespace internal {
inline int64_t axisTagged(const Tensor& t, Tag tag, int64_t fallback) {
  const int64_t a = t.shape().hasTag(tag);
  return a >= 0 ? a : fallback;
}

/// Visits every Tensor leaf of a model struct and makes it this process's shard (Tensor::local).
struct Localize {
  void tensor(Tensor& t) {
    if (t.isBound()) t = t.local();
  }
  template <class T>
  void value(T&) {}
  void size(size_t) {}
};
}  // namespace internal

/// Marks a Linear placeholder column-parallel (Megatron): its output axis, and its bias, are
/// split over the partitions; each process computes its block of the outputs.
/// shardColumns(q_proj)  // weight {hq=256,d=64} sharded on hq
inline void shardColumns(nn::Linear& l) {
  l.weight = l.weight.withSharding({internal::axisTagged(l.weight, l.out, 0)});
  if (l.bias) l.bias = l.bias->withSharding({0});
}

/// Marks a Linear placeholder row-parallel: its input axis is split over `parts` partitions,
/// each process multiplies its block of the inputs, and the partial products are summed
/// (nn::Linear::rowParallel, set by localizeTensorParallel); the bias is not split. A quantized
/// weight whose rows would be cut inside a block is loaded as `dtype` floats instead.
/// shardRows(o_proj, 2, DType::f32)  // weight {d=64,a=256} sharded on a
inline void shardRows(nn::Linear& l, int parts, DType dtype) {
  if (l.quant != QuantType::none && l.cols % (parts * blockElems(l.quant)) != 0) {
    const Shape& packed = l.weight.shape();
    Shape floats = Shape({packed.dim(0), l.cols}, dtype);
    l.weight = Tensor(packed.isTagged() ? floats.withTags({packed.tag(0), packed.tag(1)}) : floats);
    l.quant = QuantType::none;
    l.cols = 0;
  }
  l.weight = l.weight.withSharding({internal::axisTagged(l.weight, l.in, 1)});
  l.rowParallel = true;
}

/// After loadInto of a model whose placeholders were sharded (shardColumns / shardRows): every
/// weight becomes this process's block (Tensor::local), row-parallel layers take their local
/// input width. The model is then per-process code whose row-parallel layers all-reduce.
/// localizeTensorParallel(m, 2)
template <class Model>
void localizeTensorParallel(Model& model, int parts) {
  internal::Localize v;
  radix::detail::visitLeaves(v, model);
  forEachLayer(model, [&](const std::string&, auto& layer) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(layer)>, nn::Linear>)
      if (layer.rowParallel && layer.quant != QuantType::none) layer.cols /= parts;
  });
}

/// Throws "[family] tensor parallel over N processes needs ..." unless `parts` divides every
/// count: checkTensorParallel("llama", 2, {{"heads", 4}, {"kv heads", 2}, {"ffn", 176}})
inline void checkTensorParallel(const std::string& family, int parts,
                                std::initializer_list<std::pair<const char*, int64_t>> counts) {
  for (const auto& [what, n] : counts)
    if (n % parts != 0)
      throw Error("[" + family + "] tensor parallel over " + std::to_string(parts) + " processes needs " + what + " (" +
                  std::to_string(n) + ") divisible by " + std::to_string(parts));
}

/// A tied output projection's share of a tensor-parallel model: rows [part·V/parts, ..) of the
/// embedding's table {voc, d} (float, or packed blocks), in place (the Linear keeps the table's
/// buffer alive). vocabRows(cpu2, embed {voc=32000,d=768}, 1, 2).weight -> {voc=16000,d=768}
inline nn::Linear vocabRows(const Platform& platform, const nn::Embedding& e, int part, int parts) {
  const Shape& s = e.weight.shape();
  const int64_t rows = s.dim(0) / parts;
  const size_t rowBytes = static_cast<size_t>(s.dim(1)) * sizeOf(s.dtype());
  const auto* base = static_cast<const uint8_t*>(e.weight.bufferAddress());
  auto owner = std::make_shared<Tensor>(e.weight);
  Shape view({rows, s.dim(1)}, s.dtype());
  view = view.withTags({s.isTagged() ? s.tag(0) : Tag("voc"), s.isTagged() ? s.tag(1) : Tag("d")});
  const Tensor w = Tensor::fromExternal(platform, view, base + static_cast<size_t>(part * rows) * rowBytes, owner);
  return nn::Linear{w, std::nullopt, "d", view.tag(0), e.quant, e.cols};
}

/// The `part`-th of `parts` blocks of each of `groups` equal runs of `axis`, concatenated: the
/// rows or columns of a fused projection (GPT-2's c_attn, q|k|v) that hold this process's heads.
/// A host copy of a bound tensor, unsharded. takeGroupedShard(cpu, c_attn {d=64,qkv=192}, 1, 3, 0, 2) -> {d=64,qkv=96}
inline Tensor takeGroupedShard(const Platform& platform, const Tensor& full, int64_t axis, int64_t groups, int part,
                               int parts) {
  const Shape& s = full.shape();
  const int64_t block = s.dim(axis) / groups, piece = block / parts;
  size_t outer = 1, inner = sizeOf(s.dtype());
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(s.dim(d));
  for (int64_t d = axis + 1; d < s.rank(); ++d) inner *= static_cast<size_t>(s.dim(d));
  const std::vector<uint8_t> bytes = full.toBytes();
  std::vector<uint8_t> out;
  out.reserve(bytes.size() / static_cast<size_t>(parts));
  for (size_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      const size_t begin = (o * static_cast<size_t>(s.dim(axis)) + static_cast<size_t>(g * block + part * piece)) * inner;
      out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                 bytes.begin() + static_cast<std::ptrdiff_t>(begin + static_cast<size_t>(piece) * inner));
    }
  std::vector<int64_t> dims = s.dims();
  dims[static_cast<size_t>(axis)] /= parts;
  std::vector<Tag> tags;
  for (int64_t a = 0; a < s.rank(); ++a) tags.push_back(s.tag(a));
  return Tensor::fromBytes(platform, Shape(dims, s.dtype()).withTags(tags), out.data(), out.size());
}

}  // namespace radix::models
