// Byte-level BPE (GPT-2, Llama 3): the PCRE2 pre-tokenizer, GPT-2's byte <-> character map and
// merges by rank with a priority queue, as HF tokenizers' BPE::merge_word does it.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <queue>

#include "io/tokenizer_internal.h"

namespace radix {

std::string Tokenizer::Impl::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) out += tokenBytes(id);
  return out;
}

void Tokenizer::Impl::checkId(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= texts.size())
    tok::fail("[tokenizer] token id " + std::to_string(id) + " out of range [0, " + std::to_string(texts.size()) + ")");
}

namespace tok {

void fail(const std::string& message) { throw Error(message); }

size_t utf8Length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = at(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t min;
  if ((c & 0xE0) == 0xC0) n = 2, min = 0x80;
  else if ((c & 0xF0) == 0xE0) n = 3, min = 0x800;
  else if ((c & 0xF8) == 0xF0) n = 4, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((at(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (at(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {
struct ByteMap {
  std::array<std::string, 256> toChar;
  std::unordered_map<uint32_t, uint8_t> toByte;  // code point -> byte
  ByteMap() {
    // Printable Latin-1 bytes spell themselves; the other 68 take code points 256, 257, ...
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? b : next++;
      appendUtf8(toChar[b], cp);
      toByte[cp] = static_cast<uint8_t>(b);
    }
  }
};
const ByteMap& byteMap() {
  static const ByteMap map;
  return map;
}
}  // namespace

const std::array<std::string, 256>& byteToChar() { return byteMap().toChar; }

bool charsToBytes(std::string_view spelled, std::string& out) {
  const auto& toByte = byteMap().toByte;
  std::string bytes;
  bytes.reserve(spelled.size());
  for (size_t i = 0; i < spelled.size();) {
    const size_t n = utf8Length(spelled, i);
    if (n == 0) return false;
    uint32_t cp = static_cast<uint8_t>(spelled[i]) & (n == 1 ? 0x7F : (0x7F >> n));
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(spelled[i + k]) & 0x3F);
    auto it = toByte.find(cp);
    if (it == toByte.end()) return false;
    bytes += static_cast<char>(it->second);
    i += n;
  }
  out = std::move(bytes);
  return true;
}

// HF tokenizers' ByteLevel regex (byte_level.rs) and Llama 3's Split regex (its tokenizer.json).
const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

// Oniguruma's `\s` for Unicode text (HF's regex engine): 0009-000D, 0085, Zs, Zl, Zp.
// PCRE2's UCP `\s` lacks U+0085.
constexpr std::string_view kWhiteSpace =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string rewriteWhiteSpace(std::string_view pattern) {
  std::string out;
  bool inClass = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        if (inClass) out += kWhiteSpace;
        else out += "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S' && !inClass) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!inClass && c == '[') {
      inClass = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (inClass && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      // POSIX class [:alpha:] inside a class.
      const size_t close = pattern.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out += pattern.substr(i, close + 2 - i);
        i = close + 1;
        continue;
      }
    }
    if (inClass && c == ']') inClass = false;
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view origin) {
  const std::string rewritten = rewriteWhiteSpace(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C, &error,
                                   &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(error, buffer, sizeof buffer);
    fail("[tokenizer] " + std::string(origin) + ": bad pre-tokenizer regex \"" + std::string(pattern) + "\": " +
         reinterpret_cast<const char*>(buffer) + " at offset " + std::to_string(offset));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // the interpreter runs when JIT is unavailable
  code_ = code;
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  // A hostile regex gives an error, not a hang.
  pcre2_set_match_limit(context, 10'000'000);
  pcre2_set_depth_limit(context, 100'000);
  context_ = context;
}

Regex::~Regex() {
  pcre2_match_context_free(static_cast<pcre2_match_context*>(context_));
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Regex::Scratch::Scratch(const Regex& regex) {
  auto* data = pcre2_match_data_create_from_pattern(static_cast<pcre2_code*>(regex.code_), nullptr);
  auto* context = pcre2_match_context_copy(static_cast<pcre2_match_context*>(regex.context_));
  // JIT stacks may not be shared between threads: one per scratch.
  auto* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  data_ = data, context_ = context, stack_ = stack;
  if (!data || !context || !stack) {
    this->~Scratch();
    fail("[tokenizer] out of memory for the regex matcher");
  }
  pcre2_jit_stack_assign(context, nullptr, stack);
}

Regex::Scratch::~Scratch() {
  pcre2_jit_stack_free(static_cast<pcre2_jit_stack*>(stack_));
  pcre2_match_context_free(static_cast<pcre2_match_context*>(context_));
  pcre2_match_data_free(static_cast<pcre2_match_data*>(data_));
  data_ = context_ = stack_ = nullptr;
}

void Regex::find(std::string_view text, size_t begin, size_t end, std::vector<std::tuple<size_t, size_t, bool>>& segments,
                 Scratch& scratch) const {
  auto* code = static_cast<pcre2_code*>(code_);
  auto* data = static_cast<pcre2_match_data*>(scratch.data_);
  auto* context = static_cast<pcre2_match_context*>(scratch.context_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + begin);
  const size_t length = end - begin;
  size_t gap = 0, from = 0;
  while (from < length) {
    const int rc = pcre2_match(code, subject, length, from, 0, data, context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR buffer[256];
      pcre2_get_error_message(rc, buffer, sizeof buffer);
      fail("[tokenizer] pre-tokenizer regex failed at byte " + std::to_string(begin + from) + ": " +
           reinterpret_cast<const char*>(buffer));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t s = ovector[0], t = ovector[1];
    if (t <= s || s < from || t > length) {
      // An empty match (possible with a tokenizer.json's own regex) cuts nothing: look further.
      from = std::max(from, s) + 1;
      while (from < length && (static_cast<uint8_t>(text[begin + from]) & 0xC0) == 0x80) ++from;
      continue;
    }
    if (s > gap) segments.emplace_back(begin + gap, begin + s, false);
    segments.emplace_back(begin + s, begin + t, true);
    gap = from = t;
  }
  if (gap < length) segments.emplace_back(begin + gap, begin + length, false);
}

void Regex::split(std::string_view text, size_t begin, size_t end, std::vector<std::pair<size_t, size_t>>& pieces,
                  Scratch& scratch) const {
  std::vector<std::tuple<size_t, size_t, bool>> segments;
  find(text, begin, end, segments, scratch);
  for (auto [b, e, match] : segments) pieces.emplace_back(b, e);
}

void splitPieces(const Regex& regex, const SplitSpec& split, std::string_view text, size_t begin, size_t end,
                 std::vector<std::pair<size_t, size_t>>& pieces, Regex::Scratch& scratch) {
  std::vector<std::tuple<size_t, size_t, bool>> segments;
  regex.find(text, begin, end, segments, scratch);
  if (split.invert)
    for (auto& segment : segments) std::get<2>(segment) = !std::get<2>(segment);
  // As HF's NormalizedString::split: fold the marked segments by behavior.
  std::vector<std::pair<size_t, size_t>> out;
  bool previous = false;
  switch (split.behavior) {
    case SplitBehavior::isolated:
      for (auto [b, e, match] : segments) out.emplace_back(b, e);
      break;
    case SplitBehavior::removed:
      for (auto [b, e, match] : segments)
        if (!match) out.emplace_back(b, e);
      break;
    case SplitBehavior::contiguous:
      for (auto [b, e, match] : segments) {
        if (match == previous && !out.empty()) out.back().second = e;
        else out.emplace_back(b, e);
        previous = match;
      }
      break;
    case SplitBehavior::mergedWithPrevious:
      for (auto [b, e, match] : segments) {
        if (match && !previous && !out.empty()) out.back().second = e;
        else out.emplace_back(b, e);
        previous = match;
      }
      break;
    case SplitBehavior::mergedWithNext:
      for (size_t k = segments.size(); k-- > 0;) {
        auto [b, e, match] = segments[k];
        if (match && !previous && !out.empty()) out.back().first = b;
        else out.emplace_back(b, e);
        previous = match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  for (auto piece : out)
    if (piece.second > piece.first) pieces.push_back(piece);
}

std::string normalizeUnicode(std::string_view text, std::string_view form) {
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* normalizer = form == "NFC"    ? unorm2_getNFCInstance(&status)
                                   : form == "NFD"  ? unorm2_getNFDInstance(&status)
                                   : form == "NFKC" ? unorm2_getNFKCInstance(&status)
                                                    : unorm2_getNFKDInstance(&status);
  if (U_FAILURE(status)) fail(std::string("[tokenizer] ICU has no ") + std::string(form) + " normalizer: " + u_errorName(status));
  std::string out;
  out.reserve(text.size());
  std::u16string wide, normalized;
  for (size_t i = 0; i < text.size();) {
    // A run of valid UTF-8 (ASCII alone is already normalized in every form).
    size_t j = i;
    bool ascii = true;
    while (j < text.size()) {
      const size_t n = utf8Length(text, j);
      if (n == 0) break;
      ascii &= n == 1;
      j += n;
    }
    if (j == i) {
      out += text[i++];
      continue;
    }
    const std::string_view run = text.substr(i, j - i);
    i = j;
    if (ascii) {
      out += run;
      continue;
    }
    status = U_ZERO_ERROR;
    int32_t length = 0;
    wide.resize(run.size());
    u_strFromUTF8(reinterpret_cast<UChar*>(wide.data()), static_cast<int32_t>(wide.size()), &length, run.data(),
                  static_cast<int32_t>(run.size()), &status);
    wide.resize(length);
    normalized.resize(wide.size() * 4 + 16);
    status = status == U_STRING_NOT_TERMINATED_WARNING ? U_ZERO_ERROR : status;
    const int32_t n = unorm2_normalize(normalizer, reinterpret_cast<const UChar*>(wide.data()), static_cast<int32_t>(wide.size()),
                                       reinterpret_cast<UChar*>(normalized.data()), static_cast<int32_t>(normalized.size()), &status);
    if (U_FAILURE(status)) fail(std::string("[tokenizer] ") + std::string(form) + " normalization failed: " + u_errorName(status));
    std::string utf8(static_cast<size_t>(n) * 3 + 4, '\0');
    status = U_ZERO_ERROR;
    u_strToUTF8(utf8.data(), static_cast<int32_t>(utf8.size()), &length, reinterpret_cast<const UChar*>(normalized.data()), n, &status);
    if (U_FAILURE(status)) fail(std::string("[tokenizer] ") + std::string(form) + " normalization failed: " + u_errorName(status));
    out.append(utf8.data(), length);
  }
  return out;
}

namespace {

struct Merge {
  int32_t rank;
  int32_t id;
};

class Bpe final : public Tokenizer::Impl {
 public:
  explicit Bpe(BpeSpec spec)
      : origin_(spec.origin),
        byteLevel_(spec.byteLevel),
        ignoreMerges_(spec.ignoreMerges),
        addPrefixSpace_(spec.addPrefixSpace),
        byteFallback_(spec.byteFallback),
        fuseUnk_(spec.fuseUnk),
        prependAlways_(spec.prependAlways),
        prependFirstOnly_(spec.prependFirstOnly),
        splitOnSpace_(spec.splitOnSpace),
        prepend_(spec.prepend),
        space_(spec.space),
        unk_(spec.unk) {
    texts = std::move(spec.texts);
    bos = spec.bos;
    eos = spec.eos;
    control_ = std::move(spec.control);
    control_.resize(texts.size(), false);
    bytes_.resize(texts.size());
    ids.reserve(texts.size());
    fallbackIds_.fill(-1);
    for (size_t id = 0; id < texts.size(); ++id) {
      const std::string& text = texts[id];
      if (text.empty()) continue;
      auto [it, inserted] = ids.emplace(text, static_cast<int32_t>(id));
      if (!inserted) fail("[tokenizer] " + origin_ + ": token \"" + text + "\" has two ids, " + std::to_string(it->second) + " and " + std::to_string(id));
      if (byteLevel_) {
        // Tokens spelled outside the byte map (added tokens) stand for their UTF-8 bytes, as in HF's ByteLevel decoder.
        if (!charsToBytes(text, bytes_[id])) bytes_[id] = text;
        continue;
      }
      // SentencePiece-style: <0xNN> byte tokens (byte_fallback), the space marker back to spaces.
      const int byte = byteFallback_ ? byteOfPiece(text) : -1;
      if (byte >= 0) {
        fallbackIds_[byte] = static_cast<int32_t>(id);
        bytes_[id] = std::string(1, static_cast<char>(byte));
      } else {
        bytes_[id] = space_.empty() ? text : replaceAll(text, space_, " ");
      }
    }
    if (unk_ >= static_cast<int32_t>(texts.size())) fail("[tokenizer] " + origin_ + ": unknown token id " + std::to_string(unk_) + " out of range");
    byteIds_.fill(-1);
    if (byteLevel_) {
      const auto& chars = byteToChar();
      for (int b = 0; b < 256; ++b) {
        auto it = ids.find(chars[b]);
        byteIds_[b] = it == ids.end() ? -1 : it->second;
      }
    }
    merges_.reserve(spec.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
      const auto& [a, b] = spec.merges[rank];
      joined.assign(a).append(b);
      const auto lookup = [&](const std::string& text) {
        auto it = ids.find(text);
        if (it == ids.end())
          fail("[tokenizer] " + origin_ + ": merge " + std::to_string(rank) + " (\"" + a + " " + b + "\") names \"" + text + "\", which is not in the vocabulary");
        return it->second;
      };
      const int32_t left = lookup(a), right = lookup(b), merged = lookup(joined);
      // A pair listed twice keeps its last rank, as HF's merge map (and GPT-2's bpe_ranks dict) do.
      merges_.insert_or_assign(key(left, right), Merge{static_cast<int32_t>(rank), merged});
    }
    for (const SplitSpec& split : spec.splits) regexes_.push_back(std::make_unique<Regex>(split.pattern, origin_));
    splits_ = std::move(spec.splits);
    forms_ = std::move(spec.forms);
    // Without a pre-tokenizer the whole text is one word. When no token holds the space marker
    // after another character ("x▁"), no merge can cross the start of a "▁word": such words
    // encode independently (same ids, and repeated words once).
    if (!byteLevel_ && !space_.empty() && !splitOnSpace_ && regexes_.empty()) {
      wordsSplit_ = true;
      for (const std::string& text : texts)
        for (size_t at = text.find(space_, 1); at != std::string::npos && wordsSplit_; at = text.find(space_, at + 1))
          if (at < space_.size() || text.compare(at - space_.size(), space_.size(), space_) != 0) wordsSplit_ = false;
    }
  }

  std::string kind() const override { return byteLevel_ ? "bpe" : "bpe-sp"; }

  std::string tokenBytes(int32_t id) const override {
    checkId(id);
    return control_[id] ? std::string() : bytes_[id];
  }

  std::string decode(std::span<const int32_t> ids) const override {
    std::string out = Impl::decode(ids);
    // The prefix space added to the text is not part of it (HF's Strip decoder of Llama 2).
    if (!byteLevel_ && !prepend_.empty() && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }

  std::vector<int32_t> encode(std::string_view input, bool first) const override {
    std::string normalized;
    for (const std::string& form : forms_) {
      normalized = normalizeUnicode(input, form);
      input = normalized;
    }
    if (addPrefixSpace_ && !input.empty() && input[0] != ' ') {
      normalized = " " + std::string(input);
      input = normalized;
    }
    if (!byteLevel_ && !input.empty() && (!space_.empty() || !prepend_.empty())) {
      // HF's Prepend + Replace normalizers, or the Metaspace pre-tokenizer (which prepends only
      // when the text does not already start with the marker).
      std::string text = space_.empty() ? std::string(input) : replaceAll(input, " ", space_);
      if (!prepend_.empty() && (first || !prependFirstOnly_) && (prependAlways_ || !std::string_view(text).starts_with(prepend_)))
        text = prepend_ + text;
      normalized = std::move(text);
      input = normalized;
    }
    std::vector<std::pair<size_t, size_t>> pieces, next;
    if (!input.empty()) pieces.emplace_back(0, input.size());
    if ((splitOnSpace_ || wordsSplit_) && !space_.empty() && !input.empty()) {
      // Metaspace's split: a word starts at each marker; wordsSplit_: at each marker after another character.
      pieces.clear();
      size_t begin = 0;
      const size_t m = space_.size();
      for (size_t at = input.find(space_, 1); at != std::string_view::npos; at = input.find(space_, at + 1)) {
        if (!splitOnSpace_ && at >= m && input.substr(at - m, m) == space_) continue;
        pieces.emplace_back(begin, at);
        begin = at;
      }
      if (begin < input.size()) pieces.emplace_back(begin, input.size());
    }
    for (size_t k = 0; k < regexes_.size(); ++k) {
      next.clear();
      Regex::Scratch scratch(*regexes_[k]);
      for (auto [b, e] : pieces) splitPieces(*regexes_[k], splits_[k], input, b, e, next, scratch);
      pieces.swap(next);
    }
    std::vector<int32_t> out;
    out.reserve(input.size() / 3);
    std::unordered_map<std::string_view, std::pair<size_t, size_t>> cache;  // word -> range of `out`
    for (auto [b, e] : pieces) {
      const std::string_view word = input.substr(b, e - b);
      if (auto it = cache.find(word); it != cache.end()) {
        const auto [start, count] = it->second;
        for (size_t k = 0; k < count; ++k) out.push_back(out[start + k]);
        continue;
      }
      const size_t start = out.size();
      encodeWord(word, out);
      if (cache.size() < (1u << 20)) cache.emplace(word, std::make_pair(start, out.size() - start));
    }
    return out;
  }

 private:
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  static std::string replaceAll(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
      if (text.substr(i, from.size()) == from) {
        out += to;
        i += from.size();
      } else {
        out += text[i++];
      }
    }
    return out;
  }

  // "<0x41>" -> 0x41; -1 for other spellings.
  static int byteOfPiece(std::string_view piece) {
    if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return -1;
    int value = 0;
    for (char c : piece.substr(3, 2)) {
      value <<= 4;
      if (c >= '0' && c <= '9') value |= c - '0';
      else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
      else return -1;
    }
    return value;
  }

  void encodeWord(std::string_view word, std::vector<int32_t>& out) const {
    if (ignoreMerges_) {
      std::string spelled;
      if (byteLevel_) {
        for (char c : word) spelled += byteToChar()[static_cast<uint8_t>(c)];
      } else {
        spelled = word;
      }
      if (auto it = ids.find(spelled); it != ids.end()) {
        out.push_back(it->second);
        return;
      }
    }
    std::vector<int32_t> id;
    id.reserve(word.size());
    if (byteLevel_) {
      for (char c : word) id.push_back(byteId(c));
    } else {
      charSymbols(word, id);
    }
    mergeSymbols(id, out);
  }

  // SentencePiece-style BPE: one symbol per character (an invalid byte is a character), else its
  // <0xNN> tokens (byte_fallback), else the unknown token (a run fused into one with fuse_unk).
  void charSymbols(std::string_view word, std::vector<int32_t>& id) const {
    bool previousUnknown = false;
    std::string ch;
    for (size_t i = 0; i < word.size();) {
      const size_t n = std::max<size_t>(utf8Length(word, i), 1);
      ch.assign(word.substr(i, n));
      i += n;
      if (auto it = ids.find(ch); it != ids.end()) {
        id.push_back(it->second);
        previousUnknown = false;
        continue;
      }
      bool bytes = byteFallback_;
      for (char c : ch) bytes = bytes && fallbackIds_[static_cast<uint8_t>(c)] >= 0;
      if (bytes) {
        for (char c : ch) id.push_back(fallbackIds_[static_cast<uint8_t>(c)]);
        previousUnknown = false;
        continue;
      }
      if (unk_ < 0)
        fail("[tokenizer] " + origin_ + ": \"" + ch + "\" has no token" + (byteFallback_ ? ", no byte tokens" : "") +
             " and there is no unknown token");
      if (!(fuseUnk_ && previousUnknown)) id.push_back(unk_);
      previousUnknown = true;
    }
  }

  // Merges by rank: symbols in a linked list, candidate merges in a min-heap by (rank, position).
  void mergeSymbols(std::vector<int32_t>& id, std::vector<int32_t>& out) const {
    const size_t n = id.size();
    if (n <= 1) {
      out.insert(out.end(), id.begin(), id.end());
      return;
    }
    std::vector<int32_t> prev(n), next(n);
    for (size_t i = 0; i < n; ++i) {
      prev[i] = static_cast<int32_t>(i) - 1;
      next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    }
    struct Candidate {
      int32_t rank, pos, right, leftId, rightId;
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    const auto consider = [&](int32_t left) {
      if (left < 0 || next[left] < 0) return;
      const int32_t right = next[left];
      auto it = merges_.find(key(id[left], id[right]));
      if (it != merges_.end()) heap.push({it->second.rank, left, right, id[left], id[right]});
    };
    for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
    while (!heap.empty()) {
      const Candidate c = heap.top();
      heap.pop();
      // Stale when either symbol was merged away or changed since the candidate was pushed.
      if (id[c.pos] != c.leftId || next[c.pos] != c.right || id[c.right] != c.rightId) continue;
      id[c.pos] = merges_.at(key(c.leftId, c.rightId)).id;
      id[c.right] = -2;  // dead
      next[c.pos] = next[c.right];
      if (next[c.pos] >= 0) prev[next[c.pos]] = c.pos;
      consider(prev[c.pos]);
      consider(c.pos);
    }
    for (int32_t i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
  }

  int32_t byteId(char c) const {
    const int32_t id = byteIds_[static_cast<uint8_t>(c)];
    if (id >= 0) return id;
    if (unk_ >= 0) return unk_;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<uint8_t>(c));
    fail("[tokenizer] " + origin_ + ": byte " + hex + " has no token (\"" + byteToChar()[static_cast<uint8_t>(c)] +
         "\" is not in the vocabulary) and there is no unknown token");
  }

  std::string origin_;
  bool byteLevel_, ignoreMerges_, addPrefixSpace_, byteFallback_, fuseUnk_, prependAlways_, prependFirstOnly_, splitOnSpace_;
  bool wordsSplit_ = false;
  std::string prepend_, space_;
  int32_t unk_;
  std::vector<std::string> bytes_;  // id -> raw bytes
  std::vector<bool> control_;       // id -> decodes to nothing (special added tokens, GGUF control)
  std::array<int32_t, 256> byteIds_{};      // byte-level: byte -> its token
  std::array<int32_t, 256> fallbackIds_{};  // SentencePiece-style: byte -> <0xNN>
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<std::unique_ptr<Regex>> regexes_;
  std::vector<SplitSpec> splits_;
  std::vector<std::string> forms_;
};

}  // namespace

std::shared_ptr<Tokenizer::Impl> makeBpe(BpeSpec spec) { return std::make_shared<Bpe>(std::move(spec)); }

}  // namespace tok
}  // namespace radix
