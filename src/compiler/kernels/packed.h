#pragma once
// The packed-weight cache: a GEMM's B operand packed once (the kernels' panel layout) and reused
// by later calls while its buffer is unchanged. B qualifies only when it lies in a buffer that the
// runtime pinned for a running call (an argument that the call does not write); the key holds
// that buffer's generation, which the allocator gives every new buffer and every write (a
// donation) renews, so a freed and reallocated buffer at the same address never matches.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "compiler/kernels/kernels.h"

namespace radix::kernels {

/// B of `p` packed by `pack` into `bytes` (layout: the kernel's packing id), from the cache or
/// packed now and cached; null when B is not cacheable (not in a pinned buffer, batched B, cache
/// off or `bytes` over its limit) or seen for the first time (packed on its second use): the
/// caller packs per call as before; a weight's B (pinBuffer) is packed on its first use.
/// Thread-safe.
std::shared_ptr<const void> packedB(const Problem& p, int32_t layout, size_t bytes,
                                    const std::function<void(void* dst)>& pack);

/// Any operand that a kernel packs in a layout of its own (a convolution's kernel), cached as
/// packedB does: `base` is its buffer (the one pinned), it reads bytes [first, end) of it, and
/// `view` holds what else the packed contents depend on (dims, strides, a descriptor).
/// packedOperand(w, 0, 4 * 64 * 576, {64, 576}, Elem::f32, layout, bytes, pack)
std::shared_ptr<const void> packedOperand(const void* base, int64_t first, int64_t end, std::vector<int64_t> view,
                                          Elem type, int32_t layout, size_t bytes,
                                          const std::function<void(void* dst)>& pack);

/// Runtime side: the buffer [data, data + bytes) of `generation` is read-only until unpinned
/// (pins nest: one per running call that reads it); `weight`: a model's weight, packed whole on
/// its first use. pinBuffer(w.data, w.bytes, w.generation, true)
void pinBuffer(const void* data, size_t bytes, uint64_t generation, bool weight = false);
void unpinBuffer(const void* data);
/// Drops the packed copies made from a buffer generation (its buffer was freed or written).
void forgetGeneration(uint64_t generation);

struct PackedCacheStats {
  uint64_t hits = 0, packs = 0, evictions = 0;
  size_t bytes = 0, entries = 0;
};
PackedCacheStats packedCacheStats();
/// The cache's memory bound in bytes (LRU eviction beyond it); 0 disables caching. Default:
/// RADIX_PACKED_WEIGHTS_MB from the environment, else 2048 MB.
void setPackedCacheLimit(size_t bytes);
size_t packedCacheLimit();

}  // namespace radix::kernels
