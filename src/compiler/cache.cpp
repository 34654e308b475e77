#include "compiler/cache.h"

#include <limits.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "radix/error.h"
#include "radix/version.h"

namespace radix {
namespace detail {
namespace {

namespace fs = std::filesystem;

std::atomic<uint64_t> hits{0}, misses{0}, stores{0}, corrupt{0}, compiles{0};

constexpr const char* kObject = "entry.o";
constexpr const char* kMeta = "meta.json";
constexpr const char* kModule = "module.mlir";

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<std::string> readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string uniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  return std::to_string(getpid()) + "." + std::to_string(counter++) + "." + std::to_string(rd());
}

/// What is wrong with the entry in `dir` for `key` ("" when nothing), and its result aliases.
struct EntryCheck {
  std::string problem;
  std::vector<int32_t> resultAlias;
};

EntryCheck checkEntry(const fs::path& dir, const std::string& key) {
  auto metaText = readFile(dir / kMeta);
  if (!metaText) return {"unreadable", {}};
  nlohmann::json meta = nlohmann::json::parse(*metaText, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) return {"corrupt (meta.json is not JSON)", {}};
  if (meta.value("key", "") != key || meta.value("radix", "") != RADIX_VERSION)
    return {"foreign (made for another module or Radix version)", {}};
  std::vector<int32_t> alias;
  if (!meta.contains("result_alias") || !meta["result_alias"].is_array()) return {"corrupt (no result_alias)", {}};
  for (const auto& a : meta["result_alias"]) {
    if (!a.is_number_integer()) return {"corrupt (bad result_alias)", {}};
    alias.push_back(a.get<int32_t>());
  }
  auto object = readFile(dir / kObject);
  if (!object) return {"truncated (no object)", {}};
  if (meta.value("object_bytes", uint64_t{0}) != object->size() ||
      meta.value("object_xxh64", "") != hex16(XXH64(object->data(), object->size(), 0)))
    return {"corrupt (object checksum mismatch)", {}};
  return {"", std::move(alias)};
}

void warn(const std::string& message) { std::fprintf(stderr, "radix: warning: %s\n", message.c_str()); }

}  // namespace

void countCompile() { ++compiles; }

std::string resolveDumpDir(const CompileOptions& options) {
  if (!options.dumpDir.empty()) return options.dumpDir;
  const char* env = std::getenv("RADIX_DUMP_DIR");
  return env ? env : "";
}

std::string entryPath(const std::string& root, std::string_view target, const std::string& name, uint64_t key) {
  // As the seed: half of PATH_MAX for the parent folders, 17 bytes for "_<hash16>".
  const size_t maxName = PATH_MAX / 2 - 17;
  std::string cut = name.substr(0, std::min(name.size(), std::min<size_t>(maxName, NAME_MAX - 17)));
  return (fs::path(root) / std::string(target) / (cut + "_" + hex16(key))).string();
}

void writeFileAtomic(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp." + uniqueSuffix();
  {
    std::ofstream out(tmp, std::ios::binary);
    out << content;
    if (!out) {
      warn("could not write " + path.string());
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    warn("could not write " + path.string() + ": " + ec.message());
    fs::remove(tmp, ec);
  }
}

std::optional<CacheEntry> openCache(const CompileOptions& options, std::string_view target, const std::string& name,
                                    uint64_t key) {
  if (options.cache.has_value() && !*options.cache) return std::nullopt;
  std::string root = options.cacheDir.empty() ? cacheDir() : options.cacheDir;
  if (root.empty()) return std::nullopt;
  return CacheEntry(entryPath(root, target, name, key), key);
}

std::optional<LoadedObject> CacheEntry::load(size_t numResults) {
  const fs::path dir(dir_);
  std::error_code ec;
  if (!fs::exists(dir / kMeta, ec)) {
    ++misses;
    return std::nullopt;
  }
  auto reject = [&](const std::string& why) -> std::optional<LoadedObject> {
    warn("cache entry " + dir_ + " is " + why + "; recompiling");
    const fs::path old = dir_ + ".old." + uniqueSuffix();
    std::error_code ignored;
    fs::rename(dir, old, ignored);
    fs::remove_all(old, ignored);
    ++corrupt;
    ++misses;
    return std::nullopt;
  };
  EntryCheck check = checkEntry(dir, hex16(key_));
  if (!check.problem.empty()) return reject(check.problem);
  if (check.resultAlias.size() != numResults) return reject("foreign (result count differs)");
  auto loaded = loadObject((dir / kObject).string());
  if (!loaded) return reject("unloadable");
  loaded->resultAlias = std::move(check.resultAlias);
  ++hits;
  return loaded;
}

void CacheEntry::store(const std::string& moduleText, const std::vector<int32_t>& resultAlias,
                       const std::function<void(const std::string&)>& writeObject) {
  const fs::path dir(dir_);
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  const fs::path tmp = dir.string() + ".tmp." + uniqueSuffix();
  fs::create_directories(tmp, ec);
  if (ec) return warn("could not create cache folder " + tmp.string() + ": " + ec.message());
  writeObject((tmp / kObject).string());
  auto object = readFile(tmp / kObject);
  if (!object || object->empty()) {
    fs::remove_all(tmp, ec);
    return warn("could not write the compiled object into " + tmp.string());
  }
  {
    std::ofstream out(tmp / kModule);
    out << moduleText;
  }
  nlohmann::json meta = {{"key", hex16(key_)},
                         {"radix", RADIX_VERSION},
                         {"object_bytes", object->size()},
                         {"result_alias", resultAlias},
                         {"object_xxh64", hex16(XXH64(object->data(), object->size(), 0))}};
  {
    std::ofstream out(tmp / kMeta);
    out << meta.dump(1) << "\n";
    if (!out) {
      fs::remove_all(tmp, ec);
      return warn("could not write " + (tmp / kMeta).string());
    }
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    // Another process may have won the race with a good entry: keep it. A bad one is replaced.
    if (checkEntry(dir, hex16(key_)).problem.empty()) {
      fs::remove_all(tmp, ec);
      ++stores;
      return;
    }
    const fs::path old = dir.string() + ".old." + uniqueSuffix();
    fs::rename(dir, old, ec);
    fs::rename(tmp, dir, ec);
    std::error_code ignored;
    fs::remove_all(old, ignored);
    if (ec) {
      fs::remove_all(tmp, ignored);
      if (!checkEntry(dir, hex16(key_)).problem.empty()) return warn("could not write cache entry " + dir_ + ": " + ec.message());
    }
  }
  ++stores;
}

}  // namespace detail

std::string cacheDir() {
  if (const char* env = std::getenv("RADIX_CACHE_DIR"); env && *env) {
    if (std::string_view(env) == "off") return "";
    return env;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (std::filesystem::path(xdg) / "radix").string();
  if (const char* home = std::getenv("HOME"); home && *home) return (std::filesystem::path(home) / ".cache" / "radix").string();
  return "";
}

std::vector<CacheEntryInfo> listCache(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<CacheEntryInfo> out;
  std::error_code ec;
  if (root.empty() || !fs::is_directory(root, ec)) return out;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& target : fs::directory_iterator(root, ec)) {
    if (!target.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(target.path(), ec)) {
      if (!entry.is_directory() || entry.path().filename().string().find(".tmp.") != std::string::npos) continue;
      CacheEntryInfo info;
      info.path = entry.path().string();
      info.target = target.path().filename().string();
      info.name = entry.path().filename().string();
      auto newest = fs::file_time_type::min();
      for (const auto& f : fs::directory_iterator(entry.path(), ec)) {
        if (!f.is_regular_file()) continue;
        info.bytes += f.file_size();
        newest = std::max(newest, f.last_write_time());
      }
      info.ageSeconds = std::chrono::duration<double>(now - newest).count();
      out.push_back(info);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ageSeconds < b.ageSeconds; });
  return out;
}

size_t clearCache(const std::string& root) {
  namespace fs = std::filesystem;
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : listCache(root)) n += fs::remove_all(e.path, ec) > 0 ? 1 : 0;
  return n;
}

CacheStats cacheStats() {
  using namespace detail;
  return CacheStats{hits.load(), misses.load(), stores.load(), corrupt.load(), compiles.load()};
}

}  // namespace radix
