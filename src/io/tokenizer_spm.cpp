// SentencePiece (Llama 1/2): natively from GGUF vocabularies, as llama.cpp's llm_tokenizer_spm
// and libsentencepiece's bpe_model.cc encode (merge the adjacent pair whose piece has the highest
// score, leftmost first), and through libsentencepiece for tokenizer.model files.
#include <sentencepiece_processor.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>

#include "io/tokenizer_internal.h"

namespace radix::tok {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";         // U+2581, SentencePiece's space
constexpr std::string_view kUnknown = " \xE2\x81\x87 ";     // libsentencepiece's surface of <unk>

enum TokenType : int32_t { kNormal = 1, kUnknownType = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// "<0x41>" -> 0x41; -1 for other spellings.
int byteOfPiece(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return -1;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') value |= c - '0';
    else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
    else return -1;
  }
  return value;
}

std::string spaces(std::string_view piece) {
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    if (piece.substr(i, 3) == kSpace) out += ' ', i += 3;
    else out += piece[i++];
  }
  return out;
}

class Spm final : public Tokenizer::Impl {
 public:
  Spm(const VocabSpec& spec, std::string_view origin) : addSpacePrefix_(spec.addSpacePrefix), unk_(spec.unk) {
    const size_t n = spec.tokens.size();
    texts = spec.tokens;
    scores_ = spec.scores.empty() ? std::vector<float>(n, 0.0f) : spec.scores;
    // A NaN would break the merge queue's ordering: treat it as the lowest score.
    for (float& score : scores_)
      if (std::isnan(score)) score = -std::numeric_limits<float>::infinity();
    types_ = spec.types.empty() ? std::vector<int32_t>(n, kNormal) : spec.types;
    byteIds_.fill(-1);
    for (size_t id = 0; id < n; ++id) {
      const int32_t type = types_[id];
      const int byte = byteOfPiece(texts[id]);
      if (byte >= 0 && (spec.types.empty() || type == kByte)) {
        byteIds_[byte] = static_cast<int32_t>(id);
        types_[id] = kByte;
      }
      ids.emplace(texts[id], static_cast<int32_t>(id));  // the first id of a spelling wins
      // As libsentencepiece: only normal and user-defined pieces are formed from text.
      if (types_[id] == kNormal || types_[id] == kUserDefined) pieces_.emplace(texts[id], static_cast<int32_t>(id));
      if (type == kUnknownType && unk_ < 0) unk_ = static_cast<int32_t>(id);
    }
    (void)origin;
    wordsSplit_ = true;
    for (const auto& [piece, id] : pieces_)
      for (size_t at = piece.find(kSpace, 1); at != std::string::npos && wordsSplit_; at = piece.find(kSpace, at + 1))
        if (at < 3 || std::string_view(piece).substr(at - 3, 3) != kSpace) wordsSplit_ = false;
  }

  std::string kind() const override { return "spm"; }

  std::string tokenBytes(int32_t id) const override {
    checkId(id);
    switch (types_[id]) {
      case kByte: return std::string(1, static_cast<char>(byteOfPiece(texts[id])));
      case kControl: return "";
      case kUnknownType: return std::string(kUnknown);
      default: return spaces(texts[id]);
    }
  }

  std::string decode(std::span<const int32_t> ids) const override {
    std::string out;
    bool first = true;
    for (int32_t id : ids) {
      std::string bytes = tokenBytes(id);
      if (first && !bytes.empty()) {
        // The dummy prefix of the first piece is not part of the text.
        if (addSpacePrefix_ && types_[id] != kByte && bytes[0] == ' ') bytes.erase(0, 1);
        first = false;
      }
      out += bytes;
    }
    return out;
  }

  std::vector<int32_t> encode(std::string_view input, bool) const override {
    std::vector<int32_t> out;
    if (input.empty()) return out;
    std::string text;
    text.reserve(input.size() + input.size() / 4 + 3);
    if (addSpacePrefix_) text += kSpace;
    for (char c : input) {
      if (c == ' ') text += kSpace;
      else text += c;
    }
    // Words: cut before each U+2581 that follows another character, when no piece could span
    // such a cut (no piece holds "x▁" with x not ▁). Merges never cross a cut then, so words
    // encode independently (and repeated words once).
    std::unordered_map<std::string_view, std::pair<size_t, size_t>> cache;  // word -> range of `out`
    const std::string_view all(text);
    size_t begin = 0;
    const auto flush = [&](size_t end) {
      const std::string_view word = all.substr(begin, end - begin);
      begin = end;
      if (word.empty()) return;
      const size_t start = out.size();
      if (auto it = cache.find(word); it != cache.end()) {
        for (size_t k = 0; k < it->second.second; ++k) out.push_back(out[it->second.first + k]);
      } else {
        encodeWord(word, out);
        if (cache.size() < (1u << 20)) cache.emplace(word, std::make_pair(start, out.size() - start));
      }
      // libsentencepiece merges a run of unknown characters into one <unk>, across words too.
      if (start > 0 && start < out.size() && unk_ >= 0 && out[start] == unk_ && out[start - 1] == unk_) out.erase(out.begin() + start);
    };
    if (wordsSplit_) {
      for (size_t i = 3; i + 3 <= all.size(); ++i)
        if (all.substr(i, 3) == kSpace && all.substr(i - 3, 3) != kSpace) flush(i);
    }
    flush(all.size());
    return out;
  }

 private:
  // Merges by score in one word (the whole text when it cannot be cut), as llm_tokenizer_spm.
  void encodeWord(std::string_view text, std::vector<int32_t>& out) const {
    // Symbols: one per UTF-8 character (an invalid byte is a character of its own).
    struct Symbol {
      int32_t prev, next;
      size_t start, length;
    };
    std::vector<Symbol> symbols;
    for (size_t i = 0; i < text.size();) {
      const size_t n = std::max<size_t>(utf8Length(text, i), 1);
      symbols.push_back({static_cast<int32_t>(symbols.size()) - 1, static_cast<int32_t>(symbols.size()) + 1, i, n});
      i += n;
    }
    symbols.back().next = -1;
    struct Bigram {
      float score;
      int32_t left, right;
      size_t length;
      bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
    };
    std::priority_queue<Bigram> queue;
    const auto consider = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const size_t length = symbols[left].length + symbols[right].length;
      auto it = pieces_.find(text.substr(symbols[left].start, length));
      if (it == pieces_.end()) return;
      queue.push({scores_[it->second], left, right, length});
    };
    for (size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int32_t>(i) - 1, static_cast<int32_t>(i));
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Symbol& left = symbols[b.left];
      Symbol& right = symbols[b.right];
      // Stale when either side was merged since.
      if (left.length == 0 || right.length == 0 || left.length + right.length != b.length || left.next != b.right) continue;
      left.length += right.length;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = b.left;
      consider(left.prev, b.left);
      consider(b.left, left.next);
    }
    bool previousUnknown = false;
    for (int32_t i = 0; i >= 0; i = symbols[i].next) {
      const std::string_view piece = text.substr(symbols[i].start, symbols[i].length);
      if (auto it = pieces_.find(piece); it != pieces_.end()) {
        out.push_back(it->second);
        previousUnknown = false;
        continue;
      }
      bool bytes = true;
      for (char c : piece) bytes &= byteIds_[static_cast<uint8_t>(c)] >= 0;
      if (bytes) {
        for (char c : piece) out.push_back(byteIds_[static_cast<uint8_t>(c)]);
        previousUnknown = false;
        continue;
      }
      if (unk_ < 0)
        fail("[tokenizer] GGUF tokenizer.ggml: \"" + std::string(piece) + "\" has no token, no byte tokens and there is no unknown token");
      if (!previousUnknown) out.push_back(unk_);
      previousUnknown = true;
    }
  }

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  bool addSpacePrefix_;
  bool wordsSplit_ = false;
  int32_t unk_;
  std::vector<float> scores_;
  std::vector<int32_t> types_;
  std::array<int32_t, 256> byteIds_{};
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> pieces_;
};

std::unique_ptr<sentencepiece::SentencePieceProcessor> loadProcessor(const std::string& path) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->Load(path);
  if (!status.ok()) fail("[tokenizer] " + path + ": not a SentencePiece model: " + status.ToString());
  return processor;
}

int32_t typeOf(const sentencepiece::SentencePieceProcessor& p, int id) {
  if (p.IsUnknown(id)) return kUnknownType;
  if (p.IsControl(id)) return kControl;
  if (p.IsUnused(id)) return kUnused;
  if (p.IsByte(id)) return kByte;
  return kNormal;
}

class SentencePiece final : public Tokenizer::Impl {
 public:
  SentencePiece(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor, std::string origin)
      : processor_(std::move(processor)), origin_(std::move(origin)) {
    const int n = processor_->GetPieceSize();
    for (int id = 0; id < n; ++id) {
      texts.push_back(processor_->IdToPiece(id));
      ids.emplace(texts.back(), id);
    }
    bos = processor_->bos_id() < n ? processor_->bos_id() : -1;
    eos = processor_->eos_id() < n ? processor_->eos_id() : -1;
    addBos = true;
    for (int id = 0; id < n; ++id)
      if (processor_->IsControl(id) || processor_->IsUnknown(id)) added.push_back({id, texts[id], true});
    finish();
  }

  std::string kind() const override { return "sentencepiece"; }

  std::vector<int32_t> encode(std::string_view text, bool) const override {
    std::vector<int> result;
    const auto status = processor_->Encode(text, &result);
    if (!status.ok()) fail("[tokenizer] " + origin_ + ": sentencepiece encode failed: " + status.ToString());
    return {result.begin(), result.end()};
  }

  std::string decode(std::span<const int32_t> ids) const override {
    for (int32_t id : ids) checkId(id);
    std::string out;
    const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &out);
    if (!status.ok()) fail("[tokenizer] " + origin_ + ": sentencepiece decode failed: " + status.ToString());
    return out;
  }

  std::string tokenBytes(int32_t id) const override {
    checkId(id);
    switch (typeOf(*processor_, id)) {
      case kByte: return std::string(1, static_cast<char>(byteOfPiece(texts[id])));
      case kControl: return "";
      case kUnknownType: return std::string(kUnknown);
      default: return spaces(texts[id]);
    }
  }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::string origin_;
};

}  // namespace

std::shared_ptr<Tokenizer::Impl> makeSpm(const VocabSpec& spec, std::string_view origin) {
  return std::make_shared<Spm>(spec, origin);
}

std::shared_ptr<Tokenizer::Impl> makeSentencePiece(const std::string& path) {
  return std::make_shared<SentencePiece>(loadProcessor(path), path);
}

VocabSpec readSentencePiece(const std::string& path) {
  const auto processor = loadProcessor(path);
  VocabSpec spec;
  spec.model = "llama";
  spec.pre = "default";
  const int n = processor->GetPieceSize();
  for (int id = 0; id < n; ++id) {
    spec.tokens.push_back(processor->IdToPiece(id));
    spec.scores.push_back(processor->GetScore(id));
    spec.types.push_back(typeOf(*processor, id));
  }
  const auto valid = [&](int id) { return id >= 0 && id < n ? id : -1; };
  spec.bos = valid(processor->bos_id());
  spec.eos = valid(processor->eos_id());
  spec.unk = valid(processor->unk_id());
  // The normalizer spec is not exposed without protobuf: a leading U+2581 on "a" means add_dummy_prefix.
  std::vector<std::string> pieces;
  spec.addSpacePrefix = processor->Encode("a", &pieces).ok() && !pieces.empty() && pieces[0].starts_with(kSpace);
  return spec;
}

}  // namespace radix::tok
