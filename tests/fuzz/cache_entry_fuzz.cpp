// libFuzzer target for the cache entry reader: the input is a meta.json, then the separator line
// "\n--entry.o--\n", then an entry.o. They are written into an entry folder and loaded as a
// cached compile would load them; every input must give a miss (with a warning) or a loaded
// object, never a crash, a hang or a sanitizer report.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "compiler/cache.h"

namespace {
constexpr std::string_view kSeparator = "\n--entry.o--\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = fs::temp_directory_path() / ("radix-fuzz-" + std::to_string(getpid())) / "cpu" / "e";
  static const bool quiet = [] { return std::freopen("/dev/null", "w", stderr) != nullptr; }();
  (void)quiet;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find(kSeparator);
  const std::string_view meta = input.substr(0, cut);
  const std::string_view object = cut == std::string_view::npos ? std::string_view() : input.substr(cut + kSeparator.size());
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  std::ofstream(dir / "meta.json", std::ios::binary) << meta;
  if (cut != std::string_view::npos) std::ofstream(dir / "entry.o", std::ios::binary) << object;
  radix::detail::CacheEntry entry(dir.string(), 0x0123456789abcdefull);
  entry.load(2);
  radix::detail::parseCacheMeta(meta, "0123456789abcdef", 1);
  return 0;
}
