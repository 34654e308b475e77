// The allocator of compiled code (finalize-memref-to-llvm{use-generic-functions} calls these):
// blocks of 1 MiB and more come from and go back to the runtime's buffer pool (buffer_pool.h), so
// a large temporary is not a fresh mmap with a page fault per 4 KiB on first touch, which cost a
// Llama prefill 10% of its time in zero fills. Pointers stay plain (no header), so a block freed
// with std::free is still freed correctly.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

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

}  // namespace

extern "C" {

void* _mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) {
  const size_t align = std::max<size_t>(alignment, 16);
  if (align > kPoolAlignment) return std::aligned_alloc(align, (std::max<size_t>(size, 1) + align - 1) / align * align);
  const size_t bytes = allocatedBytes(size);
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
