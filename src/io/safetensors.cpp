// The safetensors reader: an 8-byte little-endian header size, a JSON header, then the data
// section. Validated as the format (huggingface/safetensors) requires: the header size bounded
// (100 MB) and inside the file, a JSON object starting with '{', no duplicate keys, each entry
// {dtype, shape, data_offsets} with offsets inside the data section, begin <= end, sizes equal to
// shape x dtype size without overflow, no overlaps and no holes (the data section is exactly
// covered), "__metadata__" a map of strings.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "io/io.h"

namespace radix::io {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeader = 100'000'000;  // the format's MAX_HEADER_SIZE

struct StDType {
  std::string_view name;
  uint64_t size;
  std::optional<DType> dtype;
};

// Every dtype of the format; F8_* are read as bytes (no Radix dtype).
constexpr StDType kDTypes[] = {
    {"F64", 8, DType::f64},  {"F32", 4, DType::f32},  {"F16", 2, DType::f16},   {"BF16", 2, DType::bf16},
    {"I64", 8, DType::i64},  {"I32", 4, DType::i32},  {"I16", 2, DType::i16},   {"I8", 1, DType::i8},
    {"U64", 8, DType::u64},  {"U32", 4, DType::u32},  {"U16", 2, DType::u16},   {"U8", 1, DType::u8},
    {"BOOL", 1, DType::bool_}, {"F8_E5M2", 1, {}},    {"F8_E4M3", 1, {}},       {"F8_E8M0", 1, {}},
};

/// A JSON value for messages: its text when short and shallow (dump() recurses), else a summary.
std::string brief(const json& j) {
  if (!j.is_structured()) {
    std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() > 80 ? s.substr(0, 80) + "..." : s;
  }
  if (j.size() > 16) return j.is_array() ? "an array of " + std::to_string(j.size()) + " values" : "an object";
  std::string s = j.is_array() ? "[" : "{";
  bool first = true;
  for (const json& e : j) {
    if (!first) s += ",";
    first = false;
    s += e.is_structured() ? (e.is_array() ? std::string("[...]") : std::string("{...}")) : brief(e);
  }
  return s + (j.is_array() ? "]" : "}");
}

struct Entry {
  std::string name;
  uint64_t begin, end;
};

}  // namespace

void parseSafetensors(Checkpoint::Impl& impl, size_t sourceIndex, bool withMetadata) {
  const Source& src = impl.sources[sourceIndex];
  const std::string where = "[safetensors] " + src.label + ": ";
  auto fail = [&](uint64_t offset, const std::string& what) -> void {
    throw Error(where + "offset " + std::to_string(offset) + ": " + what);
  };
  if (src.size < 8)
    fail(0, "header size: the file has " + std::to_string(src.size) + " bytes, a safetensors file needs at least 8");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | src.data[i];
  if (n > kMaxHeader)
    fail(0, "header size " + std::to_string(n) + " exceeds the format's limit of " + std::to_string(kMaxHeader) + " bytes");
  if (n > src.size - 8)
    fail(0, "header size " + std::to_string(n) + " runs past the end of the file (" + std::to_string(src.size) + " bytes)");
  const std::string_view text(reinterpret_cast<const char*>(src.data) + 8, n);
  if (text.empty() || text.front() != '{') fail(8, "header: not a JSON object (it must start with '{')");

  // Duplicate keys are an error (nlohmann keeps the last one silently): a stack of the keys seen
  // in each open object.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    else if (event == json::parse_event_t::object_end) keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && duplicate.empty() &&
             !keys.back().insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    fail(8 + std::min<uint64_t>(e.byte ? e.byte - 1 : 0, n), std::string("header: invalid JSON: ") + e.what());
  } catch (const json::exception& e) {
    fail(8, std::string("header: invalid JSON: ") + e.what());
  }
  if (!duplicate.empty()) fail(8, "header: duplicate key " + quotedName(duplicate));
  if (!header.is_object()) fail(8, "header: not a JSON object");

  const uint64_t dataStart = 8 + n;
  const uint64_t dataSize = src.size - dataStart;
  std::vector<Entry> entries;
  std::vector<TensorInfo> infos;
  for (auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) fail(8, "\"__metadata__\": not a JSON object of strings");
      for (auto& [key, v] : value.items()) {
        if (!v.is_string()) fail(8, "\"__metadata__\": value of " + quotedName(key) + " is not a string");
        if (withMetadata)
          impl.metadata[key] = MetaValue(v.get<std::string>()).describedAs(key, "safetensors");
      }
      continue;
    }
    const std::string field = "tensor " + quotedName(name);
    if (!value.is_object()) fail(8, field + ": not a JSON object {dtype, shape, data_offsets}");
    auto dt = value.find("dtype");
    auto sh = value.find("shape");
    auto off = value.find("data_offsets");
    if (dt == value.end() || !dt->is_string()) fail(8, field + ": \"dtype\" missing or not a string");
    if (sh == value.end() || !sh->is_array()) fail(8, field + ": \"shape\" missing or not an array");
    if (off == value.end() || !off->is_array() || off->size() != 2)
      fail(8, field + ": \"data_offsets\" missing or not an array [begin, end]");
    const std::string type = dt->get<std::string>();
    const StDType* kind = nullptr;
    for (const StDType& d : kDTypes)
      if (d.name == type) kind = &d;
    if (!kind) fail(8, field + ": unknown dtype " + quotedName(type));
    TensorInfo info;
    info.name = name;
    info.type = type;
    info.dtype = kind->dtype;
    uint64_t count = 1;
    bool overflow = false;
    for (const json& d : *sh) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
        fail(8, field + ": \"shape\" holds " + brief(d) + ", not a non-negative integer");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(INT64_MAX)) fail(8, field + ": \"shape\" dim " + std::to_string(dim) + " too large");
      overflow = overflow || __builtin_mul_overflow(count, dim, &count);
      info.dims.push_back(static_cast<int64_t>(dim));
    }
    uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(count, kind->size, &bytes);
    if (overflow) fail(8, field + ": \"shape\" " + brief(*sh) + " of " + type + " overflows 64 bits");
    uint64_t b[2];
    for (int i = 0; i < 2; ++i) {
      const json& o = (*off)[i];
      if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0))
        fail(8, field + ": \"data_offsets\" holds " + brief(o) + ", not a non-negative integer");
      b[i] = o.get<uint64_t>();
    }
    const std::string range = "[" + std::to_string(b[0]) + ", " + std::to_string(b[1]) + "]";
    if (b[0] > b[1]) fail(8, field + ": \"data_offsets\" " + range + " end before begin");
    if (b[1] > dataSize)
      fail(dataStart + std::min(b[0], dataSize), field + ": \"data_offsets\" " + range + " run past the data section (" +
                                                     std::to_string(dataSize) + " bytes)");
    if (b[1] - b[0] != bytes)
      fail(dataStart + b[0], field + ": \"data_offsets\" " + range + " hold " + std::to_string(b[1] - b[0]) +
                                 " bytes, but shape " + brief(*sh) + " of " + type + " needs " + std::to_string(bytes));
    info.bytes = bytes;
    info.file = src.label;
    info.offset = dataStart + b[0];
    entries.push_back({name, b[0], b[1]});
    infos.push_back(std::move(info));
  }

  // The data section must be covered exactly: no overlap, no hole, nothing after the last tensor.
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(entries[a].begin, entries[a].end) < std::tie(entries[b].begin, entries[b].end);
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (size_t i : order) {
    const Entry& e = entries[i];
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin < covered)
      fail(dataStart + e.begin, "tensor " + quotedName(e.name) + ": \"data_offsets\" " + range + " overlap tensor " +
                                    quotedName(previous->name) + " [" + std::to_string(previous->begin) + ", " +
                                    std::to_string(previous->end) + "]");
    if (e.begin > covered)
      fail(dataStart + covered, "tensor " + quotedName(e.name) + ": \"data_offsets\" " + range + " leave a hole of " +
                                    std::to_string(e.begin - covered) + " bytes before them (the format forbids holes)");
    covered = e.end;
    if (e.end > e.begin || !previous) previous = &e;
  }
  if (covered != dataSize)
    fail(dataStart + covered, "data section: " + std::to_string(dataSize - covered) +
                                  " bytes after the last tensor (the format forbids trailing bytes)");

  for (size_t i : order) {  // in file order
    const uint8_t* p = src.data + infos[i].offset;
    std::string name = infos[i].name;
    if (!impl.add(std::move(infos[i]), p, sourceIndex))
      throw Error(where + "tensor " + quotedName(name) + " is also stored in " + impl.tensors[impl.byName.at(name)].file);
  }
}

}  // namespace radix::io
