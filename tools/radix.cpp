// radix: the command-line tool. `radix generate`, `radix bench` (tools/generate.cpp), `radix chat`
// (tools/chat.cpp), `radix info` (tools/info.cpp), `radix quantize` (tools/quantize.cpp), `radix compile`
// (tools/compile.cpp), `radix cache ls|clear`, `radix targets`,
// `radix version`. As getopt tools: --help/-h print usage on stdout and exit 0; a bad command line
// prints the message and the usage on stderr and exits 2; a failure at run time exits 1.
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "cli.h"
#include "radix/cache.h"
#include "radix/error.h"
#include "radix/platform.h"
#include "radix/version.h"

namespace {

using radix::cli::Args;
using radix::cli::HelpRequested;
using radix::cli::UsageError;

std::string human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

std::string age(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.0fm", s / 60);
  else if (s < 172800) std::snprintf(buf, sizeof buf, "%.0fh", s / 3600);
  else std::snprintf(buf, sizeof buf, "%.0fd", s / 86400);
  return buf;
}

int cacheCommand(Args& args) {
  std::optional<std::string_view> verb, dir;
  while (!args.done()) {
    const std::string_view a = args.flag();
    if (a.starts_with('-')) args.unknown(a);
    if (!verb) verb = a;
    else if (!dir) dir = a;
    else throw UsageError{"[cache] unexpected argument \"" + std::string(a) + "\""};
  }
  if (!verb) throw UsageError{"[cache] ls or clear is required"};
  if (*verb != "ls" && *verb != "clear") throw UsageError{"[cache] unknown action \"" + std::string(*verb) + "\" (ls, clear)"};
  const std::string folder = dir ? std::string(*dir) : radix::cacheDir();
  if (folder.empty()) throw radix::Error("[cache] the cache is off (RADIX_CACHE_DIR=off)");
  if (*verb == "ls") {
    auto entries = radix::listCache(folder);
    double total = 0;
    for (const auto& e : entries) {
      std::printf("%10s  %6s  %s/%s\n", human(static_cast<double>(e.bytes)).c_str(), age(e.ageSeconds).c_str(),
                  e.target.c_str(), e.name.c_str());
      total += static_cast<double>(e.bytes);
    }
    std::printf("%zu entries, %s in %s\n", entries.size(), human(total).c_str(), folder.c_str());
  } else {
    std::printf("removed %zu entries from %s\n", radix::clearCache(folder), folder.c_str());
  }
  return 0;
}

/// Commands that take no arguments.
void noArguments(Args& args) {
  if (!args.done()) args.unknown(args.flag());
}

int targetsCommand(Args& args) {
  noArguments(args);
  std::string features;
  for (const std::string& f : radix::hostVectorFeatures()) features += " " + f;
  std::printf("host CPU: %s\nhost features:%s\n\nCPUs (CompileOptions::targetCpu):\n", radix::hostTargetCpu().c_str(),
              features.c_str());
  for (const std::string& cpu : radix::targetCpuNames()) std::printf("  %s\n", cpu.c_str());
  std::printf("\nfeatures (CompileOptions::targetFeatures, as +name or -name, comma-separated):\n");
  for (const std::string& f : radix::targetFeatureNames()) std::printf("  %s\n", f.c_str());
  return 0;
}

int versionCommand(Args& args) {
  noArguments(args);
  std::printf("radix %s\n", RADIX_VERSION);
  return 0;
}

struct Command {
  std::string_view name;
  std::string_view synopsis;  // the usage lines, without "usage: "
  std::string_view details;   // what --help adds
  int (*run)(Args&);
};

constexpr std::string_view kDtypeHelp =
    "  --dtype f32|bf16|f16  the weights' dtype (default: the stored one for f16/bf16 files, else f32);\n"
    "                        a GGUF's Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K weights stay quantized\n"
    "  --compute f32|bf16|f16\n"
    "                        the activations' dtype (default f32)\n"
    "  --kv-type f32|f16|bf16\n"
    "                        the KV cache's dtype (default: f16 for quantized weights with f32\n"
    "                        activations, as llama.cpp's, else the activations'); f16 halves what\n"
    "                        decoding reads per cached token\n";

constexpr std::string_view kResidencyHelp =
    "  --mmap                map the weights' files (shared with other processes, paged in on demand)\n"
    "  --no-mmap             read the weights into memory on 2 MiB pages (decode streams them faster)\n"
    "                        default: --no-mmap when the files fit in half of the available memory\n";

constexpr std::string_view kSamplingHelp =
    "  --temp T              sampling temperature, 0 for greedy (default 0.8)\n"
    "  --top-k K             keep the K most likely tokens, 0 for all (default 40)\n"
    "  --top-p P             keep the smallest set of probability >= P (default 0.95)\n"
    "  --seed S              seed of the sampler (default: random)\n"
    "  -t, --threads N       threads (default: all cores)\n"
    "  --device D            cpu (default), cuda or cuda:N: an NVIDIA GPU through its driver\n"
    "                        (docs/gpu.md)\n";

const Command kCommands[] = {
    {"generate",
     "radix generate [--model PATH] --prompt TEXT -n N [--chat] [--system TEXT] [--template FILE]\n"
     "                      [--temp T] [--top-k K] [--top-p P] [--seed S] [-t THREADS]\n"
     "                      [--dtype f32|bf16|f16] [--compute f32|bf16|f16] [--kv-type f32|f16|bf16]\n"
     "                      [--ids] [--verbose] [--device cpu|cuda[:N]] [--mmap|--no-mmap]",
     "Streams the prompt and N generated tokens, then prompt and generation speed on stderr.\n"
     "  -m, --model PATH      an HF folder or a .gguf file (default: the model embedded in radix)\n"
     "  -p, --prompt TEXT     the prompt (special tokens such as <|im_start|> are matched whole)\n"
     "  -n N                  tokens to generate\n"
     "  --chat                apply the model's chat template to the prompt as one user message; prints\n"
     "                        the reply only, and stops at an end-of-generation token\n"
     "  --system TEXT         a system message before the prompt (with --chat)\n"
     "  --template FILE       a Jinja chat template to use instead of the model's\n"
     "  --ids                 print token ids instead of text\n"
     "  -v, --verbose         print the prompt's token ids on stderr\n",
     radix::cli::generateCommand},
    {"chat",
     "radix chat [--model PATH] [--system TEXT] [--template FILE] [-n MAX] [-c CTX] [--temp T]\n"
     "                  [--top-k K] [--top-p P] [--seed S] [-t THREADS] [--dtype f32|bf16|f16]\n"
     "                  [--compute f32|bf16|f16] [--kv-type f32|f16|bf16] [--verbose]\n"
     "                  [--device cpu|cuda[:N]] [--mmap|--no-mmap]",
     "A conversation with the model through its chat template. On a terminal: type a message and\n"
     "Enter; Ctrl-D ends. Otherwise one message per line of stdin, one reply per line of stdout.\n"
     "The KV cache is kept between turns: each turn feeds only the new tokens.\n"
     "  -m, --model PATH      an HF folder or a .gguf file with a chat template\n"
     "  --system TEXT         the system message\n"
     "  --template FILE       a Jinja chat template to use instead of the model's\n"
     "  -n MAX                most tokens per reply (default 512)\n"
     "  -c, --ctx N           the KV cache's length, up to a power of two (default: the model's context,\n"
     "                        at most 4096); the oldest turns are dropped when the conversation outgrows it\n"
     "  -v, --verbose         per turn on stderr: tokens kept in the cache, prefilled, generated\n",
     radix::cli::chatCommand},
    {"info", "radix info --model PATH",
     "Architecture, hyperparameters, tensors by type, parameters, file size, tokenizer, special tokens\n"
     "and chat template of an HF folder or .gguf file (also for architectures radix cannot run).\n"
     "  -m, --model PATH      an HF folder, a .safetensors file or a .gguf file\n",
     radix::cli::infoCommand},
    {"quantize", "radix quantize --model IN --to TYPE -o OUT.gguf [-t THREADS]",
     "Writes a quantized GGUF v3 file that llama.cpp loads, mixed as llama-quantize mixes it (no\n"
     "importance matrix): the same types per tensor and, from the same f32 weights, the same bytes.\n"
     "  -m, --model IN        a .gguf file, or an HF folder of GPT-2 or Llama (config.json, safetensors,\n"
     "                        a byte-level BPE tokenizer.json)\n"
     "  --to TYPE             q8_0, q4_0, q4_1, q5_0, q5_1, q4_k_m, q5_k_m or q6_k\n"
     "  -o, --output OUT      the .gguf file to write\n"
     "  -t, --threads N       threads (default: all cores)\n",
     radix::cli::quantizeCommand},
    {"compile",
     "radix compile [--model PATH] [-c CONTEXT] [--target cpu|cuda:sm_XX] [--target-cpu CPU]\n"
     "                     [--target-features LIST]\n"
     "                     [--cache-dir DIR] [-t THREADS] [--dtype f32|bf16|f16] [--compute f32|bf16|f16]\n"
     "                     [--kv-type f32|f16|bf16]",
     "Compiles a model's executables ahead of time into the cache (the decode step and each prompt\n"
     "chunk, 16 tokens up to the context), for this CPU or another, and prints their entry folders.\n"
     "radix::Program (the runtime library, without the compiler) loads them, and radix generate/bench\n"
     "with the same options start warm (docs/aot.md).\n"
     "  -m, --model PATH      an HF folder or a .gguf file (default: the model embedded in radix)\n"
     "  -c, --context N       the KV cache's length (default: the model's, at most 2048)\n"
     "  --target T            cpu (default) or a CUDA GPU, cuda:sm_90a for an H100/H200 (docs/gpu.md)\n"
     "  --target-cpu CPU      compile for this CPU (`radix targets` lists them; default: this host's)\n"
     "  --target-features L   with +name/-name features, comma-separated (\"+avx512f,-amx-tile\")\n"
     "  --cache-dir DIR       the cache to write (default: $RADIX_CACHE_DIR, else ~/.cache/radix)\n"
     "  -t, --threads N       threads the executables will use (default: all cores)\n"
     "  --dtype, --compute, --kv-type\n"
     "                        as for radix generate\n",
     radix::cli::compileCommand},
    {"bench",
     "radix bench --model PATH [-p 512] [-n 128] [-t THREADS[,..]] [--dtype f32|bf16|f16[,..]]\n"
     "                   [--compute f32|bf16|f16] [--kv-type f32|f16|bf16] [-r REPS] [--device cpu|cuda[:N]]\n"
     "                   [--mmap|--no-mmap]",
     "Prompt processing (ppP) and generation (tgN) tokens/s as llama-bench prints them.\n"
     "  -m, --model PATH      an HF folder or a .gguf file\n"
     "  -p N                  prompt tokens (0: skip; default 512)\n"
     "  -n N                  generated tokens (0: skip; default 128)\n"
     "  -t, --threads N,..    thread counts to run (default: all cores)\n"
     "  --dtype D,..          the weights' dtypes to run (default: the stored one for f16/bf16\n"
     "                        files, with f32 activations; else f32); quantized GGUF weights stay\n"
     "                        quantized, and the dtype column prints their type (\"Q4_K - Medium\")\n"
     "  --compute D           the activations' dtype (default: the weights' when --dtype is given)\n"
     "  --kv-type D           the KV cache's dtype (default: f16 for quantized weights with f32\n"
     "                        activations, else the activations')\n"
     "  -r N                  timed repetitions per row (default 3), after an untimed one (compile\n"
     "                        or cache load, and the weights' one-time packing)\n"
     "  --device D            cpu (default), cuda or cuda:N: on an NVIDIA GPU, the threads column\n"
     "                        names the device (docs/gpu.md)\n",
     radix::cli::benchCommand},
    {"cache", "radix cache ls|clear [DIR]",
     "ls: list the compile cache's entries with sizes and ages; clear: remove them all.\n"
     "DIR defaults to $RADIX_CACHE_DIR, else $XDG_CACHE_HOME/radix, else ~/.cache/radix.\n",
     cacheCommand},
    {"targets", "radix targets",
     "CPU names and features for CompileOptions::targetCpu/targetFeatures.\n", targetsCommand},
    {"version", "radix version", "The version of radix.\n", versionCommand},
};

void printSynopsis(FILE* to, const Command& c, bool first) {
  std::fprintf(to, "%s%.*s\n", first ? "usage: " : "       ", static_cast<int>(c.synopsis.size()), c.synopsis.data());
}

void printAllUsage(FILE* to) {
  bool first = true;
  for (const Command& c : kCommands) {
    printSynopsis(to, c, first);
    first = false;
  }
  std::fprintf(to, "Run radix COMMAND --help for a command's options.\n");
}

/// Errors from the library name their own module ("[generate] ...", "[gguf] ..."): prefixed with
/// the command's, and LanguageModel's "[generate] " under another command replaced by it.
std::string runtimeMessage(std::string_view verb, std::string what) {
  const std::string prefix = "[" + std::string(verb) + "]";
  if (what.starts_with("[generate] ") && verb != "generate") what = what.substr(11);
  return what.starts_with(prefix) ? what : prefix + " " + what;
}

int runCommand(const Command& c, int argc, char** argv) {
  Args args{std::string(c.name), {}, 0};
  for (int i = 2; i < argc; ++i) args.items.emplace_back(argv[i]);
  try {
    return c.run(args);
  } catch (const HelpRequested&) {
    printSynopsis(stdout, c, true);
    std::printf("\n%.*s", static_cast<int>(c.details.size()), c.details.data());
    if (c.name == "generate" || c.name == "chat") std::printf("%s%s", kSamplingHelp.data(), kDtypeHelp.data());
    if (c.name == "generate" || c.name == "chat" || c.name == "bench") std::printf("%s", kResidencyHelp.data());
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s\n", e.message.c_str());
    printSynopsis(stderr, c, true);
    std::fprintf(stderr, "Run radix %s --help for more.\n", std::string(c.name).c_str());
    return 2;
  } catch (const radix::Error& e) {
    std::fprintf(stderr, "%s\n", runtimeMessage(c.name, e.what()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[%s] %s\n", std::string(c.name).c_str(), e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    printAllUsage(stderr);
    return 2;
  }
  const std::string_view command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    if (command == "help" && argc > 2) {
      for (const Command& c : kCommands)
        if (c.name == argv[2]) {
          char help[] = "--help";
          char* helpArgv[] = {argv[0], argv[2], help};
          return runCommand(c, 3, helpArgv);
        }
      std::fprintf(stderr, "radix: unknown command \"%s\"\n", argv[2]);
      printAllUsage(stderr);
      return 2;
    }
    printAllUsage(stdout);
    return 0;
  }
  if (command == "--version") {
    std::printf("radix %s\n", RADIX_VERSION);
    return 0;
  }
  for (const Command& c : kCommands)
    if (c.name == command) return runCommand(c, argc, argv);
  std::fprintf(stderr, "radix: unknown %s \"%s\"\n", command.starts_with('-') ? "option" : "command", argv[1]);
  printAllUsage(stderr);
  return 2;
}
