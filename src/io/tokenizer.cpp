// radix::Tokenizer: reading tokenizer.json, vocab.json + merges.txt, GGUF vocabularies and
// tokenizer.model files into the models of tokenizer_bpe.cpp and tokenizer_spm.cpp.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unicode/uchar.h>

#include "io/tokenizer_internal.h"
#include "radix/io.h"

namespace radix {

namespace {

using nlohmann::json;
using tok::fail;

// Ids above this are rejected: a hostile file must not make us allocate gigabytes.
constexpr int64_t kMaxVocab = 1 << 24;

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("[tokenizer] cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("[tokenizer] cannot read " + path.string());
  return text.str();
}

json parseJson(std::string_view text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("[tokenizer] " + origin + ": bad JSON: " + e.what());
  }
}

std::string typeOf(const json& j) { return j.type_name(); }

// Sets texts[id] = text, growing texts; conflicting spellings of one id are an error.
void place(std::vector<std::string>& texts, int64_t id, const std::string& text, const std::string& origin,
           const std::string& field) {
  if (id < 0 || id >= kMaxVocab)
    fail("[tokenizer] " + origin + ": " + field + " \"" + text + "\" has id " + std::to_string(id) + ", outside [0, " +
         std::to_string(kMaxVocab) + ")");
  if (text.empty()) fail("[tokenizer] " + origin + ": " + field + " has an empty token (id " + std::to_string(id) + ")");
  if (static_cast<size_t>(id) >= texts.size()) texts.resize(id + 1);
  if (!texts[id].empty() && texts[id] != text)
    fail("[tokenizer] " + origin + ": " + field + ": id " + std::to_string(id) + " is both \"" + texts[id] + "\" and \"" + text + "\"");
  texts[id] = text;
}

std::vector<std::string> vocabFromJson(const json& vocab, const std::string& origin, const std::string& field) {
  if (!vocab.is_object()) fail("[tokenizer] " + origin + ": " + field + " is " + typeOf(vocab) + ", expected an object of token -> id");
  std::vector<std::string> texts;
  for (const auto& [text, id] : vocab.items()) {
    if (!id.is_number_integer())
      fail("[tokenizer] " + origin + ": " + field + "[\"" + text + "\"] is " + typeOf(id) + ", expected an integer id");
    place(texts, id.get<int64_t>(), text, origin, field);
  }
  return texts;
}

std::pair<std::string, std::string> splitMerge(std::string_view line, const std::string& origin, const std::string& where) {
  const size_t space = line.find(' ', 1);
  if (space == std::string_view::npos || space + 1 >= line.size() || line.find(' ', space + 1) != std::string_view::npos)
    fail("[tokenizer] " + origin + ": " + where + " is \"" + std::string(line) + "\", expected two tokens separated by one space");
  return {std::string(line.substr(0, space)), std::string(line.substr(space + 1))};
}

std::string getString(const json& object, const char* key, const std::string& origin, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) fail("[tokenizer] " + origin + ": " + path + "." + key + " is missing");
  if (!it->is_string()) fail("[tokenizer] " + origin + ": " + path + "." + key + " is " + typeOf(*it) + ", expected a string");
  return it->get<std::string>();
}

bool getBool(const json& object, const char* key, bool otherwise, const std::string& origin, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return otherwise;
  if (!it->is_boolean()) fail("[tokenizer] " + origin + ": " + path + "." + key + " is " + typeOf(*it) + ", expected a boolean");
  return it->get<bool>();
}

// PCRE2 pattern matching the literal `text`.
std::string quoteRegex(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// Fills spec.patterns / addPrefixSpace from a pre_tokenizer; returns whether a ByteLevel step was seen.
bool readPreTokenizer(const json& pre, tok::BpeSpec& spec, const std::string& origin, const std::string& path, int depth = 0) {
  if (!pre.is_object()) fail("[tokenizer] " + origin + ": " + path + " is " + typeOf(pre) + ", expected an object");
  if (depth > 8) fail("[tokenizer] " + origin + ": " + path + " nests Sequences too deeply");
  const std::string type = getString(pre, "type", origin, path);
  if (type == "ByteLevel") {
    spec.addPrefixSpace = getBool(pre, "add_prefix_space", false, origin, path);
    if (getBool(pre, "use_regex", true, origin, path)) spec.splits.push_back({tok::kGpt2Pattern});
    return true;
  }
  if (type == "Sequence") {
    auto it = pre.find("pretokenizers");
    if (it == pre.end() || !it->is_array()) fail("[tokenizer] " + origin + ": " + path + ".pretokenizers is missing or not an array");
    bool byteLevel = false;
    for (size_t i = 0; i < it->size(); ++i)
      byteLevel |= readPreTokenizer((*it)[i], spec, origin, path + ".pretokenizers[" + std::to_string(i) + "]", depth + 1);
    return byteLevel;
  }
  if (type == "Split") {
    auto pattern = pre.find("pattern");
    if (pattern == pre.end() || !pattern->is_object())
      fail("[tokenizer] " + origin + ": " + path + ".pattern is missing or not an object");
    std::string regex;
    if (pattern->contains("Regex")) regex = getString(*pattern, "Regex", origin, path + ".pattern");
    else if (pattern->contains("String")) regex = quoteRegex(getString(*pattern, "String", origin, path + ".pattern"));
    else fail("[tokenizer] " + origin + ": " + path + ".pattern has neither Regex nor String");
    const std::string behavior = getString(pre, "behavior", origin, path);
    static const std::pair<const char*, tok::SplitBehavior> kBehaviors[] = {
        {"Isolated", tok::SplitBehavior::isolated},
        {"Removed", tok::SplitBehavior::removed},
        {"MergedWithPrevious", tok::SplitBehavior::mergedWithPrevious},
        {"MergedWithNext", tok::SplitBehavior::mergedWithNext},
        {"Contiguous", tok::SplitBehavior::contiguous}};
    const auto found = std::find_if(std::begin(kBehaviors), std::end(kBehaviors), [&](const auto& b) { return behavior == b.first; });
    if (found == std::end(kBehaviors))
      fail("[tokenizer] " + origin + ": " + path + ".behavior \"" + behavior +
           "\" is not one of Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous");
    spec.splits.push_back({regex, found->second, getBool(pre, "invert", false, origin, path)});
    return false;
  }
  if (type == "Digits") {
    spec.splits.push_back({getBool(pre, "individual_digits", false, origin, path) ? R"(\p{N})" : R"(\p{N}+)"});
    return false;
  }
  if (type == "Metaspace") {
    // Legacy SentencePiece-style tokenizer.json: spaces -> replacement, a prefix, words split at it.
    spec.space = getString(pre, "replacement", origin, path);
    std::string scheme = getBool(pre, "add_prefix_space", true, origin, path) ? "always" : "never";
    if (pre.contains("prepend_scheme")) scheme = getString(pre, "prepend_scheme", origin, path);
    if (scheme != "always" && scheme != "first" && scheme != "never")
      fail("[tokenizer] " + origin + ": " + path + ".prepend_scheme \"" + scheme + "\" is not one of always, first, never");
    spec.prepend = scheme == "never" ? "" : spec.space;
    spec.prependAlways = false;
    spec.prependFirstOnly = scheme == "first";
    spec.splitOnSpace = getBool(pre, "split", true, origin, path);
    return false;
  }
  fail("[tokenizer] " + origin + ": " + path + ".type \"" + type + "\" is not supported (ByteLevel, Split, Digits, Metaspace, Sequence)");
}

// Normalizers: NFC / NFD / NFKC / NFKD (Qwen2), and those of SentencePiece-style tokenizer.json
// files (Llama 2, Gemma): Prepend("▁") and Replace(" " -> "▁"); alone or in a Sequence.
void readNormalizer(const json& n, tok::BpeSpec& spec, const std::string& origin, const std::string& path, int depth = 0) {
  if (!n.is_object()) fail("[tokenizer] " + origin + ": " + path + " is " + typeOf(n) + ", expected an object");
  if (depth > 8) fail("[tokenizer] " + origin + ": " + path + " nests Sequences too deeply");
  const std::string type = getString(n, "type", origin, path);
  if (type == "Sequence") {
    auto it = n.find("normalizers");
    if (it == n.end() || !it->is_array()) fail("[tokenizer] " + origin + ": " + path + ".normalizers is missing or not an array");
    for (size_t i = 0; i < it->size(); ++i) readNormalizer((*it)[i], spec, origin, path + ".normalizers[" + std::to_string(i) + "]", depth + 1);
    return;
  }
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    spec.forms.push_back(type);
    return;
  }
  if (spec.byteLevel) fail("[tokenizer] " + origin + ": " + path + ".type \"" + type + "\" with a ByteLevel pre-tokenizer is not supported");
  if (type == "Prepend") {
    spec.prepend = getString(n, "prepend", origin, path);
    spec.prependAlways = true;
    return;
  }
  if (type == "Replace") {
    auto pattern = n.find("pattern");
    if (pattern == n.end() || !pattern->is_object() || !pattern->contains("String") ||
        getString(*pattern, "String", origin, path + ".pattern") != " ")
      fail("[tokenizer] " + origin + ": " + path + ": only Replace of the String \" \" is supported");
    spec.space = getString(n, "content", origin, path);
    return;
  }
  fail("[tokenizer] " + origin + ": " + path + ".type \"" + type + "\" is not supported (NFC, NFD, NFKC, NFKD, Prepend, Replace, Sequence)");
}

// BOS/EOS by the spellings GPT-2, Llama 3, SentencePiece and Gemma vocabularies use.
void guessBosEos(Tokenizer::Impl& impl) {
  const auto find = [&](const char* text) {
    auto it = impl.ids.find(text);
    return it == impl.ids.end() ? -1 : it->second;
  };
  for (const char* text : {"<|endoftext|>", "<|begin_of_text|>", "<s>", "<bos>"})
    if (impl.bos < 0) impl.bos = find(text);
  for (const char* text : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"})
    if (impl.eos < 0) impl.eos = find(text);
}

// Whether the HF post-processor puts BOS first: TemplateProcessing whose single template starts
// with a SpecialToken (alone or in a Sequence); its id becomes bos when none is known.
void readPostProcessor(const json& post, Tokenizer::Impl& impl, const std::string& origin, int depth = 0) {
  if (!post.is_object() || depth > 8) return;
  const auto type = post.find("type");
  if (type == post.end() || !type->is_string()) return;
  if (*type == "Sequence") {
    if (auto list = post.find("processors"); list != post.end() && list->is_array())
      for (const json& p : *list) readPostProcessor(p, impl, origin, depth + 1);
    return;
  }
  if (*type != "TemplateProcessing") return;
  const auto single = post.find("single");
  if (single == post.end() || !single->is_array()) return;
  impl.addBos = false;
  if (single->empty() || !(*single)[0].is_object() || !(*single)[0].contains("SpecialToken")) return;
  const json& first = (*single)[0]["SpecialToken"];
  if (!first.is_object() || !first.contains("id") || !first["id"].is_string()) return;
  const std::string name = first["id"].get<std::string>();
  int32_t id = -1;
  if (auto it = impl.ids.find(name); it != impl.ids.end()) id = it->second;
  if (auto tokens = post.find("special_tokens"); tokens != post.end() && tokens->is_object() && tokens->contains(name)) {
    const json& entry = (*tokens)[name];
    if (entry.is_object() && entry.contains("ids") && entry["ids"].is_array() && entry["ids"].size() == 1 &&
        entry["ids"][0].is_number_integer()) {
      const int64_t v = entry["ids"][0].get<int64_t>();
      if (v >= 0 && v < static_cast<int64_t>(impl.texts.size())) id = static_cast<int32_t>(v);
    }
  }
  if (id < 0) return;
  impl.addBos = true;
  impl.bos = id;
}

// tokenizer_config.json next to the tokenizer: bos_token / eos_token (a string or {"content":
// ...}), add_bos_token, added_tokens_decoder (added tokens the tokenizer file lacks); and
// generation_config.json's eos_token_id (an id or a list), which ends generation too.
void readTokenizerConfig(Tokenizer::Impl& impl, const std::filesystem::path& folder) {
  std::error_code ec;
  if (const auto generation = folder / "generation_config.json"; std::filesystem::is_regular_file(generation, ec)) {
    const json config = parseJson(readFile(generation), generation.string());
    if (config.is_object() && config.contains("eos_token_id")) {
      const json& eos = config["eos_token_id"];
      for (const json& id : eos.is_array() ? eos : json::array({eos}))
        if (id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < static_cast<int64_t>(impl.texts.size()))
          impl.eogExtra.push_back(id.get<int32_t>());
    }
  }
  const auto path = folder / "tokenizer_config.json";
  if (!std::filesystem::is_regular_file(path, ec)) {
    impl.finish();
    return;
  }
  const json config = parseJson(readFile(path), path.string());
  if (!config.is_object()) {
    impl.finish();
    return;
  }
  if (auto it = config.find("add_bos_token"); it != config.end() && it->is_boolean()) impl.addBos = it->get<bool>();
  if (auto it = config.find("added_tokens_decoder"); it != config.end() && it->is_object()) {
    for (const auto& [key, entry] : it->items()) {
      if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string()) continue;
      const std::string content = entry["content"].get<std::string>();
      auto found = impl.ids.find(content);
      if (found == impl.ids.end() || std::to_string(found->second) != key) continue;  // only tokens of the vocabulary
      if (std::any_of(impl.added.begin(), impl.added.end(), [&](const AddedToken& t) { return t.id == found->second; })) continue;
      const auto flag = [&](const char* name) { return entry.contains(name) && entry[name].is_boolean() && entry[name].get<bool>(); };
      impl.added.push_back({found->second, content, flag("special"), flag("lstrip"), flag("rstrip"), flag("single_word")});
    }
  }
  const auto lookup = [&](const char* key, int32_t& slot) {
    auto it = config.find(key);
    if (it == config.end()) return;
    const json* content = &*it;
    if (it->is_object() && it->contains("content")) content = &(*it)["content"];
    if (!content->is_string()) return;
    auto found = impl.ids.find(content->get<std::string>());
    if (found != impl.ids.end()) slot = found->second;
  };
  lookup("bos_token", impl.bos);
  lookup("eos_token", impl.eos);
  impl.finish();
}

std::shared_ptr<Tokenizer::Impl> loadJson(std::string_view text, const std::string& origin) {
  const json root = parseJson(text, origin);
  if (!root.is_object()) fail("[tokenizer] " + origin + ": the top level is " + typeOf(root) + ", expected an object");
  auto model = root.find("model");
  if (model == root.end() || !model->is_object()) fail("[tokenizer] " + origin + ": model is missing or not an object");
  if (model->contains("type")) {
    const std::string type = getString(*model, "type", origin, "model");
    if (type != "BPE") fail("[tokenizer] " + origin + ": unknown model.type \"" + type + "\" (only BPE is supported)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model->find(key);
    if (it != model->end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      fail("[tokenizer] " + origin + ": model." + key + " is not supported");
  }
  tok::BpeSpec spec;
  spec.origin = origin;
  auto vocab = model->find("vocab");
  if (vocab == model->end()) fail("[tokenizer] " + origin + ": model.vocab is missing");
  spec.texts = vocabFromJson(*vocab, origin, "model.vocab");
  auto merges = model->find("merges");
  if (merges == model->end() || !merges->is_array()) fail("[tokenizer] " + origin + ": model.merges is missing or not an array");
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    const std::string where = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      spec.merges.push_back(splitMerge(m.get_ref<const std::string&>(), origin, where));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail("[tokenizer] " + origin + ": " + where + " is " + typeOf(m) + ", expected \"a b\" or [\"a\", \"b\"]");
    }
  }
  spec.ignoreMerges = getBool(*model, "ignore_merges", false, origin, "model");
  std::vector<AddedToken> addedTokens;
  auto added = root.find("added_tokens");
  if (added != root.end() && !added->is_null()) {
    if (!added->is_array()) fail("[tokenizer] " + origin + ": added_tokens is " + typeOf(*added) + ", expected an array");
    for (size_t i = 0; i < added->size(); ++i) {
      const json& token = (*added)[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!token.is_object()) fail("[tokenizer] " + origin + ": " + where + " is not an object");
      auto id = token.find("id");
      if (id == token.end() || !id->is_number_integer()) fail("[tokenizer] " + origin + ": " + where + ".id is missing or not an integer");
      AddedToken t;
      t.id = static_cast<int32_t>(id->get<int64_t>());
      t.content = getString(token, "content", origin, where);
      place(spec.texts, id->get<int64_t>(), t.content, origin, where);
      t.special = getBool(token, "special", false, origin, where);
      t.lstrip = getBool(token, "lstrip", false, origin, where);
      t.rstrip = getBool(token, "rstrip", false, origin, where);
      t.singleWord = getBool(token, "single_word", false, origin, where);
      addedTokens.push_back(t);
      if (t.special) {
        spec.control.resize(std::max<size_t>(spec.control.size(), id->get<int64_t>() + 1), false);
        spec.control[id->get<int64_t>()] = true;
      }
    }
  }
  const auto pre = root.find("pre_tokenizer");
  spec.byteLevel = pre != root.end() && !pre->is_null() && readPreTokenizer(*pre, spec, origin, "pre_tokenizer");
  auto normalizer = root.find("normalizer");
  if (normalizer != root.end() && !normalizer->is_null()) readNormalizer(*normalizer, spec, origin, "normalizer");
  spec.byteFallback = getBool(*model, "byte_fallback", false, origin, "model");
  spec.fuseUnk = getBool(*model, "fuse_unk", false, origin, "model");
  if (auto unk = model->find("unk_token"); unk != model->end() && unk->is_string()) {
    const std::string name = unk->get<std::string>();
    for (size_t id = 0; id < spec.texts.size(); ++id)
      if (spec.texts[id] == name) spec.unk = static_cast<int32_t>(id);
    if (spec.unk < 0) fail("[tokenizer] " + origin + ": model.unk_token \"" + name + "\" is not in the vocabulary");
  }
  const bool byteLevel = spec.byteLevel;
  auto impl = tok::makeBpe(std::move(spec));
  impl->added = std::move(addedTokens);
  guessBosEos(*impl);
  impl->addBos = !byteLevel;
  if (auto post = root.find("post_processor"); post != root.end() && !post->is_null())
    readPostProcessor(*post, *impl, origin);
  impl->finish();
  return impl;
}

std::shared_ptr<Tokenizer::Impl> loadVocabMerges(std::string_view vocabJson, std::string_view mergesText,
                                                 const std::string& vocabOrigin, const std::string& mergesOrigin) {
  tok::BpeSpec spec;
  spec.origin = vocabOrigin;
  spec.texts = vocabFromJson(parseJson(vocabJson, vocabOrigin), vocabOrigin, "the vocabulary");
  size_t lineNo = 0;
  for (size_t begin = 0; begin < mergesText.size();) {
    size_t end = mergesText.find('\n', begin);
    if (end == std::string_view::npos) end = mergesText.size();
    std::string_view line = mergesText.substr(begin, end - begin);
    begin = end + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (lineNo == 1 && line.starts_with("#version"))) continue;
    spec.merges.push_back(splitMerge(line, mergesOrigin, "line " + std::to_string(lineNo)));
  }
  spec.splits.push_back({tok::kGpt2Pattern});
  spec.origin = vocabOrigin + " + " + mergesOrigin;
  auto impl = tok::makeBpe(std::move(spec));
  guessBosEos(*impl);
  impl->finish();
  return impl;
}

// Unicode White_Space (Rust's char::is_whitespace, which HF's lstrip / rstrip use).
bool isWhiteSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// The code point at text[i] (a lone invalid byte stands for itself) and its length.
std::pair<uint32_t, size_t> codePointAt(std::string_view text, size_t i) {
  const size_t n = tok::utf8Length(text, i);
  if (n == 0) return {0xFFFFFFFF, 1};
  uint32_t cp = static_cast<uint8_t>(text[i]) & (n == 1 ? 0x7F : (0x7F >> n));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
  return {cp, n};
}

// The start of the code point that ends at text[end) (never before `floor`).
size_t previousStart(std::string_view text, size_t end, size_t floor) {
  size_t i = end - 1;
  while (i > floor && end - i < 4 && (static_cast<uint8_t>(text[i]) & 0xC0) == 0x80) --i;
  return tok::utf8Length(text, i) == end - i ? i : end - 1;
}

}  // namespace

void Tokenizer::Impl::finish() {
  for (auto& list : addedByByte) list.clear();
  std::sort(added.begin(), added.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() != b.content.size() ? a.content.size() > b.content.size() : a.id < b.id;
  });
  for (size_t k = 0; k < added.size(); ++k)
    if (!added[k].content.empty()) addedByByte[static_cast<uint8_t>(added[k].content[0])].push_back(static_cast<uint32_t>(k));
  // llama.cpp's end-of-generation spellings (llama-vocab.cpp), besides EOS and the GGUF eot / eom ids.
  static constexpr const char* kEogTexts[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>",
      "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "<|end_of_text|>", "<end_of_utterance>"};
  eog.clear();
  if (eos >= 0) eog.push_back(eos);
  for (int32_t id : eogExtra)
    if (id >= 0 && static_cast<size_t>(id) < texts.size()) eog.push_back(id);
  for (const char* text : kEogTexts)
    if (auto it = ids.find(text); it != ids.end()) eog.push_back(it->second);
  // As llama.cpp: with <|return|> and <|call|> (gpt-oss), <|end|> ends a message, not generation.
  if (ids.count("<|return|>") && ids.count("<|call|>"))
    if (auto it = ids.find("<|end|>"); it != ids.end() && it->second != eos) std::erase(eog, it->second);
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
}

void Tokenizer::Impl::encodeAll(std::string_view text, bool parseSpecial, std::vector<int32_t>& out) const {
  size_t segment = 0;  // start of the plain text not yet encoded
  const auto flush = [&](size_t end) {
    if (end > segment) {
      const std::vector<int32_t> ids = encode(text.substr(segment, end - segment), segment == 0);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  };
  const auto isWordChar = [&](uint32_t cp) { return cp == '_' || (cp != 0xFFFFFFFF && u_isalnum(static_cast<UChar32>(cp))); };
  for (size_t i = 0; i < text.size();) {
    const AddedToken* match = nullptr;
    for (uint32_t k : addedByByte[static_cast<uint8_t>(text[i])]) {
      const AddedToken& t = added[k];
      if (!parseSpecial && t.special) continue;
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      if (t.singleWord) {
        const size_t end = i + t.content.size();
        if (i > 0 && isWordChar(codePointAt(text, previousStart(text, i, 0)).first)) continue;
        if (end < text.size() && isWordChar(codePointAt(text, end).first)) continue;
      }
      match = &t;
      break;
    }
    if (!match) {
      ++i;
      continue;
    }
    size_t start = i, end = i + match->content.size();
    if (match->lstrip)
      while (start > segment) {
        const size_t p = previousStart(text, start, segment);
        if (!isWhiteSpace(codePointAt(text, p).first)) break;
        start = p;
      }
    if (match->rstrip)
      while (end < text.size()) {
        const auto [cp, n] = codePointAt(text, end);
        if (!isWhiteSpace(cp)) break;
        end += n;
      }
    flush(start);
    out.push_back(match->id);
    segment = i = end;
  }
  flush(text.size());
}

Tokenizer Tokenizer::fromJson(std::string_view json, std::string_view origin) {
  return Tokenizer(loadJson(json, std::string(origin)));
}

Tokenizer Tokenizer::fromVocabMerges(std::string_view vocabJson, std::string_view mergesText) {
  return Tokenizer(loadVocabMerges(vocabJson, mergesText, "vocab.json", "merges.txt"));
}

Tokenizer Tokenizer::fromVocab(const VocabSpec& spec) {
  const std::string origin = "GGUF tokenizer.ggml";
  const size_t n = spec.tokens.size();
  if (n == 0) fail("[tokenizer] " + origin + ".tokens is empty");
  if (n > static_cast<size_t>(kMaxVocab)) fail("[tokenizer] " + origin + ".tokens has " + std::to_string(n) + " entries, more than " + std::to_string(kMaxVocab));
  if (!spec.types.empty() && spec.types.size() != n)
    fail("[tokenizer] " + origin + ".token_type has " + std::to_string(spec.types.size()) + " entries for " + std::to_string(n) + " tokens");
  if (!spec.scores.empty() && spec.scores.size() != n)
    fail("[tokenizer] " + origin + ".scores has " + std::to_string(spec.scores.size()) + " entries for " + std::to_string(n) + " tokens");
  for (auto [name, id] : {std::pair{"bos_token_id", spec.bos}, {"eos_token_id", spec.eos}, {"unknown_token_id", spec.unk}})
    if (id < -1 || id >= static_cast<int64_t>(n))
      fail("[tokenizer] " + origin + "." + name + " " + std::to_string(id) + " is outside [0, " + std::to_string(n) + ")");
  std::shared_ptr<Impl> impl;
  bool addBos = true;  // llama.cpp: SentencePiece vocabularies want BOS
  if (spec.model == "gpt2") {
    tok::BpeSpec bpe;
    bpe.origin = origin;
    bpe.texts = spec.tokens;
    for (size_t id = 0; id < n; ++id)
      if (bpe.texts[id].empty()) fail("[tokenizer] " + origin + ".tokens[" + std::to_string(id) + "] is empty");
    for (size_t i = 0; i < spec.merges.size(); ++i)
      bpe.merges.push_back(splitMerge(spec.merges[i], origin, "merges[" + std::to_string(i) + "]"));
    const tok::PreType* pre = tok::findPreType(spec.pre);
    if (!pre) fail("[tokenizer] " + origin + ".pre \"" + spec.pre + "\" is not supported (" + tok::preTypeNames() + ")");
    for (const char* pattern : pre->patterns) bpe.splits.push_back({pattern});
    bpe.ignoreMerges = pre->ignoreMerges;
    addBos = pre->addBos;
    bpe.unk = spec.unk;
    for (size_t id = 0; id < spec.types.size(); ++id) {
      bpe.control.resize(n, false);
      bpe.control[id] = spec.types[id] == 3;  // control tokens decode to nothing, as in llama.cpp
    }
    impl = tok::makeBpe(std::move(bpe));
  } else if (spec.model == "llama") {
    impl = tok::makeSpm(spec, origin);
  } else {
    fail("[tokenizer] " + origin + ".model \"" + spec.model + "\" is not supported (gpt2, llama)");
  }
  impl->bos = spec.bos;
  impl->eos = spec.eos;
  impl->addBos = spec.addBos.value_or(addBos);
  impl->eogExtra = {spec.eot, spec.eom};
  // As llama.cpp's special-token cache: CONTROL, USER_DEFINED and UNKNOWN tokens are matched whole.
  for (size_t id = 0; id < spec.types.size(); ++id) {
    const int32_t type = spec.types[id];
    if (type == 2 || type == 3 || type == 4) impl->added.push_back({static_cast<int32_t>(id), spec.tokens[id], type != 4});
  }
  impl->finish();
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::fromFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    if (fs::is_regular_file(p / "tokenizer.json", ec)) return fromFile((p / "tokenizer.json").string());
    for (auto [vocab, merges] : {std::pair{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}}) {
      if (fs::is_regular_file(p / vocab, ec) && fs::is_regular_file(p / merges, ec)) {
        auto impl = loadVocabMerges(readFile(p / vocab), readFile(p / merges), (p / vocab).string(), (p / merges).string());
        readTokenizerConfig(*impl, p);
        return Tokenizer(std::move(impl));
      }
    }
    if (fs::is_regular_file(p / "tokenizer.model", ec)) return fromFile((p / "tokenizer.model").string());
    fail("[tokenizer] " + path + ": no tokenizer.json, vocab.json + merges.txt or tokenizer.model in this folder");
  }
  if (!fs::is_regular_file(p, ec)) fail("[tokenizer] " + path + ": no such file");
  const std::string name = p.filename().string();
  if (name == "vocab.json" || name == "encoder.json") {
    const fs::path merges = p.parent_path() / (name == "vocab.json" ? "merges.txt" : "vocab.bpe");
    auto impl = loadVocabMerges(readFile(p), readFile(merges), p.string(), merges.string());
    readTokenizerConfig(*impl, p.parent_path());
    return Tokenizer(std::move(impl));
  }
  const std::string text = readFile(p);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    auto impl = loadJson(text, p.string());
    readTokenizerConfig(*impl, p.parent_path());
    return Tokenizer(std::move(impl));
  }
  auto impl = tok::makeSentencePiece(p.string());
  readTokenizerConfig(*impl, p.parent_path());
  return Tokenizer(std::move(impl));
}

VocabSpec Tokenizer::ggufVocab(const io::Checkpoint& checkpoint) {
  const auto need = [&](const char* key) -> const io::MetaValue& {
    const io::MetaValue* value = checkpoint.meta(key);
    if (!value) fail(std::string("[tokenizer] the GGUF metadata has no ") + key);
    return *value;
  };
  const auto id = [&](const char* key) -> int32_t {
    const io::MetaValue* value = checkpoint.meta(key);
    if (!value) return -1;
    const int64_t v = value->asInt();
    if (v < -1 || v >= kMaxVocab) fail("[tokenizer] GGUF " + std::string(key) + " " + std::to_string(v) + " is out of range");
    return static_cast<int32_t>(v);
  };
  VocabSpec spec;
  spec.model = need("tokenizer.ggml.model").asString();
  if (const io::MetaValue* pre = checkpoint.meta("tokenizer.ggml.pre")) spec.pre = pre->asString();
  spec.tokens = need("tokenizer.ggml.tokens").asStrings();
  if (const io::MetaValue* scores = checkpoint.meta("tokenizer.ggml.scores"))
    for (double score : scores->asFloats()) spec.scores.push_back(static_cast<float>(score));
  if (const io::MetaValue* types = checkpoint.meta("tokenizer.ggml.token_type"))
    for (int64_t type : types->asInts()) spec.types.push_back(static_cast<int32_t>(std::clamp<int64_t>(type, -1, 1000)));
  if (const io::MetaValue* merges = checkpoint.meta("tokenizer.ggml.merges")) spec.merges = merges->asStrings();
  spec.bos = id("tokenizer.ggml.bos_token_id");
  spec.eos = id("tokenizer.ggml.eos_token_id");
  spec.unk = id("tokenizer.ggml.unknown_token_id");
  spec.eot = id("tokenizer.ggml.eot_token_id");
  spec.eom = id("tokenizer.ggml.eom_token_id");
  if (const io::MetaValue* add = checkpoint.meta("tokenizer.ggml.add_bos_token")) spec.addBos = add->asBool();
  if (const io::MetaValue* prefix = checkpoint.meta("tokenizer.ggml.add_space_prefix")) spec.addSpacePrefix = prefix->asBool();
  return spec;
}

Tokenizer Tokenizer::fromCheckpoint(const io::Checkpoint& checkpoint) {
  if (checkpoint.format() == "gguf" && checkpoint.meta("tokenizer.ggml.model")) return fromVocab(ggufVocab(checkpoint));
  return fromFile(checkpoint.folder());
}

VocabSpec Tokenizer::sentencePieceVocab(const std::string& path) { return tok::readSentencePiece(path); }

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  impl_->encodeAll(text, true, out);
  return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> out;
  if (options.addBos) {
    if (impl_->bos < 0) fail("[tokenizer] encode: addBos is set but the vocabulary has no BOS token");
    out.push_back(impl_->bos);
  }
  impl_->encodeAll(text, options.parseSpecial, out);
  return out;
}

bool Tokenizer::addBos() const { return impl_->addBos && impl_->bos >= 0; }

bool Tokenizer::isEog(int32_t id) const { return std::binary_search(impl_->eog.begin(), impl_->eog.end(), id); }

std::vector<int32_t> Tokenizer::eogIds() const { return impl_->eog; }

std::string Tokenizer::decode(std::span<const int32_t> ids) const { return impl_->decode(ids); }

std::string Tokenizer::tokenBytes(int32_t id) const { return impl_->tokenBytes(id); }

std::string Tokenizer::tokenText(int32_t id) const {
  impl_->checkId(id);
  return impl_->texts[id];
}

int32_t Tokenizer::tokenId(std::string_view text) const {
  auto it = impl_->ids.find(std::string(text));
  return it == impl_->ids.end() ? -1 : it->second;
}

int32_t Tokenizer::vocabSize() const { return static_cast<int32_t>(impl_->texts.size()); }
int32_t Tokenizer::bos() const { return impl_->bos; }
int32_t Tokenizer::eos() const { return impl_->eos; }
std::string Tokenizer::kind() const { return impl_->kind(); }

}  // namespace radix
