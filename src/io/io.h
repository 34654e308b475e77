#pragma once
// Private parts of the checkpoint loaders: the shared Checkpoint state, mapped files, and the
// format parsers (src/io/safetensors.cpp, src/io/gguf.cpp) that fill it.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "radix/io.h"

namespace radix::io {

/// Bytes of one file (mmapped read-only, MAP_PRIVATE, or read into memory: `copied`) or of caller
/// memory; `owner` keeps them alive.
struct Source {
  std::shared_ptr<const void> owner;
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string label;  // the path or name shown in errors
  bool copied = false;
  std::span<const uint8_t> bytes() const { return {data, size}; }
};

/// A whole file, mapped or read as `residency` says; "[PREFIX] PATH: ..." when it cannot be
/// opened, mapped or read.
Source mapFile(const std::string& path, const std::string& prefix, Residency residency = Residency::mapped);
/// Caller memory, not owned.
Source memorySource(std::span<const uint8_t> bytes, std::string label);

struct Checkpoint::Impl {
  std::string format;
  std::string folder;
  std::vector<TensorInfo> tensors;
  std::vector<const uint8_t*> data;    // per tensor: its first byte
  std::vector<size_t> source;          // per tensor: index into sources
  std::vector<Source> sources;
  std::unordered_map<std::string, size_t> byName;
  std::map<std::string, MetaValue> metadata;
  Progress progress = Progress::automatic;

  /// Adds a tensor; false when the name is already present.
  bool add(TensorInfo info, const uint8_t* bytes, size_t sourceIndex);
};

/// Parses one safetensors file into `impl` (tensors, and __metadata__ into metadata when
/// `withMetadata`). Errors: "[safetensors] LABEL: offset N: FIELD: ...".
void parseSafetensors(Checkpoint::Impl& impl, size_t sourceIndex, bool withMetadata);
/// Parses one GGUF file into `impl`. Errors: "[gguf] LABEL: offset N: FIELD: ...".
void parseGguf(Checkpoint::Impl& impl, size_t sourceIndex);

/// A name as it appears in messages: quoted, control bytes escaped, cut after 200 bytes.
std::string quotedName(std::string_view s);

/// A JSON document's top-level keys as metadata (nested objects as their JSON text);
/// "[PREFIX] LABEL: ..." when it is not a JSON object.
std::map<std::string, MetaValue> jsonMetadata(std::string_view text, const std::string& label, const std::string& prefix);

/// Progress on stderr for loads: "[load] 120.0/474.7 MiB  80.1 MiB/s  ETA 4s".
class ProgressBar {
 public:
  ProgressBar(Progress mode, uint64_t total);
  ~ProgressBar();
  void advance(uint64_t bytes);
  bool active() const { return active_; }

 private:
  void draw(bool final);
  bool active_ = false;
  uint64_t total_ = 0, done_ = 0;
  double start_ = 0, last_ = 0;
};

/// Dims as messages print them: {768,2304}.
std::string dimsStr(const std::vector<int64_t>& dims);

/// Memory for the converted copies of one loadInto: chunks of 64 MiB (or one tensor's size) of
/// anonymous memory on 2 MiB pages, as Residency::copied files are, so that a model's converted
/// weights stream as fast as copied ones (tensors of a few MiB each would otherwise get 4 KiB
/// pages, or waste most of a 2 MiB one each). A chunk lives while a tensor in it does.
/// arena.take(1 << 20) -> {data 64-byte aligned, owner}
class WeightArena {
 public:
  struct Block {
    uint8_t* data = nullptr;
    std::shared_ptr<const void> owner;
  };
  static constexpr size_t kChunkBytes = size_t(64) << 20;
  /// `bytes` of writable memory, or {} when none can be had.
  Block take(size_t bytes);

 private:
  std::shared_ptr<const void> chunk_;
  uint8_t* base_ = nullptr;
  size_t size_ = 0, used_ = 0;
};
/// `bytes` owned by the returned block alone (aligned_alloc); data null when none can be had.
WeightArena::Block ownedBlock(size_t bytes);

/// Tensor i of `impl` on `platform`: bound zero-copy when `want` is its stored dtype (or
/// absent), else converted (into `arena` when given); advances `bar` (may be null) by its bytes.
Tensor loadOne(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want, ProgressBar* bar,
               WeightArena* arena = nullptr);
/// This process's shard of stored tensor i for a placeholder `global` (the stored dims, or the
/// packed u8 {rows, rowBytes} of quantized blocks) sharded on `axis` over `parts`: only that
/// block of the axis is copied out of the mapping (and converted to `want`); the result is a
/// sharded tensor of the global shape (Tensor::fromShard's layout). The caller checks that parts
/// divides the axis (and, for packed blocks split along a row, that blocks are not cut).
Tensor loadShard(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want,
                 const Shape& global, int64_t axis, int parts, int part, ProgressBar* bar);

}  // namespace radix::io
