// GGUF v3 writer (radix/gguf_writer.h) and the raw metadata copy of an existing GGUF file.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "io/gguf.h"
#include "radix/error.h"
#include "radix/gguf_writer.h"

namespace radix::io {
namespace {

constexpr uint64_t kAlignment = 32;

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);  // little-endian hosts only
  out.insert(out.end(), p, p + sizeof(T));
}

void putString(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

template <class T>
std::vector<uint8_t> scalar(T v) {
  std::vector<uint8_t> out;
  put(out, v);
  return out;
}

/// Reads a GGUF header from a stream with every length checked against the file size.
class HeaderReader {
 public:
  HeaderReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw Error("[gguf] " + path + ": cannot open");
    in_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(in_.tellg());
    in_.seekg(0);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("[gguf] " + path_ + ": offset " + std::to_string(pos_) + ": " + what);
  }
  void read(void* p, uint64_t n, const char* field) {
    if (n > size_ - pos_) fail(std::string(field) + ": truncated");
    in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
    if (!in_) fail(std::string(field) + ": read error");
    pos_ += n;
  }
  template <class T>
  T get(const char* field) {
    T v;
    read(&v, sizeof(T), field);
    return v;
  }
  std::string string(const char* field) {
    const uint64_t n = get<uint64_t>(field);
    if (n > size_ - pos_) fail(std::string(field) + ": string length " + std::to_string(n) + " runs past the end");
    std::string s(n, '\0');
    read(s.data(), n, field);
    return s;
  }
  /// Appends the encoded value of `type` (after its type field) to out.
  void value(uint32_t type, std::vector<uint8_t>& out, int depth) {
    static constexpr uint64_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type > 12) fail("unknown value type " + std::to_string(type));
    if (type == 8) {
      putString(out, string("string"));
    } else if (type == 9) {
      if (depth > 8) fail("arrays nested too deep");
      const uint32_t elem = get<uint32_t>("array element type");
      const uint64_t n = get<uint64_t>("array count");
      if (elem > 12) fail("unknown array element type " + std::to_string(elem));
      if (n > size_ - pos_) fail("array count " + std::to_string(n) + " runs past the end");
      put(out, elem);
      put(out, n);
      for (uint64_t i = 0; i < n; ++i) value(elem, out, depth + 1);
    } else {
      uint8_t buf[8];
      read(buf, kSizes[type], "value");
      out.insert(out.end(), buf, buf + kSizes[type]);
    }
  }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
};

}  // namespace

void GgufWriter::setRaw(std::string_view key, GgufValueType type, std::vector<uint8_t> value) {
  for (Kv& kv : kvs_)
    if (kv.key == key) {
      kv.type = type;
      kv.value = std::move(value);
      return;
    }
  kvs_.push_back({std::string(key), type, std::move(value)});
}

void GgufWriter::setU32(std::string_view key, uint32_t v) { setRaw(key, GgufValueType::u32, scalar(v)); }
void GgufWriter::setI32(std::string_view key, int32_t v) { setRaw(key, GgufValueType::i32, scalar(v)); }
void GgufWriter::setU64(std::string_view key, uint64_t v) { setRaw(key, GgufValueType::u64, scalar(v)); }
void GgufWriter::setF32(std::string_view key, float v) { setRaw(key, GgufValueType::f32, scalar(v)); }
void GgufWriter::setBool(std::string_view key, bool v) { setRaw(key, GgufValueType::boolean, scalar<uint8_t>(v ? 1 : 0)); }
void GgufWriter::setString(std::string_view key, std::string_view v) {
  std::vector<uint8_t> out;
  putString(out, v);
  setRaw(key, GgufValueType::string, std::move(out));
}
void GgufWriter::setStrings(std::string_view key, const std::vector<std::string>& v) {
  std::vector<uint8_t> out;
  put(out, static_cast<uint32_t>(GgufValueType::string));
  put<uint64_t>(out, v.size());
  for (const std::string& s : v) putString(out, s);
  setRaw(key, GgufValueType::array, std::move(out));
}
void GgufWriter::setF32s(std::string_view key, const std::vector<float>& v) {
  std::vector<uint8_t> out;
  put(out, static_cast<uint32_t>(GgufValueType::f32));
  put<uint64_t>(out, v.size());
  for (float f : v) put(out, f);
  setRaw(key, GgufValueType::array, std::move(out));
}
void GgufWriter::setI32s(std::string_view key, const std::vector<int32_t>& v) {
  std::vector<uint8_t> out;
  put(out, static_cast<uint32_t>(GgufValueType::i32));
  put<uint64_t>(out, v.size());
  for (int32_t i : v) put(out, i);
  setRaw(key, GgufValueType::array, std::move(out));
}

bool GgufWriter::has(std::string_view key) const {
  for (const Kv& kv : kvs_)
    if (kv.key == key) return true;
  return false;
}

void GgufWriter::erase(std::string_view key) {
  std::erase_if(kvs_, [&](const Kv& kv) { return kv.key == key; });
}

void GgufWriter::copyMetadata(const std::string& path, const std::function<bool(std::string_view)>& keep) {
  HeaderReader r(path);
  char magic[4];
  r.read(magic, 4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) r.fail("magic: not a GGUF file");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != 2 && version != 3) r.fail("version " + std::to_string(version) + " is not supported (2 or 3)");
  r.get<uint64_t>("tensor_count");
  const uint64_t numKv = r.get<uint64_t>("metadata_kv_count");
  for (uint64_t i = 0; i < numKv; ++i) {
    const std::string key = r.string("metadata key");
    const uint32_t type = r.get<uint32_t>("value type");
    std::vector<uint8_t> value;
    r.value(type, value, 0);
    if (keep(key)) setRaw(key, static_cast<GgufValueType>(type), std::move(value));
  }
}

void GgufWriter::addTensor(std::string name, std::vector<int64_t> dims, uint32_t typeId, uint64_t bytes,
                           std::function<void(std::span<uint8_t>)> fill) {
  const GgmlType* t = ggmlType(typeId);
  if (!t) throw Error("[gguf] tensor \"" + name + "\": unknown ggml type " + std::to_string(typeId));
  if (dims.size() > kMaxGgufDims) throw Error("[gguf] tensor \"" + name + "\": more than 4 dims");
  uint64_t elems = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error("[gguf] tensor \"" + name + "\": negative dim");
    elems *= static_cast<uint64_t>(d);
  }
  const uint64_t row = dims.empty() ? 1 : static_cast<uint64_t>(dims.back());
  if (row % t->block != 0 || elems / t->block * t->blockBytes != bytes)
    throw Error("[gguf] tensor \"" + name + "\": " + std::to_string(bytes) + " bytes do not hold " + std::to_string(elems) +
                " " + std::string(t->name) + " elements in rows of " + std::to_string(row));
  for (const TensorEntry& e : tensors_)
    if (e.name == name) throw Error("[gguf] tensor \"" + name + "\": added twice");
  tensors_.push_back({std::move(name), std::move(dims), typeId, bytes, std::move(fill)});
}

void GgufWriter::write(const std::string& path) const {
  std::vector<uint8_t> header;
  header.insert(header.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(header, 3);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, kvs_.size());
  for (const Kv& kv : kvs_) {
    putString(header, kv.key);
    put(header, static_cast<uint32_t>(kv.type));
    header.insert(header.end(), kv.value.begin(), kv.value.end());
  }
  uint64_t offset = 0;
  for (const TensorEntry& t : tensors_) {
    putString(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.dims.size()));
    for (auto it = t.dims.rbegin(); it != t.dims.rend(); ++it) put<uint64_t>(header, static_cast<uint64_t>(*it));
    put<uint32_t>(header, t.type);
    put<uint64_t>(header, offset);
    offset = (offset + t.bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  header.resize((header.size() + kAlignment - 1) / kAlignment * kAlignment, 0);

  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("[gguf] " + path + ": cannot create " + tmp);
  out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
  std::vector<uint8_t> data;
  for (const TensorEntry& t : tensors_) {
    const uint64_t padded = (t.bytes + kAlignment - 1) / kAlignment * kAlignment;
    data.assign(padded, 0);
    try {
      t.fill(std::span<uint8_t>(data.data(), t.bytes));
    } catch (...) {
      out.close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw;
    }
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(padded));
  }
  out.close();
  if (!out) throw Error("[gguf] " + path + ": write failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("[gguf] " + path + ": cannot rename " + tmp + ": " + ec.message());
}

}  // namespace radix::io
