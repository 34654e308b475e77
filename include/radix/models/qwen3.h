#pragma once
/// Qwen3 (HF model_type "qwen3", GGUF general.architecture "qwen3"): Llama's layout
/// (radix/models/llama.h) with an RMSNorm over head_dim on each head of q and k before RoPE
/// (self_attn.q_norm / k_norm; GGUF blk.N.attn_q_norm / attn_k_norm), no q/k/v biases, and
/// head_dim from the config (HF head_dim, GGUF qwen3.attention.key_length), which may differ
/// from hidden_size / num_attention_heads. RoPE is rotate-half in both file forms
/// (LLAMA_ROPE_TYPE_NEOX). Configs that set use_sliding_window are refused.
#include <optional>

#include "radix/models/llama.h"

namespace radix::models::qwen3 {

using Config = llama::Config;
using Model = llama::Model;

/// What Qwen3 changes in the Llama layout: qwen3::variant().qkNorm -> true
inline llama::Variant variant() {
  return {.name = "qwen3", .qkNorm = true, .slidingWindow = false, .ggufRope = nn::RopeLayout::rotateHalf};
}

/// qwen3::config(io::Checkpoint::open("qwen3-0.6b/"), {}).headDim -> 128
inline Config config(const io::Checkpoint& checkpoint, const ConfigValues& extra = {}) {
  return Config::fromCheckpoint(checkpoint, extra, variant());
}

/// qwen3::load(cpu, io::Checkpoint::open("qwen3.gguf"), DType::f32).layers[0].self_attn.q_norm->weight -> {hd=128}
inline Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype,
                  std::optional<DType> compute = {}, const ConfigValues& extra = {}) {
  return Model::load(platform, checkpoint, dtype, compute, extra, variant());
}

}  // namespace radix::models::qwen3
