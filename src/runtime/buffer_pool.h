#pragma once
// The pool of freed large buffers (internal to src/runtime).
#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>

namespace radix::detail {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RADIX_NO_BUFFER_POOL 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RADIX_NO_BUFFER_POOL 1
#endif

/// Freed large buffers, kept for the next buffer of the same size. A fresh 64 MB result is an
/// mmap and 16k page faults (about 30 ms), more than most kernels take, and a model calls with
/// the same shapes again and again. Off under AddressSanitizer, so that it still sees reuse.
/// One pool serves the runtime's buffers (host.cpp) and compiled code's (alloc.cpp).
class BufferPool {
 public:
  static constexpr size_t kMinBytes = size_t(64) << 10;
  static constexpr size_t kMaxKeptBytes = size_t(1) << 30;

  void* take(size_t bytes) {
    if (bytes < kMinBytes) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    kept_ -= bytes;
    return p;
  }

  /// False when the buffer should be freed instead.
  bool give(void* p, size_t bytes) {
#ifdef RADIX_NO_BUFFER_POOL
    return false;
#else
    if (bytes < kMinBytes) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (kept_ + bytes > kMaxKeptBytes) return false;
    free_.emplace(bytes, p);
    kept_ += bytes;
    return true;
#endif
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t kept_ = 0;
};

/// The process's pool. bufferPool().take(allocatedBytes(n)) -> a kept block, or null
BufferPool& bufferPool();

/// The size a buffer of n bytes is allocated (and pooled) at: n rounded up to 64, at least 64.
/// allocatedBytes(100) -> 128
inline size_t allocatedBytes(size_t n) { return std::max<size_t>(64, (n + 63) / 64 * 64); }

/// A new block of `bytes` (allocatedBytes' size) aligned to 64, or null. Blocks of 4 MiB and more
/// are aligned to 2 MiB and asked to be backed by huge pages (madvise): a GEMM reading a large
/// weight's rows 16 KB apart, or a GEMV streaming it, then walks one page table entry per 2 MiB
/// instead of one per 4 KiB. allocateBlock(64 << 20)
void* allocateBlock(size_t bytes);

/// Bytes of freed small temporaries of compiled code this thread keeps for reuse (alloc.cpp),
/// counted at their size class; at most 4 MiB. smallBlocksKept() -> 1600
size_t smallBlocksKept();

}  // namespace radix::detail
