// phi3::Config: config.json's rope_scaling is a nested object (the checkpoint keeps it as JSON
// text), GGUF stores longrope's factors as tensors.
#include "radix/models/phi3.h"

#include <cstring>
#include <nlohmann/json.hpp>

namespace radix::models::phi3 {

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error("[phi3] " + what); }

std::vector<double> numbers(const nlohmann::json& scaling, const char* key) {
  if (!scaling.contains(key) || !scaling[key].is_array()) fail(std::string("rope_scaling has no ") + key + " list");
  std::vector<double> out;
  for (const nlohmann::json& v : scaling[key]) {
    if (!v.is_number()) fail(std::string("rope_scaling.") + key + " holds a non-number: " + v.dump());
    out.push_back(v.get<double>());
  }
  return out;
}

/// A GGUF rope_factors_* tensor (llama.cpp's converter stores them as F32 vectors).
std::vector<double> factorTensor(const io::Checkpoint& checkpoint, const io::TensorInfo& info) {
  if (info.type != "F32" || info.dims.size() != 1)
    fail(info.name + " must be a 1-D F32 tensor, got " + info.type + " of rank " + std::to_string(info.dims.size()));
  const std::span<const uint8_t> bytes = checkpoint.bytes(info.name);
  if (bytes.size() != size_t(info.dims[0]) * 4) fail(info.name + " has " + std::to_string(bytes.size()) + " bytes");
  std::vector<double> out(size_t(info.dims[0]));
  for (size_t i = 0; i < out.size(); ++i) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    out[i] = f;
  }
  return out;
}

/// HF's default attention factor of longrope: sqrt(1 + ln(scale) / ln(original)) when the
/// context was extended (scale = max_position_embeddings / original_max_position_embeddings).
double defaultAttentionFactor(int64_t positions, int64_t original) {
  const double scale = double(positions) / double(original);
  return scale <= 1 ? 1.0 : std::sqrt(1 + std::log(scale) / std::log(double(original)));
}

}  // namespace

Config Config::fromCheckpoint(const io::Checkpoint& checkpoint, const ConfigValues& extra) {
  const ConfigSource src{checkpoint, extra};
  const bool gguf = isGguf(checkpoint);
  Config c;
  const io::TensorInfo* embed = findTensor(checkpoint, {"embed_tokens.weight", "token_embd.weight"});
  if (embed == nullptr || embed->dims.size() != 2)
    fail("no 2-D token embedding (model.embed_tokens.weight or token_embd.weight) in the checkpoint");
  c.vocab = embed->dims[0];
  c.width = src.integer("phi3", {"hidden_size", "phi3.embedding_length"});
  c.layers = src.integer("phi3", {"num_hidden_layers", "phi3.block_count"});
  c.heads = src.integer("phi3", {"num_attention_heads", "phi3.attention.head_count"});
  c.kvHeads = src.integer("phi3", {"num_key_value_heads", "phi3.attention.head_count_kv"}, c.heads);
  c.ffn = src.integer("phi3", {"intermediate_size", "phi3.feed_forward_length"});
  c.positions = src.integer("phi3", {"max_position_embeddings", "phi3.context_length"}, 4096);
  c.eps = src.real("phi3", {"rms_norm_eps", "phi3.attention.layer_norm_rms_epsilon"}, 1e-5);
  c.ropeBase = src.real("phi3", {"rope_theta", "phi3.rope.freq_base"}, 10000);
  if (c.heads <= 0 || c.kvHeads <= 0 || c.width <= 0 || c.layers <= 0 || c.ffn <= 0 || c.heads % c.kvHeads != 0 ||
      (c.width % c.heads != 0 && !checkpoint.meta("head_dim")))
    fail("bad config: hidden_size " + std::to_string(c.width) + ", heads " + std::to_string(c.heads) + ", kv heads " +
         std::to_string(c.kvHeads) + ", layers " + std::to_string(c.layers));
  c.headDim = src.integer("phi3", {"head_dim", "phi3.attention.key_length"}, c.width / c.heads);
  if (gguf) {
    c.rotaryDim = src.integer("phi3", {"phi3.rope.dimension_count"}, c.headDim);
  } else {
    const double partial = src.real("phi3", {"partial_rotary_factor"}, 1.0);
    c.rotaryDim = static_cast<int64_t>(double(c.headDim) * partial);
  }
  if (c.rotaryDim <= 0 || c.rotaryDim > c.headDim || c.rotaryDim % 2 != 0)
    fail("rotary dims " + std::to_string(c.rotaryDim) + " must be even and in (0, head_dim = " +
         std::to_string(c.headDim) + "]");
  if (const io::MetaValue* act = checkpoint.meta("hidden_act");
      act && act->kind() == io::MetaValue::Kind::string && act->asString() != "silu")
    fail("hidden_act \"" + act->asString() + "\" is not supported (silu)");
  const int64_t window = src.integer("phi3", {"sliding_window", "phi3.attention.sliding_window"}, 0);
  if (window > 0) c.window = window;
  c.tied = findTensor(checkpoint, {"lm_head.weight", "output.weight"}) == nullptr;

  // longrope.
  const int64_t original = src.integer(
      "phi3", {"original_max_position_embeddings", "phi3.rope.scaling.original_context_length"}, c.positions);
  LongRope rope;
  rope.originalContext = original;
  if (gguf) {
    const io::TensorInfo* longFactors = checkpoint.find("rope_factors_long.weight");
    const io::TensorInfo* shortFactors = checkpoint.find("rope_factors_short.weight");
    if ((longFactors == nullptr) != (shortFactors == nullptr))
      fail("the GGUF has only one of rope_factors_long.weight and rope_factors_short.weight");
    if (longFactors != nullptr) {
      rope.longFactor = factorTensor(checkpoint, *longFactors);
      rope.shortFactor = factorTensor(checkpoint, *shortFactors);
      rope.attentionFactor =
          src.real("phi3", {"phi3.rope.scaling.attn_factor"}, defaultAttentionFactor(c.positions, original));
      c.longRope = rope;
    }
  } else if (const io::MetaValue* v = checkpoint.meta("rope_scaling"); v && v->kind() == io::MetaValue::Kind::string) {
    const nlohmann::json scaling = nlohmann::json::parse(v->asString(), nullptr, false);
    if (scaling.is_discarded() || !scaling.is_object()) fail("rope_scaling is not a JSON object: " + v->asString());
    std::string type = "default";
    for (const char* key : {"rope_type", "type"})
      if (scaling.contains(key) && scaling[key].is_string()) {
        type = scaling[key].get<std::string>();
        break;
      }
    if (type == "longrope" || type == "su") {
      rope.shortFactor = numbers(scaling, "short_factor");
      rope.longFactor = numbers(scaling, "long_factor");
      rope.attentionFactor = scaling.contains("attention_factor") && scaling["attention_factor"].is_number()
                                 ? scaling["attention_factor"].get<double>()
                                 : defaultAttentionFactor(c.positions, original);
      c.longRope = rope;
    } else if (type != "default") {
      fail("rope_scaling type \"" + type + "\" is not supported (longrope)");
    }
  }
  if (c.longRope) {
    const size_t half = size_t(c.rotaryDim / 2);
    if (c.longRope->shortFactor.size() != half || c.longRope->longFactor.size() != half)
      fail("longrope needs rotary dims / 2 = " + std::to_string(half) + " factors each, got " +
           std::to_string(c.longRope->shortFactor.size()) + " short and " +
           std::to_string(c.longRope->longFactor.size()) + " long");
    if (original <= 0) fail("original_max_position_embeddings must be positive, got " + std::to_string(original));
    for (const std::vector<double>* f : {&c.longRope->shortFactor, &c.longRope->longFactor})
      for (double x : *f)
        if (!(x > 0)) fail("longrope factors must be positive, got " + std::to_string(x));
  }
  return c;
}

}  // namespace radix::models::phi3
