// radix quantize: an HF folder (GPT-2 / Llama, safetensors + config.json + tokenizer.json) or a
// GGUF file -> a quantized GGUF v3 file, mixed as llama.cpp's llama-quantize mixes it (its
// llama_tensor_get_type without an importance matrix), with tensors quantized by its reference
// quantizers (radix::quantizeRow), so the bytes equal llama-quantize's.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "radix/error.h"
#include "radix/gguf_writer.h"
#include "radix/io.h"
#include "radix/quant.h"

namespace radix::cli {
namespace {

namespace fs = std::filesystem;

// ggml type ids of the plain types a GGUF input may hold.
constexpr uint32_t kF32 = 0, kF16 = 1, kBF16 = 30;

/// One target of --to: llama.cpp's ftype (general.file_type) and the base type of its mix.
struct Ftype {
  std::string_view name;
  uint32_t id;  // LLAMA_FTYPE_MOSTLY_*
  QuantType base;
};

constexpr Ftype kFtypes[] = {
    {"q4_0", 2, QuantType::q4_0},    {"q4_1", 3, QuantType::q4_1},     {"q8_0", 7, QuantType::q8_0},
    {"q5_0", 8, QuantType::q5_0},    {"q5_1", 9, QuantType::q5_1},     {"q4_k_m", 15, QuantType::q4_k},
    {"q5_k_m", 17, QuantType::q5_k}, {"q6_k", 18, QuantType::q6_k},
};

/// A tensor's stored type id (plain or quantized) and its GGUF type name.
uint32_t typeId(std::optional<QuantType> q, uint32_t plain) { return q ? static_cast<uint32_t>(ggmlTypeId(*q)) : plain; }

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

/// llama.cpp's use_more_bits: the layers of a Q4_K_M / Q5_K_M mix whose attn_v / ffn_down get Q6_K.
bool useMoreBits(int layer, int layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

/// The state of llama_tensor_get_type over one file: counters of the attn_v and ffn_down seen.
struct Recipe {
  const Ftype& ftype;
  int attentionWv = 0, layers = 0;  // n_attention_wv, n_layer
  bool hasOutput = false;
  int iAttentionWv = 0, iFfnDown = 0;

  /// Whether llama-quantize quantizes the tensor at all (2-D+ "...weight" but not norms, position
  /// embeddings, ...).
  static bool quantizes(const std::string& name, size_t rank) {
    return name.ends_with("weight") && rank >= 2 && !contains(name, "_norm.weight") &&
           !contains(name, "ffn_gate_inp.weight") && name != "position_embd.weight" && name != "token_types.weight";
  }

  /// The type for one quantized tensor of row length `cols`; nullopt: F16 (the last fallback).
  std::optional<QuantType> type(const std::string& name, int64_t cols) {
    QuantType t = ftype.base;
    const bool km = ftype.id == 15 || ftype.id == 17;
    if (name == "output.weight" || (!hasOutput && name == "token_embd.weight")) {
      if (cols % blockElems(t) != 0) t = QuantType::q8_0;
      else if (t != QuantType::q8_0) t = QuantType::q6_k;
    } else if (name == "token_embd.weight") {
      // the base type
    } else if (contains(name, "attn_v.weight")) {
      if (km && useMoreBits(iAttentionWv, attentionWv)) t = QuantType::q6_k;
      ++iAttentionWv;
    } else if (contains(name, "ffn_down")) {
      if (km && useMoreBits(iFfnDown, layers)) t = QuantType::q6_k;
      ++iFfnDown;
    } else if (contains(name, "attn_qkv.weight")) {
      if (ftype.id == 15) t = QuantType::q5_k;
      if (ftype.id == 17) t = QuantType::q6_k;
    }
    if (cols % blockElems(t) == 0) return t;
    switch (t) {  // llama.cpp's fallback for rows that are not whole blocks
      case QuantType::q4_k: t = QuantType::q5_0; break;
      case QuantType::q5_k: t = QuantType::q5_1; break;
      case QuantType::q6_k: t = QuantType::q8_0; break;
      default:
        throw Error("[quantize] tensor \"" + name + "\": rows of " + std::to_string(cols) + " are not a multiple of " +
                    std::to_string(blockElems(t)) + ", which " + std::string(ggufTypeName(t)) +
                    " needs (llama-quantize refuses it too; try a k-quant mix)");
    }
    if (cols % blockElems(t) != 0) return std::nullopt;
    return t;
  }
};

/// A tensor of the output file: its name, row-major dims, and where its f32 values come from.
struct Source {
  std::string name;            // in the output (llama.cpp's name)
  std::string stored;          // in the input
  std::vector<int64_t> dims;   // output dims, row-major
  bool transpose = false;      // GPT-2's Conv1D weights {in, out} -> {out, in}
  int permuteHeads = 0;        // llama q/k rows: HF rotate-half -> llama.cpp's interleaved pairs
};

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// f32 values of a stored tensor, dequantized when the input is already quantized.
std::vector<float> valuesOf(const io::Checkpoint& ckpt, const io::TensorInfo& info) {
  if (info.dtype) return ckpt.load(Platform::cpu(), info.name, DType::f32).toVector<float>();
  const QuantType q = parseQuantType(info.type);
  const std::span<const uint8_t> bytes = ckpt.bytes(info.name);
  checkBlocks(q, bytes, info.name);
  const int64_t cols = info.dims.empty() ? 1 : info.dims.back();
  std::vector<float> out(static_cast<size_t>(product(info.dims)));
  const int64_t rows = cols ? static_cast<int64_t>(out.size()) / cols : 0, rb = rowBytes(q, cols);
  for (int64_t r = 0; r < rows; ++r) dequantizeRow(q, bytes.data() + r * rb, cols, out.data() + r * cols);
  return out;
}

std::vector<float> transformed(const io::Checkpoint& ckpt, const Source& s) {
  std::vector<float> x = valuesOf(ckpt, *ckpt.find(s.stored));
  if (s.transpose) {
    const int64_t rows = s.dims[0], cols = s.dims[1];  // stored {cols, rows}
    std::vector<float> t(x.size());
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < rows; ++j) t[static_cast<size_t>(j * cols + i)] = x[static_cast<size_t>(i * rows + j)];
    x.swap(t);
  }
  if (s.permuteHeads) {
    const int64_t rows = s.dims[0], cols = s.dims.size() > 1 ? s.dims[1] : 1;
    const int64_t hd = rows / s.permuteHeads, half = hd / 2;
    std::vector<float> t(x.size());
    for (int64_t h = 0; h < s.permuteHeads; ++h)
      for (int64_t i = 0; i < half; ++i)
        for (int64_t j = 0; j < 2; ++j)
          std::copy_n(x.begin() + (h * hd + j * half + i) * cols, cols, t.begin() + (h * hd + 2 * i + j) * cols);
    x.swap(t);
  }
  return x;
}

int64_t intKey(const io::Checkpoint& c, const char* key) {
  const io::MetaValue* v = c.meta(key);
  if (!v) throw Error("[quantize] config.json has no \"" + std::string(key) + "\"");
  return v->asInt();
}

int64_t intKeyOr(const io::Checkpoint& c, const char* key, int64_t fallback) {
  const io::MetaValue* v = c.meta(key);
  return v && v->kind() == io::MetaValue::Kind::integer ? v->asInt() : fallback;
}

double floatKeyOr(const io::Checkpoint& c, const char* key, double fallback) {
  const io::MetaValue* v = c.meta(key);
  return v && (v->kind() == io::MetaValue::Kind::real || v->kind() == io::MetaValue::Kind::integer) ? v->asFloat() : fallback;
}

/// The tokenizer.ggml.* keys of a byte-level BPE tokenizer.json, as convert_hf_to_gguf.py writes them.
void writeTokenizer(io::GgufWriter& w, const std::string& folder, const io::Checkpoint& ckpt, const std::string& arch) {
  const fs::path path = fs::path(folder) / "tokenizer.json";
  std::map<int64_t, std::string> byId;
  std::map<int64_t, int32_t> types;
  std::vector<std::string> merges;
  bool plainByteLevel = false;
  if (std::ifstream in(path); in) {
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("model") || j["model"].value("type", "") != "BPE" || !j["model"].contains("vocab"))
      throw Error("[quantize] " + path.string() + ": not a BPE tokenizer.json");
    if (j["model"].value("byte_fallback", false))
      throw Error("[quantize] " + path.string() + ": SentencePiece-style BPE (byte_fallback) is not supported; convert it "
                  "with llama.cpp's convert_hf_to_gguf.py");
    for (auto& [token, id] : j["model"]["vocab"].items()) byId[id.get<int64_t>()] = token;
    if (j.contains("added_tokens"))
      for (const auto& t : j["added_tokens"]) {
        const int64_t id = t.value("id", int64_t{-1});
        if (id < 0) continue;
        byId[id] = t.value("content", "");
        types[id] = t.value("special", false) ? 3 : 4;
      }
    if (j["model"].contains("merges"))
      for (const auto& m : j["model"]["merges"])
        merges.push_back(m.is_array() ? m[0].get<std::string>() + " " + m[1].get<std::string>() : m.get<std::string>());
    const auto& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
    plainByteLevel = pre.is_object() && pre.value("type", "") == "ByteLevel";
  } else if (std::ifstream vocabIn(fs::path(folder) / "vocab.json"), mergesIn(fs::path(folder) / "merges.txt"); vocabIn && mergesIn) {
    const nlohmann::json v = nlohmann::json::parse(vocabIn, nullptr, false);
    if (v.is_discarded() || !v.is_object()) throw Error("[quantize] " + folder + "/vocab.json: not a JSON object");
    for (auto& [token, id] : v.items()) byId[id.get<int64_t>()] = token;
    for (std::string line; std::getline(mergesIn, line);)
      if (!line.empty() && !line.starts_with("#version")) merges.push_back(line);
    plainByteLevel = true;
  } else {
    throw Error("[quantize] " + folder + ": no tokenizer.json or vocab.json + merges.txt (byte-level BPE tokenizers are "
                "supported; convert others with llama.cpp's convert_hf_to_gguf.py and quantize the GGUF)");
  }
  const int64_t vocab = std::max<int64_t>(intKeyOr(ckpt, "vocab_size", 0), byId.empty() ? 0 : byId.rbegin()->first + 1);
  std::vector<std::string> tokens(static_cast<size_t>(vocab));
  std::vector<int32_t> tokenTypes(static_cast<size_t>(vocab), 1);
  for (int64_t i = 0; i < vocab; ++i) {
    auto it = byId.find(i);
    if (it != byId.end()) tokens[static_cast<size_t>(i)] = it->second;
    else {
      tokens[static_cast<size_t>(i)] = "[PAD" + std::to_string(i) + "]";  // as the converter pads
      tokenTypes[static_cast<size_t>(i)] = 5;
    }
    if (auto t = types.find(i); t != types.end()) tokenTypes[static_cast<size_t>(i)] = t->second;
  }
  w.setString("tokenizer.ggml.model", "gpt2");
  w.setString("tokenizer.ggml.pre", plainByteLevel || arch == "gpt2" ? "gpt-2" : "llama-bpe");
  w.setStrings("tokenizer.ggml.tokens", tokens);
  w.setI32s("tokenizer.ggml.token_type", tokenTypes);  // the key order of the converter; set again below
  w.setStrings("tokenizer.ggml.merges", merges);
  auto firstId = [&](const char* key) -> int64_t {
    const io::MetaValue* v = ckpt.meta(key);
    if (!v) return -1;
    if (v->kind() == io::MetaValue::Kind::integer) return v->asInt();
    if (v->kind() == io::MetaValue::Kind::array && !v->asArray().empty()) return v->asArray()[0].asInt();
    return -1;
  };
  for (const char* key : {"bos_token_id", "eos_token_id"}) {
    const int64_t id = firstId(key);
    if (id < 0 || id >= vocab) continue;
    w.setU32(std::string("tokenizer.ggml.") + key, static_cast<uint32_t>(id));
    tokenTypes[static_cast<size_t>(id)] = 3;  // HF's special tokens are CONTROL in GGUF
  }
  w.setI32s("tokenizer.ggml.token_type", tokenTypes);
  std::ifstream cfg(fs::path(folder) / "tokenizer_config.json");
  if (cfg) {
    const nlohmann::json tc = nlohmann::json::parse(cfg, nullptr, false);
    if (!tc.is_discarded() && tc.contains("chat_template") && tc["chat_template"].is_string())
      w.setString("tokenizer.chat_template", tc["chat_template"].get<std::string>());
  }
}

/// The stored name of an HF tensor, with or without a "transformer." / "model." prefix.
const io::TensorInfo* findHf(const io::Checkpoint& c, const std::string& name) {
  for (const char* prefix : {"", "transformer.", "model."})
    if (const io::TensorInfo* t = c.find(prefix + name)) return t;
  return nullptr;
}

/// Metadata and the tensor list of an HF GPT-2 or Llama folder, as convert_hf_to_gguf.py writes them.
std::vector<Source> fromHf(io::GgufWriter& w, const io::Checkpoint& c, const std::string& folder, int& layers) {
  const io::MetaValue* mt = c.meta("model_type");
  const std::string modelType = mt && mt->kind() == io::MetaValue::Kind::string ? mt->asString() : "";
  std::vector<Source> out;
  auto add = [&](const std::string& gg, const std::string& hf, bool transpose = false, int heads = 0) {
    const io::TensorInfo* t = findHf(c, hf);
    if (!t) return false;
    Source s{gg, t->name, t->dims, transpose, heads};
    if (transpose) {
      if (s.dims.size() != 2) throw Error("[quantize] " + t->name + ": expected a 2-D Conv1D weight");
      std::swap(s.dims[0], s.dims[1]);
    }
    out.push_back(std::move(s));
    return true;
  };
  auto need = [&](const std::string& gg, const std::string& hf, bool transpose = false, int heads = 0) {
    if (!add(gg, hf, transpose, heads)) throw Error("[quantize] " + folder + ": no tensor \"" + hf + "\"");
  };
  w.setString("general.name", fs::path(folder).filename().string().empty() ? fs::path(folder).parent_path().filename().string()
                                                                          : fs::path(folder).filename().string());
  if (modelType == "gpt2") {
    layers = static_cast<int>(intKey(c, "n_layer"));
    const int64_t embd = intKey(c, "n_embd");
    w.setString("general.architecture", "gpt2");
    w.setU32("gpt2.context_length", static_cast<uint32_t>(intKeyOr(c, "n_ctx", intKey(c, "n_positions"))));
    w.setU32("gpt2.embedding_length", static_cast<uint32_t>(embd));
    w.setU32("gpt2.feed_forward_length", static_cast<uint32_t>(intKeyOr(c, "n_inner", 4 * embd)));
    w.setU32("gpt2.block_count", static_cast<uint32_t>(layers));
    w.setU32("gpt2.attention.head_count", static_cast<uint32_t>(intKey(c, "n_head")));
    w.setF32("gpt2.attention.layer_norm_epsilon", static_cast<float>(floatKeyOr(c, "layer_norm_epsilon", 1e-5)));
    w.setU32("general.file_type", 0);
    need("token_embd.weight", "wte.weight");
    need("position_embd.weight", "wpe.weight");
    const std::pair<const char*, const char*> names[] = {{"ln_1", "attn_norm"}, {"attn.c_attn", "attn_qkv"},
                                                          {"attn.c_proj", "attn_output"}, {"ln_2", "ffn_norm"},
                                                          {"mlp.c_fc", "ffn_up"}, {"mlp.c_proj", "ffn_down"}};
    for (int i = 0; i < layers; ++i)
      for (auto [hf, gg] : names)
        for (const char* kind : {"weight", "bias"}) {
          const bool conv = kind == std::string_view("weight") && !std::string_view(hf).starts_with("ln");
          need("blk." + std::to_string(i) + "." + gg + "." + kind, "h." + std::to_string(i) + "." + hf + "." + kind, conv);
        }
    need("output_norm.weight", "ln_f.weight");
    need("output_norm.bias", "ln_f.bias");
    if (!add("output.weight", "lm_head.weight")) need("output.weight", "wte.weight");  // tied: the converter copies wte
  } else if (modelType == "llama" || modelType == "mistral") {
    layers = static_cast<int>(intKey(c, "num_hidden_layers"));
    const int64_t embd = intKey(c, "hidden_size"), heads = intKey(c, "num_attention_heads");
    const int64_t kvHeads = intKeyOr(c, "num_key_value_heads", heads);
    const int64_t headDim = intKeyOr(c, "head_dim", embd / heads);
    w.setString("general.architecture", "llama");
    w.setU32("llama.vocab_size", static_cast<uint32_t>(intKey(c, "vocab_size")));
    w.setU32("llama.context_length", static_cast<uint32_t>(intKey(c, "max_position_embeddings")));
    w.setU32("llama.embedding_length", static_cast<uint32_t>(embd));
    w.setU32("llama.block_count", static_cast<uint32_t>(layers));
    w.setU32("llama.feed_forward_length", static_cast<uint32_t>(intKey(c, "intermediate_size")));
    w.setU32("llama.rope.dimension_count", static_cast<uint32_t>(headDim));
    w.setU32("llama.attention.head_count", static_cast<uint32_t>(heads));
    w.setU32("llama.attention.head_count_kv", static_cast<uint32_t>(kvHeads));
    w.setF32("llama.rope.freq_base", static_cast<float>(floatKeyOr(c, "rope_theta", 10000.0)));
    w.setF32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(floatKeyOr(c, "rms_norm_eps", 1e-5)));
    if (c.meta("head_dim")) {
      w.setU32("llama.attention.key_length", static_cast<uint32_t>(headDim));
      w.setU32("llama.attention.value_length", static_cast<uint32_t>(headDim));
    }
    w.setU32("general.file_type", 0);
    need("token_embd.weight", "embed_tokens.weight");
    const std::pair<const char*, const char*> names[] = {
        {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"}, {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"}};
    for (int i = 0; i < layers; ++i)
      for (auto [hf, gg] : names)
        for (const char* kind : {"weight", "bias"}) {
          const std::string h = "layers." + std::to_string(i) + "." + hf + "." + kind;
          const int permute = std::string_view(gg) == "attn_q" ? static_cast<int>(heads)
                              : std::string_view(gg) == "attn_k" ? static_cast<int>(kvHeads) : 0;
          const bool found = add("blk." + std::to_string(i) + "." + gg + "." + kind, h, false, permute);
          if (!found && kind == std::string_view("weight")) throw Error("[quantize] " + folder + ": no tensor \"" + h + "\"");
        }
    need("output_norm.weight", "norm.weight");
    add("output.weight", "lm_head.weight");
  } else {
    throw Error("[quantize] " + folder + ": model_type \"" + modelType +
                "\" is not supported for HF input (gpt2, llama, mistral); convert it to GGUF with llama.cpp's "
                "convert_hf_to_gguf.py and quantize the GGUF");
  }
  writeTokenizer(w, folder, c, modelType);
  return out;
}

}  // namespace

int quantizeCommand(Args& args) {
  std::optional<std::string> model, to, output;
  while (!args.done()) {
    const std::string_view flag = args.flag();
    if (flag == "--model" || flag == "-m") model = std::string(args.value(flag));
    else if (flag == "--to") to = std::string(args.value(flag));
    else if (flag == "-o" || flag == "--output") output = std::string(args.value(flag));
    else args.unknown(flag);
  }
  if (!model) throw UsageError{"[quantize] --model IN is required"};
  if (!to) throw UsageError{"[quantize] --to TYPE is required"};
  if (!output) throw UsageError{"[quantize] -o OUT.gguf is required"};
  const Ftype* ftype = nullptr;
  std::string lower = *to;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const Ftype& f : kFtypes)
    if (f.name == lower) ftype = &f;
  if (!ftype)
    throw UsageError{"[quantize] --to " + *to + " is not one of q8_0, q4_0, q4_1, q5_0, q5_1, q4_k_m, q5_k_m, q6_k"};
  std::error_code ec;
  if (!fs::exists(*model, ec)) throw Error("[quantize] no model at \"" + *model + "\" (give an HF folder or a .gguf file)");
  if (fs::exists(*output, ec) && fs::equivalent(*model, *output, ec))
    throw Error("[quantize] the output " + *output + " is the input");

  const io::Checkpoint ckpt = io::Checkpoint::open(*model);
  io::GgufWriter w;
  std::vector<Source> sources;
  int layers = 0;
  if (ckpt.format() == "gguf") {
    w.copyMetadata(*model, [](std::string_view key) { return key != "general.alignment"; });
    const io::MetaValue* arch = ckpt.meta("general.architecture");
    if (!arch || arch->kind() != io::MetaValue::Kind::string) throw Error("[quantize] " + *model + ": no general.architecture");
    const io::MetaValue* blocks = ckpt.meta(arch->asString() + ".block_count");
    layers = blocks ? static_cast<int>(blocks->asInt()) : 0;
    for (const io::TensorInfo& t : ckpt.tensors()) sources.push_back({t.name, t.name, t.dims});
  } else {
    if (!fs::is_directory(*model, ec))
      throw Error("[quantize] " + *model + ": give an HF folder (config.json + safetensors) or a .gguf file");
    sources = fromHf(w, ckpt, *model, layers);
  }
  w.setU32("general.quantization_version", 2);
  w.setU32("general.file_type", ftype->id);

  Recipe recipe{*ftype};
  recipe.layers = layers;
  for (const Source& s : sources) {
    if (contains(s.name, "attn_v.weight") || contains(s.name, "attn_qkv.weight") || contains(s.name, "attn_kv_b.weight"))
      ++recipe.attentionWv;
    else if (s.name == "output.weight")
      recipe.hasOutput = true;
  }
  std::map<std::string, int> counts;
  for (const Source& s : sources) {
    const io::TensorInfo& info = *ckpt.find(s.stored);
    const int64_t cols = s.dims.empty() ? 1 : s.dims.back();
    const int64_t elems = product(s.dims);
    const bool plain = info.type == "F32" || info.type == "F16" || info.type == "BF16";
    if (!Recipe::quantizes(s.name, s.dims.size())) {
      // Kept: GGUF tensors as stored, HF tensors as f32 (as the converter writes 1-D tensors).
      if (ckpt.format() == "gguf" && s.stored == s.name) {
        std::optional<QuantType> q;
        if (!plain) q = parseQuantType(info.type);
        const uint32_t id = typeId(q, info.type == "F16" ? kF16 : info.type == "BF16" ? kBF16 : kF32);
        w.addTensor(s.name, s.dims, id, info.bytes, [&ckpt, name = s.name](std::span<uint8_t> dst) {
          const std::span<const uint8_t> src = ckpt.bytes(name);
          std::copy(src.begin(), src.end(), dst.begin());
        });
        ++counts[info.type];
      } else {
        w.addTensor(s.name, s.dims, kF32, static_cast<uint64_t>(elems) * 4, [&ckpt, s](std::span<uint8_t> dst) {
          const std::vector<float> x = transformed(ckpt, s);
          std::memcpy(dst.data(), x.data(), dst.size());
        });
        ++counts["F32"];
      }
      continue;
    }
    const std::optional<QuantType> type = recipe.type(s.name, cols);
    if (!type) {
      w.addTensor(s.name, s.dims, kF16, static_cast<uint64_t>(elems) * 2, [&ckpt, s](std::span<uint8_t> dst) {
        const Tensor t = Tensor::fromValues(Platform::cpu(), Shape({static_cast<int64_t>(dst.size() / 2)}, DType::f16),
                                            transformed(ckpt, s));
        const std::vector<uint8_t> b = t.toBytes();
        std::copy(b.begin(), b.end(), dst.begin());
      });
      ++counts["F16"];
      continue;
    }
    if (ckpt.format() == "gguf" && info.type == ggufTypeName(*type)) {  // already that type: copied
      w.addTensor(s.name, s.dims, static_cast<uint32_t>(ggmlTypeId(*type)), info.bytes, [&ckpt, name = s.name](std::span<uint8_t> dst) {
        const std::span<const uint8_t> src = ckpt.bytes(name);
        std::copy(src.begin(), src.end(), dst.begin());
      });
      ++counts[info.type];
      continue;
    }
    const int64_t rows = cols ? elems / cols : 0, rb = rowBytes(*type, cols);
    w.addTensor(s.name, s.dims, static_cast<uint32_t>(ggmlTypeId(*type)), static_cast<uint64_t>(rows * rb),
                [&ckpt, s, type = *type, rows, cols, rb](std::span<uint8_t> dst) {
                  const std::vector<float> x = transformed(ckpt, s);
                  for (int64_t r = 0; r < rows; ++r) {
                    try {
                      quantizeRow(type, x.data() + r * cols, cols, dst.data() + r * rb);
                    } catch (const Error& e) {
                      throw Error("[quantize] tensor \"" + s.name + "\" row " + std::to_string(r) + ": " + e.what());
                    }
                  }
                });
    ++counts[std::string(ggufTypeName(*type))];
  }
  w.write(*output);
  std::string summary;
  for (const auto& [type, n] : counts) summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + type;
  std::fprintf(stderr, "quantize: wrote %s (%s, file_type %u): %zu tensors: %s\n", output->c_str(), std::string(ftype->name).c_str(),
               ftype->id, w.tensorCount(), summary.c_str());
  return 0;
}

}  // namespace radix::cli
