#pragma once
/// Text <-> token ids for the models Radix runs: byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM, ...)
/// and SentencePiece (Llama 1/2, Phi-3, Gemma, Mistral).
///
/// Byte-level BPE is read from Hugging Face `tokenizer.json` (NFC/NFD/NFKC/NFKD normalizers; Split,
/// ByteLevel, Digits pre-tokenizers), from GPT-2's `vocab.json` + `merges.txt`, or from GGUF
/// metadata (VocabSpec; every tokenizer.ggml.pre llama.cpp accepts for these families, with
/// llama.cpp's regexes). Text is split by the pre-tokenizer regexes first; the regexes run on PCRE2 (8-bit, UTF + UCP, JIT), because they need both Unicode
/// properties (`\p{L}`, `\p{N}`: std::regex has none) and lookahead (`\s+(?!\S)`: RE2 has none).
/// `\s` is rewritten to Oniguruma's Unicode White_Space set (HF's regex engine; PCRE2's `\s`
/// lacks U+0085), so the pieces are those of HF `tokenizers`. Invalid UTF-8 is never rejected:
/// the bytes no regex branch matches become pieces of their own, and decode() gives back the
/// exact input bytes.
///
/// SentencePiece: `tokenizer.model` files go through libsentencepiece; GGUF vocabularies
/// (model "llama") are encoded natively as llama.cpp does (merges by piece score, U+2581 for
/// spaces, a dummy space prefix, <0xNN> byte fallback, the unknown token otherwise); HF's
/// SentencePiece-style tokenizer.json (Llama 2: Prepend/Replace normalizers or Metaspace,
/// byte_fallback) natively by merge ranks.
///
/// Special tokens: tokenizer.json's added_tokens and GGUF CONTROL / USER_DEFINED / UNKNOWN tokens
/// are matched whole in the text before normalization and pre-tokenization (leftmost, then
/// longest first; HF's lstrip / rstrip / single_word flags apply), as HF and llama.cpp
/// (parse_special) do. Special / control tokens decode to nothing. addBos() and isEog() say what
/// the model wants around generation. Errors are radix::Error "[tokenizer] ..." naming the file
/// and field.
/// docs/tokenizers.md has the details and how the tests check them.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace radix {

namespace io {
class Checkpoint;
}

/// A vocabulary as GGUF metadata describes it (tokenizer.ggml.*).
/// VocabSpec{.model = "gpt2", .pre = "gpt2", .tokens = {...}, .merges = {"Ġ t", ...}}
struct VocabSpec {
  std::string model;                 // "gpt2" (byte-level BPE) or "llama" (SentencePiece)
  std::string pre;                   // tokenizer.ggml.pre: "gpt-2", "llama-bpe" (Llama 3), "qwen2", "smollm", "default", ...
  std::vector<std::string> tokens;
  std::vector<float> scores;         // SentencePiece scores (may be empty for BPE)
  std::vector<int32_t> types;        // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  std::vector<std::string> merges;   // "a b" per merge (BPE)
  int32_t bos = -1, eos = -1, unk = -1;
  /// tokenizer.ggml.add_space_prefix (SentencePiece): prepend U+2581 to the text.
  bool addSpacePrefix = true;
  /// tokenizer.ggml.add_bos_token; unset: llama.cpp's default for the model and pre-tokenizer.
  std::optional<bool> addBos;
  /// tokenizer.ggml.eot_token_id / eom_token_id (end of turn / message), -1 when absent.
  int32_t eot = -1, eom = -1;
};

/// Options of Tokenizer::encode(text, options).
/// tok.encode("<|im_start|>user", {.addBos = tok.addBos()})
struct EncodeOptions {
  /// Put bos() first ([tokenizer] error when the vocabulary has none).
  bool addBos = false;
  /// Match special (control) tokens such as "<|im_start|>" whole; false encodes them as plain text.
  /// Non-special added (user-defined) tokens are matched either way, as llama.cpp and HF do.
  bool parseSpecial = true;
};

/// A tokenizer: immutable after loading, cheap to copy (shared state), safe to use from several
/// threads at once.
class Tokenizer {
 public:
  /// tokenizer.json, tokenizer.model (SentencePiece protobuf), or a folder holding one of
  /// tokenizer.json / vocab.json + merges.txt / tokenizer.model (tried in that order).
  /// Tokenizer::fromFile("gpt2/").encode("Hello world") -> {15496, 995}
  static Tokenizer fromFile(const std::string& path);
  /// HF tokenizer.json text; `origin` names it in errors.
  /// Tokenizer::fromJson(text).vocabSize() -> 50257 (GPT-2)
  static Tokenizer fromJson(std::string_view json, std::string_view origin = "tokenizer.json");
  /// GPT-2's vocab.json (or encoder.json) + merges.txt (or vocab.bpe) texts.
  /// Tokenizer::fromVocabMerges(encoderJson, vocabBpe).encode(" the") -> {262}
  static Tokenizer fromVocabMerges(std::string_view vocabJson, std::string_view mergesText);
  /// GGUF metadata: model "gpt2" (byte-level BPE; pre "gpt-2", "llama-bpe", "qwen2", ...: an
  /// unknown one is an error listing the supported names) or "llama" (SentencePiece by scores).
  /// Tokenizer::fromVocab(spec).encode("Hi") -> {...}
  static Tokenizer fromVocab(const VocabSpec& spec);
  /// The vocabulary of a GGUF checkpoint's metadata: tokenizer.ggml.model, .pre, .tokens,
  /// .scores, .token_type, .merges, .bos_token_id, .eos_token_id, .unknown_token_id,
  /// .eot_token_id, .eom_token_id, .add_bos_token, .add_space_prefix. [tokenizer] error naming a
  /// missing key.
  /// Tokenizer::ggufVocab(io::Checkpoint::open("model.gguf")).model -> "llama"
  static VocabSpec ggufVocab(const io::Checkpoint& checkpoint);
  /// A checkpoint's tokenizer: its GGUF metadata for GGUF files, else the tokenizer files of its
  /// folder (fromFile). Tokenizer::fromCheckpoint(ckpt).encode("Hi")
  static Tokenizer fromCheckpoint(const io::Checkpoint& checkpoint);
  /// The pieces, scores and types of a SentencePiece `tokenizer.model`, read through
  /// libsentencepiece: fromVocab() of it encodes natively what fromFile() encodes through the
  /// library. Tokenizer::sentencePieceVocab("tokenizer.model").tokens.size() -> 32000 (Llama 2)
  static VocabSpec sentencePieceVocab(const std::string& path);

  /// "Hello world" -> {15496, 995} (GPT-2). No BOS/EOS added; special and added tokens in the
  /// text are matched whole ("<|endoftext|>" -> {50256}).
  std::vector<int32_t> encode(std::string_view text) const;
  /// encode(text) with options: encode("Hi", {.addBos = true}) -> {1, 6324} (Llama 2).
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const;
  /// Inverse of encode for byte-level BPE (exact bytes, even invalid UTF-8). SentencePiece:
  /// U+2581 becomes a space, <0xNN> the byte, and the dummy prefix space of the first token is
  /// dropped. decode({15496, 995}) -> "Hello world"; an id outside [0, vocabSize()) is an error.
  std::string decode(std::span<const int32_t> ids) const;
  /// The bytes one token stands for (may be a partial UTF-8 sequence): for streaming output.
  /// Concatenating tokenBytes of every id gives decode(), except that SentencePiece keeps the
  /// dummy prefix space here. tokenBytes(995) -> " world" (GPT-2)
  std::string tokenBytes(int32_t id) const;
  /// The token as the vocabulary spells it: "Ġworld" (GPT-2), "▁world" (SentencePiece).
  std::string tokenText(int32_t id) const;
  /// The id of a vocabulary entry spelled as the vocabulary does; -1 when absent.
  /// tokenId("<|endoftext|>") -> 50256 (GPT-2)
  int32_t tokenId(std::string_view text) const;
  /// One more than the largest id. GPT-2: 50257.
  int32_t vocabSize() const;
  int32_t bos() const;  // -1 when none
  int32_t eos() const;  // -1 when none
  /// Whether the model wants bos() prepended to a prompt: GGUF tokenizer.ggml.add_bos_token,
  /// tokenizer_config.json add_bos_token, or the HF post-processor's template; otherwise true
  /// for SentencePiece vocabularies and llama.cpp's Llama 3 / Tekken pre-tokenizers, false for
  /// other byte-level BPE. Never true without a BOS token. tok.addBos() -> true (Llama 2)
  bool addBos() const;
  /// Whether generation ends at this token: eos(), GGUF eot / eom ids, generation_config.json's
  /// eos_token_id, and the tokens spelled as llama.cpp's end-of-generation list ("<|im_end|>",
  /// "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>", ...). isEog(tok.eos()) -> true
  bool isEog(int32_t id) const;
  /// The end-of-generation ids, ascending. eogIds() -> {151643, 151645} (Qwen2 instruct)
  std::vector<int32_t> eogIds() const;
  /// "bpe" (byte-level BPE), "bpe-sp" (SentencePiece-style BPE by merge ranks, as HF's Llama 2
  /// tokenizer.json), "spm" (native SentencePiece by scores) or "sentencepiece" (libsentencepiece).
  std::string kind() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace radix
