// The GGUF reader (v2 and v3; v1 and big-endian files are rejected): header, metadata key/values
// of every type (nested arrays included), tensor infos, general.alignment, and the sizes and block
// layouts of every ggml type, so that quantized tensors are located and validated (Q8_0 .. Q6_K
// are computable: TensorInfo::quant; the others are only listed). Every count is bounded by the
// bytes left in the file before anything is allocated for it; every error names the byte offset
// and the field.
#include <algorithm>
#include <bit>
#include <cstring>
#include <set>
#include <string_view>

#include "io/gguf.h"
#include "io/io.h"

namespace radix::io {

// Type ids, names, elements per block and bytes per block (ggml.h / ggml-common.h).
const GgmlType kGgmlTypes[32] = {
    {0, "F32", 1, 4, DType::f32},      {1, "F16", 1, 2, DType::f16},     {2, "Q4_0", 32, 18, {}},
    {3, "Q4_1", 32, 20, {}},           {6, "Q5_0", 32, 22, {}},          {7, "Q5_1", 32, 24, {}},
    {8, "Q8_0", 32, 34, {}},           {9, "Q8_1", 32, 36, {}},          {10, "Q2_K", 256, 84, {}},
    {11, "Q3_K", 256, 110, {}},        {12, "Q4_K", 256, 144, {}},       {13, "Q5_K", 256, 176, {}},
    {14, "Q6_K", 256, 210, {}},        {15, "Q8_K", 256, 292, {}},       {16, "IQ2_XXS", 256, 66, {}},
    {17, "IQ2_XS", 256, 74, {}},       {18, "IQ3_XXS", 256, 98, {}},     {19, "IQ1_S", 256, 50, {}},
    {20, "IQ4_NL", 32, 18, {}},        {21, "IQ3_S", 256, 110, {}},      {22, "IQ2_S", 256, 82, {}},
    {23, "IQ4_XS", 256, 136, {}},      {24, "I8", 1, 1, DType::i8},      {25, "I16", 1, 2, DType::i16},
    {26, "I32", 1, 4, DType::i32},     {27, "I64", 1, 8, DType::i64},    {28, "F64", 1, 8, DType::f64},
    {29, "IQ1_M", 256, 56, {}},        {30, "BF16", 1, 2, DType::bf16},  {34, "TQ1_0", 256, 54, {}},
    {35, "TQ2_0", 256, 66, {}},        {39, "MXFP4", 32, 17, {}},
};

const GgmlType* ggmlType(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

const GgmlType* ggmlType(std::string_view name) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

/// The ggml types Radix computes in without decoding them first.
QuantType computableQuant(uint32_t id) {
  switch (id) {
    case 2: return QuantType::q4_0;
    case 3: return QuantType::q4_1;
    case 6: return QuantType::q5_0;
    case 7: return QuantType::q5_1;
    case 8: return QuantType::q8_0;
    case 12: return QuantType::q4_k;
    case 13: return QuantType::q5_k;
    case 14: return QuantType::q6_k;
  }
  return QuantType::none;
}

enum : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12, kNumValueTypes = 13,
};

const char* valueTypeName(uint32_t t) {
  static const char* names[] = {"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32", "FLOAT32",
                                "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};
  return t < kNumValueTypes ? names[t] : "?";
}

/// Smallest encoded size of one value of a type (bounds array counts by the bytes left).
uint64_t minValueSize(uint32_t t) {
  switch (t) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    case kString: return 8;   // the length
    case kArray: return 12;   // element type + count
  }
  return 1;
}

constexpr int kMaxArrayDepth = 8;

class Reader {
 public:
  Reader(const Source& src) : src_(src) {}

  [[noreturn]] void fail(uint64_t offset, const std::string& what) const {
    throw Error("[gguf] " + src_.label + ": offset " + std::to_string(offset) + ": " + what);
  }
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return src_.size - pos_; }
  void need(uint64_t n, const std::string& field) const {
    if (n > left())
      fail(pos_, field + ": needs " + std::to_string(n) + " bytes, " + std::to_string(left()) + " left in the file (truncated?)");
  }
  template <class T>
  T get(const std::string& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, src_.data + pos_, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const std::string& field) {
    const uint64_t at = pos_;
    const uint64_t n = get<uint64_t>(field + " (string length)");
    if (n > left())
      fail(at, field + ": string length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(left()) +
                   " bytes left)");
    std::string s(reinterpret_cast<const char*>(src_.data + pos_), n);
    pos_ += n;
    return s;
  }
  /// A count of items of at least `minSize` bytes each, bounded by the bytes left.
  uint64_t count(const std::string& field, uint64_t minSize) {
    const uint64_t at = pos_;
    const uint64_t n = get<uint64_t>(field);
    if (minSize && n > left() / minSize)
      fail(at, field + " " + std::to_string(n) + " cannot fit in the " + std::to_string(left()) +
                   " bytes left (each takes at least " + std::to_string(minSize) + ")");
    return n;
  }
  MetaValue value(uint32_t type, const std::string& field, int depth) {
    switch (type) {
      case kU8: return MetaValue(static_cast<int64_t>(get<uint8_t>(field)));
      case kI8: return MetaValue(static_cast<int64_t>(get<int8_t>(field)));
      case kU16: return MetaValue(static_cast<int64_t>(get<uint16_t>(field)));
      case kI16: return MetaValue(static_cast<int64_t>(get<int16_t>(field)));
      case kU32: return MetaValue(static_cast<int64_t>(get<uint32_t>(field)));
      case kI32: return MetaValue(static_cast<int64_t>(get<int32_t>(field)));
      case kU64: return MetaValue::fromUnsigned(get<uint64_t>(field));
      case kI64: return MetaValue(get<int64_t>(field));
      case kF32: return MetaValue(static_cast<double>(get<float>(field)));
      case kF64: return MetaValue(get<double>(field));
      case kBool: {
        const uint64_t at = pos_;
        const uint8_t b = get<uint8_t>(field);
        if (b > 1) fail(at, field + ": BOOL value " + std::to_string(b) + " is neither 0 nor 1");
        return MetaValue(b != 0);
      }
      case kString: return MetaValue(string(field));
      case kArray: {
        if (depth >= kMaxArrayDepth) fail(pos_, field + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
        const uint64_t at = pos_;
        const uint32_t elem = get<uint32_t>(field + " (array element type)");
        if (elem >= kNumValueTypes) fail(at, field + ": unknown array element type " + std::to_string(elem));
        const uint64_t n = count(field + " (array count)", minValueSize(elem));
        std::vector<MetaValue> items;
        items.reserve(n);
        for (uint64_t i = 0; i < n; ++i) items.push_back(value(elem, field + "[" + std::to_string(i) + "]", depth + 1));
        return MetaValue(std::move(items));
      }
    }
    fail(pos_ - 4, field + ": unknown value type " + std::to_string(type));
  }
  void seek(uint64_t p) { pos_ = p; }

 private:
  const Source& src_;
  uint64_t pos_ = 0;
};

}  // namespace

void parseGguf(Checkpoint::Impl& impl, size_t sourceIndex) {
  const Source& src = impl.sources[sourceIndex];
  Reader r(src);
  if (src.size < 4 || std::memcmp(src.data, "GGUF", 4) != 0) {
    std::string got;
    for (size_t i = 0; i < std::min<size_t>(4, src.size); ++i) got += src.data[i] >= 0x20 && src.data[i] < 0x7f ? char(src.data[i]) : '?';
    r.fail(0, "magic: expected \"GGUF\", found \"" + got + "\"");
  }
  r.seek(4);
  const uint32_t version = r.get<uint32_t>("version");
  if (version == 0x02000000u || version == 0x03000000u)
    r.fail(4, "version: a big-endian GGUF file (version " + std::to_string(__builtin_bswap32(version)) +
                  " byte-swapped); only little-endian files are supported");
  if (version == 1) r.fail(4, "version 1 is not supported (GGUF v1 predates August 2023; convert it to v3)");
  if (version != 2 && version != 3) r.fail(4, "version " + std::to_string(version) + " is not supported (2 or 3)");
  // Minimal sizes: a tensor info is a name length, n_dims, type and offset; a key/value a key
  // length, a type and at least one byte.
  const uint64_t numTensors = r.count("tensor_count", 8 + 4 + 4 + 8);
  const uint64_t numKv = r.count("metadata_kv_count", 8 + 4 + 1);

  uint64_t alignment = 32;
  for (uint64_t i = 0; i < numKv; ++i) {
    const uint64_t at = r.pos();
    const std::string key = r.string("metadata key " + std::to_string(i));
    const std::string field = "metadata \"" + key + "\"";
    const uint64_t typeAt = r.pos();
    const uint32_t type = r.get<uint32_t>(field + " (value type)");
    if (type >= kNumValueTypes) r.fail(typeAt, field + ": unknown value type " + std::to_string(type));
    const uint64_t valueAt = r.pos();
    MetaValue v = r.value(type, field, 0);
    if (impl.metadata.count(key)) r.fail(at, field + ": duplicate key");
    if (key == "general.alignment") {
      if (type != kU32 && type != kU64 && type != kI32 && type != kU16 && type != kU8)
        r.fail(valueAt, field + ": a " + std::string(valueTypeName(type)) + ", expected UINT32");
      const int64_t a = v.asInt();
      if (a <= 0 || (a & (a - 1)) != 0 || a > (1 << 20))
        r.fail(valueAt, field + ": " + std::to_string(a) + " is not a power of two in [1, 2^20]");
      alignment = static_cast<uint64_t>(a);
    }
    v.describedAs(key, "gguf");
    impl.metadata.emplace(key, std::move(v));
  }

  struct Info {
    TensorInfo info;
    uint64_t relative;  // offset inside the data section
    uint64_t at;        // where its info starts (for errors)
  };
  std::vector<Info> infos;
  infos.reserve(numTensors);
  std::set<std::string> names;
  for (uint64_t i = 0; i < numTensors; ++i) {
    const uint64_t at = r.pos();
    Info t;
    t.at = at;
    t.info.name = r.string("tensor " + std::to_string(i) + " name");
    const std::string field = "tensor " + quotedName(t.info.name);
    if (!names.insert(t.info.name).second) r.fail(at, field + ": duplicate tensor name");
    const uint64_t dimsAt = r.pos();
    const uint32_t nDims = r.get<uint32_t>(field + " n_dims");
    if (nDims > kMaxGgufDims) r.fail(dimsAt, field + ": n_dims " + std::to_string(nDims) + " exceeds ggml's " + std::to_string(kMaxGgufDims));
    std::vector<int64_t> ne(nDims);
    for (uint32_t d = 0; d < nDims; ++d) {
      const uint64_t neAt = r.pos();
      const uint64_t n = r.get<uint64_t>(field + " ne[" + std::to_string(d) + "]");
      if (n > static_cast<uint64_t>(INT64_MAX)) r.fail(neAt, field + ": ne[" + std::to_string(d) + "] = " + std::to_string(n) + " is negative as int64");
      ne[d] = static_cast<int64_t>(n);
    }
    const uint64_t typeAt = r.pos();
    const uint32_t typeId = r.get<uint32_t>(field + " type");
    const GgmlType* type = ggmlType(typeId);
    if (!type) r.fail(typeAt, field + ": unknown or removed ggml type " + std::to_string(typeId));
    const uint64_t offAt = r.pos();
    t.relative = r.get<uint64_t>(field + " offset");
    if (t.relative % alignment != 0)
      r.fail(offAt, field + ": offset " + std::to_string(t.relative) + " is not a multiple of general.alignment " + std::to_string(alignment));
    // Size: ne[0] must hold whole blocks; bytes = ne[0] / block * blockBytes * ne[1] * ...
    const int64_t rowLength = nDims > 0 ? ne[0] : 1;
    if (rowLength % static_cast<int64_t>(type->block) != 0)
      r.fail(dimsAt, field + ": ne[0] = " + std::to_string(rowLength) + " is not a multiple of " + std::string(type->name) +
                         "'s block of " + std::to_string(type->block));
    uint64_t bytes = static_cast<uint64_t>(rowLength) / type->block;
    bool overflow = __builtin_mul_overflow(bytes, type->blockBytes, &bytes);
    for (uint32_t d = 1; d < nDims; ++d) overflow = overflow || __builtin_mul_overflow(bytes, static_cast<uint64_t>(ne[d]), &bytes);
    if (overflow) r.fail(dimsAt, field + ": size of " + std::string(type->name) + " tensor overflows 64 bits");
    t.info.type = std::string(type->name);
    t.info.dtype = type->dtype;
    t.info.quant = computableQuant(type->id);
    t.info.bytes = bytes;
    t.info.file = src.label;
    t.info.dims.assign(ne.rbegin(), ne.rend());  // row-major: outermost first
    infos.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t dataStart = (r.pos() + alignment - 1) / alignment * alignment;
  if (dataStart > src.size && !infos.empty())
    r.fail(r.pos(), "data section: starts at " + std::to_string(dataStart) + ", past the end of the file (" + std::to_string(src.size) + " bytes)");
  const uint64_t dataSize = dataStart > src.size ? 0 : src.size - dataStart;
  std::vector<size_t> order(infos.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (Info& t : infos) {
    const std::string field = "tensor " + quotedName(t.info.name);
    if (t.relative > dataSize || t.info.bytes > dataSize - t.relative)
      r.fail(t.at, field + ": data [" + std::to_string(t.relative) + ", +" + std::to_string(t.info.bytes) +
                       ") runs past the data section (" + std::to_string(dataSize) + " bytes from offset " + std::to_string(dataStart) + ")");
    t.info.offset = dataStart + t.relative;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(infos[a].relative, infos[a].info.bytes) < std::tie(infos[b].relative, infos[b].info.bytes);
  });
  uint64_t end = 0;
  const Info* previous = nullptr;
  for (size_t i : order) {
    const Info& t = infos[i];
    if (previous && t.relative < end)
      r.fail(t.at, "tensor " + quotedName(t.info.name) + ": data [" + std::to_string(t.relative) + ", +" + std::to_string(t.info.bytes) +
                       ") overlaps tensor " + quotedName(previous->info.name) + " [" + std::to_string(previous->relative) + ", +" +
                       std::to_string(previous->info.bytes) + ")");
    if (t.info.bytes > 0 || !previous) previous = &t;
    end = std::max(end, t.relative + t.info.bytes);
  }
  for (Info& t : infos) {
    const uint8_t* p = src.data + t.info.offset;
    impl.add(std::move(t.info), p, sourceIndex);  // names are unique (checked above)
  }
}

}  // namespace radix::io
