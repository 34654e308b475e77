#pragma once
// Shared internals of the tokenizers (src/io/tokenizer*.cpp): the Impl interface behind
// radix::Tokenizer, UTF-8 helpers, GPT-2's byte <-> character map and the PCRE2 pre-tokenizer.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "radix/error.h"
#include "radix/tokenizer.h"

namespace radix {

/// A token matched whole in the text before pre-tokenization (tokenizer.json added_tokens, GGUF
/// CONTROL / USER_DEFINED / UNKNOWN tokens), with HF's AddedToken flags.
struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = true;      // skipped when EncodeOptions::parseSpecial is false
  bool lstrip = false;      // swallows the whitespace on its left
  bool rstrip = false;      // swallows the whitespace on its right
  bool singleWord = false;  // only where no word character touches it
};

/// One tokenizer model. Texts are the vocabulary's spellings ("Ġworld", "▁world"); ids index them.
struct Tokenizer::Impl {
  virtual ~Impl() = default;
  /// Encodes one stretch of plain text (no added tokens in it); `first`: it starts the input,
  /// rather than following an added token (Metaspace's prepend_scheme "first").
  virtual std::vector<int32_t> encode(std::string_view text, bool first = true) const = 0;
  virtual std::string tokenBytes(int32_t id) const = 0;
  /// Default: the concatenated tokenBytes.
  virtual std::string decode(std::span<const int32_t> ids) const;
  virtual std::string kind() const = 0;
  /// Throws "[tokenizer] token id N out of range [0, size)".
  void checkId(int32_t id) const;

  /// Indexes `added` and computes the end-of-generation set: the loaders call it last.
  void finish();
  /// Splits `text` at the added tokens and encodes the stretches between them, appending to `out`.
  void encodeAll(std::string_view text, bool parseSpecial, std::vector<int32_t>& out) const;

  std::vector<std::string> texts;                 // id -> spelling ("" for holes)
  std::unordered_map<std::string, int32_t> ids;   // spelling -> id
  int32_t bos = -1, eos = -1;
  bool addBos = false;
  std::vector<AddedToken> added;
  std::vector<int32_t> eogExtra;                  // eot / eom / generation_config ids beyond eos
  std::vector<int32_t> eog;                       // finish(): sorted end-of-generation ids
  std::array<std::vector<uint32_t>, 256> addedByByte;  // finish(): first byte -> `added` indices, longest first
};

namespace tok {

[[noreturn]] void fail(const std::string& message);

/// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are invalid.
size_t utf8Length(std::string_view s, size_t i);
/// Appends the UTF-8 encoding of code point cp.
void appendUtf8(std::string& out, uint32_t cp);

/// GPT-2's bytes_to_unicode: byte -> the character that spells it in byte-level vocabularies.
const std::array<std::string, 256>& byteToChar();
/// Raw bytes of a byte-level spelling; false (out untouched) when a character is not in the map.
bool charsToBytes(std::string_view spelled, std::string& out);

/// The GPT-2 and Llama 3 pre-tokenizer regexes, as HF tokenizer.json writes them.
extern const char* const kGpt2Pattern;
extern const char* const kLlama3Pattern;

/// A compiled pre-tokenizer regex (PCRE2, UTF + UCP + MATCH_INVALID_UTF, JIT when available).
/// `\s` and `\S` are rewritten to Oniguruma's Unicode White_Space set, the engine HF uses.
class Regex {
 public:
  /// Throws "[tokenizer] <origin>: bad regex ..." with PCRE2's message and offset.
  Regex(std::string_view pattern, std::string_view origin);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  /// Per-thread match state (match data, JIT stack): one per encode() call, reused across pieces.
  class Scratch {
   public:
    explicit Scratch(const Regex& regex);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    friend class Regex;
    void* data_ = nullptr;     // pcre2_match_data_8*
    void* context_ = nullptr;  // pcre2_match_context_8*
    void* stack_ = nullptr;    // pcre2_jit_stack_8*
  };
  /// Appends to `pieces` the [begin, end) ranges of text[begin, end) cut as HF's Split with
  /// behavior Isolated: every match, and every gap between matches, is a piece.
  void split(std::string_view text, size_t begin, size_t end, std::vector<std::pair<size_t, size_t>>& pieces,
             Scratch& scratch) const;
  /// The matches and the gaps between them in order, each marked (true for a match).
  void find(std::string_view text, size_t begin, size_t end, std::vector<std::tuple<size_t, size_t, bool>>& segments,
            Scratch& scratch) const;
  /// The same with a scratch of its own.
  void split(std::string_view text, size_t begin, size_t end, std::vector<std::pair<size_t, size_t>>& pieces) const {
    Scratch scratch(*this);
    split(text, begin, end, pieces, scratch);
  }

 private:
  void* code_ = nullptr;     // pcre2_code_8*
  void* context_ = nullptr;  // pcre2_match_context_8*
};

/// A GGUF tokenizer.ggml.pre of byte-level BPE as llama.cpp reads it: its names, the Split
/// regexes applied in sequence, and llama.cpp's flags for it.
struct PreType {
  std::vector<std::string_view> names;
  std::vector<const char*> patterns;
  bool ignoreMerges = false;  // a whole piece found in the vocabulary is one token
  bool addBos = false;        // llama.cpp's add_bos default
};
/// nullptr for an unknown name; "" is llama.cpp's "default" (a missing key).
const PreType* findPreType(std::string_view name);
/// The known names, comma-separated, for errors.
std::string preTypeNames();

/// HF's Split pre-tokenizer: a regex, what becomes of its matches, and whether the matches are
/// the gaps instead (invert).
enum class SplitBehavior { isolated, removed, mergedWithPrevious, mergedWithNext, contiguous };
struct SplitSpec {
  std::string pattern;
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;
};
/// Appends to `pieces` the pieces of text[begin, end) cut by `regex` as HF's Split does.
void splitPieces(const Regex& regex, const SplitSpec& split, std::string_view text, size_t begin, size_t end,
                 std::vector<std::pair<size_t, size_t>>& pieces, Regex::Scratch& scratch);

/// Unicode normalization of valid UTF-8 runs ("NFC", "NFD", "NFKC", "NFKD"); invalid bytes stay.
std::string normalizeUnicode(std::string_view text, std::string_view form);

/// BPE by merge ranks, as tokenizer.json / GGUF describe it: byte-level (GPT-2, Llama 3), or
/// SentencePiece-style over characters with <0xNN> byte fallback (HF's Llama 2 tokenizer.json).
struct BpeSpec {
  bool byteLevel = true;
  std::vector<std::string> texts;            // id -> spelling ("" for holes)
  std::vector<bool> control;                 // id -> decodes to nothing (may be shorter than texts)
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  std::vector<SplitSpec> splits;             // Split pre-tokenizers applied in sequence
  std::vector<std::string> forms;            // Unicode normalizations applied first, in order
  bool ignoreMerges = false;                 // a whole word found in the vocabulary is one token
  bool addPrefixSpace = false;
  int32_t unk = -1;
  int32_t bos = -1, eos = -1;
  std::string origin;                        // names the source in errors
  // SentencePiece-style (byteLevel false).
  bool byteFallback = false;                 // characters without a token -> <0xNN> tokens
  bool fuseUnk = false;                      // a run of unknown characters -> one unknown token
  std::string space;                         // replaces ' ' ("▁"); decode maps it back
  std::string prepend;                       // put before the text ("▁"); decode drops one leading space
  bool prependAlways = true;                 // false: only when the text does not start with it (Metaspace)
  bool prependFirstOnly = false;             // Metaspace prepend_scheme "first": only where the input starts
  bool splitOnSpace = false;                 // Metaspace split: a word starts at each `space`
};
std::shared_ptr<Tokenizer::Impl> makeBpe(BpeSpec spec);

/// Native SentencePiece (llama.cpp's llm_tokenizer_spm) from GGUF-style vocabulary data.
std::shared_ptr<Tokenizer::Impl> makeSpm(const VocabSpec& spec, std::string_view origin);
/// libsentencepiece over a tokenizer.model file.
std::shared_ptr<Tokenizer::Impl> makeSentencePiece(const std::string& path);
VocabSpec readSentencePiece(const std::string& path);

}  // namespace tok
}  // namespace radix
