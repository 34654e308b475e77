#pragma once
// Chat pieces of the radix CLI (tools/chat.cpp), shared by `radix chat` and `radix generate --chat`.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "radix/chat.h"
#include "radix/models/generate.h"
#include "radix/random.h"
#include "radix/tokenizer.h"

namespace radix::cli {

/// --template FILE, else the model's (tokenizer_config.json's chat_template, GGUF's
/// tokenizer.chat_template); "[verb] ... has no chat template (give one with --template FILE)".
ChatTemplate loadTemplate(const std::string& verb, const RunOptions& options);

/// The BOS and EOS texts a template may print (bos_token, eos_token).
ChatContext chatContext(const Tokenizer& tokenizer);

/// The ids of a whole rendered conversation: special tokens matched whole, BOS added when the
/// tokenizer adds one and the template did not already print it.
std::vector<int32_t> encodeRendered(const Tokenizer& tokenizer, const ChatContext& context, std::string_view text);

/// What sampleReply() produced.
struct Reply {
  std::vector<int32_t> ids;  // the reply's tokens, without the end-of-generation token
  size_t fed = 0;            // how many of them are in the KV cache (all but the last one sampled)
  bool stopped = false;      // ended at an end-of-generation token
};

/// Samples at most `n` tokens after `logits` (the prompt fed), feeding each one but the last;
/// stops at any end-of-generation token (not fed, not in ids). `onToken` sees each reply token.
Reply sampleReply(models::LanguageModel& lm, Tensor logits, int64_t n, const models::Sampling& sampling, Rng& rng,
                  const std::function<void(int32_t)>& onToken);

}  // namespace radix::cli
