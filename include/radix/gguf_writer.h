#pragma once
/// Writing GGUF v3 files (what `radix quantize` writes): typed metadata, tensors of any ggml
/// type, data aligned to general.alignment (32). Tensor data is produced one tensor at a time
/// while writing, so memory stays at one tensor's size.
///
/// GgufWriter w;
/// w.setString("general.architecture", "llama");
/// w.setU32("llama.block_count", 12);
/// w.addTensor("token_embd.weight", {vocab, n_embd}, 0 /*F32*/, vocab * n_embd * 4, fill);
/// w.write("out.gguf");
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace radix::io {

/// GGUF's metadata value types (gguf_type).
enum class GgufValueType : uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

/// A GGUF v3 file being assembled. Keys keep their first insertion order; setting a key again
/// replaces its value. [gguf] errors for duplicate tensor names, sizes that do not match the
/// type's blocks, and I/O failures (naming the path).
class GgufWriter {
 public:
  /// w.setU32("llama.block_count", 12)
  void setU32(std::string_view key, uint32_t v);
  /// w.setI32("x", -1)
  void setI32(std::string_view key, int32_t v);
  /// w.setU64("x", 1ull << 40)
  void setU64(std::string_view key, uint64_t v);
  /// w.setF32("llama.rope.freq_base", 10000.f)
  void setF32(std::string_view key, float v);
  /// w.setBool("tokenizer.ggml.add_bos_token", true)
  void setBool(std::string_view key, bool v);
  /// w.setString("general.architecture", "gpt2")
  void setString(std::string_view key, std::string_view v);
  /// w.setStrings("tokenizer.ggml.tokens", {"<unk>", "a"})
  void setStrings(std::string_view key, const std::vector<std::string>& v);
  /// w.setF32s("tokenizer.ggml.scores", {0.f, -1.f})
  void setF32s(std::string_view key, const std::vector<float>& v);
  /// w.setI32s("tokenizer.ggml.token_type", {1, 3})
  void setI32s(std::string_view key, const std::vector<int32_t>& v);
  /// A value already encoded as GGUF stores it after its type field (copies of another file's keys).
  void setRaw(std::string_view key, GgufValueType type, std::vector<uint8_t> value);
  /// True when the key is set.
  bool has(std::string_view key) const;
  /// Removes a key (no-op when absent).
  void erase(std::string_view key);

  /// Copies every key of a GGUF file (v2 or v3) for which `keep(key)` is true, with its stored
  /// type, byte for byte. w.copyMetadata("in.gguf", [](auto k) { return k != "general.file_type"; })
  void copyMetadata(const std::string& path, const std::function<bool(std::string_view)>& keep);

  /// One tensor: `dims` row-major (outermost first, written reversed as ggml's ne[]), ggml type
  /// id, its byte size, and a callback that fills exactly `bytes` bytes when the file is written.
  /// w.addTensor("blk.0.attn_q.weight", {768, 768}, 8 /*Q8_0*/, 768 * 816, fill)
  void addTensor(std::string name, std::vector<int64_t> dims, uint32_t ggmlType, uint64_t bytes,
                 std::function<void(std::span<uint8_t>)> fill);
  /// Tensors added so far.
  size_t tensorCount() const { return tensors_.size(); }

  /// Writes the file (to PATH.tmp, renamed to PATH when complete).
  void write(const std::string& path) const;

 private:
  struct Kv {
    std::string key;
    GgufValueType type;
    std::vector<uint8_t> value;
  };
  struct TensorEntry {
    std::string name;
    std::vector<int64_t> dims;
    uint32_t type;
    uint64_t bytes;
    std::function<void(std::span<uint8_t>)> fill;
  };
  std::vector<Kv> kvs_;
  std::vector<TensorEntry> tensors_;
};

}  // namespace radix::io
