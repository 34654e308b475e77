// Checkpoint: opening files and folders, metadata values (MetaValue, config.json) and the
// checkpoint's accessors. The files' bytes are in sources.cpp, loading a tensor in load_tensor.cpp,
// the model's hyperparameters and vocabulary in model_config.cpp, loadInto's binding in load_into.cpp.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "io/io.h"

namespace radix::io {

namespace fs = std::filesystem;
using nlohmann::json;

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

}  // namespace radix::io
