// radix info: what a checkpoint holds, read from its metadata and tensor list only (no weights
// are loaded), so that any architecture gets its info, including ones radix cannot run.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli.h"
#include "radix/chat.h"
#include "radix/error.h"
#include "radix/io.h"
#include "radix/tokenizer.h"

namespace radix::cli {

namespace {

namespace fs = std::filesystem;

std::string sizeText(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

std::string countText(double n) {
  char buf[32];
  if (n >= 1e9) std::snprintf(buf, sizeof buf, "%.2f B", n / 1e9);
  else if (n >= 1e6) std::snprintf(buf, sizeof buf, "%.2f M", n / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f K", n / 1e3);
  return buf;
}

/// A config value as text: numbers plainly, anything else as MetaValue::str() (arrays of per-layer
/// values, strings).
std::string valueText(const io::MetaValue& v) {
  if (v.kind() == io::MetaValue::Kind::integer) return std::to_string(v.asInt());
  if (v.kind() == io::MetaValue::Kind::real) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", v.asFloat());  // GGUF stores FLOAT32: 1e-05, not 9.99999974737875e-06
    return buf;
  }
  if (v.kind() == io::MetaValue::Kind::string) return v.asString();
  return v.str();
}

std::optional<io::MetaValue> fromJson(const nlohmann::json& j) {
  if (j.is_number_integer()) return io::MetaValue(j.get<int64_t>());
  if (j.is_number()) return io::MetaValue(j.get<double>());
  if (j.is_boolean()) return io::MetaValue(j.get<bool>());
  if (j.is_string()) return io::MetaValue(j.get<std::string>());
  if (j.is_null()) return std::nullopt;
  return io::MetaValue(j.dump());
}

/// Where a checkpoint's hyperparameters are: GGUF metadata, or config.json (the folder's, for a
/// .safetensors path; a multimodal config's text_config when it has one).
class Config {
 public:
  explicit Config(const io::Checkpoint& c) : checkpoint_(c), gguf_(c.format() == "gguf") {
    if (gguf_) {
      if (const io::MetaValue* v = c.meta("general.architecture"); v && v->kind() == io::MetaValue::Kind::string)
        arch_ = v->asString();
      return;
    }
    std::ifstream in(fs::path(c.folder()) / "config.json");
    nlohmann::json j = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
    if (!j.is_object()) return;
    if (j.contains("text_config") && j["text_config"].is_object())
      for (auto& [key, value] : j["text_config"].items())
        if (!j.contains(key)) j[key] = value;
    for (auto& [key, value] : j.items())
      if (std::optional<io::MetaValue> v = fromJson(value)) hf_.emplace(key, *v);
    if (auto it = hf_.find("model_type"); it != hf_.end() && it->second.kind() == io::MetaValue::Kind::string)
      arch_ = it->second.asString();
    if (arch_.empty() && j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
        j["architectures"][0].is_string())
      arch_ = j["architectures"][0].get<std::string>();
  }

  bool gguf() const { return gguf_; }
  const std::string& architecture() const { return arch_; }

  /// The first of the keys present: GGUF keys are "{arch}." + key.
  const io::MetaValue* find(const std::vector<const char*>& keys) const {
    for (const char* key : keys) {
      if (gguf_) {
        if (const io::MetaValue* v = checkpoint_.meta(arch_ + "." + key)) return v;
      } else if (auto it = hf_.find(key); it != hf_.end()) {
        return &it->second;
      }
    }
    return nullptr;
  }

 private:
  const io::Checkpoint& checkpoint_;
  bool gguf_;
  std::string arch_;
  std::map<std::string, io::MetaValue> hf_;
};

std::optional<int64_t> intOf(const io::MetaValue* v) {
  if (v && v->kind() == io::MetaValue::Kind::integer) return v->asInt();
  return std::nullopt;
}

void line(const char* key, const std::string& value) { std::printf("%-14s %s\n", (std::string(key) + ":").c_str(), value.c_str()); }

void printConfig(const io::Checkpoint& checkpoint, const Config& c) {
  const bool g = c.gguf();
  struct Field {
    const char* label;
    std::vector<const char*> gguf, hf;  // GGUF keys after "{arch}.", config.json keys
  };
  const Field fields[] = {
      {"width", {"embedding_length"}, {"hidden_size", "n_embd", "d_model"}},
      {"layers", {"block_count"}, {"num_hidden_layers", "n_layer", "num_layers"}},
      {"heads", {"attention.head_count"}, {"num_attention_heads", "n_head", "num_heads"}},
      {"kv heads", {"attention.head_count_kv"}, {"num_key_value_heads", "multi_query_group_num"}},
      {"head dim", {"attention.key_length"}, {"head_dim"}},
      {"ffn", {"feed_forward_length"}, {"intermediate_size", "n_inner", "ffn_dim"}},
      {"vocab", {"vocab_size"}, {"vocab_size"}},
      {"context", {"context_length"}, {"max_position_embeddings", "n_positions", "n_ctx"}},
      {"rope base", {"rope.freq_base"}, {"rope_theta"}},
      {"norm eps", {"attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon"},
       {"rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps"}},
      {"sliding window", {"attention.sliding_window"}, {"sliding_window"}},
  };
  auto find = [&](const Field& f) { return c.find(g ? f.gguf : f.hf); };
  for (const Field& f : fields) {
    const io::MetaValue* v = find(f);
    std::string text = v ? valueText(*v) : "";
    if (text == "null") text.clear();
    const std::string label = f.label;
    if (text.empty() && label == "kv heads") {
      if (const io::MetaValue* heads = find(fields[2])) text = valueText(*heads);  // no grouped-query attention
    }
    if (text.empty() && label == "head dim") {
      const std::optional<int64_t> width = intOf(find(fields[0])), heads = intOf(find(fields[2]));
      if (width && heads && *heads > 0) text = std::to_string(*width / *heads);
    }
    if (text.empty() && label == "vocab") {
      if (const io::MetaValue* tokens = checkpoint.meta("tokenizer.ggml.tokens");
          tokens && tokens->kind() == io::MetaValue::Kind::array)
        text = std::to_string(tokens->asArray().size());
      else if (const io::TensorInfo* t = checkpoint.find("token_embd.weight"); t && !t->dims.empty())
        text = std::to_string(t->dims[0]);
    }
    if (label == "sliding window" && !g)  // Qwen2's configs carry a window that this flag turns off
      if (const io::MetaValue* use = c.find({"use_sliding_window"}); use && use->kind() == io::MetaValue::Kind::boolean &&
                                                                     !use->asBool() && !text.empty())
        text += " (unused: use_sliding_window is false)";
    if (!text.empty()) line(f.label, text);
  }
}

void printTensors(const io::Checkpoint& checkpoint) {
  std::map<std::string, size_t> byType;
  double parameters = 0;
  std::set<std::string> files;
  for (const io::TensorInfo& t : checkpoint.tensors()) {
    ++byType[t.type];
    files.insert(t.file);
    // The causal-mask buffers that HF GPT-2 checkpoints store are not parameters.
    if (t.name.ends_with("attn.bias") && !t.name.ends_with("c_attn.bias")) continue;
    if (t.name.ends_with("attn.masked_bias")) continue;
    double n = 1;
    for (int64_t d : t.dims) n *= static_cast<double>(d);
    parameters += n;
  }
  std::string types;
  for (const auto& [type, n] : byType) types += (types.empty() ? "" : ", ") + type + " " + std::to_string(n);
  line("tensors", std::to_string(checkpoint.tensors().size()) + (types.empty() ? "" : " (" + types + ")"));
  char count[32];
  std::snprintf(count, sizeof count, "%.0f", parameters);
  line("parameters", std::string(count) + " (" + countText(parameters) + ")");
  uintmax_t bytes = 0;
  for (const std::string& f : files) {
    std::error_code ec;
    const uintmax_t n = fs::file_size(f, ec);
    if (!ec) bytes += n;
  }
  line("file size", std::to_string(bytes) + " bytes (" + sizeText(static_cast<double>(bytes)) + ")" +
                        (files.size() > 1 ? " in " + std::to_string(files.size()) + " files" : ""));
}

std::string tokenText(const Tokenizer& tokenizer, int32_t id) {
  std::string text = tokenizer.tokenText(id);
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '\n') out += "\\n";
    else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return std::to_string(id) + " \"" + out + "\"";
}

void printTokenizer(const io::Checkpoint& checkpoint) {
  std::string source;
  if (const io::MetaValue* m = checkpoint.meta("tokenizer.ggml.model"); m && m->kind() == io::MetaValue::Kind::string) {
    source = "tokenizer.ggml.model " + m->asString();
    if (const io::MetaValue* p = checkpoint.meta("tokenizer.ggml.pre"); p && p->kind() == io::MetaValue::Kind::string)
      source += ", pre " + p->asString();
  }
  std::optional<Tokenizer> tokenizer;
  try {
    tokenizer = Tokenizer::fromCheckpoint(checkpoint);
  } catch (const Error& e) {
    line("tokenizer", std::string("none (") + e.what() + ")" + (source.empty() ? "" : "; " + source));
    return;
  }
  line("tokenizer", tokenizer->kind() + ", " + std::to_string(tokenizer->vocabSize()) + " tokens" +
                        (source.empty() ? "" : " (" + source + ")"));
  line("bos", tokenizer->bos() >= 0 ? tokenText(*tokenizer, tokenizer->bos()) : "none");
  line("eos", tokenizer->eos() >= 0 ? tokenText(*tokenizer, tokenizer->eos()) : "none");
  std::string eog;
  for (int32_t id : tokenizer->eogIds()) eog += (eog.empty() ? "" : ", ") + tokenText(*tokenizer, id);
  line("eog", eog.empty() ? "none" : eog);
  line("add bos", tokenizer->addBos() ? "yes" : "no");
}

}  // namespace

int infoCommand(Args& args) {
  std::optional<std::string> model;
  while (!args.done()) {
    const std::string_view flag = args.flag();
    if (flag == "--model" || flag == "-m") model = std::string(args.value(flag));
    else args.unknown(flag);
  }
  if (!model) throw UsageError{"[info] --model PATH is required"};
  std::error_code ec;
  if (!fs::exists(*model, ec)) throw Error("[info] no model at \"" + *model + "\" (give an HF folder or a .gguf file)");
  const io::Checkpoint checkpoint = io::Checkpoint::open(*model);
  const Config config(checkpoint);
  line("model", *model);
  std::string format = checkpoint.format();
  if (const io::MetaValue* v = checkpoint.meta("general.name"); v && v->kind() == io::MetaValue::Kind::string)
    line("name", v->asString());
  line("format", format == "gguf" ? "gguf" : fs::is_directory(*model, ec) ? "HF folder (safetensors)" : "safetensors");
  line("architecture", config.architecture().empty() ? "unknown" : config.architecture());
  printConfig(checkpoint, config);
  printTensors(checkpoint);
  printTokenizer(checkpoint);
  std::optional<std::string> chatTemplate;
  try {
    chatTemplate = chatTemplateOf(*model);
  } catch (const Error& e) {
    line("chat template", std::string("unreadable (") + e.what() + ")");
    return 0;
  }
  if (!chatTemplate) {
    line("chat template", "none");
    return 0;
  }
  std::string note;
  try {
    (void)ChatTemplate::parse(*chatTemplate);
  } catch (const Error& e) {
    note = std::string("; radix cannot render it: ") + e.what();
  }
  line("chat template", "yes, " + std::to_string(chatTemplate->size()) + " bytes" + note);
  return 0;
}

}  // namespace radix::cli
