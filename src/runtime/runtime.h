#pragma once
// Private runtime types: platform state, device buffers, host conversions.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "radix/error.h"
#include "radix/platform.h"
#include "radix/shape.h"

namespace radix::detail {

struct PlatformState {
  std::string target = "cpu";
  /// The CUDA device of Platform::cuda; -1 for the CPU and for Platform::cudaTarget (no device).
  int cudaDevice = -1;
  Sharding sharding;
  CompileOptions options;
};

/// 64-byte aligned host memory, or memory owned elsewhere (Tensor::fromExternal: `owner` keeps it
/// alive; it is read-only, so a donation copies it into owned Storage first).
struct Storage {
  explicit Storage(size_t bytes);
  /// `bytes` of device memory on CUDA device `cudaDevice` (runtime/cuda.h); `data` holds the
  /// device pointer, which the host must not dereference. -1: host memory, as Storage(bytes).
  Storage(size_t bytes, int cudaDevice);
  Storage(const void* external, size_t bytes, std::shared_ptr<const void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  bool isExternal() const { return external_; }
  /// The CUDA device holding the bytes; -1 for host memory.
  int cudaDevice = -1;
  void* data = nullptr;
  size_t bytes = 0;
  /// Unique to this buffer and its contents: a new one for every Storage and after every write
  /// (donation); the packed-weight cache keys on it (compiler/kernels/packed.h).
  std::atomic<uint64_t> generation;
  /// Set once a call pinned it for the packed-weight cache: its destructor drops the packed copies.
  std::atomic<bool> pinned{false};
  /// A model's weight (io::loadInto): the packed-weight cache packs it whole on its first use
  /// instead of its second, which lets through buffers used once.
  std::atomic<bool> weight{false};
  /// A fresh generation for rewritten contents; drops the packed copies of the old one.
  void renewGeneration();

 private:
  std::shared_ptr<const void> owner_;
  bool external_ = false;
};

/// What a bound Tensor points at. Donation moves `storage` to a result and leaves this
/// buffer marked donated, so every copy of the donated Tensor sees it.
/// `partitions` > 1: the storage holds this process's shard of a shape whose sharded axis is split
/// over that many processes (docs/sharding.md).
struct DeviceBuffer {
  std::shared_ptr<Storage> storage;
  Memory memory = Memory::device;
  bool donated = false;
  int partitions = 1;
};

/// True when the platform partitions programs over processes (enabled, numPartitions > 1).
bool shardedAcrossProcesses(const Platform& platform);
/// The sharded axis of a shape, or -1; throws radix::Error("[op] ...") when several are sharded (a
/// 1-D grid of partitions splits one axis).
int64_t shardedAxis(const Shape& shape, const std::string& op);
/// The shard's shape: the sharded axis divided by `partitions` (which must divide it).
Shape localShape(const Shape& global, int partitions, const std::string& op = "shard");

/// `host` moved to the platform's memory: itself on the CPU, a device copy on Platform::cuda().
std::shared_ptr<Storage> onPlatform(const Platform& platform, std::shared_ptr<Storage> host);
/// The bytes of `s` in host memory: `s` itself, or a copy of a device buffer.
std::shared_ptr<Storage> onHost(std::shared_ptr<Storage> s);
/// Copies `bytes` between two storages of the same kind (host or one device) at the given offsets.
void copyStorage(Storage& to, const Storage& from, size_t bytes);

/// The storage of a bound tensor; throws radix::Error("[op] ...") if donated.
Storage& liveStorage(const DeviceBuffer& buffer, const std::string& op, const Shape& shape);

/// Converts n host values of type T to dtype (row-major bytes at dst).
template <class T>
void encodeValues(DType dtype, const T* src, void* dst, size_t n);
/// Converts n elements of dtype at src to host values of type T.
template <class T>
void decodeValues(DType dtype, const void* src, T* dst, size_t n);

uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t h);

}  // namespace radix::detail
