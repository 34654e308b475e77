#pragma once
/// Qwen2 and Qwen2.5 (HF model_type "qwen2", GGUF general.architecture "qwen2"): Llama's layout
/// (radix/models/llama.h) with biases on q_proj, k_proj and v_proj, rope_theta from the config
/// (1e6 in the released checkpoints) and the output tied to the embedding when the checkpoint
/// has no lm_head (the small sizes). llama.cpp keeps HF's rotate-half RoPE in GGUF
/// (LLAMA_ROPE_TYPE_NEOX): q and k rows are not permuted. GGUF tensors: blk.N.attn_q.bias, ...
/// Configs that set use_sliding_window are refused.
#include <optional>

#include "radix/models/llama.h"

namespace radix::models::qwen2 {

using Config = llama::Config;
using Model = llama::Model;

/// What Qwen2 changes in the Llama layout: qwen2::variant().qkvBias -> true
inline llama::Variant variant() {
  return {.name = "qwen2", .qkvBias = true, .slidingWindow = false, .ggufRope = nn::RopeLayout::rotateHalf};
}

/// qwen2::config(io::Checkpoint::open("qwen2.5-0.5b/"), {}).ropeBase -> 1e6
inline Config config(const io::Checkpoint& checkpoint, const ConfigValues& extra = {}) {
  return Config::fromCheckpoint(checkpoint, extra, variant());
}

/// qwen2::load(cpu, io::Checkpoint::open("qwen2.gguf"), DType::bf16).lm_head.has_value() -> false
inline Model load(const Platform& platform, const io::Checkpoint& checkpoint, DType dtype,
                  std::optional<DType> compute = {}, const ConfigValues& extra = {}) {
  return Model::load(platform, checkpoint, dtype, compute, extra, variant());
}

}  // namespace radix::models::qwen2
