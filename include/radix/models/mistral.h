#pragma once
/// Mistral (HF model_type "mistral"): Llama's layout (radix/models/llama.h) with sliding-window
/// attention where config.json's sliding_window is set and smaller than
/// max_position_embeddings (Mistral 7B v0.1: 4096; later versions set null). Each query then
/// sees its last `sliding_window` positions, HF's mask; the KV cache still holds the whole
/// context. llama.cpp's converter writes Mistral checkpoints as GGUF general.architecture
/// "llama" (q and k rows permuted, interleaved RoPE); Radix reads llama.attention.sliding_window
/// there when present (the key llama.cpp uses for its sliding-window architectures).
#include <optional>

#include "radix/models/llama.h"

namespace radix::models::mistral {

using Config = llama::Config;
using Model = llama::Model;

/// What Mistral changes in the Llama layout: mistral::variant().slidingWindow -> true
inline llama::Variant variant() { return {.name = "mistral", .slidingWindow = true}; }

/// mistral::config(io::Checkpoint::open("mistral-7b-v0.1/"), {}).window -> 4096
inline Config config(const io::Checkpoint& checkpoint, const ConfigValues& extra = {}) {
  return Config::fromCheckpoint(checkpoint, extra, variant());
}

/// mistral::load(cpu, io::Checkpoint::open("mistral/"), DType::bf16).layers[0].self_attn.window -> 4096
inline Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype,
                  std::optional<DType> compute = {}, const ConfigValues& extra = {}) {
  return Model::load(platform, checkpoint, dtype, compute, extra, variant());
}

}  // namespace radix::models::mistral
