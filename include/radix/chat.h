#pragma once
/// Chat templates: the Jinja subset that Hugging Face chat templates use, rendered as
/// transformers renders them (jinja2's ImmutableSandboxedEnvironment with trim_blocks and
/// lstrip_blocks, plus raise_exception, strftime_now and a json.dumps tojson). docs/chat.md lists
/// the supported syntax.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "radix/error.h"

namespace radix {

/// One message of a conversation: {"user", "Hello"}.
struct ChatMessage {
  std::string role, content;
};

/// What a template sees besides messages.
struct ChatContext {
  std::string bosToken, eosToken;              // bos_token, eos_token
  bool addGenerationPrompt = true;             // add_generation_prompt
  std::map<std::string, std::string> strings;  // extra string variables
  std::map<std::string, bool> flags;           // extra boolean variables: {{"enable_thinking", false}} (Qwen3)
};

/// A parsed Jinja chat template: parse once, render many times; thread-safe to render.
///   auto t = ChatTemplate::parse("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
///   t.apply({{"user", "Hi"}}) -> "user: Hi\n"
class ChatTemplate {
 public:
  /// Throws radix::Error("[chat_template] <what> at line L, column C: <construct>") for syntax it does not support.
  /// ChatTemplate::parse("{% include 'x' %}") -> "[chat_template] unknown tag at line 1, column 1: {% include"
  static ChatTemplate parse(std::string_view source);
  /// Renders; errors (raise_exception, type errors) are radix::Error("[chat_template] ...").
  /// t.apply({{"system", "Be brief."}, {"user", "Hi"}}, {.bosToken = "<s>"}) -> "<s>..."
  std::string apply(const std::vector<ChatMessage>& messages, const ChatContext& context = {}) const;

  struct Impl;

 private:
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// The chat template of a model: tokenizer_config.json's "chat_template" (a string, or the list-of-{name,template} form: take "default") in an HF folder (or the folder of a file path), or a GGUF file's tokenizer.chat_template; nullopt when none.
/// chatTemplateOf("Qwen2.5-0.5B-Instruct/") -> "{%- if tools %}..."; chatTemplateOf("gpt2/") -> nullopt
std::optional<std::string> chatTemplateOf(const std::string& modelPath);

}  // namespace radix
