#include "runtime/cache.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <xxhash.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "radix/error.h"
#include "radix/version.h"
#include "runtime/elf.h"
#include "runtime/profiler.h"

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

// Entry files are untrusted: a symlink to /dev/zero, a FIFO or a huge file must not hang or
// exhaust memory.
constexpr size_t kMaxMetaBytes = size_t{1} << 24;
constexpr size_t kMaxObjectBytes = size_t{1} << 31;

}  // namespace

ReadResult readRegularFile(const std::string& path, size_t maxBytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {std::nullopt, errno == ENOENT ? "missing" : errno == ELOOP ? "a symbolic link" : "unreadable"};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) return {std::nullopt, "unreadable"};
  if (!S_ISREG(st.st_mode)) return {std::nullopt, "not a regular file"};
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return {std::nullopt, "too large (" + std::to_string(st.st_size) + " bytes)"};
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {std::nullopt, "truncated while reading"};
    done += static_cast<size_t>(n);
  }
  return {std::move(data), ""};
}

namespace {

std::string uniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  return std::to_string(getpid()) + "." + std::to_string(counter++) + "." + std::to_string(rd());
}

/// What is wrong with the entry in `dir` for `key` ("" when nothing), its result aliases, and
/// the object's bytes.
struct EntryCheck {
  std::string problem;
  std::vector<int32_t> resultAlias;
  std::string object;
};

EntryCheck checkEntry(const fs::path& dir, const std::string& key, size_t numResults) {
  ReadResult metaText = readRegularFile((dir / kMeta).string(), kMaxMetaBytes);
  if (!metaText.data) return {"unusable (meta.json is " + metaText.problem + ")", {}};
  MetaCheck meta = parseCacheMeta(*metaText.data, key, numResults);
  if (!meta.problem.empty()) return {meta.problem, {}};
  ReadResult object = readRegularFile((dir / kObject).string(), kMaxObjectBytes);
  if (!object.data) return {"unusable (entry.o is " + object.problem + ")", {}};
  if (meta.objectBytes != object.data->size() ||
      meta.objectXxh64 != hex16(XXH64(object.data->data(), object.data->size(), 0)))
    return {"corrupt (object checksum mismatch)", {}};
  return {"", std::move(meta.resultAlias), std::move(*object.data)};
}

void warn(const std::string& message) { std::fprintf(stderr, "radix: warning: %s\n", message.c_str()); }

}  // namespace

MetaCheck parseCacheMeta(std::string_view text, const std::string& key, size_t numResults) {
  MetaCheck out;
  nlohmann::json meta = nlohmann::json::parse(text, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) return {"corrupt (meta.json is not a JSON object)"};
  auto field = [&](const char* name, nlohmann::json::value_t type) -> const nlohmann::json* {
    auto it = meta.find(name);
    if (it == meta.end()) return nullptr;
    if (it->type() != type && !(type == nlohmann::json::value_t::number_unsigned && it->is_number_unsigned()))
      return nullptr;
    return &*it;
  };
  using T = nlohmann::json::value_t;
  const auto* k = field("key", T::string);
  const auto* version = field("radix", T::string);
  const auto* bytes = field("object_bytes", T::number_unsigned);
  const auto* hash = field("object_xxh64", T::string);
  const auto* alias = field("result_alias", T::array);
  if (!k || !version || !bytes || !hash || !alias) return {"corrupt (meta.json lacks a field or has one of the wrong type)"};
  if (k->get_ref<const std::string&>() != key || version->get_ref<const std::string&>() != RADIX_VERSION)
    return {"foreign (made for another module or Radix version)"};
  if (alias->size() != numResults) return {"foreign (result count differs)"};
  for (size_t i = 0; i < alias->size(); ++i) {
    const auto& a = (*alias)[i];
    if (!a.is_number_integer()) return {"corrupt (result_alias holds a non-integer)"};
    const int64_t v = a.get<int64_t>();
    // -1, -2 (zero-size, not returned), or an earlier result that is itself returned.
    if (v < -2 || v >= static_cast<int64_t>(i) || (v >= 0 && out.resultAlias[static_cast<size_t>(v)] != -1))
      return {"corrupt (result_alias out of range)"};
    out.resultAlias.push_back(static_cast<int32_t>(v));
  }
  out.objectBytes = bytes->get<uint64_t>();
  out.objectXxh64 = hash->get_ref<const std::string&>();
  return out;
}

// ---- the object's loader ----

std::optional<LoadedObject> loadObject(const std::string& bytes, const std::string& keyText, std::string& why) {
  std::string problem;
  // Only checked bytes get here (a cache entry whose hash matched, rank 0's object): constructors run.
  std::shared_ptr<LinkedObject> linked(LinkedObject::link(bytes, problem, /*runConstructors=*/true));
  if (!linked) {
    why = problem;
    return std::nullopt;
  }
  const char* key = static_cast<const char*>(linked->symbol(kEntryKeySymbol));
  if (!key) {
    why = "foreign (entry.o has no " + std::string(kEntryKeySymbol) + ")";
    return std::nullopt;
  }
  if (std::memcmp(key, keyText.data(), keyText.size()) != 0) {
    why = "foreign (entry.o was built for another module)";
    return std::nullopt;
  }
  void* entry = linked->symbol(kPackedEntry);
  if (!entry) {
    why = "unloadable (entry.o has no entry point)";
    return std::nullopt;
  }
  LoadedObject out;
  if (const auto* size = static_cast<const int64_t*>(linked->symbol(kProfileSitesSizeSymbol))) {
    const auto* text = static_cast<const char*>(linked->symbol(kProfileSitesSymbol));
    if (*size < 0 || static_cast<size_t>(*size) > kMaxProfileSitesBytes || !text) {
      why = "corrupt (profile table)";
      return std::nullopt;
    }
    out.profileSites.emplace(text, static_cast<size_t>(*size));
  }
  out.entry = entry;
  out.owner = std::move(linked);
  return out;
}

// ---- what meta.json says of the program ----

namespace {

using Json = nlohmann::json;

Json shapeJson(const Shape& s) {
  std::vector<std::string> tags;
  for (int64_t i = 0; i < s.rank(); ++i) tags.emplace_back(s.tag(i).name());
  return {{"dims", s.dims()}, {"dtype", std::string(name(s.dtype()))}, {"tags", tags}, {"sharded", s.shardingMask()}};
}

// Throws radix::Error (caught by the reader) on anything malformed.
Shape shapeFromJson(const Json& j) {
  if (!j.is_object()) throw Error("a shape is not an object");
  const Json& dims = j.at("dims");
  const Json& tags = j.at("tags");
  if (!dims.is_array() || !tags.is_array() || tags.size() != dims.size() || dims.size() > 8)
    throw Error("a shape's dims or tags");
  std::vector<int64_t> d;
  for (const Json& x : dims) {
    if (!x.is_number_integer()) throw Error("a dim is not an integer");
    d.push_back(x.get<int64_t>());
  }
  Shape s(d, parseDType(j.at("dtype").get<std::string>()));
  std::vector<Tag> t;
  for (const Json& x : tags) t.emplace_back(x.get<std::string>());
  s = s.withTags(t);
  const auto mask = j.at("sharded").get<uint64_t>();
  if (mask >> d.size()) throw Error("a sharded axis out of range");
  for (int64_t i = 0; i < s.rank(); ++i)
    if ((mask >> i) & 1u) s = s.withSharding({Axis(i)});
  return s;
}

Json programJson(const ProgramEntry& p) {
  const Signature& sig = p.signature;
  Json args = Json::array(), results = Json::array();
  for (const Shape& s : sig.argShapes) args.push_back(shapeJson(s));
  for (size_t r = 0; r < sig.resultShapes.size(); ++r) {
    Json j = shapeJson(sig.resultShapes[r]);
    j["donates"] = r < sig.donations.size() ? sig.donations[r] : -1;
    j["memory"] = std::string(memoryKindName(r < sig.memories.size() ? sig.memories[r] : Memory::device));
    results.push_back(std::move(j));
  }
  return {{"name", p.name},         {"target", p.target},        {"arch", p.arch},
          {"cpu", p.cpu},           {"features", p.features},    {"partitions", sig.partitions},
          {"leaf_to_arg", sig.leafToArg}, {"leaf_paths", sig.leafPaths}, {"args", args},
          {"results", results}};
}

}  // namespace

std::string hostArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

std::optional<ProgramEntry> readProgramEntry(const std::string& dir, std::string& why) {
  ReadResult text = readRegularFile((fs::path(dir) / kMeta).string(), kMaxMetaBytes);
  if (!text.data) {
    why = "meta.json is " + text.problem;
    return std::nullopt;
  }
  Json meta = Json::parse(*text.data, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) {
    why = "meta.json is not a JSON object";
    return std::nullopt;
  }
  if (!meta.contains("program")) {
    why = "meta.json has no program table: the entry was written by an older Radix; compile it again";
    return std::nullopt;
  }
  try {
    const Json& p = meta.at("program");
    ProgramEntry out;
    const std::string key = meta.at("key").get<std::string>();
    if (key.size() != 16 || key.find_first_not_of("0123456789abcdef") != std::string::npos) throw Error("key");
    out.key = std::stoull(key, nullptr, 16);
    out.name = p.at("name").get<std::string>();
    out.target = p.at("target").get<std::string>();
    out.arch = p.at("arch").get<std::string>();
    out.cpu = p.at("cpu").get<std::string>();
    out.features = p.at("features").get<std::vector<std::string>>();
    Signature& sig = out.signature;
    sig.partitions = p.at("partitions").get<int>();
    if (sig.partitions < 1 || sig.partitions > Sharding::kMaxDevices) throw Error("partitions");
    for (const Json& a : p.at("args")) sig.argShapes.push_back(shapeFromJson(a));
    for (const Json& r : p.at("results")) {
      sig.resultShapes.push_back(shapeFromJson(r));
      const auto donates = r.at("donates").get<int64_t>();
      if (donates < -1 || donates >= static_cast<int64_t>(sig.argShapes.size())) throw Error("a donation out of range");
      sig.donations.push_back(static_cast<int32_t>(donates));
      const std::string memory = r.at("memory").get<std::string>();
      Memory m = Memory::device;
      if (memory == memoryKindName(Memory::hostPinned)) m = Memory::hostPinned;
      else if (memory == memoryKindName(Memory::hostUnpinned)) m = Memory::hostUnpinned;
      else if (memory != memoryKindName(Memory::device)) throw Error("a memory kind");
      sig.memories.push_back(m);
    }
    for (const Json& a : p.at("leaf_to_arg")) {
      const auto v = a.get<int64_t>();
      if (v < 0 || v >= static_cast<int64_t>(sig.argShapes.size())) throw Error("leaf_to_arg out of range");
      sig.leafToArg.push_back(static_cast<int32_t>(v));
    }
    sig.leafPaths = p.at("leaf_paths").get<std::vector<std::string>>();
    if (sig.leafPaths.size() != sig.leafToArg.size()) throw Error("leaf_paths");
    std::vector<bool> used(sig.argShapes.size(), false);
    for (int32_t a : sig.leafToArg) used[static_cast<size_t>(a)] = true;
    if (std::find(used.begin(), used.end(), false) != used.end()) throw Error("an argument no leaf maps to");
    return out;
  } catch (const std::exception& e) {
    why = std::string("meta.json's program table is corrupt (") + e.what() + ")";
    return std::nullopt;
  }
}

std::optional<LoadedObject> loadEntryObject(const std::string& dir, uint64_t key, size_t numResults, std::string& why) {
  EntryCheck check = checkEntry(fs::path(dir), hex16(key), numResults);
  if (!check.problem.empty()) {
    why = check.problem;
    return std::nullopt;
  }
  auto loaded = loadObject(check.object, entryKeyText(key, check.resultAlias), why);
  if (loaded) loaded->resultAlias = std::move(check.resultAlias);
  return loaded;
}

std::string entryKeyText(uint64_t key, const std::vector<int32_t>& resultAlias) {
  std::string text = "radix " RADIX_VERSION " " + hex16(key) + " " +
                     hex16(XXH64(resultAlias.data(), resultAlias.size() * sizeof(int32_t), 0));
  text.resize(kEntryKeyBytes, '.');
  return text;
}

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
  std::string why;
  auto loaded = loadEntryObject(dir_, key_, numResults, why);
  if (!loaded) return reject(why);
  ++hits;
  return loaded;
}

void CacheEntry::store(const std::string& moduleText, const std::vector<int32_t>& resultAlias,
                       const ProgramEntry& program, const std::function<void(const std::string&)>& writeObject) {
  const fs::path dir(dir_);
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  const fs::path tmp = dir.string() + ".tmp." + uniqueSuffix();
  fs::create_directories(tmp, ec);
  if (ec) return warn("could not create cache folder " + tmp.string() + ": " + ec.message());
  writeObject((tmp / kObject).string());
  auto object = readRegularFile((tmp / kObject).string(), kMaxObjectBytes).data;
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
                         {"object_xxh64", hex16(XXH64(object->data(), object->size(), 0))},
                         {"program", programJson(program)}};
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
    if (checkEntry(dir, hex16(key_), resultAlias.size()).problem.empty()) {
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
      if (!checkEntry(dir, hex16(key_), resultAlias.size()).problem.empty()) return warn("could not write cache entry " + dir_ + ": " + ec.message());
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
