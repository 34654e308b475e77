#pragma once
/// radix::Tensor: one handle type for device buffers (weights, inputs, results) and for traced
/// values inside radix::compile. Ops are methods named as in ZML.
#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "radix/error.h"
#include "radix/platform.h"
#include "radix/shape.h"

namespace radix {

namespace detail {
struct DeviceBuffer;
struct TensorAccess;
}  // namespace detail

/// A pair of axes, one on each side of a dotGeneral: {{-1, 0}} contracts lhs's last with rhs's first.
using AxisPair = std::pair<Axis, Axis>;

/// A static slice of one axis, as in Python: start and end count from the end when negative and
/// are clamped into [0, dim]; step >= 1. Slice{.start = 1, .end = -1, .step = 2}
struct Slice {
  /// "Up to the end of the axis", the default end.
  static constexpr int64_t kToTheEnd = INT64_MAX;
  int64_t start = 0;
  int64_t end = kToTheEnd;
  int64_t step = 1;
};

/// Padding of one axis: `low` values before, `high` after, `interior` between elements; negative
/// low/high crop. Padding{.low = 1, .high = 2}
struct Padding {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
};

/// How scatter combines an update with the value it lands on.
enum class ScatterMode {
  /// Sums: duplicate indices add up.
  add,
  /// Overwrites: with duplicate indices, the last update in row-major order of `updates` wins.
  replace,
};

class Tensor;
struct DynSlice;

/// A tensor. Bound tensors hold a buffer; traced tensors are values of the function being
/// compiled. Ops are only valid on traced tensors (inside radix::compile / radix::call).
class Tensor {
 public:
  using Loc = std::source_location;

  /// An empty scalar placeholder; useful as a default member value.
  Tensor() = default;
  /// A shape-only placeholder with a fresh identity: pass it to radix::compile to trace without
  /// allocating. Tensor(Shape({2,3}, DType::f32)).shape() -> {2,3}:f32
  explicit Tensor(Shape shape);

  /// Copies host values into a new buffer, converting to the shape's dtype.
  /// Tensor::fromValues(cpu, Shape({2}, DType::f16), {1, 2}) -> {2}:f16 holding 1, 2
  static Tensor fromValues(const Platform& platform, Shape shape, const std::vector<float>& values);
  /// Same from any arithmetic host type (bool, int8..int64, uint8..uint64, double; exact for
  /// 64-bit integers). Out-of-range values saturate, NaN becomes 0 in integer dtypes:
  /// fromValues(cpu, Shape({2}, DType::u8), std::vector<int>{-1, 300}) -> {2}:u8 holding 0, 255
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, float>)
  static Tensor fromValues(const Platform& platform, Shape shape, const std::vector<T>& values);
  /// Copies raw bytes (already in the shape's dtype, row-major) into a new buffer.
  static Tensor fromBytes(const Platform& platform, Shape shape, const void* data, size_t bytes);

  /// The shape: dims, dtype, tags, sharding.
  const Shape& shape() const { return shape_; }
  /// Element type of the shape.
  DType dtype() const { return shape_.dtype(); }
  /// Number of axes: {2,3} -> 2
  int64_t rank() const { return shape_.rank(); }
  /// Size of one axis: t.dim("d")
  int64_t dim(Axis axis) const { return shape_.dim(axis); }
  /// True for a tensor bound to a buffer (weights, inputs, results).
  bool isBound() const { return buffer_ != nullptr; }
  /// True for a value of the function being traced.
  bool isTraced() const { return context_ != 0; }
  /// The memory kind of a bound tensor, or the one requested for a traced result.
  Memory memory() const;
  /// Address of a bound tensor's data (for tests of donation); throws if not bound or donated.
  const void* bufferAddress() const;

  /// Copies a bound tensor to the host, converting each element to T (any arithmetic type: bool,
  /// int8..int64, uint8..uint64, float, double) as convert() would: saturating, NaN -> 0.
  /// {2}:f16 holding 1,2 .toVector<float>() -> {1.f, 2.f}
  template <class T>
  std::vector<T> toVector() const;
  /// Raw bytes of a bound tensor in its dtype.
  std::vector<uint8_t> toBytes() const;

  /// Same data, new tags: {2,8}.withTags({"b","d"}) -> {b=2,d=8}
  Tensor withTags(std::initializer_list<Tag> tags) const;
  /// Same data, axes marked as sharded: {16,8}.withSharding({0})
  Tensor withSharding(std::initializer_list<Axis> axes) const;

  // ---- elementwise, binary (strict broadcasting: a scalar side, or equal tag lists where
  // one side has size 1) ----
  /// {2,3} + {2,3} -> {2,3}; {2,3} + {} -> {2,3}; {2,3} + {1,3} -> {2,3}
  Tensor add(const Tensor& other, Loc loc = Loc::current()) const;
  /// {2,3} - {2,3} -> {2,3}
  Tensor sub(const Tensor& other, Loc loc = Loc::current()) const;
  /// {2,3} * {2,3} -> {2,3}
  Tensor mul(const Tensor& other, Loc loc = Loc::current()) const;
  /// {2,3} / {2,3} -> {2,3} (integer division truncates)
  Tensor div(const Tensor& other, Loc loc = Loc::current()) const;
  /// max({2,3}, {2,3}) -> {2,3}
  Tensor maximum(const Tensor& other, Loc loc = Loc::current()) const;
  /// min({2,3}, {2,3}) -> {2,3}
  Tensor minimum(const Tensor& other, Loc loc = Loc::current()) const;

  // ---- elementwise, unary ----
  /// -x: {3}:f32 -> {3}:f32
  Tensor neg(Loc loc = Loc::current()) const;
  /// |x|: {3}:f32 -> {3}:f32
  Tensor abs(Loc loc = Loc::current()) const;
  /// e^x (float only): {3}:f16 -> {3}:f16
  Tensor exp(Loc loc = Loc::current()) const;
  /// ln x (float only)
  Tensor log(Loc loc = Loc::current()) const;
  /// tanh x (float only)
  Tensor tanh(Loc loc = Loc::current()) const;
  /// sqrt x (float only)
  Tensor sqrt(Loc loc = Loc::current()) const;
  /// 1/sqrt x (float only)
  Tensor rsqrt(Loc loc = Loc::current()) const;
  /// sin x (float only)
  Tensor sin(Loc loc = Loc::current()) const;
  /// cos x (float only)
  Tensor cos(Loc loc = Loc::current()) const;
  /// max(x, 0)
  Tensor relu(Loc loc = Loc::current()) const;
  /// 1 / (1 + e^-x) (float only)
  Tensor sigmoid(Loc loc = Loc::current()) const;
  /// Converts the element type: {3}:f32 .convert(f16) -> {3}:f16
  Tensor convert(DType dtype, Loc loc = Loc::current()) const;

  // ---- constants ----
  /// x + c with c in x's dtype: {3}:f16 .addConstant(1) -> {3}:f16
  Tensor addConstant(double value, Loc loc = Loc::current()) const;
  /// x * c with c in x's dtype
  Tensor mulConstant(double value, Loc loc = Loc::current()) const;
  /// A traced constant filled with `value`: Tensor::constant(Shape({2}, f32), 1.5) -> {2}:f32
  static Tensor constant(const Shape& shape, double value, Loc loc = Loc::current());
  /// A traced scalar: Tensor::scalar(2.0, DType::f16) -> {}:f16
  static Tensor scalar(double value, DType dtype, Loc loc = Loc::current());

  // ---- contractions ----
  /// Contracts pairs of axes and batches over others; result axes: batch, lhs free, rhs free.
  /// {3,2}.dotGeneral({2}, {{-1, 0}}, {}) -> {3}; {b=4,m=3,k=2}.dotGeneral({b=4,k=2,n=5},
  /// {{"k","k"}}, {{"b","b"}}) -> {b=4,m=3,n=5}. Floats accumulate in f32.
  Tensor dotGeneral(const Tensor& rhs, const std::vector<AxisPair>& contracting,
                    const std::vector<AxisPair>& batching, Loc loc = Loc::current()) const;
  /// Contracts the given tags; tags on both sides that are not contracted are batch axes.
  /// {b=4,m=3,k=2}.dot({b=4,k=2,n=5}, {"k"}) -> {b=4,m=3,n=5}
  Tensor dot(const Tensor& rhs, const std::vector<Tag>& contracting, Loc loc = Loc::current()) const;

  // ---- shapes ----
  /// Broadcasts to a larger shape, mapping axes by tag when tagged, else aligning to the right.
  /// {3}.broad({2,3}) -> {2,3}; {d=3}.broad({d=3,b=2}) -> {d=3,b=2}
  Tensor broad(const Shape& shape, Loc loc = Loc::current()) const;
  /// Broadcasts with an explicit map: axis i of x becomes axis axes[i] of the result.
  /// {3}.broadcast({3,2}, {0}) -> {3,2}
  Tensor broadcast(const Shape& shape, const std::vector<int64_t>& axes, Loc loc = Loc::current()) const;
  /// Same elements in row-major order, new dims; one dim may be -1 (inferred). Leading and trailing
  /// axes whose dims are unchanged keep their tags: {b=2,s=3,d=4}.reshape({2,-1}) -> {b=2,12}
  Tensor reshape(const std::vector<int64_t>& dims, Loc loc = Loc::current()) const;
  /// Permutes axes: result axis i is input axis perm[i]. {2,3}.transpose({1,0}) -> {3,2}
  Tensor transpose(const std::vector<Axis>& permutation, Loc loc = Loc::current()) const;
  /// Sum over an axis, kept with size 1: {b=2,d=8}.sum("d") -> {b=2,d=1}
  Tensor sum(Axis axis, Loc loc = Loc::current()) const;
  /// Max over an axis, kept with size 1: {2,8}.max(1) -> {2,1}
  Tensor max(Axis axis, Loc loc = Loc::current()) const;

  // ---- comparisons, logic and selection ----

  // ---- creation (iota, arange, linspace, masks) ----

  // ---- more reductions (multi-axis, arg, scans, softmax) ----

  // ---- more shape ops (split/merge axes, pad, slice, concatenate) ----
  /// Splits one axis into several (tags may be empty; one dim may be -1).
  /// {b=2,d=12}.splitAxis("d", {{"h", 3}, {"hd", -1}}) -> {b=2,h=3,hd=4}
  Tensor splitAxis(Axis axis, const std::vector<std::pair<Tag, int64_t>>& parts, Loc loc = Loc::current()) const;
  /// Merges adjacent axes, given in order, into one tagged axis (tag may be empty).
  /// {b=2,h=3,hd=4}.mergeAxes({"h", "hd"}, "d") -> {b=2,d=12}
  Tensor mergeAxes(const std::vector<Axis>& axes, Tag tag, Loc loc = Loc::current()) const;
  /// All axes into one untagged axis: {b=2,d=3}.flatten() -> {6}
  Tensor flatten(Loc loc = Loc::current()) const;
  /// Removes one size-1 axis: {b=2,s=1,d=3}.squeeze("s") -> {b=2,d=3}
  Tensor squeeze(Axis axis, Loc loc = Loc::current()) const;
  /// Removes every size-1 axis: {1,b=2,s=1}.squeeze() -> {b=2}
  Tensor squeeze(Loc loc = Loc::current()) const;
  /// Inserts size-1 axes with the given tags before `position` (an index in [-rank-1, rank], or a
  /// tag). {b=2,d=3}.insertAxes(1, {"h"}) -> {b=2,h=1,d=3}; insertAxes(-1, {"x"}) appends.
  Tensor insertAxes(Axis position, const std::vector<Tag>& tags, Loc loc = Loc::current()) const;
  /// Appends size-1 axes: {b=2}.appendAxes({"d"}) -> {b=2,d=1}
  Tensor appendAxes(const std::vector<Tag>& tags, Loc loc = Loc::current()) const;
  /// Renames tags: {b=2,d=3}.rename({{"d", "k"}}) -> {b=2,k=3}
  Tensor rename(const std::vector<std::pair<Tag, Tag>>& renames, Loc loc = Loc::current()) const;
  /// Swaps two axes: {b=2,s=3,d=4}.swapAxes("b", "d") -> {d=4,s=3,b=2}
  Tensor swapAxes(Axis a, Axis b, Loc loc = Loc::current()) const;
  /// Pads axes with `value` (negative low/high crop): {d=3}.pad({{"d", {.low = 1, .high = 2}}}) -> {d=6};
  /// interior 1 on {3} -> {5}
  Tensor pad(const std::vector<std::pair<Axis, Padding>>& padding, double value = 0, Loc loc = Loc::current()) const;
  /// Reverses the order of elements along axes: {b=2,d=3}.reverse({"d"}) -> {b=2,d=3}
  Tensor reverse(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// Static slice of one axis, Python-style: {b=2,d=7}.slice1d("d", {.start = 1, .end = -1, .step = 2}) -> {b=2,d=3}
  Tensor slice1d(Axis axis, Slice slice, Loc loc = Loc::current()) const;
  /// Static slices of several axes: {7,5}.slice({{0, {.start = -2}}, {1, {.step = 2}}}) -> {2,3}
  Tensor slice(const std::vector<std::pair<Axis, Slice>>& slices, Loc loc = Loc::current()) const;
  /// Picks one index of an axis (negative from the end) and drops the axis: {b=2,d=7}.choose1d("d", -1) -> {b=2}
  Tensor choose1d(Axis axis, int64_t index, Loc loc = Loc::current()) const;
  /// Picks one index of several axes: {a=2,b=3,c=4}.choose({{"a", 1}, {"c", 0}}) -> {b=3}
  Tensor choose(const std::vector<std::pair<Axis, int64_t>>& indices, Loc loc = Loc::current()) const;
  /// Concatenates along an axis; other dims, tags and dtypes must agree.
  /// concatenate({{b=2,d=3}, {b=2,d=4}}, "d") -> {b=2,d=7}
  static Tensor concatenate(const std::vector<Tensor>& tensors, Axis axis, Loc loc = Loc::current());
  /// Stacks equal shapes along a new axis tagged `tag`, inserted before `position` (as insertAxes).
  /// stack({{d=3}, {d=3}}, 0, "n") -> {n=2,d=3}
  static Tensor stack(const std::vector<Tensor>& tensors, Axis position, Tag tag, Loc loc = Loc::current());
  /// Tiles each axis n times: {2,3}.repeat({2, 1}) -> {4,3} holding x, x
  Tensor repeat(const std::vector<int64_t>& times, Loc loc = Loc::current()) const;
  /// Tiles one axis n times: {d=3}.repeat1d("d", 2) -> {d=6} holding a,b,c,a,b,c
  Tensor repeat1d(Axis axis, int64_t times, Loc loc = Loc::current()) const;
  /// Repeats each element n times along each axis: {2,3}.stutter({1, 2}) -> {2,6}
  Tensor stutter(const std::vector<int64_t>& times, Loc loc = Loc::current()) const;
  /// Repeats each element n times along one axis: {d=3}.stutter1d("d", 2) -> {d=6} holding a,a,b,b,c,c
  Tensor stutter1d(Axis axis, int64_t times, Loc loc = Loc::current()) const;
  /// Splits an axis into consecutive parts of the given sizes (summing to the dim).
  /// {d=7}.split("d", {3, 4}) -> {d=3}, {d=4}
  std::vector<Tensor> split(Axis axis, const std::vector<int64_t>& sizes, Loc loc = Loc::current()) const;
  /// Splits an axis into n equal parts; the dim must be divisible by n. {d=6}.chunkExact("d", 3) -> 3 x {d=2}
  std::vector<Tensor> chunkExact(Axis axis, int64_t n, Loc loc = Loc::current()) const;
  /// Splits an axis into parts of `size`, the last one shorter if needed. {d=7}.chunkAllowTrailing("d", 3) -> {d=3}, {d=3}, {d=1}
  std::vector<Tensor> chunkAllowTrailing(Axis axis, int64_t size, Loc loc = Loc::current()) const;
  /// Spreads one axis onto the diagonal of two new axes (zeros elsewhere).
  /// {b=2,d=3}.toDiagonal("d", {"i", "j"}) -> {b=2,i=3,j=3}
  Tensor toDiagonal(Axis axis, std::pair<Tag, Tag> tags, Loc loc = Loc::current()) const;
  /// Rank-1 tensors broadcast to the grid of all their combinations (axis i has vectors[i]'s size
  /// and tag; dtypes may differ). cartesianProduct({{x=3}, {y=2}}) -> {x=3,y=2}, {x=3,y=2}
  static std::vector<Tensor> cartesianProduct(const std::vector<Tensor>& vectors, Loc loc = Loc::current());
  /// cartesianProduct stacked along a last axis `tag` (equal dtypes).
  /// cartesianProductStacked({{x=3}, {y=2}}, "coord") -> {x=3,y=2,coord=2}
  static Tensor cartesianProductStacked(const std::vector<Tensor>& vectors, Tag tag, Loc loc = Loc::current());
  /// Shifts elements along an axis by `shift` (positive towards higher indices), wrapping around.
  /// {d=4} holding a,b,c,d .roll("d", 1) -> d,a,b,c
  Tensor roll(Axis axis, int64_t shift, Loc loc = Loc::current()) const;

  // ---- indexing (gather, scatter, dynamic slices) ----
  /// Gathers single values by integer index tensors, one per indexed axis (ZML's gatherValues):
  /// the indexed axes are replaced, at the position of the first one, by the index tensors' axes
  /// (all index tensors have the same shape). Index axes whose tag also names a non-indexed axis of
  /// x are batch axes. Indices are clamped into [0, dim - 1].
  /// {voc=50,d=8}.gather({{"voc", ids {s=5}:i32}}) -> {s=5,d=8};
  /// {b=2,s=9,d=8}.gather({{"s", {b=2,k=3}:i32}}) -> {b=2,k=3,d=8} (b batched)
  Tensor gather(const std::vector<std::pair<Axis, Tensor>>& indices, Loc loc = Loc::current()) const;
  /// Gathers slices of the given sizes starting at gathered offsets (ZML's gatherSlices): `starts`
  /// is an integer tensor whose axis tagged "coord" (else its last axis) holds one start per sliced
  /// axis; the result is starts' other (non-batch) axes followed by x's axes, sliced ones resized.
  /// Starts are clamped into [0, dim - size]; starts' axes tagged like an unsliced axis of x batch.
  /// {s=9,d=8}.gatherSlices({{"s", 3}}, {n=4,coord=1}:i32) -> {n=4,s=3,d=8}
  Tensor gatherSlices(const std::vector<std::pair<Axis, int64_t>>& sizes, const Tensor& starts,
                      Loc loc = Loc::current()) const;
  /// The reverse of gather: `updates` has the shape gather(indices) would return; each update is
  /// combined (ScatterMode) into the element its indices name. Updates whose index is out of range
  /// are dropped (as StableHLO scatter does). With duplicate indices, add sums all updates and
  /// replace keeps the last one in row-major order of `updates`.
  /// {voc=5,d=8}.scatter({{"voc", ids {s=3}:i32}}, {s=3,d=8}, ScatterMode::add) -> {voc=5,d=8}
  Tensor scatter(const std::vector<std::pair<Axis, Tensor>>& indices, const Tensor& updates, ScatterMode mode,
                 Loc loc = Loc::current()) const;
  /// Slices of static sizes at runtime offsets (scalar integer tensors), clamped into
  /// [0, dim - len]. {s=9,d=8}.dynamicSlice({{"s", {.start = pos, .len = 2}}}) -> {s=2,d=8}
  Tensor dynamicSlice(const std::vector<std::pair<Axis, DynSlice>>& slices, Loc loc = Loc::current()) const;
  /// One axis of dynamicSlice: {s=9,d=8}.dynamicSlice1d("s", {.start = pos, .len = 2}) -> {s=2,d=8}
  Tensor dynamicSlice1d(Axis axis, const DynSlice& slice, Loc loc = Loc::current()) const;
  /// Writes `update` (same rank, dims <= x's, tags agreeing) into x at runtime offsets (scalar integer
  /// tensors; axes not named start at 0), clamped into [0, dim - update dim]. In place when the result
  /// reuses x's buffer: cache.dynamicUpdateSlice({{"s", pos}}, kv {s=1,h=4,d=8}).reuseBuffer(cache)
  /// -> {s=64,h=4,d=8}
  Tensor dynamicUpdateSlice(const std::vector<std::pair<Axis, Tensor>>& offsets, const Tensor& update,
                            Loc loc = Loc::current()) const;
  /// One axis of dynamicUpdateSlice: {s=64,d=8}.dynamicUpdateSlice1d("s", pos, {s=1,d=8}) -> {s=64,d=8}
  Tensor dynamicUpdateSlice1d(Axis axis, const Tensor& offset, const Tensor& update, Loc loc = Loc::current()) const;

  // ---- convolution and pooling ----

  // ---- sort and sampling ----

  // ---- buffers ----
  /// Says that this result may take the buffer of function argument `origin` (donation).
  /// Shapes must have equal dims and dtype. y.reuseBuffer(x)
  Tensor reuseBuffer(const Tensor& origin, Loc loc = Loc::current()) const;
  /// Marks a result to be returned in another memory: y.toMemory(Memory::hostPinned)
  Tensor toMemory(Memory memory) const;

  /// "Tensor({2,3}:f32, bound)" or "Tensor({2,3}:f32, traced %5)"
  std::string str() const;

 private:
  friend struct detail::TensorAccess;
  Shape shape_;
  std::shared_ptr<detail::DeviceBuffer> buffer_;  // bound
  uint64_t context_ = 0;                          // serial of the tracing context; 0 = not traced
  uint32_t value_ = 0;                            // value index in that context
  uint64_t identity_ = 0;                         // placeholder identity (shape-only tensors)
  int32_t argument_ = -1;                         // >= 0: this value is argument i of its function
  int32_t donation_ = -1;                         // >= 0: result may reuse argument i's buffer
  Memory memory_ = Memory::device;
};

/// A slice of one axis starting at a runtime offset: `start` is a scalar integer tensor, `len` static.
struct DynSlice {
  Tensor start;
  int64_t len = 1;
};

/// The host element types of fromValues and toVector (besides bool, handled apart).
#define RADIX_HOST_TYPES_BUT_FLOAT(X) \
  X(double) X(signed char) X(short) X(int) X(long) X(long long) X(unsigned char) \
  X(unsigned short) X(unsigned int) X(unsigned long) X(unsigned long long)
#define RADIX_HOST_TYPES(X) X(float) RADIX_HOST_TYPES_BUT_FLOAT(X)

#define RADIX_EXTERN_HOST(T)                                   \
  extern template std::vector<T> Tensor::toVector<T>() const; \
  extern template Tensor Tensor::fromValues<T>(const Platform&, Shape, const std::vector<T>&);
RADIX_HOST_TYPES_BUT_FLOAT(RADIX_EXTERN_HOST)
#undef RADIX_EXTERN_HOST
extern template std::vector<float> Tensor::toVector<float>() const;
extern template std::vector<bool> Tensor::toVector<bool>() const;
extern template Tensor Tensor::fromValues<bool>(const Platform&, Shape, const std::vector<bool>&);

}  // namespace radix
