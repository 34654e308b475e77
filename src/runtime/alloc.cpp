// The allocator of compiled code (finalize-memref-to-llvm{use-generic-functions} calls these):
// blocks of 1 MiB and more are kept when freed and handed to the next allocation of the same
// size, as the runtime's buffer pool does for results. A fresh large block is an mmap and a page
// fault per 4 KiB on first touch, which cost a Llama prefill 10% of its time in zero fills.
// Pointers stay plain (no header), so a block freed with std::free is still freed correctly.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RADIX_NO_CODE_POOL 1  // AddressSanitizer sees every reuse
#endif
#endif

constexpr size_t kMinPooled = size_t(1) << 20;
constexpr size_t kMaxKept = size_t(1) << 30;
constexpr size_t kPage = 4096;

struct CodePool {
  std::mutex mutex;
  std::unordered_map<void*, size_t> live;  // pooled-size blocks handed out, by their rounded size
  std::multimap<size_t, void*> kept;
  size_t keptBytes = 0;
};

CodePool& pool() {
  static CodePool* p = new CodePool;  // never destroyed: compiled code may run during exit
  return *p;
}

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

extern "C" {

void* _mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) {
  const size_t align = std::max<size_t>(alignment, 16);
  if (size < kMinPooled || align > kPage) return std::aligned_alloc(align, roundUp(std::max<size_t>(size, 1), align));
  const size_t bytes = roundUp(size, kPage);
  CodePool& p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.kept.find(bytes);
    if (it != p.kept.end()) {
      void* block = it->second;
      p.kept.erase(it);
      p.keptBytes -= bytes;
      p.live.emplace(block, bytes);
      return block;
    }
  }
  void* block = std::aligned_alloc(kPage, bytes);
  if (block) {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.live.emplace(block, bytes);
  }
  return block;
}

void* _mlir_memref_to_llvm_alloc(uint64_t size) { return _mlir_memref_to_llvm_aligned_alloc(16, size); }

void _mlir_memref_to_llvm_free(void* block) {
  if (!block) return;
  CodePool& p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.live.find(block);
    if (it != p.live.end()) {
      const size_t bytes = it->second;
      p.live.erase(it);
#ifndef RADIX_NO_CODE_POOL
      if (p.keptBytes + bytes <= kMaxKept) {
        p.kept.emplace(bytes, block);
        p.keptBytes += bytes;
        return;
      }
#endif
    }
  }
  std::free(block);
}

}  // extern "C"
