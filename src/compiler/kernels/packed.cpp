// The packed-weight cache (packed.h): a pin registry of the runtime's read-only argument buffers
// and an LRU of packed B operands keyed by (buffer, generation, view of B, kernel layout).
#include "compiler/kernels/packed.h"

#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace radix::kernels {

namespace {

struct Pin {
  size_t bytes = 0;
  uint64_t generation = 0;
  int count = 0;
  bool weight = false;
};

// (buffer, generation, first byte read, view, element type, layout)
using Key = std::tuple<const void*, uint64_t, int64_t, std::vector<int64_t>, int32_t, int32_t>;

struct Entry {
  Key key;
  std::shared_ptr<void> data;
  size_t bytes = 0;
  uint64_t lastUse = 0;  // Cache::clock at its last hit
};

size_t defaultLimit() {
  if (const char* env = std::getenv("RADIX_PACKED_WEIGHTS_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env) return static_cast<size_t>(mb) << 20;
  }
  return size_t(2048) << 20;
}

struct Cache {
  std::mutex mutex;
  std::map<const void*, Pin> pins;
  std::list<Entry> lru;  // most recent first
  std::map<Key, std::list<Entry>::iterator> index;
  // Keys seen but not cached, with the uses to let pass before packing whole: a B is packed
  // whole on its second use, so a B used once (or a first call) pays nothing over per-block
  // packing (a whole-B pack into fresh pages costs more); one that found no room waits 16.
  std::map<Key, int> seen;
  size_t bytes = 0, limit = defaultLimit();
  uint64_t clock = 0;  // cacheable lookups so far
  PackedCacheStats stats;

  // Room for `need` more bytes by evicting idle entries only (unused for several rounds of all
  // entries): weights cycled through a cache too small for them keep the ones cached instead of
  // evicting each other on every call (packing whole costs more than packing per block).
  bool makeRoom(size_t need) {
    while (bytes + need > limit && !lru.empty()) {
      auto tail = std::prev(lru.end());
      if (clock - tail->lastUse <= 4 * lru.size() + 64) return false;
      erase(tail);
      ++stats.evictions;
    }
    return bytes + need <= limit;
  }

  void erase(std::list<Entry>::iterator it) {
    bytes -= it->bytes;
    index.erase(it->key);
    lru.erase(it);
  }
  void evictTo(size_t budget) {
    while (bytes > budget && !lru.empty()) {
      erase(std::prev(lru.end()));
      ++stats.evictions;
    }
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: buffers may be freed during static destruction
  return *c;
}

}  // namespace

void pinBuffer(const void* data, size_t bytes, uint64_t generation, bool weight) {
  if (!data) return;
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  Pin& pin = c.pins[data];
  pin.bytes = bytes;
  pin.generation = generation;
  pin.weight = weight;
  ++pin.count;
}

void unpinBuffer(const void* data) {
  if (!data) return;
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  auto it = c.pins.find(data);
  if (it != c.pins.end() && --it->second.count <= 0) c.pins.erase(it);
}

void forgetGeneration(uint64_t generation) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  for (auto it = c.seen.begin(); it != c.seen.end();)
    it = std::get<1>(it->first) == generation ? c.seen.erase(it) : std::next(it);
  for (auto it = c.lru.begin(); it != c.lru.end();) {
    auto next = std::next(it);
    if (std::get<1>(it->key) == generation) c.erase(it);
    it = next;
  }
}

PackedCacheStats packedCacheStats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  PackedCacheStats s = c.stats;
  s.bytes = c.bytes;
  s.entries = c.lru.size();
  return s;
}

void setPackedCacheLimit(size_t bytes) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.limit = bytes;
  c.evictTo(bytes);
}

size_t packedCacheLimit() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.limit;
}

std::shared_ptr<const void> packedB(const Problem& p, int32_t layout, size_t bytes,
                                    const std::function<void(void* dst)>& pack) {
  if (!p.bBase || (p.batch != 1 && p.sbb != 0) || p.sbk < 0 || p.sbn < 0) return nullptr;
  const int64_t offset = static_cast<const char*>(p.b) - static_cast<const char*>(p.bBase);
  const int64_t eb = elemBytes(p.bType);
  const int64_t end = offset + ((p.k - 1) * p.sbk + (p.n - 1) * p.sbn) * eb + eb;
  return packedOperand(p.bBase, offset, end, {p.k, p.n, p.sbk, p.sbn}, p.bType, layout, bytes, pack);
}

std::shared_ptr<const void> packedOperand(const void* base, int64_t first, int64_t end, std::vector<int64_t> view,
                                          Elem type, int32_t layout, size_t bytes,
                                          const std::function<void(void* dst)>& pack) {
  if (!base || bytes == 0) return nullptr;
  Cache& c = cache();
  Key key;
  {
    std::lock_guard lock(c.mutex);
    if (bytes > c.limit) return nullptr;
    auto pin = c.pins.find(base);
    if (pin == c.pins.end()) return nullptr;
    // What the operand reads must lie in the pinned buffer (else it is not that buffer's).
    if (first < 0 || end < first || end > static_cast<int64_t>(pin->second.bytes)) return nullptr;
    key = Key{base, pin->second.generation, first, std::move(view), static_cast<int32_t>(type), layout};
    ++c.clock;
    auto hit = c.index.find(key);
    if (hit != c.index.end()) {
      hit->second->lastUse = c.clock;
      c.lru.splice(c.lru.begin(), c.lru, hit->second);
      ++c.stats.hits;
      return hit->second->data;
    }
    auto wait = c.seen.find(key);
    if (wait == c.seen.end()) {
      if (!pin->second.weight) {
        if (c.seen.size() >= 4096) c.seen.clear();
        c.seen.emplace(key, 1);
        return nullptr;
      }
    } else {
      if (wait->second-- > 1) return nullptr;
      c.seen.erase(wait);
    }
  }
  // Packed outside the lock (other GEMMs go on); two threads missing at once both pack.
  std::shared_ptr<void> data(std::aligned_alloc(64, (bytes + 63) / 64 * 64), std::free);
  if (!data) return nullptr;
  pack(data.get());
  std::lock_guard lock(c.mutex);
  ++c.stats.packs;
  auto pin = c.pins.find(base);
  // Unpinned or rewritten meanwhile: use the copy for this call only.
  if (pin == c.pins.end() || pin->second.generation != std::get<1>(key)) return data;
  auto hit = c.index.find(key);
  if (hit != c.index.end()) return hit->second->data;
  if (!c.makeRoom(bytes)) {
    c.seen[key] = 16;
    return data;
  }
  c.lru.push_front(Entry{key, data, bytes, c.clock});
  c.index[key] = c.lru.begin();
  c.bytes += bytes;
  return data;
}

}  // namespace radix::kernels
