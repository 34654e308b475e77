#pragma once
/// Shapes: up to 8 axes, each with a size, an optional tag (interned name) and a sharding flag.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "radix/dtype.h"

namespace radix {

/// An interned axis name; two Tags with the same text compare equal by pointer.
/// Tag("b") == "b"_ax
class Tag {
 public:
  Tag() = default;
  /// Interns `name`: Tag("s").name() -> "s"
  Tag(std::string_view name);  // NOLINT: implicit so that "b" works where a Tag is expected
  Tag(const char* name) : Tag(std::string_view(name)) {}  // NOLINT
  /// The text of the tag; "" for the empty tag.
  std::string_view name() const { return name_ ? std::string_view(name_) : std::string_view(); }
  /// True for the empty (absent) tag.
  bool empty() const { return name_ == nullptr; }
  /// Interned tags compare by pointer.
  friend bool operator==(Tag a, Tag b) { return a.name_ == b.name_; }

 private:
  const char* name_ = nullptr;
};

namespace literals {
/// "b"_ax -> Tag("b")
inline Tag operator""_ax(const char* s, size_t n) { return Tag(std::string_view(s, n)); }
}  // namespace literals

/// An axis given by position (negative counts from the end) or by tag.
/// shape.axis(-1), shape.axis("d")
class Axis {
 public:
  Axis(int64_t index) : index_(index) {}  // NOLINT
  Axis(int index) : index_(index) {}      // NOLINT
  Axis(Tag tag) : tag_(tag) {}            // NOLINT
  Axis(const char* tag) : tag_(tag) {}    // NOLINT
  /// True when the axis is given by tag.
  bool isTag() const { return !tag_.empty(); }
  /// The position given (meaningful when !isTag()).
  int64_t index() const { return index_; }
  /// The tag given (empty when given by position).
  Tag tag() const { return tag_; }
  /// "-1" or "\"d\"", for error messages.
  std::string str() const;

 private:
  int64_t index_ = 0;
  Tag tag_;
};

/// Dims, dtype, tags and sharding flags of a tensor.
/// Shape({2, 8}, DType::f32).withTags({"b", "d"}).str() -> "{b=2,d=8}:f32"
class Shape {
 public:
  static constexpr int kMaxRank = 8;
  /// The largest dense buffer a shape may describe: count() * sizeOf(dtype) <= 2^62.
  static constexpr int64_t kMaxBytes = int64_t{1} << 62;

  /// A scalar f32 shape: Shape().str() -> "{}:f32"
  Shape() = default;
  /// Shape({2, 3}, DType::f16) -> {2,3}:f16; throws radix::Error if rank > 8, a dim < 0, the
  /// dtype is not a valid DType, or the buffer would exceed kMaxBytes.
  Shape(std::initializer_list<int64_t> dims, DType dtype);
  /// Shape(std::vector<int64_t>{2, 3}, DType::f16) -> {2,3}:f16
  Shape(const std::vector<int64_t>& dims, DType dtype);

  /// Number of axes: {2,3}:f32 -> 2
  int64_t rank() const { return rank_; }
  /// Size of one axis by index (negative from the end) or tag: {b=2,d=8}.dim("d") -> 8
  int64_t dim(Axis axis) const;
  /// All sizes: {2,3}.dims() -> {2, 3}
  std::vector<int64_t> dims() const { return {dims_.begin(), dims_.begin() + rank_}; }
  /// Element type: {2}:f16 .dtype() -> DType::f16
  DType dtype() const { return dtype_; }
  /// Number of elements (1 for a scalar); never overflows (see kMaxBytes).
  int64_t count() const;
  /// Bytes of a dense row-major buffer of this shape.
  size_t byteSize() const { return static_cast<size_t>(count()) * sizeOf(dtype_); }

  /// Resolves an axis to its index: {b=2,d=8}.axis("d") -> 1, .axis(-1) -> 1.
  /// Throws radix::Error("[op] ...") naming the shape when out of range or unknown.
  int64_t axis(Axis axis, std::string_view op = "axis") const;
  /// Index of `tag`, or -1: {b=2,d=8}.hasTag("d") -> 1
  int64_t hasTag(Tag tag) const;
  /// Tag of an axis by index (negative from the end); empty when untagged: {b=2,8}.tag(0) -> "b"
  Tag tag(int64_t index) const;
  /// True if any axis carries a tag.
  bool isTagged() const;

  /// Same dims, new dtype: {2}:f32 .withDtype(f16) -> {2}:f16
  Shape withDtype(DType dtype) const;
  /// Tags every axis: {2,8}.withTags({"b","d"}) -> {b=2,d=8}; empty strings leave an axis untagged.
  Shape withTags(std::initializer_list<Tag> tags) const;
  /// Same, from a vector of tags.
  Shape withTags(const std::vector<Tag>& tags) const;
  /// Sets the tag of one axis: {2,8}.withTag(1, "d") -> {2,d=8}
  Shape withTag(int64_t index, Tag tag) const;
  /// Marks axes as partitioned across devices: {16,8}.withSharding({0}) shards axis 0.
  Shape withSharding(std::initializer_list<Axis> axes) const;
  /// True if axis `index` is sharded.
  bool isSharded(int64_t index) const { return (sharding_ >> index) & 1u; }
  /// Bitmask of sharded axes (bit i for axis i).
  uint8_t shardingMask() const { return sharding_; }

  /// {b=2,s=8,d=64}:f32; untagged axes print as their size: {2,8}:f16
  std::string str() const;

  /// Equal dims, dtype, tags and sharding flags.
  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  /// Same dims and dtype, ignoring tags and sharding.
  bool sameDimsAndDtype(const Shape& other) const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  std::array<Tag, kMaxRank> tags_{};
  uint8_t rank_ = 0;
  uint8_t sharding_ = 0;
  DType dtype_ = DType::f32;
};

/// Prints like Shape::str(), for GoogleTest and iostreams.
std::ostream& operator<<(std::ostream& os, const Shape& shape);

}  // namespace radix
