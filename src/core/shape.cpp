#include <algorithm>
#include <mutex>
#include <ostream>
#include <sstream>
#include <unordered_set>

#include "radix/error.h"
#include "radix/shape.h"

namespace radix {

namespace {
constexpr std::array<std::string_view, 13> kNames = {"bool", "i8",  "i16", "i32", "i64", "u8", "u16",
                                                      "u32",  "u64", "f16", "bf16", "f32", "f64"};
constexpr std::array<size_t, 13> kSizes = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
}  // namespace

void checkDType(DType dtype, std::string_view op) {
  if (static_cast<size_t>(dtype) >= kNames.size())
    throw Error("[" + std::string(op) + "] invalid DType " + std::to_string(static_cast<unsigned>(dtype)) +
                " (valid: 0.." + std::to_string(kNames.size() - 1) + ")");
}

size_t sizeOf(DType dtype) {
  checkDType(dtype, "dtype");
  return kSizes[static_cast<size_t>(dtype)];
}
std::string_view name(DType dtype) {
  return static_cast<size_t>(dtype) < kNames.size() ? kNames[static_cast<size_t>(dtype)] : std::string_view("invalid");
}
bool isFloat(DType d) { return d == DType::f16 || d == DType::bf16 || d == DType::f32 || d == DType::f64; }
bool isSignedInt(DType d) { return d >= DType::i8 && d <= DType::i64; }
bool isUnsignedInt(DType d) { return d == DType::bool_ || (d >= DType::u8 && d <= DType::u64); }

DType parseDType(std::string_view text) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == text) return static_cast<DType>(i);
  throw Error("[dtype] unknown dtype \"" + std::string(text) + "\"");
}

Tag::Tag(std::string_view name) {
  if (name.empty()) return;
  static std::mutex mutex;
  static std::unordered_set<std::string> interned;
  std::lock_guard<std::mutex> lock(mutex);
  name_ = interned.emplace(name).first->c_str();
}

std::string Axis::str() const { return isTag() ? "\"" + std::string(tag_.name()) + "\"" : std::to_string(index_); }

Shape::Shape(std::initializer_list<int64_t> dims, DType dtype) : Shape(std::vector<int64_t>(dims), dtype) {}

namespace {
std::string dimsText(const std::vector<int64_t>& dims, DType dtype) {
  std::string out = "{";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  return out + "}:" + std::string(name(dtype));
}

/// Throws unless count(dims) * sizeOf(dtype) fits in Shape::kMaxBytes.
void checkSize(const std::vector<int64_t>& dims, DType dtype, std::string_view op) {
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return;
  int64_t bytes = static_cast<int64_t>(sizeOf(dtype));
  for (int64_t d : dims)
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > Shape::kMaxBytes)
      throw Error("[" + std::string(op) + "] " + dimsText(dims, dtype) + " is larger than 2^62 bytes");
}
}  // namespace

Shape::Shape(const std::vector<int64_t>& dims, DType dtype) : dtype_(dtype) {
  checkDType(dtype, "shape");
  if (dims.size() > kMaxRank)
    throw Error("[shape] rank " + std::to_string(dims.size()) + " exceeds the maximum of " + std::to_string(kMaxRank) +
                ": " + dimsText(dims, dtype));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      throw Error("[shape] negative dim " + std::to_string(dims[i]) + " at axis " + std::to_string(i) + ": " +
                  dimsText(dims, dtype));
    dims_[i] = dims[i];
  }
  checkSize(dims, dtype, "shape");
  rank_ = static_cast<uint8_t>(dims.size());
}

int64_t Shape::count() const {
  if (std::find(dims_.begin(), dims_.begin() + rank_, 0) != dims_.begin() + rank_) return 0;
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];  // cannot overflow: checked on construction
  return n;
}

int64_t Shape::hasTag(Tag tag) const {
  if (tag.empty()) return -1;
  for (int i = 0; i < rank_; ++i)
    if (tags_[i] == tag) return i;
  return -1;
}

bool Shape::isTagged() const {
  return std::any_of(tags_.begin(), tags_.begin() + rank_, [](Tag t) { return !t.empty(); });
}

int64_t Shape::axis(Axis a, std::string_view op) const {
  if (a.isTag()) {
    int64_t i = hasTag(a.tag());
    if (i < 0) throw Error("[" + std::string(op) + "] no axis tagged " + a.str() + " in " + str());
    return i;
  }
  int64_t i = a.index() < 0 ? a.index() + rank_ : a.index();
  if (i < 0 || i >= rank_)
    throw Error("[" + std::string(op) + "] axis " + a.str() + " out of range for " + str());
  return i;
}

int64_t Shape::dim(Axis a) const { return dims_[axis(a, "dim")]; }

Tag Shape::tag(int64_t index) const { return tags_[axis(index, "tag")]; }

Shape Shape::withDtype(DType dtype) const {
  checkDType(dtype, "withDtype");
  checkSize(dims(), dtype, "withDtype");
  Shape s = *this;
  s.dtype_ = dtype;
  return s;
}

Shape Shape::withTags(std::initializer_list<Tag> tags) const { return withTags(std::vector<Tag>(tags)); }

Shape Shape::withTags(const std::vector<Tag>& tags) const {
  if (static_cast<int64_t>(tags.size()) != rank_)
    throw Error("[withTags] " + std::to_string(tags.size()) + " tags for " + str());
  Shape s = *this;
  for (int i = 0; i < rank_; ++i) {
    for (int j = 0; j < i; ++j)
      if (!tags[i].empty() && tags[i] == tags[j])
        throw Error("[withTags] tag \"" + std::string(tags[i].name()) + "\" given twice for " + str());
    s.tags_[i] = tags[i];
  }
  return s;
}

Shape Shape::withTag(int64_t index, Tag tag) const {
  Shape s = *this;
  int64_t i = axis(index, "withTag");
  int64_t existing = hasTag(tag);
  if (existing >= 0 && existing != i)
    throw Error("[withTag] tag \"" + std::string(tag.name()) + "\" already names axis " + std::to_string(existing) + " of " + str());
  s.tags_[i] = tag;
  return s;
}

Shape Shape::withSharding(std::initializer_list<Axis> axes) const {
  Shape s = *this;
  for (const Axis& a : axes) s.sharding_ |= static_cast<uint8_t>(1u << axis(a, "withSharding"));
  return s;
}

std::string Shape::str() const {
  std::string out = "{";
  for (int i = 0; i < rank_; ++i) {
    if (i) out += ",";
    if (!tags_[i].empty()) out += std::string(tags_[i].name()) + "=";
    out += std::to_string(dims_[i]);
  }
  out += "}:";
  out += name(dtype_);
  return out;
}

bool operator==(const Shape& a, const Shape& b) {
  if (!a.sameDimsAndDtype(b) || a.sharding_ != b.sharding_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (!(a.tags_[i] == b.tags_[i])) return false;
  return true;
}

bool Shape::sameDimsAndDtype(const Shape& o) const {
  return rank_ == o.rank_ && dtype_ == o.dtype_ && std::equal(dims_.begin(), dims_.begin() + rank_, o.dims_.begin());
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << shape.str(); }

}  // namespace radix
