// Loading one stored tensor (io.h's loadOne / loadShard): bound zero-copy, converted among the
// float dtypes, quantized blocks validated or decoded; Checkpoint::bytes/load/loadQuantized; the
// progress bar of loadInto.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/io.h"
#include "radix/detail/trace.h"
#include "runtime/runtime.h"

namespace radix::io {
namespace {
size_t indexOf(const Checkpoint::Impl& impl, std::string_view name) {
  auto it = impl.byName.find(std::string(name));
  if (it == impl.byName.end()) {
    std::string msg = "[checkpoint] no tensor named \"" + std::string(name) + "\" in " +
                      (impl.sources.size() == 1 ? impl.sources[0].label : impl.folder) + " (" +
                      std::to_string(impl.tensors.size()) + " tensors";
    // A close name helps with prefixes: list those ending with the asked name.
    for (const TensorInfo& t : impl.tensors)
      if (t.name.ends_with(name)) {
        msg += "; did you mean \"" + t.name + "\"?";
        break;
      }
    throw Error(msg + ")");
  }
  return it->second;
}

}  // namespace

std::string dimsStr(const std::vector<int64_t>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "}";
}

namespace {

/// Touches one byte per page so that the mapping is read in now (the progress bar's work).
void prefault(const uint8_t* p, size_t n) {
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < n; i += 4096) sink = sink + p[i];
  if (n) sink = sink + p[n - 1];
  (void)sink;
}

template <DType From>
float readElement(const uint8_t* src, size_t i) {
  if constexpr (From == DType::f32) {
    float x;
    std::memcpy(&x, src + 4 * i, 4);
    return x;
  } else {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    return From == DType::f16 ? radix::detail::halfToFloat(h) : radix::detail::bf16ToFloat(h);
  }
}

template <DType To>
void writeElement(uint8_t* dst, size_t i, float x) {
  if constexpr (To == DType::f32) {
    std::memcpy(dst + 4 * i, &x, 4);
  } else {
    const uint16_t h = To == DType::f16 ? radix::detail::floatToHalf(x) : radix::detail::floatToBf16(x);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

template <DType From, DType To>
void convertRange(const uint8_t* src, uint8_t* dst, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) writeElement<To>(dst, i, readElement<From>(src, i));
}

/// The common conversions among f32, f16 and bf16 without the generic double path; false for
/// other pairs. `src` may be unaligned.
bool convertHalves(DType from, DType to, const uint8_t* src, uint8_t* dst, size_t n, ProgressBar* bar) {
  using Fn = void (*)(const uint8_t*, uint8_t*, size_t, size_t);
  Fn fn = nullptr;
  constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  if (from == f32 && to == f16) fn = convertRange<f32, f16>;
  if (from == f32 && to == bf16) fn = convertRange<f32, bf16>;
  if (from == f16 && to == f32) fn = convertRange<f16, f32>;
  if (from == bf16 && to == f32) fn = convertRange<bf16, f32>;
  if (from == f16 && to == bf16) fn = convertRange<f16, bf16>;
  if (from == bf16 && to == f16) fn = convertRange<bf16, f16>;
  if (!fn) return false;
  constexpr size_t kChunk = 1 << 16;
  for (size_t k = 0; k < n; k += kChunk) {
    const size_t m = std::min(kChunk, n - k);
    fn(src, dst, k, k + m);
    if (bar) bar->advance(m * sizeOf(from));
  }
  return true;
}

// n floats from one dtype to another; src may have any alignment.
void convertFloats(DType from, DType to, const uint8_t* src, uint8_t* dst, size_t n, ProgressBar* bar) {
  if (convertHalves(from, to, src, dst, n, bar)) return;
  constexpr size_t kChunk = 1 << 16;
  std::vector<double> values(kChunk);
  std::vector<uint8_t> aligned(kChunk * 8);
  for (size_t k = 0; k < n; k += kChunk) {
    const size_t m = std::min(kChunk, n - k);
    std::memcpy(aligned.data(), src + k * sizeOf(from), m * sizeOf(from));
    radix::detail::decodeValues<double>(from, aligned.data(), values.data(), m);
    radix::detail::encodeValues<double>(to, values.data(), dst + k * sizeOf(to), m);
    if (bar) bar->advance(m * sizeOf(from));
  }
}

}  // namespace

namespace {

/// A quantized tensor's blocks, u8 {rows, rowBytes} (all outer dims as rows), validated; or
/// decoded to `want` on the host.
Tensor loadBlocks(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want,
                  ProgressBar* bar, WeightArena* arena) {
  const TensorInfo& t = impl.tensors[i];
  const int64_t cols = t.dims.empty() ? 1 : t.dims.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < t.dims.size(); ++d) rows *= t.dims[d];  // the parser checked the size
  const int64_t stride = rowBytes(t.quant, cols);
  const uint8_t* data = impl.data[i];
  checkBlocks(t.quant, {data, static_cast<size_t>(t.bytes)}, t.name);
  if (bar) bar->advance(t.bytes);
  if (!want || *want == DType::u8)
    return Tensor::fromExternal(platform, Shape({rows, stride}, DType::u8), data, impl.sources[impl.source[i]].owner);
  if (!isFloat(*want))
    throw Error("[checkpoint] tensor \"" + t.name + "\" (" + t.type + " " + dimsStr(t.dims) + ") cannot be loaded as " +
                std::string(name(*want)) + " (its blocks as u8, or decoded to a float dtype)");
  std::vector<float> row(static_cast<size_t>(cols));
  const Shape shape(t.dims, *want);
  const WeightArena::Block out = arena ? arena->take(static_cast<size_t>(shape.byteSize())) : ownedBlock(static_cast<size_t>(shape.byteSize()));
  if (!out.data) throw Error("[checkpoint] out of memory decoding tensor \"" + t.name + "\" to " + std::string(name(*want)));
  for (int64_t r = 0; r < rows; ++r) {
    dequantizeRow(t.quant, data + r * stride, cols, row.data());
    radix::detail::encodeValues<float>(*want, row.data(), out.data + r * cols * sizeOf(*want), row.size());
  }
  return Tensor::fromExternal(platform, shape, out.data, out.owner);
}

}  // namespace

Tensor loadOne(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want, ProgressBar* bar,
               WeightArena* arena) {
  const TensorInfo& t = impl.tensors[i];
  const std::string what = "tensor \"" + t.name + "\" (" + t.type + " " + dimsStr(t.dims) + ")";
  if (t.quant != QuantType::none) return loadBlocks(impl, i, platform, want, bar, arena);
  if (!t.dtype)
    throw Error("[checkpoint] " + what + " has no Radix dtype (Radix computes in Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, "
                "Q5_K and Q6_K; read other types' raw bytes with Checkpoint::bytes)");
  if (t.dims.size() > static_cast<size_t>(Shape::kMaxRank))
    throw Error("[checkpoint] " + what + " has rank " + std::to_string(t.dims.size()) + ", more than Radix's " +
                std::to_string(Shape::kMaxRank));
  const DType from = *t.dtype;
  const DType to = want.value_or(from);
  const Shape stored(t.dims, from);
  const uint8_t* data = impl.data[i];
  const Source& src = impl.sources[impl.source[i]];
  if (to == from) {
    if (reinterpret_cast<uintptr_t>(data) % sizeOf(from) == 0) {
      if (bar && bar->active()) {
        prefault(data, t.bytes);
        bar->advance(t.bytes);
      }
      return Tensor::fromExternal(platform, stored, data, src.owner);
    }
    // Misaligned for its dtype (a header size that is not a multiple of 8): copied.
    if (bar) bar->advance(t.bytes);
    return Tensor::fromBytes(platform, stored, data, t.bytes);
  }
  if (!isFloat(from) || !isFloat(to))
    throw Error("[checkpoint] " + what + " cannot be loaded as " + std::string(name(to)) +
                " (conversions are among f16, bf16, f32 and f64)");
  const Shape shape(t.dims, to);
  const WeightArena::Block out = arena ? arena->take(static_cast<size_t>(shape.byteSize())) : ownedBlock(static_cast<size_t>(shape.byteSize()));
  if (!out.data) throw Error("[checkpoint] out of memory converting " + what + " to " + std::string(name(to)));
  convertFloats(from, to, data, out.data, static_cast<size_t>(stored.count()), bar);
  return Tensor::fromExternal(platform, shape, out.data, out.owner);
}

Tensor loadShard(const Checkpoint::Impl& impl, size_t i, const Platform& platform, std::optional<DType> want,
                 const Shape& global, int64_t axis, int parts, int part, ProgressBar* bar) {
  const TensorInfo& t = impl.tensors[i];
  const bool packed = t.quant != QuantType::none && (!want || *want == DType::u8);
  // The stored row-major array the shard is cut from: the tensor's bytes as they are (packed
  // blocks, or floats in the stored dtype), or a decoded copy of quantized blocks.
  Tensor decoded;
  const uint8_t* src = impl.data[i];
  std::vector<int64_t> dims = t.dims;
  DType from = packed ? DType::u8 : t.dtype.value_or(DType::f32);
  if (packed) {
    checkBlocks(t.quant, {src, static_cast<size_t>(t.bytes)}, t.name);
    dims = global.dims();
  } else if (t.quant != QuantType::none) {
    decoded = loadBlocks(impl, i, platform, want, nullptr, nullptr);
    src = static_cast<const uint8_t*>(decoded.bufferAddress());
    from = *want;
  } else if (!t.dtype) {
    return loadOne(impl, i, platform, want, bar);  // its error
  }
  const DType to = packed ? DType::u8 : want.value_or(from);
  if (!packed && from != to && (!isFloat(from) || !isFloat(to)))
    return loadOne(impl, i, platform, want, bar);  // its error
  size_t outer = 1, inner = sizeOf(from) * static_cast<size_t>(dims[axis] / parts);
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(dims[d]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= static_cast<size_t>(dims[d]);
  const size_t localCount = outer * inner / sizeOf(from);
  auto buffer = std::make_shared<radix::detail::DeviceBuffer>();
  buffer->storage = std::make_shared<radix::detail::Storage>(localCount * sizeOf(to));
  // The block is cut straight into the result; only a conversion goes through a stored-dtype copy.
  std::vector<uint8_t> slice(from == to ? 0 : outer * inner);
  uint8_t* cut = from == to ? static_cast<uint8_t*>(buffer->storage->data) : slice.data();
  for (size_t o = 0; o < outer; ++o)
    std::memcpy(cut + o * inner, src + (o * static_cast<size_t>(parts) + static_cast<size_t>(part)) * inner, inner);
  if (bar) bar->advance(t.bytes / static_cast<uint64_t>(parts));
  if (from != to) convertFloats(from, to, slice.data(), static_cast<uint8_t*>(buffer->storage->data), localCount, nullptr);
  buffer->partitions = parts;
  std::vector<Tag> tags;
  for (int64_t a = 0; a < global.rank(); ++a) tags.push_back(global.tag(a));
  const Shape shape = Shape(global.dims(), to).withTags(tags);
  return radix::detail::TensorAccess::bound(shape, std::move(buffer), Memory::device).withSharding({axis});
}

std::span<const uint8_t> Checkpoint::bytes(std::string_view name) const {
  const size_t i = indexOf(*impl_, name);
  return {impl_->data[i], static_cast<size_t>(impl_->tensors[i].bytes)};
}

Tensor Checkpoint::load(const Platform& platform, std::string_view name, std::optional<DType> dtype) const {
  return loadOne(*impl_, indexOf(*impl_, name), platform, dtype, nullptr);
}

QuantizedTensor Checkpoint::loadQuantized(const Platform& platform, std::string_view name) const {
  const size_t i = indexOf(*impl_, name);
  const TensorInfo& t = impl_->tensors[i];
  if (t.quant == QuantType::none)
    throw Error("[checkpoint] tensor \"" + t.name + "\" (" + t.type + " " + dimsStr(t.dims) +
                ") is not quantized in a type Radix computes in (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  QuantizedTensor q;
  q.data = loadOne(*impl_, i, platform, std::nullopt, nullptr);
  q.type = t.quant;
  q.cols = t.dims.empty() ? 1 : t.dims.back();
  return q;
}

// ---------------------------------------------------------------------------------------------
// Progress bar

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
constexpr uint64_t kBarThreshold = uint64_t{64} << 20;
}  // namespace

ProgressBar::ProgressBar(Progress mode, uint64_t total) : total_(total) {
  if (mode == Progress::automatic)
    if (const char* env = std::getenv("RADIX_PROGRESS")) {
      const std::string_view v(env);
      if (v == "on" || v == "1") mode = Progress::on;
      if (v == "off" || v == "0") mode = Progress::off;
    }
  active_ = mode == Progress::on || (mode == Progress::automatic && total >= kBarThreshold && ::isatty(2));
  start_ = last_ = now();
}

ProgressBar::~ProgressBar() {
  if (active_) draw(true);
}

void ProgressBar::advance(uint64_t bytes) {
  done_ += bytes;
  if (!active_) return;
  const double t = now();
  if (t - last_ >= 0.1) {
    last_ = t;
    draw(false);
  }
}

void ProgressBar::draw(bool final) {
  const double mib = 1024.0 * 1024.0;
  const double elapsed = std::max(now() - start_, 1e-9);
  const double rate = done_ / elapsed;
  char line[160];
  const int width = 24;
  const int filled = total_ ? static_cast<int>(width * static_cast<double>(done_) / total_) : width;
  std::string bar(std::min(filled, width), '#');
  bar.resize(width, '.');
  if (final)
    std::snprintf(line, sizeof line, "\r[load] [%s] %.1f/%.1f MiB  %.1f MiB/s  done in %.1fs\n", bar.c_str(), done_ / mib,
                  total_ / mib, rate / mib, elapsed);
  else
    std::snprintf(line, sizeof line, "\r[load] [%s] %.1f/%.1f MiB  %.1f MiB/s  ETA %.0fs", bar.c_str(), done_ / mib,
                  total_ / mib, rate / mib, rate > 0 ? (total_ - std::min(done_, total_)) / rate : 0.0);
  std::fputs(line, stderr);
  std::fflush(stderr);
}

}  // namespace radix::io
