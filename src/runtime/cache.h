#pragma once
// Cache entries and dump folders, the compiled object's ABI and its loader (no MLIR or LLVM
// here: part of the runtime library).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "radix/cache.h"
#include "radix/detail/trace.h"
#include "radix/platform.h"

namespace radix::detail {

/// The symbols every compiled object exports: the packed entry, the key it was built for
/// (entryKeyText) and, when profiled, its site table (profileSitesText) and that table's length.
inline constexpr const char* kPackedEntry = "_mlir_radix_entry";
inline constexpr const char* kEntryKeySymbol = "radix_entry_key";
inline constexpr const char* kProfileSitesSymbol = "radix_profile_sites";
inline constexpr const char* kProfileSitesSizeSymbol = "radix_profile_sites_size";
inline constexpr size_t kMaxProfileSitesBytes = 64 << 20;

struct LoadedObject {
  void* entry = nullptr;
  std::shared_ptr<void> owner;
  std::vector<int32_t> resultAlias;
  /// The object's profile site table (runtime/profiler.h), when it was compiled with profiling.
  std::optional<std::string> profileSites;
};

/// Links a relocatable object's checked bytes (an entry.o whose hash matched, rank 0's object)
/// into this process (runtime/elf.h), running its constructors, finds the packed entry, and
/// checks that the object's `radix_entry_key` symbol holds `keyText` (module_rewrites.cpp's addEntryKey).
/// On failure, says why.
std::optional<LoadedObject> loadObject(const std::string& bytes, const std::string& keyText, std::string& why);

/// Bytes of the `radix_entry_key` symbol every compiled object exports.
constexpr size_t kEntryKeyBytes = 64;
/// What the object built for `key` (with these result aliases) holds in `radix_entry_key`.
std::string entryKeyText(uint64_t key, const std::vector<int32_t>& resultAlias);

/// A file's bytes, or why it can't be used: missing, a symbolic link, not a regular file (FIFO,
/// device), larger than maxBytes, or short.
struct ReadResult {
  std::optional<std::string> data;
  std::string problem;
};
ReadResult readRegularFile(const std::string& path, size_t maxBytes);

/// A cache entry's meta.json, type- and range-checked: "" problem when it is one for `key`
/// with numResults valid result aliases.
struct MetaCheck {
  std::string problem;
  std::vector<int32_t> resultAlias;
  uint64_t objectBytes = 0;
  std::string objectXxh64;
};
MetaCheck parseCacheMeta(std::string_view text, const std::string& key, size_t numResults);

/// Dump folder from options, else $RADIX_DUMP_DIR; "" when none.
std::string resolveDumpDir(const CompileOptions& options);
/// <root>/<target>/<name>_<hash16>, with the name cut so that paths stay valid.
std::string entryPath(const std::string& root, std::string_view target, const std::string& name, uint64_t key);
/// Writes a file through a temporary and a rename; failures are warnings.
void writeFileAtomic(const std::filesystem::path& path, const std::string& content);

/// What meta.json records of a program besides its object: enough for the runtime to load and
/// call it without the compiler (radix::Program).
struct ProgramEntry {
  uint64_t key = 0;
  std::string name;                   // "Mlp"
  std::string target = "cpu";         // the platform's target
  std::string arch;                   // "x86_64"
  std::string cpu;                    // "sapphirerapids"
  std::vector<std::string> features;  // enabled LLVM features: {"avx2", "avx512f", ...}
  Signature signature;                // argTypes is null: the runtime calls by leaves
};
/// The machine architecture of this process: "x86_64".
std::string hostArch();
/// Of `features` (LLVM names), those this CPU lacks according to /proc/cpuinfo (the ones that
/// decide instruction selection: AVX*, FMA, F16C, AVX-512*, AMX*).
std::vector<std::string> missingCpuFeatures(const std::vector<std::string>& features);
/// meta.json of the entry in `dir` as a ProgramEntry; nullopt with `why` when it is unreadable,
/// corrupt, or written without the program fields.
std::optional<ProgramEntry> readProgramEntry(const std::string& dir, std::string& why);
/// The checked object of the entry in `dir` for `key`, linked; nullopt with `why` on failure.
std::optional<LoadedObject> loadEntryObject(const std::string& dir, uint64_t key, size_t numResults, std::string& why);

class CacheEntry {
 public:
  CacheEntry(std::string dir, uint64_t key) : dir_(std::move(dir)), key_(key) {}
  /// Loads the entry; a missing entry is a miss, a bad one a warning (and a miss).
  std::optional<LoadedObject> load(size_t numResults);
  /// Writes module.mlir, the object (through writeObject(path)) and meta.json (with `program`'s
  /// fields, its key aside) into a temporary folder, then renames it into place; a concurrent
  /// writer's entry is kept.
  void store(const std::string& moduleText, const std::vector<int32_t>& resultAlias, const ProgramEntry& program,
             const std::function<void(const std::string&)>& writeObject);
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  uint64_t key_;
};

/// The entry for `key`, or nullopt when the cache is disabled.
std::optional<CacheEntry> openCache(const CompileOptions& options, std::string_view target, const std::string& name,
                                    uint64_t key);

/// Counts a compile (for cacheStats).
void countCompile();

}  // namespace radix::detail
