// radix chat: a conversation through the model's chat template that keeps the KV cache between
// turns. Each turn renders the whole conversation; when the text already fed is a prefix of the
// render, only the rest is encoded and fed, else the conversation is prefilled again.
#include "chat.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "radix/error.h"

namespace radix::cli {

ChatTemplate loadTemplate(const std::string& verb, const RunOptions& o) {
  if (o.templateFile) {
    std::ifstream in(*o.templateFile, std::ios::binary);
    if (!in) throw Error("[" + verb + "] cannot read the template file \"" + *o.templateFile + "\"");
    std::ostringstream text;
    text << in.rdbuf();
    return ChatTemplate::parse(text.str());
  }
  std::optional<std::string> source = o.model ? chatTemplateOf(*o.model) : std::nullopt;
  if (!source)
    throw Error("[" + verb + "] " + (o.model ? "\"" + *o.model + "\"" : std::string("the embedded model")) +
                " has no chat template (tokenizer_config.json's chat_template or GGUF's tokenizer.chat_template); "
                "give one with --template FILE");
  return ChatTemplate::parse(*source);
}

ChatContext chatContext(const Tokenizer& tokenizer) {
  ChatContext c;
  if (tokenizer.bos() >= 0) c.bosToken = tokenizer.tokenText(tokenizer.bos());
  if (tokenizer.eos() >= 0) c.eosToken = tokenizer.tokenText(tokenizer.eos());
  return c;
}

std::vector<int32_t> encodeRendered(const Tokenizer& tokenizer, const ChatContext& context, std::string_view text) {
  const bool printed = !context.bosToken.empty() && text.starts_with(context.bosToken);
  return tokenizer.encode(text, {.addBos = tokenizer.addBos() && !printed, .parseSpecial = true});
}

Reply sampleReply(models::LanguageModel& lm, Tensor logits, int64_t n, const models::Sampling& sampling, Rng& rng,
                  const std::function<void(int32_t)>& onToken) {
  const Tokenizer& tokenizer = lm.tokenizer();
  Reply r;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t next = lm.sample(logits, sampling, rng);
    if (tokenizer.isEog(next)) {
      r.stopped = true;
      break;
    }
    r.ids.push_back(next);
    if (onToken) onToken(next);
    if (i + 1 == n) break;
    logits = lm.feed(std::span<const int32_t>(&next, 1));
    ++r.fed;
  }
  return r;
}

namespace {

/// A conversation and the KV cache of the text fed so far, in a context of fixed length (so that
/// the step executables compiled for it are kept).
class Conversation {
 public:
  Conversation(models::LanguageModel& lm, ChatTemplate chatTemplate, const RunOptions& options, int64_t maxReply,
               int64_t context)
      : lm_(lm), tokenizer_(lm.tokenizer()), template_(std::move(chatTemplate)), context_(chatContext(tokenizer_)),
        options_(options), maxReply_(maxReply), rng_(Rng::init(platformFor(options), options.sampling.seed)) {
    if (options.system) messages_.push_back({"system", *options.system});
    lm_.reset(context);
  }

  /// Adds the user's message and streams the reply's text to `out`; the conversation is
  /// unchanged when it throws.
  void turn(const std::string& user, FILE* out) {
    const std::vector<ChatMessage> before = messages_;
    messages_.push_back({"user", user});
    try {
      reply(out);
    } catch (...) {
      messages_ = before;
      fedIds_.clear();  // what the cache holds is unknown now
      fedText_.clear();
      throw;
    }
  }

 private:
  /// The tokens to feed for the conversation so far: only the new ones when the text fed is a
  /// prefix of the render. The oldest turns are dropped (then all is fed again) when the
  /// conversation does not fit the context with room for a token of reply.
  std::vector<int32_t> tokensToFeed() {
    const int64_t context = lm_.context();
    while (true) {
      const std::string render = template_.apply(messages_, context_);
      std::vector<int32_t> fresh;
      if (!fedIds_.empty() && render.starts_with(fedText_) && render.size() > fedText_.size()) {
        fresh = tokenizer_.encode(std::string_view(render).substr(fedText_.size()), {.parseSpecial = true});
      } else {
        fedIds_.clear();
        fedText_.clear();
        fresh = encodeRendered(tokenizer_, context_, render);
      }
      if (static_cast<int64_t>(fedIds_.size() + fresh.size()) < context) {
        fedText_ = render;
        return fresh;
      }
      // Drops the oldest message after the system message, and the replies that follow it.
      const size_t first = !messages_.empty() && messages_[0].role == "system" ? 1 : 0;
      if (messages_.size() - first <= 1)
        throw Error("[chat] the conversation's " + std::to_string(fedIds_.size() + fresh.size()) +
                    " tokens do not fit the context of " + std::to_string(context) + " (--ctx)");
      size_t end = first + 1;
      while (end + 1 < messages_.size() && messages_[end].role != "user") ++end;
      messages_.erase(messages_.begin() + static_cast<ptrdiff_t>(first), messages_.begin() + static_cast<ptrdiff_t>(end));
      fedIds_.clear();
      fedText_.clear();
    }
  }

  void reply(FILE* out) {
    const std::vector<int32_t> fresh = tokensToFeed();
    const int64_t kept = static_cast<int64_t>(fedIds_.size());
    if (kept == 0) lm_.reset(lm_.context());
    const Tensor logits = lm_.feed(fresh);
    fedIds_.insert(fedIds_.end(), fresh.begin(), fresh.end());
    const int64_t room = std::min(maxReply_, lm_.context() - static_cast<int64_t>(fedIds_.size()));

    models::Utf8Stream stream;
    std::string text;
    const Reply r = sampleReply(lm_, logits, room, options_.sampling, rng_, [&](int32_t id) {
      const std::string bytes = tokenizer_.tokenBytes(id);
      text += bytes;
      const std::string piece = stream.push(bytes);
      std::fwrite(piece.data(), 1, piece.size(), out);
      std::fflush(out);
    });
    const std::string rest = stream.flush();
    std::fwrite(rest.data(), 1, rest.size(), out);
    for (size_t i = 0; i < r.fed; ++i) {
      fedIds_.push_back(r.ids[i]);
      fedText_ += tokenizer_.tokenBytes(r.ids[i]);
    }
    messages_.push_back({"assistant", text});
    ++turns_;
    if (options_.verbose)
      std::fprintf(stderr, "[chat] turn %d: %lld tokens kept in the cache, %zu prefilled, %zu generated%s\n", turns_,
                   static_cast<long long>(kept), fresh.size(), r.ids.size(), r.stopped ? " (end of generation)" : "");
  }

  models::LanguageModel& lm_;
  const Tokenizer& tokenizer_;
  ChatTemplate template_;
  ChatContext context_;
  const RunOptions& options_;
  int64_t maxReply_;
  Rng rng_;
  std::vector<ChatMessage> messages_;
  std::vector<int32_t> fedIds_;  // what the KV cache holds, position() of them
  std::string fedText_;          // the text they encode
  int turns_ = 0;
};

}  // namespace

int chatCommand(Args& args) {
  RunOptions options;
  int64_t maxReply = 512;
  std::optional<int64_t> context;
  while (!args.done()) {
    const std::string_view flag = args.flag();
    if (runOption(args, flag, options)) continue;
    if (flag == "-n") maxReply = args.number<int64_t>(flag);
    else if (flag == "-c" || flag == "--ctx") context = args.number<int64_t>(flag);
    else args.unknown(flag);
  }
  if (maxReply < 1) throw UsageError{"[chat] -n must be >= 1, got " + std::to_string(maxReply)};
  if (context && *context < 16) throw UsageError{"[chat] --ctx must be >= 16, got " + std::to_string(*context)};
  checkRunOptions("chat", options);
  ChatTemplate chatTemplate = loadTemplate("chat", options);
  const models::LoadOptions load = chooseDtypes(options);
  models::LanguageModel lm = openModel(options, load);
  (void)lm.tokenizer();  // its error, before the first message
  if (context && *context > lm.maxContext())
    throw Error("[chat] --ctx " + std::to_string(*context) + " exceeds the model's context of " +
                std::to_string(lm.maxContext()));
  const bool tty = ::isatty(STDIN_FILENO) == 1;
  if (tty)
    std::fprintf(stderr, "[chat] %s, %s; Ctrl-D ends\n", lm.architecture().c_str(), dtypesText(lm).c_str());
  Conversation conversation(lm, std::move(chatTemplate), options, maxReply,
                            context.value_or(std::min<int64_t>(lm.maxContext(), 4096)));
  std::string line;
  while (true) {
    if (tty) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    try {
      conversation.turn(line, stdout);
    } catch (const Error& e) {
      if (!tty) throw;
      std::fprintf(stderr, "\n%s\n", e.what());  // on a terminal the conversation goes on
    }
    std::fputs("\n", stdout);
    std::fflush(stdout);
  }
  if (tty) std::fputs("\n", stdout);
  return 0;
}

}  // namespace radix::cli
