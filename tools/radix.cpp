// radix: the command-line tool. `radix cache ls`, `radix cache clear`, `radix targets`, `radix version`,
// `radix generate`, `radix bench` (the last two in tools/generate.cpp).
#include <cstdio>
#include <string>

#include "radix/cache.h"
#include "radix/platform.h"
#include "radix/version.h"

int radixGenerateMain(int argc, char** argv);
int radixBenchMain(int argc, char** argv);

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: radix cache ls [DIR]     list cache entries with sizes and ages\n"
               "       radix cache clear [DIR]  remove every cache entry\n"
               "       radix targets            CPU names and features for CompileOptions::targetCpu/targetFeatures\n"
               "       radix version\n"
               "       radix generate [--model PATH] --prompt TEXT -n N [--temp T] [--top-k K] [--top-p P] [--seed S]\n"
               "                      [-t THREADS] [--dtype f32|bf16] [--compute f32|bf16] [--ids]\n"
               "                                 generate text (PATH: HF folder or .gguf; none: the embedded model;\n"
               "                                 --dtype: weights, --compute: activations, default the weights')\n"
               "       radix bench --model PATH [-p 512] [-n 128] [-t THREADS[,..]] [--dtype f32|bf16[,..]]\n"
               "                   [--compute f32|bf16] [-r REPS]\n"
               "                                 prompt processing and generation tokens/s, as llama-bench\n"
               "DIR defaults to $RADIX_CACHE_DIR, else $XDG_CACHE_HOME/radix, else ~/.cache/radix\n");
  return 2;
}

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string command = argv[1];
  if (command == "version") {
    std::printf("radix %s\n", RADIX_VERSION);
    return 0;
  }
  if (command == "generate") return radixGenerateMain(argc, argv);
  if (command == "bench") return radixBenchMain(argc, argv);
  if (command == "targets") {
    std::printf("host CPU: %s\n\nCPUs (CompileOptions::targetCpu):\n", radix::hostTargetCpu().c_str());
    for (const std::string& cpu : radix::targetCpuNames()) std::printf("  %s\n", cpu.c_str());
    std::printf("\nfeatures (CompileOptions::targetFeatures, as +name or -name, comma-separated):\n");
    for (const std::string& f : radix::targetFeatureNames()) std::printf("  %s\n", f.c_str());
    return 0;
  }
  if (command != "cache" || argc < 3) return usage();
  const std::string verb = argv[2];
  if (verb != "ls" && verb != "clear") return usage();
  const std::string dir = argc > 3 ? argv[3] : radix::cacheDir();
  if (dir.empty()) {
    std::fprintf(stderr, "radix: the cache is off (RADIX_CACHE_DIR=off)\n");
    return 1;
  }
  if (verb == "ls") {
    auto entries = radix::listCache(dir);
    double total = 0;
    for (const auto& e : entries) {
      std::printf("%10s  %6s  %s/%s\n", human(static_cast<double>(e.bytes)).c_str(), age(e.ageSeconds).c_str(),
                  e.target.c_str(), e.name.c_str());
      total += static_cast<double>(e.bytes);
    }
    std::printf("%zu entries, %s in %s\n", entries.size(), human(total).c_str(), dir.c_str());
    return 0;
  }
  if (verb == "clear") {
    std::printf("removed %zu entries from %s\n", radix::clearCache(dir), dir.c_str());
    return 0;
  }
  return usage();
}
