// radix generate / radix bench: text generation and llama-bench style speed rows, over
// radix::models::LanguageModel. With no --model, generate runs the model embedded in the binary
// (tools/embedded_model.cpp.in: models/kjv, or a tiny random placeholder until it exists).
#include <algorithm>
#include <charconv>
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

#include "radix/io.h"
#include "radix/models/generate.h"
#include "radix/platform.h"
#include "radix/tokenizer.h"

extern "C" {
extern const unsigned char radix_default_config[], radix_default_config_end[];
extern const unsigned char radix_default_model[], radix_default_model_end[];
extern const unsigned char radix_default_tokenizer[], radix_default_tokenizer_end[];
}

namespace {

using radix::DType;
using radix::Error;
namespace models = radix::models;

/// A bad command line: printed as "[verb] message", exit code 1.
struct UsageError {
  std::string message;
};

template <class T>
T number(std::string_view verb, std::string_view flag, std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty())
    throw UsageError{"[" + std::string(verb) + "] " + std::string(flag) + " needs a number, got \"" + std::string(text) + "\""};
  return value;
}

/// Walks argv: flag() returns the value after a flag.
struct Args {
  std::string_view verb;
  std::vector<std::string_view> items;
  size_t i = 0;
  bool done() const { return i >= items.size(); }
  std::string_view next() { return items[i++]; }
  std::string_view value(std::string_view flag) {
    if (done()) throw UsageError{"[" + std::string(verb) + "] " + std::string(flag) + " needs a value"};
    return next();
  }
};

DType parseDtype(std::string_view verb, std::string_view s) {
  if (s == "f32") return DType::f32;
  if (s == "bf16") return DType::bf16;
  if (s == "f16") return DType::f16;
  throw UsageError{"[" + std::string(verb) + "] --dtype must be f32, bf16 or f16, got \"" + std::string(s) + "\""};
}

const char* dtypeName(DType d) { return d == DType::bf16 ? "bf16" : d == DType::f16 ? "f16" : "f32"; }

radix::Platform platformWith(int threads) {
  radix::Platform cpu = radix::Platform::cpu();
  radix::CompileOptions options = cpu.options();
  options.threads = threads;
  return cpu.withOptions(options);
}

/// The model embedded in the binary.
models::LanguageModel embeddedModel(const radix::Platform& cpu, const models::LoadOptions& options) {
  auto span = [](const unsigned char* begin, const unsigned char* end) {
    return std::span<const uint8_t>(begin, static_cast<size_t>(end - begin));
  };
  auto text = [](const unsigned char* begin, const unsigned char* end) {
    return std::string_view(reinterpret_cast<const char*>(begin), static_cast<size_t>(end - begin));
  };
  radix::io::Checkpoint checkpoint =
      radix::io::Checkpoint::fromSafetensorsBytes(span(radix_default_model, radix_default_model_end), "embedded model");
  radix::Tokenizer tokenizer =
      radix::Tokenizer::fromJson(text(radix_default_tokenizer, radix_default_tokenizer_end), "embedded tokenizer.json");
  return models::LanguageModel::fromCheckpoint(cpu, checkpoint, std::move(tokenizer), options,
                                               text(radix_default_config, radix_default_config_end));
}

int generate(Args args) {
  std::optional<std::string> model, prompt;
  std::optional<int64_t> n;
  models::Sampling sampling{.temperature = 0.8, .topK = 40, .topP = 0.95, .seed = 0};
  bool seeded = false, ids = false;
  int threads = 0;
  DType dtype = DType::f32;
  std::optional<DType> compute;
  while (!args.done()) {
    const std::string_view flag = args.next();
    if (flag == "--model" || flag == "-m") model = std::string(args.value(flag));
    else if (flag == "--prompt" || flag == "-p") prompt = std::string(args.value(flag));
    else if (flag == "-n") n = number<int64_t>("generate", flag, args.value(flag));
    else if (flag == "--temp") sampling.temperature = number<double>("generate", flag, args.value(flag));
    else if (flag == "--top-k") sampling.topK = number<int64_t>("generate", flag, args.value(flag));
    else if (flag == "--top-p") sampling.topP = number<double>("generate", flag, args.value(flag));
    else if (flag == "--seed") sampling.seed = number<uint64_t>("generate", flag, args.value(flag)), seeded = true;
    else if (flag == "-t" || flag == "--threads") threads = number<int>("generate", flag, args.value(flag));
    else if (flag == "--dtype") dtype = parseDtype("generate", args.value(flag));
    else if (flag == "--compute") compute = parseDtype("generate", args.value(flag));
    else if (flag == "--ids") ids = true;
    else throw UsageError{"[generate] unknown option \"" + std::string(flag) + "\""};
  }
  if (!prompt) throw UsageError{"[generate] --prompt TEXT is required"};
  if (!n) throw UsageError{"[generate] -n N (tokens to generate) is required"};
  if (*n < 0) throw UsageError{"[generate] -n must be >= 0, got " + std::to_string(*n)};
  if (threads < 1 && threads != 0) throw UsageError{"[generate] -t must be >= 1, got " + std::to_string(threads)};
  if (sampling.temperature < 0) throw UsageError{"[generate] --temp must be >= 0"};
  if (sampling.topK < 0) throw UsageError{"[generate] --top-k must be >= 0"};
  if (!(sampling.topP > 0 && sampling.topP <= 1)) throw UsageError{"[generate] --top-p must be in (0, 1]"};
  if (!seeded) sampling.seed = std::random_device{}();

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const radix::Platform cpu = platformWith(threads);
  const models::LoadOptions options{.dtype = dtype, .compute = compute};
  models::LanguageModel lm = model ? models::LanguageModel::open(cpu, *model, options) : embeddedModel(cpu, options);
  const radix::Tokenizer& tokenizer = lm.tokenizer();
  const std::vector<int32_t> promptIds = tokenizer.encode(*prompt);
  if (promptIds.empty()) throw UsageError{"[generate] the prompt encodes to no tokens"};
  if (static_cast<int64_t>(promptIds.size()) >= lm.maxContext())
    throw UsageError{"[generate] the prompt's " + std::to_string(promptIds.size()) +
                     " tokens do not fit the model's context of " + std::to_string(lm.maxContext())};
  const double loadSeconds = std::chrono::duration<double>(Clock::now() - start).count();

  models::Utf8Stream stream;
  if (!ids) {
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
  lm.generate(promptIds, *n, sampling, onToken, &stats);
  if (!ids) {
    const std::string rest = stream.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr, "\n[generate] %s %s, load %.2f s; prompt: %lld tokens, %.2f tok/s; generation: %lld tokens, %.2f tok/s\n",
               lm.architecture().c_str(), dtypeName(lm.dtype()), loadSeconds, static_cast<long long>(stats.promptTokens),
               stats.promptSeconds > 0 ? stats.promptTokens / stats.promptSeconds : 0.0,
               static_cast<long long>(stats.generatedTokens),
               stats.generateSeconds > 0 ? stats.decodeSteps / stats.generateSeconds : 0.0);
  return 0;
}

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

int bench(Args args) {
  std::optional<std::string> model;
  int64_t prompt = 512, gen = 128, reps = 3;
  std::vector<int> threads = {static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  std::vector<DType> dtypes = {DType::f32};
  std::optional<DType> compute;
  while (!args.done()) {
    const std::string_view flag = args.next();
    if (flag == "--model" || flag == "-m") {
      model = std::string(args.value(flag));
    } else if (flag == "-p") {
      prompt = number<int64_t>("bench", flag, args.value(flag));
    } else if (flag == "-n") {
      gen = number<int64_t>("bench", flag, args.value(flag));
    } else if (flag == "-r") {
      reps = number<int64_t>("bench", flag, args.value(flag));
    } else if (flag == "-t" || flag == "--threads") {
      threads.clear();
      for (std::string_view t : splitList(args.value(flag))) threads.push_back(number<int>("bench", flag, t));
    } else if (flag == "--dtype") {
      dtypes.clear();
      for (std::string_view d : splitList(args.value(flag))) dtypes.push_back(parseDtype("bench", d));
    } else if (flag == "--compute") {
      compute = parseDtype("bench", args.value(flag));
    } else {
      throw UsageError{"[bench] unknown option \"" + std::string(flag) + "\""};
    }
  }
  if (!model) throw UsageError{"[bench] --model PATH is required"};
  if (prompt < 0 || gen < 0 || (prompt == 0 && gen == 0)) throw UsageError{"[bench] -p and -n must be >= 0, one > 0"};
  if (reps < 1) throw UsageError{"[bench] -r must be >= 1"};
  for (int t : threads)
    if (t < 1) throw UsageError{"[bench] -t must be >= 1, got " + std::to_string(t)};

  // The first model loads before the table starts, so that a bad path is a clean error.
  std::optional<models::LanguageModel> first =
      models::LanguageModel::open(platformWith(threads[0]), *model, {.dtype = dtypes[0], .compute = compute});
  std::printf("| model | size | params | dtype | threads | test | t/s |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
  std::fflush(stdout);
  using Clock = std::chrono::steady_clock;
  std::mt19937 random(1234);
  for (DType dtype : dtypes)
    for (int t : threads) {
      models::LanguageModel lm =
          first ? std::move(*first)
                : models::LanguageModel::open(platformWith(t), *model, {.dtype = dtype, .compute = compute});
      first.reset();
      if (std::max(prompt, gen) > lm.maxContext())
        throw UsageError{"[bench] -p/-n exceed the model's context of " + std::to_string(lm.maxContext())};
      std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(lm.vocabSize() - 1));
      auto row = [&](const char* kind, int64_t count, auto&& once) {
        once();  // warm-up: compiles (or loads from the disk cache)
        std::vector<double> rates;
        for (int64_t r = 0; r < reps; ++r) {
          const auto t0 = Clock::now();
          once();
          rates.push_back(static_cast<double>(count) / std::chrono::duration<double>(Clock::now() - t0).count());
        }
        double mean = 0, var = 0;
        for (double x : rates) mean += x / static_cast<double>(rates.size());
        for (double x : rates) var += (x - mean) * (x - mean) / std::max<double>(1, static_cast<double>(rates.size()) - 1);
        std::printf("| %s | %s | %s | %s | %d | %s%lld | %.2f ± %.2f |\n", lm.architecture().c_str(),
                    sizeText(static_cast<double>(lm.weightBytes())).c_str(),
                    paramsText(static_cast<double>(lm.parameters())).c_str(), dtypeName(dtype), t, kind,
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
      if (gen > 0)
        row("tg", gen, [&] {
          lm.reset(gen);
          radix::Rng rng;
          int32_t next = token(random);
          for (int64_t i = 0; i < gen; ++i) next = lm.sample(lm.feed(std::span<const int32_t>(&next, 1)), {}, rng);
        });
    }
  return 0;
}

int run(std::string_view verb, int argc, char** argv) {
  Args args{verb, {}, 0};
  for (int i = 2; i < argc; ++i) args.items.emplace_back(argv[i]);
  try {
    return verb == "generate" ? generate(args) : bench(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s\n", e.message.c_str());
  } catch (const Error& e) {
    const std::string prefix = "[" + std::string(verb) + "]";
    std::string what = e.what();
    if (what.starts_with("[generate] ") && verb != "generate") what = what.substr(11);  // LanguageModel's errors
    std::fprintf(stderr, "%s\n", what.starts_with(prefix) ? what.c_str() : (prefix + " " + what).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[%s] %s\n", std::string(verb).c_str(), e.what());
  }
  return 1;
}

}  // namespace

/// `radix generate ...` (argv[1] == "generate").
int radixGenerateMain(int argc, char** argv) { return run("generate", argc, argv); }
/// `radix bench ...` (argv[1] == "bench").
int radixBenchMain(int argc, char** argv) { return run("bench", argc, argv); }
