// libFuzzer target for the chat template interpreter: the input is a Jinja template. It is parsed
// and rendered on a fixed conversation (with and without the generation prompt); a radix::Error is
// fine, anything else (a crash, a hang past the step limit, an unbounded allocation) is a bug.
#include <radix/chat.h>
#include <radix/error.h>

#include <cstdint>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<radix::ChatMessage> chat = {
      {"system", "  You are terse.\n"}, {"user", "Hi \xE4\xBD\xA0\xE5\xA5\xBD"}, {"assistant", "<think>\nhm\n</think>\n\nHello"}, {"user", "Bye"}};
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const radix::ChatTemplate t = radix::ChatTemplate::parse(source);
    radix::ChatContext context;
    context.bosToken = "<s>";
    context.eosToken = "</s>";
    context.strings = {{"date_string", "01 Jan 2025"}};
    for (bool prompt : {true, false}) {
      context.addGenerationPrompt = prompt;
      try {
        t.apply(chat, context);
      } catch (const radix::Error&) {
      }
    }
  } catch (const radix::Error&) {
  }
  return 0;
}
