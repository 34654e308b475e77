// What a checkpoint's metadata says about the model: the hyperparameters of llama/gpt2-family
// checkpoints (readModelConfig) and a GGUF's vocabulary (vocabFromGguf).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/io.h"

namespace radix::io {
// ---------------------------------------------------------------------------------------------
// Model hyperparameters

ModelConfig readModelConfig(const Checkpoint& checkpoint) {
  ModelConfig c;
  auto need = [&](const std::string& key) -> const MetaValue& {
    const MetaValue* v = checkpoint.meta(key);
    if (!v) throw Error("[config] " + checkpoint.folder() + ": missing key \"" + key + "\"");
    return *v;
  };
  auto intOr = [&](const std::string& key, int64_t fallback) {
    const MetaValue* v = checkpoint.meta(key);
    return v && v->kind() != MetaValue::Kind::null ? v->asInt() : fallback;
  };
  auto realOr = [&](const std::string& key, double fallback) {
    const MetaValue* v = checkpoint.meta(key);
    return v && v->kind() != MetaValue::Kind::null ? v->asFloat() : fallback;
  };
  const bool hasOutput = checkpoint.find("output.weight") || checkpoint.find("lm_head.weight");
  if (checkpoint.format() == "gguf") {
    c.architecture = need("general.architecture").asString();
    const std::string a = c.architecture + ".";
    c.nEmbd = need(a + "embedding_length").asInt();
    c.nLayer = need(a + "block_count").asInt();
    c.nHead = need(a + "attention.head_count").asInt();
    c.nHeadKv = intOr(a + "attention.head_count_kv", c.nHead);
    c.nFf = intOr(a + "feed_forward_length", 4 * c.nEmbd);
    c.context = intOr(a + "context_length", 0);
    c.ropeFreqBase = realOr(a + "rope.freq_base", 10000.0);
    c.normEps = c.architecture == "llama" ? realOr(a + "attention.layer_norm_rms_epsilon", 1e-5)
                                          : realOr(a + "attention.layer_norm_epsilon", 1e-5);
    c.vocab = intOr(a + "vocab_size", 0);
    if (c.vocab == 0) {
      if (const MetaValue* tokens = checkpoint.meta("tokenizer.ggml.tokens"))
        c.vocab = static_cast<int64_t>(tokens->asArray().size());
      else if (const TensorInfo* t = checkpoint.find("token_embd.weight"); t && !t->dims.empty())
        c.vocab = t->dims[0];
    }
    c.tiedEmbeddings = !hasOutput;
    return c;
  }
  const MetaValue* type = checkpoint.meta("model_type");
  c.architecture = type ? type->asString() : (checkpoint.meta("n_embd") ? "gpt2" : "llama");
  if (checkpoint.meta("n_embd")) {  // HF GPT-2
    c.nEmbd = need("n_embd").asInt();
    c.nLayer = need("n_layer").asInt();
    c.nHead = need("n_head").asInt();
    c.nHeadKv = c.nHead;
    c.nFf = intOr("n_inner", 4 * c.nEmbd);
    c.context = intOr("n_positions", intOr("n_ctx", 0));
    c.normEps = realOr("layer_norm_epsilon", 1e-5);
    c.vocab = need("vocab_size").asInt();
    c.tiedEmbeddings = true;
    if (const MetaValue* tie = checkpoint.meta("tie_word_embeddings")) c.tiedEmbeddings = tie->asBool();
    return c;
  }
  c.nEmbd = need("hidden_size").asInt();
  c.nLayer = need("num_hidden_layers").asInt();
  c.nHead = need("num_attention_heads").asInt();
  c.nHeadKv = intOr("num_key_value_heads", c.nHead);
  c.nFf = need("intermediate_size").asInt();
  c.context = intOr("max_position_embeddings", 0);
  c.ropeFreqBase = realOr("rope_theta", 10000.0);
  c.normEps = realOr("rms_norm_eps", 1e-6);
  c.vocab = need("vocab_size").asInt();
  c.tiedEmbeddings = !hasOutput;
  if (const MetaValue* tie = checkpoint.meta("tie_word_embeddings")) c.tiedEmbeddings = tie->asBool();
  return c;
}

// ---------------------------------------------------------------------------------------------
// GGUF vocabularies

VocabSpec vocabFromGguf(const Checkpoint& checkpoint) {
  const std::string where = "[gguf] " + (checkpoint.impl()->sources.empty() ? checkpoint.folder() : checkpoint.impl()->sources[0].label) + ": ";
  if (checkpoint.format() != "gguf") throw Error(where + "not a GGUF checkpoint: its vocabulary is in tokenizer files");
  auto need = [&](const char* key) -> const MetaValue& {
    const MetaValue* v = checkpoint.meta(key);
    if (!v) throw Error(where + "missing key \"" + std::string(key) + "\"");
    return *v;
  };
  VocabSpec spec;
  spec.model = need("tokenizer.ggml.model").asString();
  const MetaValue* pre = checkpoint.meta("tokenizer.ggml.pre");
  spec.pre = pre ? pre->asString() : "default";
  spec.tokens = need("tokenizer.ggml.tokens").asStrings();
  const size_t n = spec.tokens.size();
  if (n > static_cast<size_t>(INT32_MAX)) throw Error(where + "tokenizer.ggml.tokens: more than 2^31 tokens");
  if (const MetaValue* scores = checkpoint.meta("tokenizer.ggml.scores")) {
    for (double x : scores->asFloats()) spec.scores.push_back(static_cast<float>(x));
    if (spec.scores.size() != n)
      throw Error(where + "tokenizer.ggml.scores has " + std::to_string(spec.scores.size()) + " values for " + std::to_string(n) + " tokens");
  }
  if (const MetaValue* types = checkpoint.meta("tokenizer.ggml.token_type")) {
    for (int64_t t : types->asInts()) {
      if (t < 0 || t > 6) throw Error(where + "tokenizer.ggml.token_type holds " + std::to_string(t) + ", not a token type (0..6)");
      spec.types.push_back(static_cast<int32_t>(t));
    }
    if (spec.types.size() != n)
      throw Error(where + "tokenizer.ggml.token_type has " + std::to_string(spec.types.size()) + " values for " + std::to_string(n) + " tokens");
  }
  if (const MetaValue* merges = checkpoint.meta("tokenizer.ggml.merges")) spec.merges = merges->asStrings();
  auto id = [&](const char* key, int32_t& out) {
    const MetaValue* v = checkpoint.meta(key);
    if (!v) return;
    const int64_t i = v->asInt();
    if (i < 0 || static_cast<uint64_t>(i) >= n)
      throw Error(where + key + " = " + std::to_string(i) + " is out of range for " + std::to_string(n) + " tokens");
    out = static_cast<int32_t>(i);
  };
  id("tokenizer.ggml.bos_token_id", spec.bos);
  id("tokenizer.ggml.eos_token_id", spec.eos);
  id("tokenizer.ggml.unknown_token_id", spec.unk);
  id("tokenizer.ggml.eot_token_id", spec.eot);
  id("tokenizer.ggml.eom_token_id", spec.eom);
  if (const MetaValue* add = checkpoint.meta("tokenizer.ggml.add_bos_token")) spec.addBos = add->asBool();
  if (const MetaValue* space = checkpoint.meta("tokenizer.ggml.add_space_prefix")) spec.addSpacePrefix = space->asBool();
  return spec;
}

}  // namespace radix::io
