#pragma once
/// The on-disk executable cache: <cache>/<target>/<name>_<hash16>/ holding module.mlir,
/// the compiled object and meta.json.
#include <cstdint>
#include <string>
#include <vector>

namespace radix {

/// The cache folder in force: $RADIX_CACHE_DIR, else $XDG_CACHE_HOME/radix, else ~/.cache/radix;
/// "" when RADIX_CACHE_DIR=off.
std::string cacheDir();

/// One cache entry, as listed by `radix cache ls`.
struct CacheEntryInfo {
  std::string path;      // the entry's folder
  std::string target;    // "cpu"
  std::string name;      // "NN_1b2c3d4e5f607182"
  uint64_t bytes = 0;    // total size of its files
  double ageSeconds = 0; // since last written
};

/// Lists the entries under `root` (default: cacheDir()), newest first.
std::vector<CacheEntryInfo> listCache(const std::string& root = cacheDir());
/// Removes every entry under `root`; returns how many were removed.
size_t clearCache(const std::string& root = cacheDir());

/// Counters of this process's cache activity (for tests and tools).
struct CacheStats {
  uint64_t hits = 0;      // executables loaded from disk (no MLIR pass, no LLVM codegen)
  uint64_t misses = 0;    // lookups that found no usable entry
  uint64_t stores = 0;    // entries written
  uint64_t corrupt = 0;   // entries rejected as truncated, corrupt or foreign
  uint64_t compiles = 0;  // modules lowered and code-generated
};
CacheStats cacheStats();

}  // namespace radix
