// radix compile: a model's step executables compiled ahead of time into the cache, for this CPU
// or another (docs/aot.md), where radix::Program (the runtime library alone) and `radix generate`
// find them.
#include <chrono>
#include <cstdio>
#include <string>

#include "cli.h"
#include "radix/cache.h"
#include "radix/models/generate.h"

namespace radix {

int cli::compileCommand(Args& args) {
  RunOptions o;
  int64_t context = 0;
  while (!args.done()) {
    const std::string_view flag = args.flag();
    if (flag == "--temp" || flag == "--top-k" || flag == "--top-p" || flag == "--seed" || flag == "--system" ||
        flag == "--template")
      args.unknown(flag);
    if (runOption(args, flag, o)) continue;
    if (flag == "-c" || flag == "--context") context = args.number<int64_t>(flag);
    else if (flag == "--target") {
      const std::string_view t = args.value(flag);
      if (t == "cpu") continue;
      if (!t.starts_with("cuda:")) throw UsageError{"[compile] --target is cpu or cuda:sm_XX[a], got \"" + std::string(t) + "\""};
      o.cudaArch = std::string(t.substr(5));
    } else if (flag == "--target-cpu") o.targetCpu = std::string(args.value(flag));
    else if (flag == "--target-features") o.targetFeatures = std::string(args.value(flag));
    else if (flag == "--cache-dir") o.cacheDir = std::string(args.value(flag));
    else args.unknown(flag);
  }
  if (context < 0) throw UsageError{"[compile] -c must be >= 1, got " + std::to_string(context)};
  o.seeded = true;
  checkRunOptions("compile", o);
  if (o.cacheDir.empty() && radix::cacheDir().empty())
    throw UsageError{"[compile] the cache is off (RADIX_CACHE_DIR=off): give --cache-dir DIR"};

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Compiling reads no weight: mapping the file is enough.
  if (!o.residency) o.residency = io::Residency::mapped;
  models::LanguageModel lm = openModel(o, chooseDtypes(o));
  const int64_t tokens = context ? context : std::min<int64_t>(lm.maxContext(), 2048);
  lm.reset(tokens);
  // Every chunk length a prompt can take (powers of two from 16 up to the context) and decode.
  lm.prepareAll();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const auto& [length, entry] : lm.cacheEntries())
    std::printf("step %5lld  %s\n", static_cast<long long>(length), entry.c_str());
  const CacheStats stats = cacheStats();
  std::fprintf(stderr, "[compile] %s (%s), context %lld: %zu executables (%llu compiled, %llu from the cache) in %.2f s\n",
               lm.architecture().c_str(), dtypesText(lm).c_str(), static_cast<long long>(lm.context()),
               lm.executables(), static_cast<unsigned long long>(stats.compiles),
               static_cast<unsigned long long>(stats.hits), seconds);
  return 0;
}

}  // namespace radix
