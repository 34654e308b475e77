// The allocator of compiled code (finalize-memref-to-llvm{use-generic-functions} calls these):
// blocks of 64 KiB and more come from and go back to the runtime's buffer pool (buffer_pool.h), so
// a large temporary is not a fresh mmap with a page fault per 4 KiB on first touch, which cost a
// Llama prefill 10% of its time in zero fills. (The pool began at 1 MiB; a 56x56 convolution,
// whose padded input, output and phase copy are smaller, ran 7% faster once the pool handed it
// back the same, cache-warm blocks every call instead of glibc's.) Small blocks are
// kept per thread by size for the next allocation of that size: a decode step allocates and
// frees a few hundred temporaries of the same sizes, and each memalign of 1 KiB or more also
// made glibc consolidate its free lists.
// Pointers stay plain (no header), so a block freed with std::free is still freed correctly.
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/buffer_pool.h"

namespace {

using radix::detail::allocatedBytes;
using radix::detail::BufferPool;
using radix::detail::bufferPool;

constexpr size_t kPoolAlignment = 64;  // what the pool's blocks are aligned to (host.cpp's Storage)

// The pooled-size blocks handed out, by their allocated size (free gets only the pointer).
struct Live {
  std::mutex mutex;
  std::unordered_map<void*, size_t> bytes;
};

Live& live() {
  static Live* l = new Live;  // never destroyed: compiled code may run during exit
  return *l;
}

// Freed blocks of this thread up to kMaxBytes (usable size), by 64-byte class: class c holds
// blocks of usable size [64 c, 64 c + 63], so any of them serves an allocation of 64 c bytes.
// At most kPerClass a class and kMaxHeld bytes in all (counted at 64 c a block): a workload whose
// temporaries change size (prefill chunks of other lengths) cannot make a thread hoard memory.
class SmallBlocks {
 public:
  static constexpr size_t kMaxBytes = BufferPool::kMinBytes;  // the pool keeps the larger ones
  static constexpr size_t kPerClass = 16;
  static constexpr size_t kMaxHeld = 4 << 20;

  ~SmallBlocks();
  size_t held() const { return held_; }
  void* take(size_t bytes) {
    if (!classes_) return nullptr;
    auto& blocks = classes_[bytes / 64];
    if (blocks.empty()) return nullptr;
    void* b = blocks.back();
    blocks.pop_back();
    held_ -= bytes / 64 * 64;
    return b;
  }
  bool keep(void* block, size_t usable) {
    if (usable > kMaxBytes || reinterpret_cast<uintptr_t>(block) % kPoolAlignment != 0) return false;
    if (!classes_) classes_ = std::make_unique<std::vector<void*>[]>(kClasses);
    auto& blocks = classes_[usable / 64];
    const size_t counted = usable / 64 * 64;
    if (blocks.size() >= kPerClass || held_ + counted > kMaxHeld) return false;
    blocks.push_back(block);
    held_ += counted;
    return true;
  }

 private:
  static constexpr size_t kClasses = kMaxBytes / 64 + 1;
  // On the heap once the thread frees a block: the thread-local object itself stays two words
  // (every thread of the process has one).
  std::unique_ptr<std::vector<void*>[]> classes_;
  size_t held_ = 0;
};

// Set once this thread's SmallBlocks is destroyed (trivially destructible, so still readable):
// compiled code running later in the thread's exit then allocates and frees plainly.
thread_local bool smallBlocksGone = false;

SmallBlocks::~SmallBlocks() {
  smallBlocksGone = true;
  if (!classes_) return;
  for (size_t c = 0; c < kClasses; ++c)
    for (void* b : classes_[c]) std::free(b);
}

SmallBlocks* smallBlocks() {
  if (smallBlocksGone) return nullptr;
  static thread_local SmallBlocks blocks;
  return &blocks;
}

}  // namespace

size_t radix::detail::smallBlocksKept() {
  const SmallBlocks* small = smallBlocks();
  return small ? small->held() : 0;
}

extern "C" {

void* _mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) {
  const size_t align = std::max<size_t>(alignment, 16);
  if (align > kPoolAlignment) return std::aligned_alloc(align, (std::max<size_t>(size, 1) + align - 1) / align * align);
  const size_t bytes = allocatedBytes(size);
  if (SmallBlocks* small = bytes <= SmallBlocks::kMaxBytes ? smallBlocks() : nullptr)
    if (void* block = small->take(bytes)) return block;
  void* block = bufferPool().take(bytes);
  if (!block) block = radix::detail::allocateBlock(bytes);
  if (block && bytes >= BufferPool::kMinBytes) {
    std::lock_guard<std::mutex> lock(live().mutex);
    live().bytes.emplace(block, bytes);
  }
  return block;
}

void* _mlir_memref_to_llvm_alloc(uint64_t size) { return _mlir_memref_to_llvm_aligned_alloc(16, size); }

void _mlir_memref_to_llvm_free(void* block) {
  if (!block) return;
  // Pooled blocks are at least kMinBytes: a smaller one is not in live().
  if (const size_t usable = malloc_usable_size(block); usable < BufferPool::kMinBytes) {
    SmallBlocks* small = smallBlocks();
    if (!small || !small->keep(block, usable)) std::free(block);
    return;
  }
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(live().mutex);
    auto it = live().bytes.find(block);
    if (it != live().bytes.end()) {
      bytes = it->second;
      live().bytes.erase(it);
    }
  }
  if (bytes == 0 || !bufferPool().give(block, bytes)) std::free(block);
}

}  // extern "C"
