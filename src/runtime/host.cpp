// Host-side tensors: buffers, value conversion, and the Tensor methods that need no tracer.
#include <sys/mman.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <dlfcn.h>
#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t's size, for Hasher's inline state
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "compiler/kernels/packed.h"
#include "radix/detail/trace.h"
#include "radix/detail/visit.h"
#include "radix/tensor.h"
#include "runtime/buffer_pool.h"
#include "runtime/cuda.h"
#include "runtime/mpi.h"
#include "runtime/runtime.h"

namespace radix {
namespace detail {

void* allocateBlock(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes < 2 * kHuge) return std::aligned_alloc(64, bytes);
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* block = std::aligned_alloc(kHuge, rounded);
  if (block) ::madvise(block, rounded, MADV_HUGEPAGE);
  return block;
}

BufferPool& bufferPool() {
  static BufferPool* pool = new BufferPool;  // never destroyed: buffers may die after static destructors
  return *pool;
}

std::atomic<uint64_t> storageGenerations{0};

Storage::Storage(size_t n) : Storage(n, -1) {}
Storage::Storage(size_t n, int device) : cudaDevice(device), bytes(n), generation(storageGenerations.fetch_add(1) + 1) {
  if (device < 0) {
    const size_t rounded = allocatedBytes(n);
    data = bufferPool().take(rounded);
    if (!data) data = allocateBlock(rounded);
    if (!data) throw Error("[buffer] out of memory allocating " + std::to_string(n) + " bytes");
    return;
  }
  (void)cuda::device(device);  // its context current on this thread
  cuda::DevicePtr p = 0;
  if (n) cuda::check(cuda::driver().memAlloc(&p, n), "cuMemAlloc");
  data = reinterpret_cast<void*>(p);
}
Storage::Storage(const void* external, size_t n, std::shared_ptr<const void> owner)
    : data(const_cast<void*>(external)),
      bytes(n),
      generation(storageGenerations.fetch_add(1) + 1),
      owner_(std::move(owner)),
      external_(true) {}
void Storage::renewGeneration() {
  const uint64_t old = generation.exchange(storageGenerations.fetch_add(1) + 1);
  if (pinned.load()) kernels::forgetGeneration(old);
}
Storage::~Storage() {
  if (pinned.load()) kernels::forgetGeneration(generation.load());
  if (external_ || !data) return;
  if (cudaDevice >= 0) {
    cuda::driver().memFree(reinterpret_cast<cuda::DevicePtr>(data));
    return;
  }
  if (!bufferPool().give(data, allocatedBytes(bytes))) std::free(data);
}

std::shared_ptr<Storage> onPlatform(const Platform& platform, std::shared_ptr<Storage> host) {
  const int device = platform.state().cudaDevice;
  if (device < 0) return host;
  auto out = std::make_shared<Storage>(host->bytes, device);
  if (host->bytes)
    cuda::check(cuda::driver().memcpyHtoD(reinterpret_cast<cuda::DevicePtr>(out->data), host->data, host->bytes),
                "cuMemcpyHtoD");
  return out;
}

std::shared_ptr<Storage> onHost(std::shared_ptr<Storage> s) {
  if (s->cudaDevice < 0) return s;
  (void)cuda::device(s->cudaDevice);
  auto out = std::make_shared<Storage>(s->bytes);
  if (s->bytes)
    cuda::check(cuda::driver().memcpyDtoH(out->data, reinterpret_cast<cuda::DevicePtr>(s->data), s->bytes), "cuMemcpyDtoH");
  return out;
}

void copyStorage(Storage& to, const Storage& from, size_t bytes) {
  if (bytes == 0) return;
  if (to.cudaDevice < 0 && from.cudaDevice < 0) {
    std::memcpy(to.data, from.data, bytes);
    return;
  }
  if (to.cudaDevice != from.cudaDevice) throw Error("[buffer] a copy between host and device memory through copyStorage");
  cuda::check(cuda::driver().memcpyDtoD(reinterpret_cast<cuda::DevicePtr>(to.data),
                                        reinterpret_cast<cuda::DevicePtr>(from.data), bytes),
              "cuMemcpyDtoD");
  // A device-to-device copy does not wait for itself, and calls run on streams that do not wait
  // for the default one: done before the next call reads it.
  cuda::check(cuda::driver().streamSynchronize(nullptr), "cuStreamSynchronize");
}

Storage& liveStorage(const DeviceBuffer& buffer, const std::string& op, const Shape& shape) {
  if (buffer.donated || !buffer.storage)
    throw Error("[" + op + "] tensor " + shape.str() +
                " was donated to a result of an earlier call (reuseBuffer): its buffer now belongs to that result");
  return *buffer.storage;
}

uint16_t floatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {                                                // subnormal or zero
    float v = std::bit_cast<float>(absx) + 0.5f;                           // round by float add trick
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u));
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
  return static_cast<uint16_t>(sign | (absx >> 13));
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t floatToBf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

namespace {

/// double -> float without undefined behaviour: out-of-range values round to +-inf as IEEE does.
float toFloat(double x) {
  constexpr double kRoundsToInf = 0x1.ffffffp127;  // FLT_MAX + half an ulp
  if (x >= kRoundsToInf) return std::numeric_limits<float>::infinity();
  if (x <= -kRoundsToInf) return -std::numeric_limits<float>::infinity();
  if (x > std::numeric_limits<float>::max()) return std::numeric_limits<float>::max();
  if (x < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::max();
  return static_cast<float>(x);
}

/// S -> D as convert() does in the graph: floats to integers saturate and NaN gives 0; integers to
/// narrower integers saturate; anything to bool is `!= 0`.
template <class D, class S>
D saturate(S x) {
  if constexpr (std::is_same_v<D, bool>) {
    return x != S(0);
  } else if constexpr (std::is_floating_point_v<D>) {
    if constexpr (std::is_same_v<D, float> && std::is_same_v<S, double>) return toFloat(x);
    else return static_cast<D>(x);
  } else if constexpr (std::is_floating_point_v<S>) {
    if (std::isnan(x)) return D(0);
    // Both bounds are exact powers of two (or 0) in S, so the comparisons are exact.
    if (x <= static_cast<S>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (x >= static_cast<S>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(x);
  } else {
    if (std::cmp_less(x, std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (std::cmp_greater(x, std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(x);
  }
}

/// The host value as the float that f16/bf16 encoding starts from.
template <class T>
float asFloat(T x) {
  if constexpr (std::is_same_v<T, double>) return toFloat(x);
  else return static_cast<float>(x);
}

}  // namespace

template <class T>
void encodeValues(DType dtype, const T* src, void* dst, size_t n) {
  auto put = [&](auto tag) {
    using D = decltype(tag);
    D* out = static_cast<D*>(dst);
    for (size_t i = 0; i < n; ++i) out[i] = saturate<D>(src[i]);
  };
  switch (dtype) {
    case DType::bool_: {
      auto* out = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) out[i] = src[i] != T(0);
      return;
    }
    case DType::i8: return put(int8_t{});
    case DType::i16: return put(int16_t{});
    case DType::i32: return put(int32_t{});
    case DType::i64: return put(int64_t{});
    case DType::u8: return put(uint8_t{});
    case DType::u16: return put(uint16_t{});
    case DType::u32: return put(uint32_t{});
    case DType::u64: return put(uint64_t{});
    case DType::f32: return put(float{});
    case DType::f64: return put(double{});
    case DType::f16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) out[i] = floatToHalf(asFloat(src[i]));
      return;
    }
    case DType::bf16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) out[i] = floatToBf16(asFloat(src[i]));
      return;
    }
  }
  checkDType(dtype, "encode");
}

template <class T>
void decodeValues(DType dtype, const void* src, T* dst, size_t n) {
  auto get = [&](auto tag) {
    using S = decltype(tag);
    const S* in = static_cast<const S*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = saturate<T>(in[i]);
  };
  switch (dtype) {
    case DType::bool_: return get(uint8_t{});
    case DType::i8: return get(int8_t{});
    case DType::i16: return get(int16_t{});
    case DType::i32: return get(int32_t{});
    case DType::i64: return get(int64_t{});
    case DType::u8: return get(uint8_t{});
    case DType::u16: return get(uint16_t{});
    case DType::u32: return get(uint32_t{});
    case DType::u64: return get(uint64_t{});
    case DType::f32: return get(float{});
    case DType::f64: return get(double{});
    case DType::f16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = saturate<T>(halfToFloat(in[i]));
      return;
    }
    case DType::bf16: {
      const auto* in = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = saturate<T>(bf16ToFloat(in[i]));
      return;
    }
  }
  checkDType(dtype, "decode");
}

#define RADIX_INSTANTIATE(T)                                               \
  template void encodeValues<T>(DType, const T*, void*, size_t);           \
  template void decodeValues<T>(DType, const void*, T*, size_t);
RADIX_HOST_TYPES(RADIX_INSTANTIATE)
#undef RADIX_INSTANTIATE

void TensorReplacer::tensor(Tensor& t) {
  if (next >= with.size()) throw Error("[exe] result structure holds more tensors than the function returned");
  t = with[next++];
}

std::string_view identifierAtEnd(std::string_view spelled) {
  const size_t close = spelled.rfind(']');
  if (close == std::string_view::npos) return {};
  std::string_view s = spelled.substr(0, close);
  while (!s.empty() && (s.back() == ')' || s.back() == ' ')) s.remove_suffix(1);
  size_t begin = s.size();
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (begin > 0 && isWord(s[begin - 1])) --begin;
  std::string_view name = s.substr(begin);
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return {};
  if (begin == 0 || (s[begin - 1] != '.' && s[begin - 1] != ':')) return {};
  return name;
}

void PathBuilder::enter(const PathStep& step) {
  marks.push_back(path.size());
  if (!step.isField) {
    path += "[" + std::to_string(step.index) + "]";
  } else if (!step.name.empty()) {
    path += ".";
    path += step.name;
  } else {
    path += ".field#" + std::to_string(step.index);
  }
}

std::string describeConstantChange(const std::vector<ConstantLeaf>& compiled, const std::vector<ConstantLeaf>& now) {
  const std::string head = "[exe] non-Tensor arguments (compile-time constants) differ from compile time: ";
  const std::string tail = "; compile again for new values";
  for (size_t i = 0; i < compiled.size() && i < now.size(); ++i) {
    const ConstantLeaf &a = compiled[i], &b = now[i];
    if (a.path == b.path && a.isSize == b.isSize && a.value == b.value) continue;
    if (a.path == b.path && a.isSize && b.isSize)
      return head + b.path + " has size " + std::to_string(b.value) + ", compiled with " + std::to_string(a.value) +
             " (container sizes, optional presence and variant alternatives are constants)" + tail;
    return head + b.path + " changed" + tail;
  }
  if (compiled.size() != now.size()) return head + "their number changed" + tail;
  return {};
}

std::string argumentName(size_t i, bool member) {
  if (member) return i == 0 ? "self" : "arg" + std::to_string(i - 1);
  return "arg" + std::to_string(i);
}

void Hasher::shape(const Shape& s) {
  size(static_cast<size_t>(s.rank()));
  for (int64_t i = 0; i < s.rank(); ++i) {
    int64_t d = s.dim(i);
    bytes(&d, sizeof d);
    tag(s.tag(i));
  }
  auto dt = static_cast<uint8_t>(s.dtype());
  uint8_t sharding = s.shardingMask();
  bytes(&dt, 1);
  bytes(&sharding, 1);
}

static_assert(sizeof(XXH64_state_t) <= sizeof(unsigned char[96]) && alignof(XXH64_state_t) <= 8);

Hasher::Hasher() { XXH64_reset(reinterpret_cast<XXH64_state_t*>(state_), 0); }

void Hasher::absorb(const void* data, size_t n) {
  auto* state = reinterpret_cast<XXH64_state_t*>(state_);
  XXH64_update(state, buf_, used_);
  used_ = 0;
  XXH64_update(state, data, n);
}

uint64_t Hasher::digest() const {
  XXH64_state_t state;
  std::memcpy(&state, state_, sizeof state);
  XXH64_update(&state, buf_, used_);
  return XXH64_digest(&state);
}

std::string demangle(const std::type_info& type) {
  int status = 0;
  char* s = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = (status == 0 && s) ? s : type.name();
  std::free(s);
  return out;
}

std::string shortTypeName(const std::type_info& type) {
  std::string full = demangle(type);
  // Drop template arguments, then keep the last identifier.
  std::string plain;
  int depth = 0;
  for (char c : full) {
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0) plain += c;
  }
  size_t colon = plain.rfind("::");
  if (colon != std::string::npos) plain = plain.substr(colon + 2);
  std::string out;
  for (char c : plain) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "fn" + out;
  return out;
}

std::string checkedFunctionName(const char* name) {
  const std::string_view n = name ? name : "";
  const bool ok = !n.empty() && !std::isdigit(static_cast<unsigned char>(n[0])) &&
                  std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!ok) throw Error("[call] function name \"" + std::string(n) + "\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  return std::string(n);
}

std::string functionName(const void* pointerBytes, bool isMember) {
  uintptr_t address = 0;
  std::memcpy(&address, pointerBytes, sizeof address);
  if (address == 0 || (isMember && (address & 1u))) return {};
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(address), &info) || !info.dli_sname ||
      reinterpret_cast<uintptr_t>(info.dli_saddr) != address)
    return {};
  int status = 0;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::string full = (status == 0 && demangled) ? demangled : info.dli_sname;
  std::free(demangled);
  // "ns::Layer<int>::forward(radix::Tensor) const" -> "forward": drop the parameters and
  // template arguments, keep the last identifier.
  std::string plain;
  int depth = 0;
  for (char c : full) {
    if (c == '(' && depth == 0) break;
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0) plain += c;
  }
  if (size_t colon = plain.rfind("::"); colon != std::string::npos) plain = plain.substr(colon + 2);
  std::string out;
  for (char c : plain) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

std::string functionIdentity(const std::type_info& type, const void* pointerBytes, size_t size, bool isMember) {
  std::string id = type.name();
  if (!pointerBytes) return id;
  uintptr_t address = 0;
  std::memcpy(&address, pointerBytes, sizeof address);
  if (isMember && (address & 1u)) {  // Itanium ABI: virtual member, address is a vtable offset + 1
    id += "#virtual" + std::to_string(address);
    if (size > sizeof address) id.append(static_cast<const char*>(pointerBytes) + sizeof address, size - sizeof address);
    return id;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(address), &info) && info.dli_fname) {
    const char* base = std::strrchr(info.dli_fname, '/');
    id += "@";
    id += base ? base + 1 : info.dli_fname;
    id += "+" + std::to_string(address - reinterpret_cast<uintptr_t>(info.dli_fbase));
  } else {
    id += "@" + std::to_string(address);
  }
  return id;
}

}  // namespace detail

using detail::DeviceBuffer;
using detail::Storage;

std::string_view memoryKindName(Memory memory) {
  switch (memory) {
    case Memory::device: return "device";
    case Memory::hostPinned: return "pinned_host";
    case Memory::hostUnpinned: return "unpinned_host";
  }
  return "device";
}

namespace detail {

bool shardedAcrossProcesses(const Platform& platform) {
  const Sharding& s = platform.sharding();
  return s.enabled && s.numPartitions > 1;
}

int64_t shardedAxis(const Shape& shape, const std::string& op) {
  int64_t axis = -1;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (!shape.isSharded(i)) continue;
    if (axis >= 0)
      throw Error("[" + op + "] " + shape.str() + ": axes " + std::to_string(axis) + " and " + std::to_string(i) +
                  " are both sharded; the grid of partitions is 1-D and splits one axis");
    axis = i;
  }
  return axis;
}

Shape localShape(const Shape& global, int partitions, const std::string& op) {
  const int64_t axis = shardedAxis(global, op);
  if (axis < 0 || partitions <= 1) return global;
  if (global.dim(axis) % partitions != 0)
    throw Error("[" + op + "] " + global.str() + ": axis " + std::to_string(axis) + " of size " +
                std::to_string(global.dim(axis)) + " is sharded over " + std::to_string(partitions) +
                " partitions, which do not divide it");
  std::vector<int64_t> dims = global.dims();
  dims[axis] /= partitions;
  std::vector<Tag> tags;
  for (int64_t i = 0; i < global.rank(); ++i) tags.push_back(global.tag(i));
  Shape local = Shape(dims, global.dtype()).withTags(tags);
  return local;
}

}  // namespace detail

namespace {
std::atomic<uint64_t> nextIdentity{1};

// A sharded axis splits the row-major array as [outer, partitions, inner].
struct Blocks {
  size_t outer = 1, inner = 1;
};
Blocks blocksOf(const Shape& global, int64_t axis, int partitions) {
  Blocks b;
  for (int64_t i = 0; i < axis; ++i) b.outer *= static_cast<size_t>(global.dim(i));
  b.inner = static_cast<size_t>(global.dim(axis) / partitions);
  for (int64_t i = axis + 1; i < global.rank(); ++i) b.inner *= static_cast<size_t>(global.dim(i));
  b.inner *= sizeOf(global.dtype());
  return b;
}

int partitionsFor(const Platform& platform, const Shape& shape, const std::string& op) {
  if (!detail::shardedAcrossProcesses(platform)) return 1;
  const int partitions = platform.sharding().numPartitions;
  if (detail::shardedAxis(shape, op) < 0) return 1;
  detail::localShape(shape, partitions, op);  // checks divisibility
  return partitions;
}

template <class T>
Tensor fromHost(const Platform& platform, Shape shape, const T* values, size_t n) {
  if (static_cast<int64_t>(n) != shape.count())
    throw Error("[fromValues] " + std::to_string(n) + " values for " + shape.str() + " (" +
                std::to_string(shape.count()) + " elements)");
  const int partitions = partitionsFor(platform, shape, "fromValues");
  auto buffer = std::make_shared<DeviceBuffer>();
  if (partitions == 1) {
    auto host = std::make_shared<Storage>(shape.byteSize());
    detail::encodeValues(shape.dtype(), values, host->data, n);
    buffer->storage = detail::onPlatform(platform, std::move(host));
  } else {
    Storage full(shape.byteSize());
    detail::encodeValues(shape.dtype(), values, full.data, n);
    const Blocks b = blocksOf(shape, detail::shardedAxis(shape, "fromValues"), partitions);
    const size_t p = static_cast<size_t>(platform.partitionIndex());
    buffer->storage = std::make_shared<Storage>(b.outer * b.inner);
    for (size_t i = 0; i < b.outer; ++i)
      std::memcpy(static_cast<char*>(buffer->storage->data) + i * b.inner,
                  static_cast<const char*>(full.data) + (i * partitions + p) * b.inner, b.inner);
    buffer->partitions = partitions;
  }
  return detail::TensorAccess::bound(shape, std::move(buffer), Memory::device);
}

template <class T>
Tensor fromLocal(const Platform& platform, Shape shape, const T* values, size_t n) {
  const int partitions = partitionsFor(platform, shape, "fromShard");
  const Shape local = detail::localShape(shape, partitions, "fromShard");
  if (static_cast<int64_t>(n) != local.count())
    throw Error("[fromShard] " + std::to_string(n) + " values for the shard " + local.str() + " (" +
                std::to_string(local.count()) + " elements) of " + shape.str());
  auto buffer = std::make_shared<DeviceBuffer>();
  auto host = std::make_shared<Storage>(local.byteSize());
  detail::encodeValues(shape.dtype(), values, host->data, n);
  buffer->storage = detail::onPlatform(platform, std::move(host));
  buffer->partitions = partitions;
  return detail::TensorAccess::bound(shape, std::move(buffer), Memory::device);
}

// The global bytes of a bound tensor: its storage, or the shards of every partition gathered.
std::shared_ptr<Storage> globalStorage(const DeviceBuffer& buffer, const Shape& shape, const std::string& op) {
  Storage& s = detail::liveStorage(buffer, op, shape);
  if (buffer.partitions <= 1) return detail::onHost(buffer.storage);
  const int partitions = buffer.partitions;
  const Blocks b = blocksOf(shape, detail::shardedAxis(shape, op), partitions);
  std::vector<char> all(s.bytes * static_cast<size_t>(partitions));
  detail::mpi::allGatherBytes(s.data, all.data(), s.bytes, partitions);
  auto out = std::make_shared<Storage>(shape.byteSize());
  for (size_t p = 0; p < static_cast<size_t>(partitions); ++p)
    for (size_t i = 0; i < b.outer; ++i)
      std::memcpy(static_cast<char*>(out->data) + (i * partitions + p) * b.inner, all.data() + p * s.bytes + i * b.inner,
                  b.inner);
  return out;
}

template <class T>
std::vector<T> decodeAll(const Shape& shape, const void* data) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(shape.count()));
    detail::decodeValues(shape.dtype(), data, bytes.data(), bytes.size());
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<size_t>(shape.count()));
    detail::decodeValues(shape.dtype(), data, out.data(), out.size());
    return out;
  }
}
}  // namespace

Tensor Tensor::fromShard(const Platform& p, Shape s, const std::vector<float>& v) { return fromLocal(p, s, v.data(), v.size()); }

template <class T>
  requires(std::is_arithmetic_v<T> && !std::is_same_v<T, float>)
Tensor Tensor::fromShard(const Platform& p, Shape s, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(v.begin(), v.end());
    return fromLocal(p, s, bytes.data(), bytes.size());
  } else {
    return fromLocal(p, s, v.data(), v.size());
  }
}

Shape Tensor::localShape() const {
  return buffer_ ? detail::localShape(shape_, buffer_->partitions, "localShape") : shape_;
}

Tensor Tensor::local() const {
  if (!buffer_) throw Error("[local] " + str() + " is not bound to a buffer (traced values live inside compile)");
  if (buffer_->partitions <= 1) return *this;
  detail::liveStorage(*buffer_, "local", shape_);  // throws when donated
  auto buffer = std::make_shared<DeviceBuffer>();
  buffer->storage = buffer_->storage;
  buffer->memory = buffer_->memory;
  return detail::TensorAccess::bound(localShape(), std::move(buffer), buffer_->memory);
}

template <class T>
std::vector<T> Tensor::localToVector() const {
  if (!buffer_) throw Error("[localToVector] " + str() + " is not bound to a buffer (traced values live inside compile)");
  detail::liveStorage(*buffer_, "localToVector", shape_);
  return decodeAll<T>(localShape(), detail::onHost(buffer_->storage)->data);
}

Tensor::Tensor(Shape shape) : shape_(shape), identity_(nextIdentity++) {}

Tensor Tensor::fromValues(const Platform& p, Shape s, const std::vector<float>& v) {
  return fromHost(p, s, v.data(), v.size());
}

template <class T>
  requires(std::is_arithmetic_v<T> && !std::is_same_v<T, float>)
Tensor Tensor::fromValues(const Platform& p, Shape s, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(v.begin(), v.end());
    return fromHost(p, s, bytes.data(), bytes.size());
  } else {
    return fromHost(p, s, v.data(), v.size());
  }
}

Tensor Tensor::fromBytes(const Platform& platform, Shape shape, const void* data, size_t bytes) {
  if (bytes != shape.byteSize())
    throw Error("[fromBytes] " + std::to_string(bytes) + " bytes for " + shape.str() + " (" +
                std::to_string(shape.byteSize()) + " bytes)");
  auto buffer = std::make_shared<DeviceBuffer>();
  auto host = std::make_shared<Storage>(bytes);
  if (bytes) std::memcpy(host->data, data, bytes);
  buffer->storage = detail::onPlatform(platform, std::move(host));
  return detail::TensorAccess::bound(shape, std::move(buffer), Memory::device);
}

Tensor Tensor::fromExternal(const Platform& platform, Shape shape, const void* data, std::shared_ptr<const void> owner) {
  const size_t bytes = shape.byteSize();
  const size_t align = sizeOf(shape.dtype());
  if (bytes && !data) throw Error("[fromExternal] null data for " + shape.str());
  if (reinterpret_cast<uintptr_t>(data) % align != 0)
    throw Error("[fromExternal] data for " + shape.str() + " is not aligned to its element size (" +
                std::to_string(align) + " bytes)");
  auto buffer = std::make_shared<DeviceBuffer>();
  // On a GPU the bytes are copied to the device (mapped weights stay mapped on the CPU only).
  buffer->storage = detail::onPlatform(platform, std::make_shared<Storage>(data, bytes, std::move(owner)));
  return detail::TensorAccess::bound(shape, std::move(buffer), Memory::device);
}

Memory Tensor::memory() const { return buffer_ ? buffer_->memory : memory_; }

const void* Tensor::bufferAddress() const {
  if (!buffer_) throw Error("[bufferAddress] " + str() + " is not bound to a buffer");
  return detail::liveStorage(*buffer_, "bufferAddress", shape_).data;
}

std::vector<uint8_t> Tensor::toBytes() const {
  if (!buffer_) throw Error("[toBytes] " + str() + " is not bound to a buffer (traced values live inside compile)");
  auto s = globalStorage(*buffer_, shape_, "toBytes");
  const auto* p = static_cast<const uint8_t*>(s->data);
  return std::vector<uint8_t>(p, p + shape_.byteSize());
}

template <class T>
std::vector<T> Tensor::toVector() const {
  if (!buffer_) throw Error("[toVector] " + str() + " is not bound to a buffer (traced values live inside compile)");
  auto s = globalStorage(*buffer_, shape_, "toVector");
  return decodeAll<T>(shape_, s->data);
}

#define RADIX_INSTANTIATE(T) \
  template std::vector<T> Tensor::toVector<T>() const; template std::vector<T> Tensor::localToVector<T>() const;
RADIX_HOST_TYPES(RADIX_INSTANTIATE)
template std::vector<bool> Tensor::toVector<bool>() const;
template std::vector<bool> Tensor::localToVector<bool>() const;
#undef RADIX_INSTANTIATE
#define RADIX_INSTANTIATE(T) \
  template Tensor Tensor::fromValues<T>(const Platform&, Shape, const std::vector<T>&); \
  template Tensor Tensor::fromShard<T>(const Platform&, Shape, const std::vector<T>&);
RADIX_HOST_TYPES_BUT_FLOAT(RADIX_INSTANTIATE)
template Tensor Tensor::fromValues<bool>(const Platform&, Shape, const std::vector<bool>&);
template Tensor Tensor::fromShard<bool>(const Platform&, Shape, const std::vector<bool>&);
#undef RADIX_INSTANTIATE

Tensor Tensor::withTags(std::initializer_list<Tag> tags) const {
  Tensor t = *this;
  t.shape_ = shape_.withTags(tags);
  return t;
}

Tensor Tensor::withTags(const std::vector<Tag>& tags) const {
  Tensor t = *this;
  t.shape_ = shape_.withTags(tags);
  return t;
}

Tensor Tensor::withTag(Axis axis, Tag tag) const {
  Tensor t = *this;
  t.shape_ = shape_.withTag(shape_.axis(axis, "withTag"), tag);
  return t;
}

Tensor Tensor::withSharding(std::initializer_list<Axis> axes) const {
  Tensor t = *this;
  t.shape_ = shape_.withSharding(axes);
  return t;
}

Tensor Tensor::toMemory(Memory memory) const {
  Tensor t = *this;
  t.memory_ = memory;
  return t;
}

std::string Tensor::str() const {
  std::string s = "Tensor(" + shape_.str();
  if (buffer_) s += buffer_->donated ? ", donated" : ", bound";
  else if (context_) s += ", traced %" + std::to_string(value_);
  else s += ", placeholder #" + std::to_string(identity_);
  return s + ")";
}

}  // namespace radix

// LLVM promotes bf16 values through f32 on CPUs without native bf16 and then calls this
// libgcc/compiler-rt helper, which Debian 12's GCC 12 runtime lacks. JIT-ed and cached code
// resolve it from the process, so libradix exports it (round to nearest even).
extern "C" __attribute__((visibility("default"), weak)) __bf16 __truncsfbf2(float f) {
  return std::bit_cast<__bf16>(radix::detail::floatToBf16(f));
}
