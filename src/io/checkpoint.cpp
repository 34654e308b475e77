// Checkpoint: opening files and folders (mmap), metadata values, loading tensors (zero-copy or
// converted), the progress bar, and the model
// hyperparameters of llama/gpt2 checkpoints. loadInto's binding is in load_into.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include "io/io.h"
#include "radix/detail/trace.h"
#include "runtime/runtime.h"

namespace radix::io {

namespace fs = std::filesystem;
using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Sources

namespace {
struct Mapping {
  void* address = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (address) ::munmap(address, size);
  }
};

constexpr size_t kHugePage = size_t(2) << 20;

/// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
size_t availableMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  while (in >> key >> kb) {
    if (key == "MemAvailable:") return kb * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

bool shouldCopy(Residency residency, size_t size) {
  if (residency != Residency::automatic) return residency == Residency::copied;
  return size >= 2 * kHugePage && size <= availableMemory() / 2;
}

/// Anonymous read-write memory of at least `size` bytes, in whole 2 MiB pages, 2 MiB-aligned and
/// madvised to be backed by huge pages; null (errno set) when it cannot be had.
std::shared_ptr<Mapping> hugePageRegion(size_t size) {
  const size_t rounded = (std::max<size_t>(size, 1) + kHugePage - 1) / kHugePage * kHugePage;
  void* reserved = ::mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(reserved, aligned - start);
  if (const size_t tail = start + rounded + kHugePage - (aligned + rounded)) ::munmap(reinterpret_cast<void*>(aligned + rounded), tail);
  auto mapping = std::make_shared<Mapping>();
  mapping->address = reinterpret_cast<void*>(aligned);
  mapping->size = rounded;
  ::madvise(mapping->address, rounded, MADV_HUGEPAGE);
  return mapping;
}

/// The file's `size` bytes read into anonymous memory, 2 MiB-aligned and madvised to 2 MiB pages,
/// then read-only; null (errno set) when the memory cannot be had. Throws on a failed read.
std::shared_ptr<Mapping> readIntoMemory(int fd, size_t size, const std::string& where) {
  std::shared_ptr<Mapping> mapping = hugePageRegion(size);
  if (!mapping) return nullptr;
  const size_t rounded = mapping->size;
  auto* out = static_cast<char*>(mapping->address);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, out + done, std::min<size_t>(size - done, size_t(1) << 30), static_cast<off_t>(done));
    const int e = errno;
    if (n < 0 && e == EINTR) continue;
    if (n < 0) throw Error(where + "cannot read at byte " + std::to_string(done) + ": " + std::strerror(e));
    if (n == 0) throw Error(where + "ended at byte " + std::to_string(done) + " of " + std::to_string(size) + " while being read (changed meanwhile?)");
    done += static_cast<size_t>(n);
  }
  ::mprotect(mapping->address, rounded, PROT_READ);
  return mapping;
}
}  // namespace

Source mapFile(const std::string& path, const std::string& prefix, Residency residency) {
  const std::string where = "[" + prefix + "] " + path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(where + "cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    throw Error(where + "cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) throw Error(where + "not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  std::shared_ptr<Mapping> mapping;
  bool copied = false;
  if (size > 0 && shouldCopy(residency, size)) {
    mapping = readIntoMemory(fd, size, where);
    if (!mapping && residency == Residency::copied) {
      const int e = errno;
      throw Error(where + "cannot allocate " + std::to_string(size) + " bytes to read it into: " + std::strerror(e));
    }
    copied = mapping != nullptr;
  }
  if (!mapping) {
    mapping = std::make_shared<Mapping>();
    if (size > 0) {
      // MAP_PRIVATE and read-only: nothing can write the file through a Tensor (a donated external
      // buffer is copied first, see exe.cpp).
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int e = errno;
        throw Error(where + "cannot mmap " + std::to_string(size) + " bytes: " + std::strerror(e));
      }
      mapping->address = p;
      mapping->size = size;
    }
  }
  Source s;
  s.data = static_cast<const uint8_t*>(mapping->address);
  s.size = size;
  s.owner = std::move(mapping);
  s.label = path;
  s.copied = copied;
  return s;
}

WeightArena::Block WeightArena::take(size_t bytes) {
  bytes = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  if (!chunk_ || size_ - used_ < bytes) {
    std::shared_ptr<Mapping> chunk = hugePageRegion(std::max(kChunkBytes, bytes));
    if (!chunk) return {};
    base_ = static_cast<uint8_t*>(chunk->address);
    size_ = chunk->size;
    used_ = 0;
    chunk_ = std::move(chunk);
  }
  Block b{base_ + used_, chunk_};
  used_ += bytes;
  return b;
}

WeightArena::Block ownedBlock(size_t bytes) {
  // Owned by the tensor alone (no zero fill, no second copy).
  std::shared_ptr<uint8_t> owned(static_cast<uint8_t*>(std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64))), std::free);
  uint8_t* data = owned.get();
  return {data, std::move(owned)};
}

Source memorySource(std::span<const uint8_t> bytes, std::string label) {
  Source s;
  s.data = bytes.data();
  s.size = bytes.size();
  s.label = std::move(label);
  return s;
}

bool Checkpoint::Impl::add(TensorInfo info, const uint8_t* bytes, size_t sourceIndex) {
  if (!byName.emplace(info.name, tensors.size()).second) return false;
  tensors.push_back(std::move(info));
  data.push_back(bytes);
  source.push_back(sourceIndex);
  return true;
}

std::string quotedName(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  if (s.size() > 200) out += "...";
  return out + "\"";
}

// ---------------------------------------------------------------------------------------------
// MetaValue

MetaValue MetaValue::fromUnsigned(uint64_t v) {
  MetaValue m(static_cast<int64_t>(v));
  if (v > static_cast<uint64_t>(INT64_MAX)) {
    m.unsignedHuge_ = true;
    m.real_ = static_cast<double>(v);
  }
  return m;
}

MetaValue::MetaValue(std::vector<MetaValue> v)
    : kind_(Kind::array), array_(std::make_shared<const std::vector<MetaValue>>(std::move(v))) {}

MetaValue& MetaValue::describedAs(std::string key, std::string prefix) {
  where_ = std::make_shared<const std::pair<std::string, std::string>>(std::move(key), std::move(prefix));
  return *this;
}

namespace {
const char* kindName(MetaValue::Kind k) {
  switch (k) {
    case MetaValue::Kind::integer: return "an integer";
    case MetaValue::Kind::real: return "a real";
    case MetaValue::Kind::boolean: return "a bool";
    case MetaValue::Kind::string: return "a string";
    case MetaValue::Kind::array: return "an array";
    case MetaValue::Kind::null: return "null";
  }
  return "?";
}
}  // namespace

void MetaValue::mismatch(const char* wanted) const {
  const std::string prefix = where_ ? where_->second : "metadata";
  const std::string key = where_ ? "\"" + where_->first + "\"" : "value";
  throw Error("[" + prefix + "] " + key + " is " + kindName(kind_) + " (" + str() + "), not " + wanted);
}

int64_t MetaValue::asInt() const {
  if ((kind_ != Kind::integer && kind_ != Kind::boolean) || unsignedHuge_) mismatch("an integer (int64)");
  return int_;
}
double MetaValue::asFloat() const {
  if (kind_ == Kind::real) return real_;
  if (kind_ == Kind::integer) return unsignedHuge_ ? real_ : static_cast<double>(int_);
  mismatch("a number");
}
bool MetaValue::asBool() const {
  if (kind_ == Kind::boolean || (kind_ == Kind::integer && !unsignedHuge_ && (int_ == 0 || int_ == 1))) return int_ != 0;
  mismatch("a bool");
}
const std::string& MetaValue::asString() const {
  if (kind_ != Kind::string) mismatch("a string");
  return string_;
}
const std::vector<MetaValue>& MetaValue::asArray() const {
  if (kind_ != Kind::array) mismatch("an array");
  return *array_;
}
std::vector<std::string> MetaValue::asStrings() const {
  if (kind_ != Kind::array) mismatch("an array of strings");
  std::vector<std::string> out;
  out.reserve(array_->size());
  for (const MetaValue& v : *array_) {
    if (v.kind_ != Kind::string) mismatch("an array of strings");
    out.push_back(v.string_);
  }
  return out;
}
std::vector<double> MetaValue::asFloats() const {
  if (kind_ != Kind::array) mismatch("an array of numbers");
  std::vector<double> out;
  out.reserve(array_->size());
  for (const MetaValue& v : *array_) {
    if (v.kind_ != Kind::real && v.kind_ != Kind::integer) mismatch("an array of numbers");
    out.push_back(v.asFloat());
  }
  return out;
}
std::vector<int64_t> MetaValue::asInts() const {
  if (kind_ != Kind::array) mismatch("an array of integers");
  std::vector<int64_t> out;
  out.reserve(array_->size());
  for (const MetaValue& v : *array_) {
    if ((v.kind_ != Kind::integer && v.kind_ != Kind::boolean) || v.unsignedHuge_) mismatch("an array of integers");
    out.push_back(v.int_);
  }
  return out;
}
std::string MetaValue::str() const {
  switch (kind_) {
    case Kind::integer: return unsignedHuge_ ? std::to_string(static_cast<uint64_t>(int_)) : std::to_string(int_);
    case Kind::real: {
      std::ostringstream os;
      os << real_;
      return os.str();
    }
    case Kind::boolean: return int_ ? "true" : "false";
    case Kind::string: return json(string_.substr(0, 80)).dump(-1, ' ', false, json::error_handler_t::replace) + (string_.size() > 80 ? "..." : "");
    case Kind::null: return "null";
    case Kind::array: {
      std::string s = "[";
      for (size_t i = 0; i < array_->size() && i < 8; ++i) s += (i ? ", " : "") + (*array_)[i].str();
      if (array_->size() > 8) s += ", ... (" + std::to_string(array_->size()) + " values)";
      return s + "]";
    }
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// JSON documents (config.json, index files)

namespace {
constexpr int kMaxJsonDepth = 64;

/// False when `j` nests deeper than `limit` (bounded recursion, so dump() below stays bounded).
bool depthAtMost(const json& j, int limit) {
  if (!j.is_structured()) return true;
  if (limit == 0) return false;
  for (const json& e : j)
    if (!depthAtMost(e, limit - 1)) return false;
  return true;
}

MetaValue toMeta(const json& j, const std::string& key, const std::string& prefix) {
  MetaValue v;
  if (j.is_boolean()) v = MetaValue(j.get<bool>());
  else if (j.is_number_unsigned()) v = MetaValue::fromUnsigned(j.get<uint64_t>());
  else if (j.is_number_integer()) v = MetaValue(j.get<int64_t>());
  else if (j.is_number_float()) v = MetaValue(j.get<double>());
  else if (j.is_string()) v = MetaValue(j.get<std::string>());
  else if (j.is_object()) v = MetaValue(j.dump());
  else if (j.is_array()) {
    std::vector<MetaValue> items;
    items.reserve(j.size());
    for (const json& e : j) items.push_back(toMeta(e, key, prefix));
    v = MetaValue(std::move(items));
  }
  v.describedAs(key, prefix);
  return v;
}

json parseJson(std::string_view text, const std::string& label, const std::string& prefix) {
  try {
    json j = json::parse(text.begin(), text.end());
    if (!depthAtMost(j, kMaxJsonDepth))
      throw Error("[" + prefix + "] " + label + ": nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return j;
  } catch (const json::parse_error& e) {
    throw Error("[" + prefix + "] " + label + ": offset " + std::to_string(e.byte ? e.byte - 1 : 0) + ": invalid JSON: " + e.what());
  } catch (const json::exception& e) {
    throw Error("[" + prefix + "] " + label + ": invalid JSON: " + e.what());
  }
}

std::string readText(const std::string& path, const std::string& prefix) {
  Source s = mapFile(path, prefix);
  return std::string(reinterpret_cast<const char*>(s.data), s.size);
}
}  // namespace

std::map<std::string, MetaValue> jsonMetadata(std::string_view text, const std::string& label, const std::string& prefix) {
  const json j = parseJson(text, label, prefix);
  if (!j.is_object()) throw Error("[" + prefix + "] " + label + ": not a JSON object");
  std::map<std::string, MetaValue> out;
  for (auto& [key, value] : j.items()) out[key] = toMeta(value, key, prefix);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Opening

namespace {

std::string folderOf(const std::string& path) {
  fs::path p = fs::path(path).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

bool endsWith(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

bool isFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}
bool pathExists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::shared_ptr<Checkpoint::Impl> openSafetensorsFile(const std::string& path, bool withMetadata, Residency residency) {
  auto impl = std::make_shared<Checkpoint::Impl>();
  impl->format = "safetensors";
  impl->folder = folderOf(path);
  impl->sources.push_back(mapFile(path, "safetensors", residency));
  parseSafetensors(*impl, 0, withMetadata);
  return impl;
}

/// A shard file name from an index: relative, no "..", no absolute path.
bool safeShardName(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string::npos) return false;
  for (const auto& part : fs::path(name))
    if (part == "..") return false;
  return true;
}

std::shared_ptr<Checkpoint::Impl> openIndex(const std::string& path, Residency residency) {
  const std::string where = "[safetensors] " + path + ": ";
  const json index = parseJson(readText(path, "safetensors"), path, "safetensors");
  if (!index.is_object()) throw Error(where + "not a JSON object");
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object())
    throw Error(where + "\"weight_map\" missing or not an object {tensor name: shard file}");
  auto impl = std::make_shared<Checkpoint::Impl>();
  impl->format = "safetensors";
  impl->folder = folderOf(path);
  std::vector<std::string> shards;  // in order of first mention
  std::map<std::string, size_t> shardIndex;
  for (auto& [name, file] : map->items()) {
    if (!file.is_string()) throw Error(where + "\"weight_map\": " + quotedName(name) + " maps to " + file.dump() + ", not a file name");
    const std::string shard = file.get<std::string>();
    if (!safeShardName(shard))
      throw Error(where + "\"weight_map\": " + quotedName(name) + " maps to " + quotedName(shard) +
                  ", not a file name inside the checkpoint's folder");
    if (shardIndex.emplace(shard, shards.size()).second) shards.push_back(shard);
  }
  for (const std::string& shard : shards) {
    const std::string shardPath = (fs::path(impl->folder) / shard).string();
    impl->sources.push_back(mapFile(shardPath, "safetensors", residency));
    // A tensor stored in two shards is caught by Impl::add (the parser names both files).
    parseSafetensors(*impl, impl->sources.size() - 1, false);
  }
  // weight_map and the shards must agree.
  for (auto& [name, file] : map->items()) {
    const TensorInfo* t = nullptr;
    auto it = impl->byName.find(name);
    if (it != impl->byName.end()) t = &impl->tensors[it->second];
    const std::string shardPath = (fs::path(impl->folder) / file.get<std::string>()).string();
    if (!t) throw Error(where + "\"weight_map\": tensor " + quotedName(name) + " is not in " + shardPath);
    if (t->file != shardPath)
      throw Error(where + "\"weight_map\": tensor " + quotedName(name) + " is listed in " + shardPath + " but stored in " + t->file);
  }
  if (impl->tensors.size() != map->size())
    for (const TensorInfo& t : impl->tensors)
      if (!map->contains(t.name)) throw Error(where + "\"weight_map\" does not list tensor " + quotedName(t.name) + " stored in " + t.file);
  return impl;
}

std::shared_ptr<Checkpoint::Impl> openGgufFile(const std::string& path, Residency residency) {
  auto impl = std::make_shared<Checkpoint::Impl>();
  impl->format = "gguf";
  impl->folder = folderOf(path);
  impl->sources.push_back(mapFile(path, "gguf", residency));
  parseGguf(*impl, 0);
  return impl;
}

std::shared_ptr<Checkpoint::Impl> openFolder(const std::string& dir, Residency residency) {
  const fs::path d(dir);
  std::shared_ptr<Checkpoint::Impl> impl;
  if (isFile(d / "model.safetensors")) {
    impl = openSafetensorsFile((d / "model.safetensors").string(), false, residency);
  } else if (isFile(d / "model.safetensors.index.json")) {
    impl = openIndex((d / "model.safetensors.index.json").string(), residency);
  } else if (pathExists(d / "pytorch_model.bin") || pathExists(d / "pytorch_model.bin.index.json")) {
    throw Error("[checkpoint] " + dir + ": holds pytorch_model.bin, but only safetensors weights are supported "
                "(convert with safetensors' convert.py or save_pretrained(safe_serialization=True))");
  } else {
    // One *.safetensors or *.gguf file of any name, if it is the only one.
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.is_regular_file() && (e.path().extension() == ".safetensors" || e.path().extension() == ".gguf"))
        found.push_back(e.path().string());
    if (found.size() != 1)
      throw Error("[checkpoint] " + dir + ": no weights found (looked for model.safetensors, "
                  "model.safetensors.index.json, or a single *.safetensors / *.gguf file" +
                  (found.size() > 1 ? "; found " + std::to_string(found.size()) + " candidates" : std::string()) + ")");
    impl = endsWith(found[0], ".gguf") ? openGgufFile(found[0], residency) : openSafetensorsFile(found[0], false, residency);
  }
  impl->folder = dir;
  if (impl->format == "safetensors") {
    impl->metadata.clear();
    if (isFile(d / "config.json"))
      impl->metadata = jsonMetadata(readText((d / "config.json").string(), "config"), (d / "config.json").string(), "config");
  }
  return impl;
}

}  // namespace

Checkpoint Checkpoint::open(const std::string& path, Residency residency) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Checkpoint(openFolder(path, residency));
  if (!fs::exists(path, ec)) throw Error("[checkpoint] " + path + ": no such file or folder");
  if (endsWith(path, ".gguf")) return Checkpoint(openGgufFile(path, residency));
  if (endsWith(path, ".index.json")) return Checkpoint(openIndex(path, residency));
  if (endsWith(path, ".safetensors")) return Checkpoint(openSafetensorsFile(path, true, residency));
  if (endsWith(path, ".bin") || endsWith(path, ".pt") || endsWith(path, ".pth"))
    throw Error("[checkpoint] " + path + ": a PyTorch pickle; only safetensors and GGUF are supported");
  // Unknown extension: sniff the magic.
  Source s = mapFile(path, "checkpoint");
  if (s.size >= 4 && std::memcmp(s.data, "GGUF", 4) == 0) return Checkpoint(openGgufFile(path, residency));
  return Checkpoint(openSafetensorsFile(path, true, residency));
}

Checkpoint Checkpoint::fromSafetensorsBytes(std::span<const uint8_t> bytes, std::string name) {
  auto impl = std::make_shared<Checkpoint::Impl>();
  impl->format = "safetensors";
  impl->folder = folderOf(name);
  impl->sources.push_back(memorySource(bytes, std::move(name)));
  parseSafetensors(*impl, 0, true);
  return Checkpoint(std::move(impl));
}

Checkpoint Checkpoint::fromGgufBytes(std::span<const uint8_t> bytes, std::string name) {
  auto impl = std::make_shared<Checkpoint::Impl>();
  impl->format = "gguf";
  impl->folder = folderOf(name);
  impl->sources.push_back(memorySource(bytes, std::move(name)));
  parseGguf(*impl, 0);
  return Checkpoint(std::move(impl));
}

const std::string& Checkpoint::format() const { return impl_->format; }
const std::string& Checkpoint::folder() const { return impl_->folder; }
const std::vector<TensorInfo>& Checkpoint::tensors() const { return impl_->tensors; }
const std::map<std::string, MetaValue>& Checkpoint::metadata() const { return impl_->metadata; }
void Checkpoint::setProgress(Progress mode) { impl_->progress = mode; }
Progress Checkpoint::progress() const { return impl_->progress; }

const TensorInfo* Checkpoint::find(std::string_view name) const {
  auto it = impl_->byName.find(std::string(name));
  return it == impl_->byName.end() ? nullptr : &impl_->tensors[it->second];
}

const MetaValue* Checkpoint::meta(std::string_view key) const {
  auto it = impl_->metadata.find(std::string(key));
  return it == impl_->metadata.end() ? nullptr : &it->second;
}

uint64_t Checkpoint::totalBytes() const {
  uint64_t total = 0;
  for (const TensorInfo& t : impl_->tensors) total += t.bytes;
  return total;
}

Residency Checkpoint::residency() const {
  const bool all = !impl_->sources.empty() &&
                   std::all_of(impl_->sources.begin(), impl_->sources.end(), [](const Source& s) { return s.copied; });
  return all ? Residency::copied : Residency::mapped;
}

namespace {
size_t indexOf(const Checkpoint::Impl& impl, std::string_view name) {
  auto it = impl.byName.find(std::string(name));
  if (it == impl.byName.end()) {
    std::string msg = "[checkpoint] no tensor named \"" + std::string(name) + "\" in " +
                      (impl.sources.size() == 1 ? impl.sources[0].label : impl.folder) + " (" +
                      std::to_string(impl.tensors.size()) + " tensors";
    // A close name helps with prefixes: list those ending with the asked name.
    for (const TensorInfo& t : impl.tensors)
      if (t.name.ends_with(name)) {
        msg += "; did you mean \"" + t.name + "\"?";
        break;
      }
    throw Error(msg + ")");
  }
  return it->second;
}

}  // namespace

std::string dimsStr(const std::vector<int64_t>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "}";
}

namespace {

/// Touches one byte per page so that the mapping is read in now (the progress bar's work).
void prefault(const uint8_t* p, size_t n) {
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < n; i += 4096) sink = sink + p[i];
  if (n) sink = sink + p[n - 1];
  (void)sink;
}

template <DType From>
float readElement(const uint8_t* src, size_t i) {
  if constexpr (From == DType::f32) {
    float x;
    std::memcpy(&x, src + 4 * i, 4);
    return x;
  } else {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    return From == DType::f16 ? radix::detail::halfToFloat(h) : radix::detail::bf16ToFloat(h);
  }
}

template <DType To>
void writeElement(uint8_t* dst, size_t i, float x) {
  if constexpr (To == DType::f32) {
    std::memcpy(dst + 4 * i, &x, 4);
  } else {
    const uint16_t h = To == DType::f16 ? radix::detail::floatToHalf(x) : radix::detail::floatToBf16(x);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

template <DType From, DType To>
void convertRange(const uint8_t* src, uint8_t* dst, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) writeElement<To>(dst, i, readElement<From>(src, i));
}

/// The common conversions among f32, f16 and bf16 without the generic double path; false for
/// other pairs. `src` may be unaligned.
bool convertHalves(DType from, DType to, const uint8_t* src, uint8_t* dst, size_t n, ProgressBar* bar) {
  using Fn = void (*)(const uint8_t*, uint8_t*, size_t, size_t);
  Fn fn = nullptr;
  constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  if (from == f32 && to == f16) fn = convertRange<f32, f16>;
  if (from == f32 && to == bf16) fn = convertRange<f32, bf16>;
  if (from == f16 && to == f32) fn = convertRange<f16, f32>;
  if (from == bf16 && to == f32) fn = convertRange<bf16, f32>;
  if (from == f16 && to == bf16) fn = convertRange<f16, bf16>;
  if (from == bf16 && to == f16) fn = convertRange<bf16, f16>;
  if (!fn) return false;
  constexpr size_t kChunk = 1 << 16;
  for (size_t k = 0; k < n; k += kChunk) {
    const size_t m = std::min(kChunk, n - k);
    fn(src, dst, k, k + m);
    if (bar) bar->advance(m * sizeOf(from));
  }
  return true;
}

// n floats from one dtype to another; src may have any alignment.
void convertFloats(DType from, DType to, const uint8_t* src, uint8_t* dst, size_t n, ProgressBar* bar) {
  if (convertHalves(from, to, src, dst, n, bar)) return;
  constexpr size_t kChunk = 1 << 16;
  std::vector<double> values(kChunk);
  std::vector<uint8_t> aligned(kChunk * 8);
  for (size_t k = 0; k < n; k += kChunk) {
    const size_t m = std::min(kChunk, n - k);
    std::memcpy(aligned.data(), src + k * sizeOf(from), m * sizeOf(from));
    radix::detail::decodeValues<double>(from, aligned.data(), values.data(), m);
    radix::detail::encodeValues<double>(to, values.data(), dst + k * sizeOf(to), m);
    if (bar) bar->advance(m * sizeOf(from));
  }
}

}  // namespace

namespace {

/// A quantized tensor's blocks, u8 {rows, rowBytes} (all outer dims as rows), validated; or
/// decoded to `want` on the host.
Tensor loadBlocks(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want,
                  ProgressBar* bar, WeightArena* arena) {
  const TensorInfo& t = impl.tensors[i];
  const int64_t cols = t.dims.empty() ? 1 : t.dims.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < t.dims.size(); ++d) rows *= t.dims[d];  // the parser checked the size
  const int64_t stride = rowBytes(t.quant, cols);
  const uint8_t* data = impl.data[i];
  checkBlocks(t.quant, {data, static_cast<size_t>(t.bytes)}, t.name);
  if (bar) bar->advance(t.bytes);
  if (!want || *want == DType::u8)
    return Tensor::fromExternal(platform, Shape({rows, stride}, DType::u8), data, impl.sources[impl.source[i]].owner);
  if (!isFloat(*want))
    throw Error("[checkpoint] tensor \"" + t.name + "\" (" + t.type + " " + dimsStr(t.dims) + ") cannot be loaded as " +
                std::string(name(*want)) + " (its blocks as u8, or decoded to a float dtype)");
  std::vector<float> row(static_cast<size_t>(cols));
  const Shape shape(t.dims, *want);
  const WeightArena::Block out = arena ? arena->take(static_cast<size_t>(shape.byteSize())) : ownedBlock(static_cast<size_t>(shape.byteSize()));
  if (!out.data) throw Error("[checkpoint] out of memory decoding tensor \"" + t.name + "\" to " + std::string(name(*want)));
  for (int64_t r = 0; r < rows; ++r) {
    dequantizeRow(t.quant, data + r * stride, cols, row.data());
    radix::detail::encodeValues<float>(*want, row.data(), out.data + r * cols * sizeOf(*want), row.size());
  }
  return Tensor::fromExternal(platform, shape, out.data, out.owner);
}

}  // namespace

Tensor loadOne(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want, ProgressBar* bar,
               WeightArena* arena) {
  const TensorInfo& t = impl.tensors[i];
  const std::string what = "tensor \"" + t.name + "\" (" + t.type + " " + dimsStr(t.dims) + ")";
  if (t.quant != QuantType::none) return loadBlocks(impl, i, platform, want, bar, arena);
  if (!t.dtype)
    throw Error("[checkpoint] " + what + " has no Radix dtype (Radix computes in Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, "
                "Q5_K and Q6_K; read other types' raw bytes with Checkpoint::bytes)");
  if (t.dims.size() > static_cast<size_t>(Shape::kMaxRank))
    throw Error("[checkpoint] " + what + " has rank " + std::to_string(t.dims.size()) + ", more than Radix's " +
                std::to_string(Shape::kMaxRank));
  const DType from = *t.dtype;
  const DType to = want.value_or(from);
  const Shape stored(t.dims, from);
  const uint8_t* data = impl.data[i];
  const Source& src = impl.sources[impl.source[i]];
  if (to == from) {
    if (reinterpret_cast<uintptr_t>(data) % sizeOf(from) == 0) {
      if (bar && bar->active()) {
        prefault(data, t.bytes);
        bar->advance(t.bytes);
      }
      return Tensor::fromExternal(platform, stored, data, src.owner);
    }
    // Misaligned for its dtype (a header size that is not a multiple of 8): copied.
    if (bar) bar->advance(t.bytes);
    return Tensor::fromBytes(platform, stored, data, t.bytes);
  }
  if (!isFloat(from) || !isFloat(to))
    throw Error("[checkpoint] " + what + " cannot be loaded as " + std::string(name(to)) +
                " (conversions are among f16, bf16, f32 and f64)");
  const Shape shape(t.dims, to);
  const WeightArena::Block out = arena ? arena->take(static_cast<size_t>(shape.byteSize())) : ownedBlock(static_cast<size_t>(shape.byteSize()));
  if (!out.data) throw Error("[checkpoint] out of memory converting " + what + " to " + std::string(name(to)));
  convertFloats(from, to, data, out.data, static_cast<size_t>(stored.count()), bar);
  return Tensor::fromExternal(platform, shape, out.data, out.owner);
}

Tensor loadShard(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want,
                 const Shape& global, int64_t axis, int parts, int part, ProgressBar* bar) {
  const TensorInfo& t = impl.tensors[i];
  const bool packed = t.quant != QuantType::none && (!want || *want == DType::u8);
  // The stored row-major array the shard is cut from: the tensor's bytes as they are (packed
  // blocks, or floats in the stored dtype), or a decoded copy of quantized blocks.
  Tensor decoded;
  const uint8_t* src = impl.data[i];
  std::vector<int64_t> dims = t.dims;
  DType from = packed ? DType::u8 : t.dtype.value_or(DType::f32);
  if (packed) {
    checkBlocks(t.quant, {src, static_cast<size_t>(t.bytes)}, t.name);
    dims = global.dims();
  } else if (t.quant != QuantType::none) {
    decoded = loadBlocks(impl, i, platform, want, nullptr, nullptr);
    src = static_cast<const uint8_t*>(decoded.bufferAddress());
    from = *want;
  } else if (!t.dtype) {
    return loadOne(impl, i, platform, want, bar);  // its error
  }
  const DType to = packed ? DType::u8 : want.value_or(from);
  if (!packed && from != to && (!isFloat(from) || !isFloat(to)))
    return loadOne(impl, i, platform, want, bar);  // its error
  size_t outer = 1, inner = sizeOf(from) * static_cast<size_t>(dims[axis] / parts);
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(dims[d]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= static_cast<size_t>(dims[d]);
  const size_t localCount = outer * inner / sizeOf(from);
  auto buffer = std::make_shared<radix::detail::DeviceBuffer>();
  buffer->storage = std::make_shared<radix::detail::Storage>(localCount * sizeOf(to));
  // The block is cut straight into the result; only a conversion goes through a stored-dtype copy.
  std::vector<uint8_t> slice(from == to ? 0 : outer * inner);
  uint8_t* cut = from == to ? static_cast<uint8_t*>(buffer->storage->data) : slice.data();
  for (size_t o = 0; o < outer; ++o)
    std::memcpy(cut + o * inner, src + (o * static_cast<size_t>(parts) + static_cast<size_t>(part)) * inner, inner);
  if (bar) bar->advance(t.bytes / static_cast<uint64_t>(parts));
  if (from != to) convertFloats(from, to, slice.data(), static_cast<uint8_t*>(buffer->storage->data), localCount, nullptr);
  buffer->partitions = parts;
  std::vector<Tag> tags;
  for (int64_t a = 0; a < global.rank(); ++a) tags.push_back(global.tag(a));
  const Shape shape = Shape(global.dims(), to).withTags(tags);
  return radix::detail::TensorAccess::bound(shape, std::move(buffer), Memory::device).withSharding({axis});
}

std::span<const uint8_t> Checkpoint::bytes(std::string_view name) const {
  const size_t i = indexOf(*impl_, name);
  return {impl_->data[i], static_cast<size_t>(impl_->tensors[i].bytes)};
}

Tensor Checkpoint::load(const Platform& platform, std::string_view name, std::optional<DType> dtype) const {
  return loadOne(*impl_, indexOf(*impl_, name), platform, dtype, nullptr);
}

QuantizedTensor Checkpoint::loadQuantized(const Platform& platform, std::string_view name) const {
  const size_t i = indexOf(*impl_, name);
  const TensorInfo& t = impl_->tensors[i];
  if (t.quant == QuantType::none)
    throw Error("[checkpoint] tensor \"" + t.name + "\" (" + t.type + " " + dimsStr(t.dims) +
                ") is not quantized in a type Radix computes in (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  QuantizedTensor q;
  q.data = loadOne(*impl_, i, platform, std::nullopt, nullptr);
  q.type = t.quant;
  q.cols = t.dims.empty() ? 1 : t.dims.back();
  return q;
}

// ---------------------------------------------------------------------------------------------
// Progress bar

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
constexpr uint64_t kBarThreshold = uint64_t{64} << 20;
}  // namespace

ProgressBar::ProgressBar(Progress mode, uint64_t total) : total_(total) {
  if (mode == Progress::automatic)
    if (const char* env = std::getenv("RADIX_PROGRESS")) {
      const std::string_view v(env);
      if (v == "on" || v == "1") mode = Progress::on;
      if (v == "off" || v == "0") mode = Progress::off;
    }
  active_ = mode == Progress::on || (mode == Progress::automatic && total >= kBarThreshold && ::isatty(2));
  start_ = last_ = now();
}

ProgressBar::~ProgressBar() {
  if (active_) draw(true);
}

void ProgressBar::advance(uint64_t bytes) {
  done_ += bytes;
  if (!active_) return;
  const double t = now();
  if (t - last_ >= 0.1) {
    last_ = t;
    draw(false);
  }
}

void ProgressBar::draw(bool final) {
  const double mib = 1024.0 * 1024.0;
  const double elapsed = std::max(now() - start_, 1e-9);
  const double rate = done_ / elapsed;
  char line[160];
  const int width = 24;
  const int filled = total_ ? static_cast<int>(width * static_cast<double>(done_) / total_) : width;
  std::string bar(std::min(filled, width), '#');
  bar.resize(width, '.');
  if (final)
    std::snprintf(line, sizeof line, "\r[load] [%s] %.1f/%.1f MiB  %.1f MiB/s  done in %.1fs\n", bar.c_str(), done_ / mib,
                  total_ / mib, rate / mib, elapsed);
  else
    std::snprintf(line, sizeof line, "\r[load] [%s] %.1f/%.1f MiB  %.1f MiB/s  ETA %.0fs", bar.c_str(), done_ / mib,
                  total_ / mib, rate / mib, rate > 0 ? (total_ - std::min(done_, total_)) / rate : 0.0);
  std::fputs(line, stderr);
  std::fflush(stderr);
}


// ---------------------------------------------------------------------------------------------
// Model hyperparameters

ModelConfig readModelConfig(const Checkpoint& checkpoint) {
  ModelConfig c;
  auto need = [&](const std::string& key) -> const MetaValue& {
    const MetaValue* v = checkpoint.meta(key);
    if (!v) throw Error("[config] " + checkpoint.folder() + ": missing key \"" + key + "\"");
    return *v;
  };
  auto intOr = [&](const std::string& key, int64_t fallback) {
    const MetaValue* v = checkpoint.meta(key);
    return v && v->kind() != MetaValue::Kind::null ? v->asInt() : fallback;
  };
  auto realOr = [&](const std::string& key, double fallback) {
    const MetaValue* v = checkpoint.meta(key);
    return v && v->kind() != MetaValue::Kind::null ? v->asFloat() : fallback;
  };
  const bool hasOutput = checkpoint.find("output.weight") || checkpoint.find("lm_head.weight");
  if (checkpoint.format() == "gguf") {
    c.architecture = need("general.architecture").asString();
    const std::string a = c.architecture + ".";
    c.nEmbd = need(a + "embedding_length").asInt();
    c.nLayer = need(a + "block_count").asInt();
    c.nHead = need(a + "attention.head_count").asInt();
    c.nHeadKv = intOr(a + "attention.head_count_kv", c.nHead);
    c.nFf = intOr(a + "feed_forward_length", 4 * c.nEmbd);
    c.context = intOr(a + "context_length", 0);
    c.ropeFreqBase = realOr(a + "rope.freq_base", 10000.0);
    c.normEps = c.architecture == "llama" ? realOr(a + "attention.layer_norm_rms_epsilon", 1e-5)
                                          : realOr(a + "attention.layer_norm_epsilon", 1e-5);
    c.vocab = intOr(a + "vocab_size", 0);
    if (c.vocab == 0) {
      if (const MetaValue* tokens = checkpoint.meta("tokenizer.ggml.tokens"))
        c.vocab = static_cast<int64_t>(tokens->asArray().size());
      else if (const TensorInfo* t = checkpoint.find("token_embd.weight"); t && !t->dims.empty())
        c.vocab = t->dims[0];
    }
    c.tiedEmbeddings = !hasOutput;
    return c;
  }
  const MetaValue* type = checkpoint.meta("model_type");
  c.architecture = type ? type->asString() : (checkpoint.meta("n_embd") ? "gpt2" : "llama");
  if (checkpoint.meta("n_embd")) {  // HF GPT-2
    c.nEmbd = need("n_embd").asInt();
    c.nLayer = need("n_layer").asInt();
    c.nHead = need("n_head").asInt();
    c.nHeadKv = c.nHead;
    c.nFf = intOr("n_inner", 4 * c.nEmbd);
    c.context = intOr("n_positions", intOr("n_ctx", 0));
    c.normEps = realOr("layer_norm_epsilon", 1e-5);
    c.vocab = need("vocab_size").asInt();
    c.tiedEmbeddings = true;
    if (const MetaValue* tie = checkpoint.meta("tie_word_embeddings")) c.tiedEmbeddings = tie->asBool();
    return c;
  }
  c.nEmbd = need("hidden_size").asInt();
  c.nLayer = need("num_hidden_layers").asInt();
  c.nHead = need("num_attention_heads").asInt();
  c.nHeadKv = intOr("num_key_value_heads", c.nHead);
  c.nFf = need("intermediate_size").asInt();
  c.context = intOr("max_position_embeddings", 0);
  c.ropeFreqBase = realOr("rope_theta", 10000.0);
  c.normEps = realOr("rms_norm_eps", 1e-6);
  c.vocab = need("vocab_size").asInt();
  c.tiedEmbeddings = !hasOutput;
  if (const MetaValue* tie = checkpoint.meta("tie_word_embeddings")) c.tiedEmbeddings = tie->asBool();
  return c;
}

// ---------------------------------------------------------------------------------------------
// GGUF vocabularies

VocabSpec vocabFromGguf(const Checkpoint& checkpoint) {
  const std::string where = "[gguf] " + (checkpoint.impl()->sources.empty() ? checkpoint.folder() : checkpoint.impl()->sources[0].label) + ": ";
  if (checkpoint.format() != "gguf") throw Error(where + "not a GGUF checkpoint: its vocabulary is in tokenizer files");
  auto need = [&](const char* key) -> const MetaValue& {
    const MetaValue* v = checkpoint.meta(key);
    if (!v) throw Error(where + "missing key \"" + std::string(key) + "\"");
    return *v;
  };
  VocabSpec spec;
  spec.model = need("tokenizer.ggml.model").asString();
  const MetaValue* pre = checkpoint.meta("tokenizer.ggml.pre");
  spec.pre = pre ? pre->asString() : "default";
  spec.tokens = need("tokenizer.ggml.tokens").asStrings();
  const size_t n = spec.tokens.size();
  if (n > static_cast<size_t>(INT32_MAX)) throw Error(where + "tokenizer.ggml.tokens: more than 2^31 tokens");
  if (const MetaValue* scores = checkpoint.meta("tokenizer.ggml.scores")) {
    for (double x : scores->asFloats()) spec.scores.push_back(static_cast<float>(x));
    if (spec.scores.size() != n)
      throw Error(where + "tokenizer.ggml.scores has " + std::to_string(spec.scores.size()) + " values for " + std::to_string(n) + " tokens");
  }
  if (const MetaValue* types = checkpoint.meta("tokenizer.ggml.token_type")) {
    for (int64_t t : types->asInts()) {
      if (t < 0 || t > 6) throw Error(where + "tokenizer.ggml.token_type holds " + std::to_string(t) + ", not a token type (0..6)");
      spec.types.push_back(static_cast<int32_t>(t));
    }
    if (spec.types.size() != n)
      throw Error(where + "tokenizer.ggml.token_type has " + std::to_string(spec.types.size()) + " values for " + std::to_string(n) + " tokens");
  }
  if (const MetaValue* merges = checkpoint.meta("tokenizer.ggml.merges")) spec.merges = merges->asStrings();
  auto id = [&](const char* key, int32_t& out) {
    const MetaValue* v = checkpoint.meta(key);
    if (!v) return;
    const int64_t i = v->asInt();
    if (i < 0 || static_cast<uint64_t>(i) >= n)
      throw Error(where + key + " = " + std::to_string(i) + " is out of range for " + std::to_string(n) + " tokens");
    out = static_cast<int32_t>(i);
  };
  id("tokenizer.ggml.bos_token_id", spec.bos);
  id("tokenizer.ggml.eos_token_id", spec.eos);
  id("tokenizer.ggml.unknown_token_id", spec.unk);
  id("tokenizer.ggml.eot_token_id", spec.eot);
  id("tokenizer.ggml.eom_token_id", spec.eom);
  if (const MetaValue* add = checkpoint.meta("tokenizer.ggml.add_bos_token")) spec.addBos = add->asBool();
  if (const MetaValue* space = checkpoint.meta("tokenizer.ggml.add_space_prefix")) spec.addSpacePrefix = space->asBool();
  return spec;
}

}  // namespace radix::io
