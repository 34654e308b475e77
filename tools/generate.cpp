// radix generate / radix bench: text generation and llama-bench style speed rows, over
// radix::models::LanguageModel. With no --model, generate runs the model embedded in the binary
// (tools/embedded_model.cpp.in: models/kjv, or a tiny random placeholder until it exists).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "chat.h"
#include "cli.h"
#include "radix/io.h"
#include "radix/models/generate.h"
#include "radix/platform.h"
#include "radix/tokenizer.h"

namespace radix {

using cli::Args;
using cli::RunOptions;
using cli::UsageError;

namespace {

/// The prompt's ids: with --chat, the chat template's render of {system, user: prompt}.
std::vector<int32_t> promptIds(const models::LanguageModel& lm, const std::optional<ChatTemplate>& chat,
                               const cli::RunOptions& o, const std::string& prompt) {
  const Tokenizer& tokenizer = lm.tokenizer();
  if (!chat) return tokenizer.encode(prompt, {.addBos = tokenizer.addBos()});
  std::vector<ChatMessage> messages;
  if (o.system) messages.push_back({"system", *o.system});
  messages.push_back({"user", prompt});
  const ChatContext context = cli::chatContext(tokenizer);
  return cli::encodeRendered(tokenizer, context, chat->apply(messages, context));
}

}  // namespace

int cli::generateCommand(Args& args) {
  RunOptions o;
  std::optional<std::string> prompt;
  std::optional<int64_t> n;
  bool ids = false, chat = false;
  while (!args.done()) {
    const std::string_view flag = args.flag();
    if (runOption(args, flag, o)) continue;
    if (flag == "--prompt" || flag == "-p") prompt = std::string(args.value(flag));
    else if (flag == "-n") n = args.number<int64_t>(flag);
    else if (flag == "--ids") ids = true;
    else if (flag == "--chat") chat = true;
    else args.unknown(flag);
  }
  if (!prompt) throw UsageError{"[generate] --prompt TEXT is required"};
  if (!n) throw UsageError{"[generate] -n N (tokens to generate) is required"};
  if (*n < 0) throw UsageError{"[generate] -n must be >= 0, got " + std::to_string(*n)};
  if (!chat && (o.system || o.templateFile)) throw UsageError{"[generate] --system and --template need --chat"};
  checkRunOptions("generate", o);

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::optional<ChatTemplate> chatTemplate;
  if (chat) chatTemplate = loadTemplate("generate", o);
  models::LanguageModel lm = openModel(o, chooseDtypes(o));
  const Tokenizer& tokenizer = lm.tokenizer();
  const std::vector<int32_t> input = promptIds(lm, chatTemplate, o, *prompt);
  if (input.empty()) throw Error("[generate] the prompt encodes to no tokens");
  const int64_t length = static_cast<int64_t>(input.size());
  if (length >= lm.maxContext())
    throw Error("[generate] the prompt's " + std::to_string(length) + " tokens do not fit the model's context of " +
                std::to_string(lm.maxContext()));
  if (o.verbose) {
    std::fprintf(stderr, "[generate] prompt ids:");
    for (int32_t id : input) std::fprintf(stderr, " %d", id);
    std::fprintf(stderr, "\n");
  }
  const double loadSeconds = std::chrono::duration<double>(Clock::now() - start).count();

  models::Utf8Stream stream;
  if (!ids && !chat) {
    std::fwrite(prompt->data(), 1, prompt->size(), stdout);
    std::fflush(stdout);
  }
  bool first = true;
  auto onToken = [&](int32_t id) {
    if (ids) {
      std::printf(first ? "%d" : " %d", id);
    } else {
      const std::string text = stream.push(tokenizer.tokenBytes(id));
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    first = false;
    std::fflush(stdout);
  };
  models::GenerateStats stats;
  if (!chat) {
    lm.generate(input, *n, o.sampling, onToken, &stats);
  } else if (*n > 0) {
    // Stops at an end-of-generation token, and at the end of the context (no context shift).
    const int64_t room = std::min(*n, lm.maxContext() - length);
    lm.reset(length + room);
    lm.prepare(length);
    Rng rng = Rng::init(platformFor(o), o.sampling.seed);
    lm.prepareSampler(o.sampling);  // before the clock starts
    const auto t0 = Clock::now();
    const Tensor logits = lm.feed(input);
    const auto t1 = Clock::now();
    const cli::Reply reply = cli::sampleReply(lm, logits, room, o.sampling, rng, onToken);
    stats = {.promptTokens = length, .generatedTokens = static_cast<int64_t>(reply.ids.size()),
             .decodeSteps = static_cast<int64_t>(reply.fed),
             .promptSeconds = std::chrono::duration<double>(t1 - t0).count(),
             .generateSeconds = std::chrono::duration<double>(Clock::now() - t1).count()};
  }
  if (!ids) {
    const std::string rest = stream.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  std::fflush(stdout);
  if (Platform::cpu().processIndex() == 0)  // one line for a tensor-parallel job
    std::fprintf(stderr, "\n[generate] %s, %s, load %.2f s; prompt: %lld tokens, %.2f tok/s; generation: %lld tokens, %.2f tok/s\n",
                 lm.architecture().c_str(), dtypesText(lm).c_str(), loadSeconds, static_cast<long long>(stats.promptTokens),
                 stats.promptSeconds > 0 ? stats.promptTokens / stats.promptSeconds : 0.0,
                 static_cast<long long>(stats.generatedTokens),
                 stats.generateSeconds > 0 ? stats.decodeSteps / stats.generateSeconds : 0.0);
  return 0;
}

namespace {

std::vector<std::string_view> splitList(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t comma = s.find(',');
    out.push_back(s.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

std::string sizeText(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
  return buf;
}

std::string paramsText(double n) {
  char buf[32];
  if (n >= 1e9) std::snprintf(buf, sizeof buf, "%.2f B", n / 1e9);
  else std::snprintf(buf, sizeof buf, "%.2f M", n / 1e6);
  return buf;
}

/// The family, and the ranks of a tensor-parallel job: "llama", "llama tp2".
std::string modelName(const models::LanguageModel& lm) {
  const int ranks = Platform::cpu().processCount();
  return lm.architecture() + (ranks > 1 ? " tp" + std::to_string(ranks) : "");
}

int listNumber(std::string_view flag, std::string_view text) {
  Args one{"bench", {flag, text}, 1};
  return one.number<int>(flag);
}

int benchImpl(Args& args) {
  std::optional<std::string> model;
  int64_t prompt = 512, gen = 128, reps = 3;
  std::vector<int> threads = {static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  std::vector<DType> dtypes = {DType::f32};
  bool dtypeGiven = false;
  std::optional<DType> compute, kv;
  io::Residency residency = io::Residency::automatic;
  int device = -1;
  while (!args.done()) {
    const std::string_view flag = args.flag();
    if (flag == "--model" || flag == "-m") {
      model = std::string(args.value(flag));
    } else if (flag == "--device") {
      device = cli::parseDevice("bench", args.value(flag));
    } else if (flag == "-p") {
      prompt = args.number<int64_t>(flag);
    } else if (flag == "-n") {
      gen = args.number<int64_t>(flag);
    } else if (flag == "-r") {
      reps = args.number<int64_t>(flag);
    } else if (flag == "-t" || flag == "--threads") {
      threads.clear();
      for (std::string_view t : splitList(args.value(flag))) threads.push_back(listNumber(flag, t));
    } else if (flag == "--dtype") {
      dtypes.clear();
      dtypeGiven = true;
      for (std::string_view d : splitList(args.value(flag))) dtypes.push_back(cli::parseDtype("bench", flag, d));
    } else if (flag == "--compute") {
      compute = cli::parseDtype("bench", flag, args.value(flag));
    } else if (flag == "--kv-type") {
      kv = cli::parseDtype("bench", flag, args.value(flag));
    } else if (flag == "--mmap" || flag == "--no-mmap") {
      residency = flag == "--mmap" ? io::Residency::mapped : io::Residency::copied;
    } else {
      args.unknown(flag);
    }
  }
  if (!model) throw UsageError{"[bench] --model PATH is required"};
  if (prompt < 0 || gen < 0 || (prompt == 0 && gen == 0)) throw UsageError{"[bench] -p and -n must be >= 0, one > 0"};
  if (reps < 1) throw UsageError{"[bench] -r must be >= 1"};
  for (int t : threads)
    if (t < 1) throw UsageError{"[bench] -t must be >= 1, got " + std::to_string(t)};
  if (!dtypeGiven) {  // as generate: the file's own float type (an F16 GGUF runs f16 weights, f32 compute)
    cli::RunOptions o;
    o.model = *model;
    const models::LoadOptions load = cli::chooseDtypes(o);
    dtypes = {load.dtype};
    if (!compute) compute = load.compute;
  }

  // On a GPU the threads are the host's, which only launches: one row per dtype.
  if (device >= 0) threads = {1};
  auto platform = [&](int t) { return device >= 0 ? Platform::cuda(device) : cli::platformWith(t); };
  // The first model loads before the table starts, so that a bad path is a clean error.
  std::optional<models::LanguageModel> first =
      models::LanguageModel::open(platform(threads[0]), *model, {.dtype = dtypes[0], .compute = compute, .kvDtype = kv, .residency = residency});
  if (std::max(prompt, gen) > first->maxContext())
    throw Error("[bench] -p/-n exceed the model's context of " + std::to_string(first->maxContext()));
  std::printf("| model | size | params | dtype | threads | test | t/s |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
  std::fflush(stdout);
  using Clock = std::chrono::steady_clock;
  std::mt19937 random(1234);
  for (DType dtype : dtypes)
    for (int t : threads) {
      models::LanguageModel lm =
          first ? std::move(*first)
                : models::LanguageModel::open(platform(t), *model, {.dtype = dtype, .compute = compute, .kvDtype = kv, .residency = residency});
      first.reset();
      std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(lm.vocabSize() - 1));
      auto row = [&](const char* kind, int64_t count, auto&& once) {
        // Warm-up: the call compiles (or loads from the disk cache) and packs the f32/f16/bf16
        // weights whole into the packed-weight cache (a loaded weight is packed on its first use).
        once();
        std::vector<double> rates;
        for (int64_t r = 0; r < reps; ++r) {
          const auto t0 = Clock::now();
          once();
          rates.push_back(static_cast<double>(count) / std::chrono::duration<double>(Clock::now() - t0).count());
        }
        double mean = 0, var = 0;
        for (double x : rates) mean += x / static_cast<double>(rates.size());
        for (double x : rates) var += (x - mean) * (x - mean) / std::max<double>(1, static_cast<double>(rates.size()) - 1);
        const std::string where = device >= 0 ? "cuda:" + std::to_string(device) : std::to_string(t);
        std::printf("| %s | %s | %s | %s | %s | %s%lld | %.2f ± %.2f |\n", modelName(lm).c_str(),
                    sizeText(static_cast<double>(lm.weightBytes())).c_str(),
                    paramsText(static_cast<double>(lm.parameters())).c_str(), lm.weightType().c_str(), where.c_str(), kind,
                    static_cast<long long>(count), mean, std::sqrt(var));
        std::fflush(stdout);
      };
      // As llama-bench: pp from an empty cache of `prompt` tokens, tg from an empty cache of
      // `gen` tokens (each test gets its own context, so decode attends over gen positions).
      if (prompt > 0)
        row("pp", prompt, [&] {
          std::vector<int32_t> ids(static_cast<size_t>(prompt));
          for (int32_t& id : ids) id = token(random);
          lm.reset(prompt);
          (void)lm.feed(ids).toVector<float>();
        });
      // Greedy leaves the generator as it is: one state serves every rep, made outside the clock.
      const Rng greedyState = gen > 0 ? Rng::init(platform(t), 0) : Rng();
      if (gen > 0)
        row("tg", gen, [&] {
          lm.reset(gen);
          Rng rng = greedyState;
          int32_t next = token(random);
          for (int64_t i = 0; i < gen; ++i) next = lm.sample(lm.feed(std::span<const int32_t>(&next, 1)), {}, rng);
        });
    }
  return 0;
}

}  // namespace

int cli::benchCommand(Args& args) { return benchImpl(args); }

}  // namespace radix
