#pragma once
// What the radix CLI's commands share (tools/*.cpp): walking argv, usage errors and help, the
// options of the commands that run a model (generate, chat), and loading that model.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "radix/dtype.h"
#include "radix/models/generate.h"
#include "radix/platform.h"

namespace radix::cli {

/// A bad command line: "[verb] message" and the command's usage on stderr, exit status 2.
struct UsageError {
  std::string message;
};

/// --help or -h: the command's help on stdout, exit status 0.
struct HelpRequested {};

/// Walks one command's arguments (argv after the command's name).
struct Args {
  std::string verb;
  std::vector<std::string_view> items;
  size_t i = 0;

  bool done() const { return i >= items.size(); }
  /// The next argument as a flag; --help and -h throw HelpRequested.
  std::string_view flag() {
    const std::string_view f = items[i++];
    if (f == "--help" || f == "-h") throw HelpRequested{};
    return f;
  }
  /// The value after `flag`: a UsageError when there is none.
  std::string_view value(std::string_view flag) {
    if (done()) throw UsageError{"[" + verb + "] " + std::string(flag) + " needs a value"};
    return items[i++];
  }
  [[noreturn]] void unknown(std::string_view flag) const {
    throw UsageError{"[" + verb + "] unknown option \"" + std::string(flag) + "\""};
  }
  /// The value after `flag` as a number: "[verb] -n needs a number, got "abc"".
  template <class T>
  T number(std::string_view flag) {
    const std::string_view text = value(flag);
    T out{};
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, out);
    if (ec != std::errc() || ptr != end || text.empty())
      throw UsageError{"[" + verb + "] " + std::string(flag) + " needs a number, got \"" + std::string(text) + "\""};
    return out;
  }
};

/// "f32", "bf16" or "f16"; a UsageError naming `flag` otherwise.
DType parseDtype(std::string_view verb, std::string_view flag, std::string_view text);

/// --device's value: -1 for "cpu", N for "cuda:N" ("cuda" is 0); UsageError otherwise.
/// parseDevice("bench", "cuda:1") -> 1
int parseDevice(std::string_view verb, std::string_view text);

/// The host CPU with `threads` threads (0: all).
Platform platformWith(int threads);

/// Options of the commands that load a model and sample from it (generate, chat).
struct RunOptions {
  std::optional<std::string> model;
  models::Sampling sampling{.temperature = 0.8, .topK = 40, .topP = 0.95, .seed = 0};
  bool seeded = false;
  int threads = 0;
  std::optional<DType> dtype, compute, kv;
  std::optional<std::string> system, templateFile;
  bool verbose = false;
  /// CompileOptions' targetCpu, targetFeatures and cacheDir, and a CUDA target ("sm_90a"), for
  /// radix compile.
  std::string targetCpu, targetFeatures, cacheDir, cudaArch;
  /// --device: -1 for the CPU, else the CUDA device to run on (docs/gpu.md).
  int cudaDevice = -1;
  /// --mmap (mapped) / --no-mmap (copied); LoadOptions' automatic when neither is given.
  std::optional<io::Residency> residency;
};

/// Consumes `flag` (and its value) when it is one of RunOptions' flags; false otherwise.
bool runOption(Args& args, std::string_view flag, RunOptions& options);
/// Checks the values of RunOptions' flags and draws a seed when none was given.
void checkRunOptions(const std::string& verb, RunOptions& options);

/// The weights' dtype to load: `--dtype` when given, else the checkpoint's stored floating-point
/// dtype (f16 or bf16 GGUF/safetensors keep it), else f32. `compute`: --compute, else f32 (half
/// weights are converted in the contractions; x86 CPUs have no f16 arithmetic, and f32
/// activations keep llama.cpp's numerics).
models::LoadOptions chooseDtypes(const RunOptions& options);
/// platformWith(threads) with the options' compile target and cache folder.
Platform platformFor(const RunOptions& options);
/// Opens --model (or the model embedded in the binary) with chooseDtypes().
models::LanguageModel openModel(const RunOptions& options, const models::LoadOptions& load);
/// "f16 weights, f32 compute".
std::string dtypesText(const models::LanguageModel& lm);

/// The commands (tools/generate.cpp, chat.cpp, info.cpp): the exit status, or UsageError,
/// HelpRequested or radix::Error thrown.
int generateCommand(Args& args);
int benchCommand(Args& args);
int chatCommand(Args& args);
int infoCommand(Args& args);
int quantizeCommand(Args& args);
int compileCommand(Args& args);

}  // namespace radix::cli
