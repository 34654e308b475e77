// libFuzzer target for the tokenizers: the input is a tokenizer.json, then the separator line
// "\n--text--\n", then text. The JSON is parsed (a radix::Error is fine, nothing else is); the
// text is encoded and decoded by it, and by a fixed byte-level BPE and a fixed native SentencePiece
// vocabulary. Byte-level BPE must give the text back byte for byte.
// A first part starting "#vocab\n" is a GGUF-like vocabulary instead: one token per line, then a
// line "#merges" and "a b" merge lines; it is loaded as model "gpt2" and as model "llama". A line
// "#pre NAME" picks the tokenizer.ggml.pre; tokens "<|...|>" are CONTROL, "[...]" USER_DEFINED.
// Texts are encoded with and without special tokens and BOS.
#include <radix/error.h>
#include <radix/tokenizer.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view kSeparator = "\n--text--\n";

// Every byte as its own token plus a few merges, GPT-2's pre-tokenizer.
const radix::Tokenizer& byteLevel() {
  static const radix::Tokenizer tok = [] {
    radix::VocabSpec spec;
    spec.model = "gpt2";
    spec.pre = "llama-bpe";
    // GPT-2's byte -> character map, written out here so that the target checks the library's.
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int cp = printable ? b : next++;
      std::string s;
      if (cp < 0x80) s += static_cast<char>(cp);
      else s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
      spec.tokens.push_back(s);
    }
    for (const char* merge : {"Ġ t", "h e", "Ġt he", "i n", "a n", "Ġ a", "e r", "Ġa n", "Ġan d"}) {
      spec.merges.push_back(merge);
      std::string merged = merge;
      merged.erase(merged.find(' '), 1);
      spec.tokens.push_back(merged);
    }
    return radix::Tokenizer::fromVocab(spec);
  }();
  return tok;
}

// A SentencePiece vocabulary: <unk>, <s>, </s>, 256 byte tokens, then pieces with scores.
const radix::Tokenizer& sentencePiece() {
  static const radix::Tokenizer tok = [] {
    radix::VocabSpec spec;
    spec.model = "llama";
    spec.tokens = {"<unk>", "<s>", "</s>"};
    spec.types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      spec.tokens.push_back(name);
      spec.types.push_back(6);
    }
    for (const char* piece : {"\xE2\x96\x81", "\xE2\x96\x81t", "h", "e", "he", "\xE2\x96\x81the", "\xE2\x96\x81th", "a", "n", "d",
                              "an", "and", "\xE2\x96\x81" "and", "\xE4\xBD\xA0", "\xE5\xA5\xBD"}) {
      spec.tokens.push_back(piece);
      spec.types.push_back(1);
    }
    for (size_t i = 0; i < spec.tokens.size(); ++i) spec.scores.push_back(-static_cast<float>(i % 7));
    spec.unk = 0;
    return radix::Tokenizer::fromVocab(spec);
  }();
  return tok;
}

void roundTrip(const radix::Tokenizer& tok, std::string_view text, bool exact) {
  try {
    // Special tokens in the text decode to nothing: exact round trips leave them to the model.
    const std::vector<int32_t> ids = tok.encode(text, {.parseSpecial = false});
    const std::string back = tok.decode(ids);
    if (exact && back != text) std::abort();
    for (int32_t id : ids) tok.tokenBytes(id), tok.isEog(id);
    const std::vector<int32_t> special = tok.encode(text, {.addBos = tok.addBos()});
    if (tok.addBos() && (special.empty() || special[0] != tok.bos())) std::abort();
    tok.decode(special);
    for (int32_t id : tok.eogIds())
      if (!tok.isEog(id)) std::abort();
  } catch (const radix::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find(kSeparator);
  const std::string_view json = input.substr(0, cut);
  const std::string_view text = cut == std::string_view::npos ? std::string_view() : input.substr(cut + kSeparator.size());
  if (json.starts_with("#vocab\n")) {
    radix::VocabSpec spec;
    bool merges = false;
    for (size_t begin = 7; begin < json.size();) {
      size_t end = json.find('\n', begin);
      if (end == std::string_view::npos) end = json.size();
      const std::string line(json.substr(begin, end - begin));
      begin = end + 1;
      if (line == "#merges") merges = true;
      else if (line.starts_with("#pre ")) spec.pre = line.substr(5);
      else if (merges) spec.merges.push_back(line);
      else spec.tokens.push_back(line), spec.scores.push_back(-static_cast<float>(line.size() % 5)),
           spec.types.push_back(line.size() == 6 && line.starts_with("<0x") ? 6
                                : line.starts_with("<|")                    ? 3
                                : line.starts_with("[")                     ? 4
                                                                            : 1);
    }
    spec.unk = spec.tokens.empty() ? -1 : 0;
    for (const char* model : {"gpt2", "llama"}) {
      spec.model = model;
      try {
        roundTrip(radix::Tokenizer::fromVocab(spec), text, false);
      } catch (const radix::Error&) {
      }
    }
    return 0;
  }
  try {
    const radix::Tokenizer tok = radix::Tokenizer::fromJson(json, "fuzz.json");
    // Exact only when every byte has a token (else encode throws or uses the unknown token).
    roundTrip(tok, text, false);
    tok.decode(std::vector<int32_t>{0, tok.vocabSize() - 1});
  } catch (const radix::Error&) {
  }
  roundTrip(byteLevel(), text.empty() ? json : text, true);
  // SentencePiece reads U+2581 in the text as a space: exact only without it.
  const std::string_view plain = text.empty() ? json : text;
  roundTrip(sentencePiece(), plain, plain.find("\xE2\x96\x81") == std::string_view::npos);
  return 0;
}
