#pragma once
// Helpers of the loader tests: safetensors files written in C++ (well-formed and hand-broken),
// temporary folders.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "radix/platform.h"

namespace radix::iotest {

/// The CPU platform of the io tests.
inline const radix::Platform& cpu() {
  static radix::Platform p = radix::Platform::cpu();
  return p;
}

/// A string's bytes as the loaders take them.
inline std::span<const uint8_t> span(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

/// One tensor of a safetensors file: dtype name as the format spells it, dims, raw bytes.
struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> dims;
  std::string data;
};

inline std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

/// A file from a header text and a data section: size, header (padded with spaces to a multiple
/// of 8 when `pad`), data.
inline std::string stFile(std::string header, const std::string& data, bool pad = true) {
  if (pad)
    while ((8 + header.size()) % 8) header += ' ';
  return le64(header.size()) + header + data;
}

/// A well-formed safetensors file (tensors laid out in the given order).
inline std::string safetensors(const std::vector<StTensor>& tensors, const std::string& metadata = "") {
  std::string header = "{";
  std::string data;
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":" + metadata;
    first = false;
  }
  for (const StTensor& t : tensors) {
    header += first ? "" : ",";
    first = false;
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.dims.size(); ++i) header += (i ? "," : "") + std::to_string(t.dims[i]);
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + t.data.size()) + "]}";
    data += t.data;
  }
  header += "}";
  return stFile(header, data);
}

/// Raw bytes of host values.
template <class T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

inline std::vector<float> iotaFloats(size_t n, float scale = 0.5f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i) - 3.0f;
  return v;
}

/// Options that dump the IR after the passes matching `passRegex` under `dir` (read it back with
/// passDump), without the executable cache. passDumpOptions(dir, "radix-lower-rows", 2).threads -> 2
inline radix::CompileOptions passDumpOptions(const std::string& dir, const std::string& passRegex, int threads = 0) {
  radix::CompileOptions options;
  options.cache = false;
  options.dumpDir = dir;
  options.dumpPasses = true;
  options.dumpPassRegex = passRegex;
  options.threads = threads;
  return options;
}

/// The text of a pass's dump under `dir` (CompileOptions::dumpDir with dumpPasses): the last file
/// whose path names `pass` and whose text holds `marker` (the entry's dump, not a helper's); ""
/// when none. passDump(dir, "radix-lower-rows", "math.exp")
inline std::string passDump(const std::filesystem::path& dir, const std::string& pass, const std::string& marker = "") {
  std::string text;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().string().find(pass) == std::string::npos) continue;
    std::ifstream in(entry.path());
    std::string dump((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (dump.find(marker) != std::string::npos) text = std::move(dump);
  }
  return text;
}

/// A fresh folder under the temp dir, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("radix-io-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    const auto p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace radix::iotest

namespace radix::iotest {

/// Byte-level GGUF builder for hand-made (and hand-broken) files.
struct Gguf {
  std::string out;
  Gguf& raw(const std::string& s) {
    out += s;
    return *this;
  }
  template <class T>
  Gguf& num(T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Gguf& u32(uint32_t v) { return num(v); }
  Gguf& u64(uint64_t v) { return num(v); }
  Gguf& str(const std::string& s) { return u64(s.size()).raw(s); }
  /// "GGUF", version, tensor count, kv count.
  Gguf& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) { return raw("GGUF").u32(version).u64(tensors).u64(kvs); }
  Gguf& kvString(const std::string& key, const std::string& value) { return str(key).u32(8).str(value); }
  Gguf& kvU32(const std::string& key, uint32_t value) { return str(key).u32(4).u32(value); }
  /// A tensor info: name, ne (innermost first), ggml type id, offset in the data section.
  Gguf& tensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) u64(n);
    return u32(type).u64(offset);
  }
  /// Zero padding up to a multiple of `alignment`.
  Gguf& align(size_t alignment = 32) {
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    return *this;
  }
};

}  // namespace radix::iotest
