// libFuzzer target for the cache entry reader: the input is a meta.json, then the separator line
// "\n--entry.o--\n", then an entry.o. They are written into an entry folder and loaded as a
// cached compile would load them; every input must give a miss (with a warning) or a loaded
// object (and radix::Program's table of the entry is read or refused), never a crash, a hang or a sanitizer report.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "runtime/cache.h"

namespace {
constexpr std::string_view kSeparator = "\n--entry.o--\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = fs::temp_directory_path() / ("radix-fuzz-" + std::to_string(getpid())) / "cpu" / "e";
  // Radix's warnings for rejected entries would drown libFuzzer's output: silence them during the
  // load only (a crash there still leaves libFuzzer's crash-* artifact).
  static const int devNull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
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
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(devNull, 2);
  entry.load(2);
  ::dup2(saved, 2);
  ::close(saved);
  radix::detail::parseCacheMeta(meta, "0123456789abcdef", 1);
  std::string why;
  radix::detail::readProgramEntry(dir.string(), why);  // radix::Program's reading of the same folder
  return 0;
}
