#pragma once
/// Checkpoint loading: safetensors files, sharded safetensors (model.safetensors.index.json),
/// Hugging Face folders (config.json + weights) and GGUF v2/v3 files, mmapped and bound to Tensors
/// without copies where the stored dtype is the one asked for; loadInto maps them onto a model
/// struct by leaf path.
///
/// Files are untrusted input: every header is validated (sizes, offsets, overlaps, counts bounded
/// by the file size) and a bad file throws radix::Error "[safetensors] PATH: offset N: FIELD: ..."
/// or "[gguf] PATH: offset N: tensor "NAME": ...", never crashes.
///
/// llama.cpp names (GGUF) that Radix's models read, per `general.architecture`:
///  - llama: token_embd.weight {vocab,n_embd}; blk.N.attn_norm.weight; blk.N.attn_q.weight,
///    attn_k, attn_v, attn_output (each {out,in}); blk.N.ffn_norm.weight; blk.N.ffn_gate.weight,
///    ffn_up, ffn_down; output_norm.weight; output.weight (absent when tied to token_embd).
///    Keys: llama.embedding_length, llama.block_count, llama.attention.head_count,
///    llama.attention.head_count_kv, llama.feed_forward_length, llama.context_length,
///    llama.rope.freq_base, llama.attention.layer_norm_rms_epsilon, llama.rope.dimension_count,
///    llama.vocab_size (else the length of tokenizer.ggml.tokens).
///  - gpt2: token_embd.weight, position_embd.weight, blk.N.attn_norm.weight/.bias,
///    blk.N.attn_qkv.weight/.bias (fused q,k,v: {3*n_embd,n_embd}), blk.N.attn_output.weight/.bias,
///    blk.N.ffn_norm.weight/.bias, blk.N.ffn_up.weight/.bias, blk.N.ffn_down.weight/.bias,
///    output_norm.weight/.bias, output.weight (absent when tied). Keys: gpt2.embedding_length,
///    gpt2.block_count, gpt2.attention.head_count, gpt2.feed_forward_length, gpt2.context_length,
///    gpt2.attention.layer_norm_epsilon.
/// GGUF dims are stored innermost first (ne[0] = row length); TensorInfo::dims are reversed to
/// row-major, so a llama.cpp {n_embd, vocab} token_embd reads as {vocab, n_embd}.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "radix/detail/visit.h"
#include "radix/quant.h"
#include "radix/tensor.h"
#include "radix/tokenizer.h"

namespace radix::io {

/// One metadata value: GGUF's types (all ints, floats, bool, string, arrays of them) or a
/// config.json/__metadata__ entry. Accessors throw [gguf]/[config] errors naming the key on a
/// type mismatch. MetaValue(int64_t{3}).asFloat() -> 3.0
class MetaValue {
 public:
  enum class Kind { integer, real, boolean, string, array, null };
  /// A null value.
  MetaValue() = default;
  /// MetaValue(int64_t{12}).asInt() -> 12
  explicit MetaValue(int64_t v) : kind_(Kind::integer), int_(v) {}
  /// An unsigned 64-bit value (GGUF UINT64): kept exactly when it fits int64, else asInt throws.
  static MetaValue fromUnsigned(uint64_t v);
  /// MetaValue(1e-5).asFloat() -> 1e-5
  explicit MetaValue(double v) : kind_(Kind::real), real_(v) {}
  /// MetaValue(true).asBool() -> true
  explicit MetaValue(bool v) : kind_(Kind::boolean), int_(v ? 1 : 0) {}
  /// MetaValue(std::string("llama")).asString() -> "llama"
  explicit MetaValue(std::string v) : kind_(Kind::string), string_(std::move(v)) {}
  /// An array: MetaValue(std::vector<MetaValue>{...}).asArray().size()
  explicit MetaValue(std::vector<MetaValue> v);

  /// What the value holds.
  Kind kind() const { return kind_; }
  /// Integers (any width) and bools: MetaValue(int64_t{3}).asInt() -> 3
  int64_t asInt() const;
  /// Reals and integers: MetaValue(int64_t{3}).asFloat() -> 3.0
  double asFloat() const;
  /// Bools (and integers 0/1 as config.json writes them).
  bool asBool() const;
  /// Strings.
  const std::string& asString() const;
  /// Arrays (nested arrays are arrays of arrays).
  const std::vector<MetaValue>& asArray() const;
  /// An array of strings: tokenizer.ggml.tokens -> {"<unk>", "<s>", ...}
  std::vector<std::string> asStrings() const;
  /// An array of numbers: tokenizer.ggml.scores -> {0.0, -1.5, ...}
  std::vector<double> asFloats() const;
  /// An array of integers: tokenizer.ggml.token_type -> {2, 3, 1, ...}
  std::vector<int64_t> asInts() const;
  /// "3", "1e-05", "true", "\"llama\"", "[1, 2, 3]" (long arrays elided): for messages and dumps.
  std::string str() const;
  /// The key named in type-mismatch errors, and the error prefix ("gguf", "config", "safetensors").
  MetaValue& describedAs(std::string key, std::string prefix);

 private:
  [[noreturn]] void mismatch(const char* wanted) const;
  Kind kind_ = Kind::null;
  bool unsignedHuge_ = false;  // a UINT64 above INT64_MAX (asFloat works, asInt throws)
  int64_t int_ = 0;
  double real_ = 0;
  std::string string_;
  std::shared_ptr<const std::vector<MetaValue>> array_;
  std::shared_ptr<const std::pair<std::string, std::string>> where_;  // key, prefix
};

/// What a checkpoint says about one stored tensor.
struct TensorInfo {
  std::string name;                 // as stored: "h.3.attn.c_attn.weight", "blk.3.attn_q.weight"
  std::vector<int64_t> dims;        // row-major, outermost first (GGUF's ne[] reversed)
  std::string type;                 // "F32", "F16", "BF16", "Q4_0", "Q8_0", ... as the format names it
  std::optional<DType> dtype;       // set for plain types Radix computes in (f32/f16/bf16/ints)
  QuantType quant = QuantType::none;  // GGUF block types Radix computes in: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K
  uint64_t bytes = 0;               // stored size
  std::string file;                 // which file holds it (sharded checkpoints)
  uint64_t offset = 0;              // absolute byte offset of its data in that file
};

/// How a load reports progress on stderr (bytes, rate, ETA).
enum class Progress {
  /// A bar when stderr is a terminal and the checkpoint is large (>= 64 MiB); the default.
  automatic,
  /// Never.
  off,
  /// Always, even when stderr is not a terminal (tests; logs).
  on,
};

/// Where the bytes of a Checkpoint's files live while its tensors use them (docs/loading.md).
enum class Residency {
  /// `copied` when each file fits in half of the memory available (MemAvailable) and is at least
  /// 4 MiB, else `mapped`.
  automatic,
  /// mmap(MAP_PRIVATE) of the page cache: zero-copy, shared with every process that maps the
  /// file, paged in on demand (files larger than memory work). The pages are 4 KiB ones unless
  /// the page cache happens to hold the file in 2 MiB folios. The default of Checkpoint::open.
  mapped,
  /// Read once into this process's memory, 2 MiB-aligned and asked to be backed by 2 MiB pages
  /// (madvise), then made read-only. Streaming weights from it (a decode step) walked one page
  /// table entry per 2 MiB instead of per 4 KiB: Llama-110M decode on a KVM Xeon ran 1.2x faster
  /// in Q8_0 and 1.4-1.7x in f16/bf16. Costs the read at open and is not shared between
  /// processes; a file changed or truncated afterwards does not affect it.
  copied,
};

/// A set of stored tensors: one .safetensors file, a sharded checkpoint
/// (model.safetensors.index.json), one .gguf file, or a Hugging Face folder (config.json + weights).
/// Files are mmapped, or read into memory (Residency); the Checkpoint keeps them alive while any
/// Tensor it made is alive. Copies of a Checkpoint share the files' bytes.
class Checkpoint {
 public:
  /// Checkpoint::open("gpt2/") / ("model.safetensors") / ("x.gguf") / ("model.safetensors.index.json")
  /// Checkpoint::open("x.gguf", Residency::copied).residency() -> Residency::copied
  static Checkpoint open(const std::string& path, Residency residency = Residency::mapped);
  /// Safetensors bytes held in memory (e.g. embedded in the binary); `name` appears in errors.
  /// The bytes are not copied: they must outlive the Checkpoint and every Tensor loaded from it.
  static Checkpoint fromSafetensorsBytes(std::span<const uint8_t> bytes, std::string name);
  /// GGUF bytes held in memory (not copied, as fromSafetensorsBytes).
  static Checkpoint fromGgufBytes(std::span<const uint8_t> bytes, std::string name);

  /// "safetensors" or "gguf".
  const std::string& format() const;
  /// The folder for HF folders, else the file's folder (where tokenizer files are looked for).
  const std::string& folder() const;
  /// Every stored tensor, in file order (shards in index order).
  const std::vector<TensorInfo>& tensors() const;
  /// nullptr when absent: ckpt.find("wte.weight")->dims -> {50257,768}
  const TensorInfo* find(std::string_view name) const;
  /// Raw stored bytes of one tensor; [checkpoint] error naming it when absent.
  std::span<const uint8_t> bytes(std::string_view name) const;
  /// A bound tensor: zero-copy when the stored dtype equals `dtype` (or no dtype is asked),
  /// converted (f32/f16/bf16/f64 among each other) otherwise. Untagged, dims as stored.
  /// A quantized tensor (TensorInfo::quant set) comes as its packed blocks, u8 {rows, rowBytes}
  /// zero-copy (validated: a NaN/Inf scale is a [quant] error naming it), or decoded on the
  /// host when a float dtype is asked.
  /// ckpt.load(cpu, "wte.weight", DType::bf16) -> {50257,768}:bf16
  /// ckpt.load(cpu, "blk.0.attn_q.weight") -> {768,432}:u8 (Q4_0, 768 columns)
  Tensor load(const Platform& platform, std::string_view name, std::optional<DType> dtype = {}) const;
  /// A quantized tensor as a QuantizedTensor (data zero-copy from the mmap, validated); [checkpoint]
  /// error when the stored type is not one of TensorInfo::quant's.
  /// ckpt.loadQuantized(cpu, "blk.0.ffn_down.weight") -> {data {768,1722}:u8, .type = q6_k, .cols = 2048}
  QuantizedTensor loadQuantized(const Platform& platform, std::string_view name) const;
  /// GGUF key/values ("general.architecture", "llama.block_count", "tokenizer.ggml.tokens", ...);
  /// for HF folders the top-level keys of config.json ("n_embd", "hidden_size", ...; nested
  /// objects as their JSON text); for bare safetensors its "__metadata__" strings.
  const std::map<std::string, MetaValue>& metadata() const;
  /// nullptr when absent: ckpt.meta("general.architecture")->asString() -> "llama"
  const MetaValue* meta(std::string_view key) const;
  /// Total stored bytes of all tensors.
  uint64_t totalBytes() const;
  /// How the files' bytes are held: `copied` when every file was read into memory, else `mapped`
  /// (also for fromSafetensorsBytes / fromGgufBytes, whose bytes are the caller's).
  Residency residency() const;
  /// The progress mode used by loadInto (default Progress::automatic).
  void setProgress(Progress mode);
  Progress progress() const;

  struct Impl;
  /// Internal (src/io): the shared state.
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  explicit Checkpoint(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

/// How struct leaves map to stored names.
struct LoadSpec {
  /// Converts a leaf path to a stored name. Default: the path with "[i]" written ".i":
  /// "h[3].attn.c_attn.weight" -> "h.3.attn.c_attn.weight".
  std::function<std::string(std::string_view path)> rename;
  /// Also tried before each name when the name itself is absent (HF GPT-2 has "transformer.").
  std::vector<std::string> prefixes = {"", "transformer.", "model."};
  /// Converts every floating-point tensor to this dtype (zero-copy when equal); nullopt keeps
  /// stored dtypes. Integer and bool tensors keep theirs.
  std::optional<DType> dtype;
  /// Stored tensors no leaf claims are an error unless they match one of these regexes
  /// (e.g. "attn\\.bias$", "attn\\.masked_bias$" of GPT-2 checkpoints).
  std::vector<std::string> ignoreExtra;
  /// Stored tensors that only PyTorch uses (BatchNorm's running count "num_batches_tracked") are
  /// skipped and listed in LoadReport::notes; false makes them extra, as any unclaimed tensor.
  bool ignorePyTorchOnly = true;
};

/// What loadInto did besides binding every leaf.
struct LoadReport {
  /// Stored tensors no leaf claimed that were skipped: PyTorch-only ones and ignoreExtra matches.
  std::vector<std::string> ignored;
  /// Lines worth telling the user: "ignored 3 PyTorch-only tensors (num_batches_tracked): bn1.num_batches_tracked, ..."
  std::vector<std::string> notes;
};

/// "h[3].attn.c_attn.weight" -> "h.3.attn.c_attn.weight" (LoadSpec's default rename).
std::string defaultStoredName(std::string_view path);

namespace detail {
/// One Tensor leaf of a model struct: its path ("h[3].attn.c_attn.weight") and the leaf itself.
struct Leaf {
  std::string path;
  Tensor* tensor;
};
/// Binds the leaves (the non-template part of loadInto).
LoadReport bindLeaves(const Platform& platform, std::vector<Leaf>& leaves, const Checkpoint& checkpoint, const LoadSpec& spec);

struct LeafCollector : radix::detail::PathBuilder {
  std::vector<Leaf> out;
  void tensor(Tensor& t) { out.push_back({path.starts_with('.') ? path.substr(1) : path, &t}); }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};
}  // namespace detail

/// Binds every Tensor leaf of `model` (a struct whose leaves are placeholders `Tensor(Shape)`
/// with the expected dims and tags; std::optional<Tensor> leaves that are empty are skipped)
/// to the stored tensor of the same name. The leaf keeps its tags (Conv1D [in,out] weights are
/// handled by tagging, never by copies). Missing, extra or mis-shaped tensors: a [load] error
/// naming the tensor and both shapes (all problems listed in one message), ending with the
/// caller's file:line. Where missing and extra names differ by a leading prefix
/// ("module.fc.weight" stored for "fc.weight"), the error says "did you mean" and which prefix to
/// add to LoadSpec::prefixes. PyTorch-only tensors (num_batches_tracked) are skipped and noted in
/// the returned report. To tag what it loads, tag the placeholders: a leaf
/// Tensor(Shape({16}, f32).withTags({"c"})) is bound to the stored {16} as {c=16}.
/// io::loadInto(cpu, model, ckpt)  // model.h[0].attn.c_attn.weight bound to {in=768,out=2304}:f32
template <class Model>
LoadReport loadInto(const Platform& platform, Model& model, const Checkpoint& checkpoint, const LoadSpec& spec = {},
                    Loc loc = Loc::current()) {
  detail::LeafCollector collector;
  radix::detail::visitLeaves(collector, model);
  try {
    return detail::bindLeaves(platform, collector.out, checkpoint, spec);
  } catch (const Error& e) {
    if (loc.internal()) throw;
    throw Error(std::string(e.what()) + " (at " + loc.file_name() + ":" + std::to_string(loc.line()) + ")");
  }
}

/// Hyperparameters of a llama- or gpt2-style model, read from GGUF metadata or config.json.
struct ModelConfig {
  std::string architecture;  // "llama" or "gpt2" (GGUF general.architecture; HF model_type)
  int64_t vocab = 0;         // vocabulary size
  int64_t nEmbd = 0;         // model width
  int64_t nLayer = 0;        // blocks
  int64_t nHead = 0;         // query heads
  int64_t nHeadKv = 0;       // key/value heads (== nHead without grouped-query attention)
  int64_t nFf = 0;           // MLP hidden width (gpt2: 4 * nEmbd when absent)
  int64_t context = 0;       // trained context length (n_positions / max_position_embeddings)
  double ropeFreqBase = 10000;  // llama
  double normEps = 1e-5;        // RMSNorm (llama) or LayerNorm (gpt2) epsilon
  bool tiedEmbeddings = false;  // true when no separate output / lm_head weight is stored
};

/// Reads the hyperparameters: GGUF keys "{arch}.embedding_length" ...; config.json keys of HF
/// GPT-2 (n_embd, n_layer, n_head, n_positions, layer_norm_epsilon) or Llama (hidden_size,
/// num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, rope_theta,
/// rms_norm_eps, max_position_embeddings, vocab_size). [config] error naming a missing key.
/// readModelConfig(Checkpoint::open("gpt2/")).nEmbd -> 768
ModelConfig readModelConfig(const Checkpoint& checkpoint);

/// The vocabulary of a GGUF checkpoint (tokenizer.ggml.model, .pre, .tokens, .scores,
/// .token_type, .merges, .bos_token_id, .eos_token_id, .unknown_token_id, .add_space_prefix),
/// for Tokenizer::fromVocab. [gguf] errors for a missing model or token list, per-token arrays
/// whose length differs from the token count, and ids out of range.
/// Tokenizer::fromVocab(io::vocabFromGguf(Checkpoint::open("llama.gguf"))).vocabSize() -> 32000
VocabSpec vocabFromGguf(const Checkpoint& checkpoint);

}  // namespace radix::io
