#pragma once
/// Text generation with checkpoints of the families of docs/models.md (GPT-2, Llama, Mistral,
/// Qwen2, Qwen3, ...) from HF folders, safetensors and GGUF files.
///
/// How it runs: one compiled executable per step length. A step feeds `s` tokens at a runtime
/// position and writes their keys and values into a KV cache in place (the cache's buffers are
/// donated); decoding is the s = 1 executable. Prompts are split into power-of-two chunks, from
/// 16 up to the context: the largest power of two that the rest of the prompt fills, then the
/// next, and a last chunk of at most 16 tokens is padded to 16 (300 tokens: 256 + 32 + 16 with 4
/// padding rows; 1 token: the decode executable). The real length is a runtime scalar: padding
/// rows only write cache slots that later tokens overwrite and that the causal mask hides until
/// then, and the logits come from the last real token. So a session compiles at most
/// log2(context) - 2 executables, each once (the disk cache keeps them across runs); none per
/// token or per prompt length. The context (the cache's length) is a power of two chosen by
/// reset().
///
/// auto lm = LanguageModel::open(cpu, "gpt2/");
/// lm.generate(lm.tokenizer().encode("Hello"), 20, {.temperature = 0.8, .seed = 1}, onToken);
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "radix/io.h"
#include "radix/platform.h"
#include "radix/random.h"
#include "radix/tensor.h"
#include "radix/tokenizer.h"

namespace radix::models {

/// How weights are loaded and computed.
struct LoadOptions {
  /// Weights' dtype (f32, bf16 or f16), converted from the stored one at load when different.
  DType dtype = DType::f32;
  /// Activations' dtype; nullopt: the weights' dtype. {.dtype = bf16, .compute = f32} feeds
  /// bf16 weights to f32 contractions through a convert.
  std::optional<DType> compute;
  /// The KV cache's dtype (f32, f16 or bf16); nullopt: f16 for quantized GGUF weights under f32
  /// activations (llama.cpp's default cache type), else the activations' dtype. f16 halves what
  /// a decode step reads per cached position; attention still computes in f32.
  /// {.kvDtype = DType::f32}
  std::optional<DType> kvDtype;
  /// Where the files' bytes live (io::Residency). automatic: read into memory on 2 MiB pages when
  /// they fit (decode streams the weights faster), mapped under mpirun (each rank keeps a shard
  /// of the mapping) or for a GPU platform (the weights are uploaded). {.residency = io::Residency::mapped}
  io::Residency residency = io::Residency::automatic;
};

/// How the next token is picked (random.h's SamplingOptions plus a seed).
struct Sampling {
  /// 0: greedy (argmax, first index on ties).
  double temperature = 0;
  int64_t topK = 0;
  double topP = 1;
  uint64_t seed = 0;
};

/// Counts and times of one generate() call (seconds of wall time).
struct GenerateStats {
  int64_t promptTokens = 0, generatedTokens = 0;
  /// Decode steps run (generatedTokens - 1 unless stopped early): generation speed is
  /// decodeSteps / generateSeconds.
  int64_t decodeSteps = 0;
  double promptSeconds = 0, generateSeconds = 0;
};

/// A loaded model of one of the supported families, its tokenizer, and a KV cache. Not thread-safe.
class LanguageModel {
 public:
  /// An HF folder (config.json + weights + tokenizer files), a .safetensors file in such a
  /// folder, or a .gguf file (tokenizer from its metadata). Errors: "[generate] ...", or the
  /// loaders' "[safetensors]" / "[gguf]" / "[load]" / "[tokenizer]" ones.
  /// LanguageModel::open(cpu, "models/llama.gguf", {.dtype = DType::bf16})
  static LanguageModel open(const Platform& platform, const std::string& path, const LoadOptions& options = {});
  /// From a checkpoint already open and an optional tokenizer. The architecture and the
  /// hyperparameters come from its metadata (GGUF's general.architecture, config.json's
  /// model_type), or from `configJson`, the text of a config.json kept apart (an embedded model
  /// opened with Checkpoint::fromSafetensorsBytes).
  /// LanguageModel::fromCheckpoint(cpu, io::Checkpoint::fromSafetensorsBytes(bytes, "kjv"), tok, {}, configText)
  static LanguageModel fromCheckpoint(const Platform& platform, const io::Checkpoint& checkpoint,
                                      std::optional<Tokenizer> tokenizer, const LoadOptions& options = {},
                                      std::string_view configJson = {});

  /// The family: "gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2" (docs/models.md).
  const std::string& architecture() const;
  /// Parameter count (tied weights once): 124439808 for GPT-2 small.
  int64_t parameters() const;
  /// Bytes the weights take in memory, in the load dtype (quantized ones as stored, mapped from
  /// the file): 497759232 for GPT-2 small in f32.
  uint64_t weightBytes() const;
  /// The weights' dtype (LoadOptions::dtype): DType::bf16. Quantized GGUF weights stay in
  /// their stored block types (weightType()); the dtype applies to the others (norms, biases).
  DType dtype() const;
  /// What the weights are: a quantized GGUF's file type as llama.cpp names it ("Q4_K - Medium",
  /// "Q8_0"; without general.file_type, its 2-D tensors' types: "Q4_K + Q6_K"), else the dtype's
  /// name ("bf16").
  const std::string& weightType() const;
  /// The activations' dtype (LoadOptions::compute, else dtype()).
  DType computeDtype() const;
  /// The KV cache's dtype (LoadOptions::kvDtype or its default): DType::f16 for a Q4_0 GGUF.
  DType kvDtype() const;
  /// Rows of the token embedding: 50257 for GPT-2.
  int64_t vocabSize() const;
  /// Longest context the model supports (n_positions, max_position_embeddings, ...).
  int64_t maxContext() const;
  /// Throws "[generate] ... has no tokenizer" when none was found.
  const Tokenizer& tokenizer() const;
  /// False when no tokenizer was found (feed ids directly then).
  bool hasTokenizer() const;

  /// Starts a new sequence with room for `tokens` tokens: the cache holds the next power of two
  /// (at least 16, at most maxContext()). Executables of an unchanged context are kept.
  void reset(int64_t tokens);
  /// Step executables compiled so far for the current context (one per chunk length used).
  /// lm.generate(ids, 50, {}); lm.executables() -> 2 (a prompt bucket and decode)
  size_t executables() const;
  /// The step executables' cache entry folders by step length ("" with the cache off), which
  /// radix::Program loads without the compiler: {{1, ".../cpu/Model_ab12..."}, {16, ...}}
  std::vector<std::pair<int64_t, std::string>> cacheEntries() const;
  /// The cache's length (0 before reset): reset(20) -> 32.
  int64_t context() const;
  /// The position of the next token: reset(20); feed(3 ids) -> 3.
  int64_t position() const;
  /// Compiles (or loads from the disk cache) the executables that feeding `promptTokens` tokens
  /// from position 0 and then decoding will use, so that timing excludes compiles.
  /// lm.reset(80); lm.prepare(17);  // the 16 bucket and decode
  void prepare(int64_t promptTokens);
  /// Compiles (or loads) every step executable of the current context: each prompt chunk
  /// (16, 32, ... up to the context) and decode, several at once on up to one thread per core;
  /// what `radix compile` writes ahead of time.
  /// lm.reset(512); lm.prepareAll(); lm.executables() -> 7
  void prepareAll();
  /// Feeds tokens at position(), in bucketed chunks; returns the logits after the last one,
  /// {voc}:f32. [generate] error when they do not fit the context or an id is out of range.
  /// lm.feed(ids) -> {voc=50257}:f32
  Tensor feed(std::span<const int32_t> ids);
  /// Picks a token from logits {voc}:f32 (greedy on the CPU reads them in place; otherwise
  /// random.h's sampleTokens, compiled once per option set, runs where they are) and advances
  /// `rng`.
  int32_t sample(const Tensor& logits, const Sampling& sampling, Rng& rng);
  /// Compiles (or loads) the executable that sample() runs for `sampling`, so that timing excludes
  /// it: every non-greedy option set, and greedy on a device (an argmax there copies back only
  /// the id; the CPU's greedy pick reads the logits in place and compiles nothing).
  /// lm.prepareSampler({.temperature = 0.8, .topK = 40})
  void prepareSampler(const Sampling& sampling);
  /// reset(prompt + n), prepare(prompt), feeds the prompt, then samples and feeds n tokens
  /// (stats time these two phases, not the compiles), calling `onToken` for
  /// each as it comes. Stops early at the tokenizer's EOS when `stopAtEos`. Returns the ids.
  /// Beyond maxContext() (the prompt itself must be shorter), generation goes on from the last
  /// half of the context, re-fed from position 0 (a context shift).
  std::vector<int32_t> generate(std::span<const int32_t> prompt, int64_t n, const Sampling& sampling,
                                const std::function<void(int32_t)>& onToken = {}, GenerateStats* stats = nullptr,
                                bool stopAtEos = false);

  struct Impl;

 private:
  explicit LanguageModel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

/// Splits a byte stream into printable pieces at UTF-8 character boundaries: push() returns the
/// complete characters so far and keeps an unfinished sequence for the next call.
/// Utf8Stream s; s.push("\xe4\xbd") -> ""; s.push("\xa0") -> "你"
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  /// Whatever is left (an unfinished sequence), as is.
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace radix::models
