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
#include "radix/loc.h"
#include "radix/platform.h"
#include "radix/shape.h"

namespace radix {

namespace detail {
struct DeviceBuffer;
struct TensorAccess;
}  // namespace detail

/// A pair of axes, one on each side of a dotGeneral: {{-1, 0}} contracts lhs's last with rhs's first.
using AxisPair = std::pair<Axis, Axis>;

/// The result of argMax / argMin (defined after Tensor).
struct ArgMax;
using ArgMin = ArgMax;
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
struct TopK;

/// A tensor. Bound tensors hold a buffer; traced tensors are values of the function being
/// compiled. Ops are only valid on traced tensors (inside radix::compile / radix::call).
class Tensor {
 public:
  using Loc = radix::Loc;

  /// An empty scalar placeholder; useful as a default member value.
  Tensor() = default;
  /// A shape-only placeholder with a fresh identity: pass it to radix::compile to trace without
  /// allocating. Tensor(Shape({2,3}, DType::f32)).shape() -> {2,3}:f32
  explicit Tensor(Shape shape);

  /// Copies host values into a new buffer, converting to the shape's dtype. On a platform sharded
  /// over processes (docs/sharding.md), a shape with a sharded axis keeps only this process's shard.
  /// Tensor::fromValues(cpu, Shape({2}, DType::f16), {1, 2}) -> {2}:f16 holding 1, 2
  static Tensor fromValues(const Platform& platform, Shape shape, const std::vector<float>& values);
  /// Same from any arithmetic host type (bool, int8..int64, uint8..uint64, double; exact for
  /// 64-bit integers). Out-of-range values saturate, NaN becomes 0 in integer dtypes:
  /// fromValues(cpu, Shape({2}, DType::u8), std::vector<int>{-1, 300}) -> {2}:u8 holding 0, 255
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, float>)
  static Tensor fromValues(const Platform& platform, Shape shape, const std::vector<T>& values);
  /// Binds data that exists only per process: `localValues` are this process's shard of the global
  /// shape, whose sharded axis is split over the platform's numPartitions (rank % numPartitions
  /// holds block rank % numPartitions). On an unsharded platform it is fromValues.
  /// Tensor::fromShard(cpu2, Shape({8, 4}, f32).withSharding({0}), sixteenValues) -> {8,4}:f32, local {4,4}
  static Tensor fromShard(const Platform& platform, Shape globalShape, const std::vector<float>& localValues);
  /// Same from any arithmetic host type: fromShard(cpu2, Shape({4}, i32).withSharding({0}), std::vector<int>{1, 2})
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, float>)
  static Tensor fromShard(const Platform& platform, Shape globalShape, const std::vector<T>& localValues);
  /// Copies raw bytes (already in the shape's dtype, row-major) into a new buffer.
  static Tensor fromBytes(const Platform& platform, Shape shape, const void* data, size_t bytes);
  /// Binds memory the caller owns, without copying (zero-copy weights, e.g. an mmapped
  /// checkpoint): `data` holds shape.byteSize() bytes in the shape's dtype, row-major, aligned at
  /// least to the element size; `owner` keeps them alive while any Tensor uses them. The bytes are
  /// never written: donating such a tensor (reuseBuffer) copies them first.
  /// Tensor::fromExternal(cpu, Shape({768}, f32), mapped + off, mapping) -> {768}:f32
  static Tensor fromExternal(const Platform& platform, Shape shape, const void* data, std::shared_ptr<const void> owner);

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
  /// int8..int64, uint8..uint64, float, double) as convert() would: saturating, NaN -> 0. A tensor
  /// sharded over processes is gathered: every process gets the global array (collective: call it
  /// on every process of the partition group).
  /// {2}:f16 holding 1,2 .toVector<float>() -> {1.f, 2.f}
  template <class T>
  std::vector<T> toVector() const;
  /// Raw bytes of a bound tensor in its dtype (a sharded one gathered, as toVector).
  std::vector<uint8_t> toBytes() const;
  /// The shape of the part this process holds: the global shape, its sharded axis divided by the
  /// number of partitions for a tensor sharded over processes. {8,4} sharded on 0 over 2 -> {4,4}
  Shape localShape() const;
  /// This process's shard only, converted as toVector (the whole tensor when it is not sharded).
  template <class T>
  std::vector<T> localToVector() const;
  /// This process's shard as a tensor of its own: the local shape, no sharding flags, the same
  /// buffer (no copy). Per-process code (explicit collectives, a tensor-parallel model) takes
  /// its weights this way. An unsharded tensor is returned as is.
  /// {8,4} sharded on 0 over 2 .local() -> {4,4}
  Tensor local() const;

  /// Same data, new tags: {2,8}.withTags({"b","d"}) -> {b=2,d=8}
  Tensor withTags(std::initializer_list<Tag> tags) const;
  /// Same from a vector: {2,8}.withTags(std::vector<Tag>{"b","d"}) -> {b=2,d=8}
  Tensor withTags(const std::vector<Tag>& tags) const;
  /// Same data, one axis (re)tagged: {b=2,8}.withTag(-1, "d") -> {b=2,d=8}
  Tensor withTag(Axis axis, Tag tag) const;
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
  /// {2,3} / {2,3} -> {2,3}; integers truncate, and as XLA: x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN
  Tensor div(const Tensor& other, Loc loc = Loc::current()) const;
  /// max({2,3}, {2,3}) -> {2,3}
  Tensor maximum(const Tensor& other, Loc loc = Loc::current()) const;
  /// min({2,3}, {2,3}) -> {2,3}
  Tensor minimum(const Tensor& other, Loc loc = Loc::current()) const;
  /// x^y (floats only): {2,3}.pow({}) -> {2,3}
  Tensor pow(const Tensor& other, Loc loc = Loc::current()) const;
  /// Remainder of a truncated division, with the sign of x (C fmod for floats): {3}.remainder({3}) -> {3}.
  /// Integers as XLA: x % 0 = x, INT_MIN % -1 = 0; and div gives x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN.
  Tensor remainder(const Tensor& other, Loc loc = Loc::current()) const;
  /// Bitwise and of bool or integer tensors: {3}:bool .logicalAnd({3}:bool) -> {3}:bool
  Tensor logicalAnd(const Tensor& other, Loc loc = Loc::current()) const;
  /// Bitwise or of bool or integer tensors: {3}:u8 .logicalOr({}:u8) -> {3}:u8
  Tensor logicalOr(const Tensor& other, Loc loc = Loc::current()) const;
  /// Bitwise xor of bool or integer tensors: {3}:bool .logicalXor({3}:bool) -> {3}:bool
  Tensor logicalXor(const Tensor& other, Loc loc = Loc::current()) const;
  /// x << y on integers; counts >= the bit width (or negative) give 0: {3}:i32 .shiftLeft({3}:i32) -> {3}:i32
  Tensor shiftLeft(const Tensor& other, Loc loc = Loc::current()) const;
  /// x >> y filling with zeros; counts >= the bit width give 0: {3}:u8 .shiftRightLogical({}:u8) -> {3}:u8
  Tensor shiftRightLogical(const Tensor& other, Loc loc = Loc::current()) const;
  /// x >> y filling with the sign bit; counts >= the bit width give 0 or -1: {3}:i8 .shiftRightArithmetic({3}:i8) -> {3}:i8
  Tensor shiftRightArithmetic(const Tensor& other, Loc loc = Loc::current()) const;
  /// min(max(x, lo), hi), lo and hi broadcast as binary ops do: {2,3}.clamp({}, {}) -> {2,3}
  Tensor clamp(const Tensor& lo, const Tensor& hi, Loc loc = Loc::current()) const;
  /// Same with constants in x's dtype: {2,3}.clamp(-1, 1) -> {2,3}
  Tensor clamp(double lo, double hi, Loc loc = Loc::current()) const;

  // ---- elementwise, unary ----
  /// -x: {3}:f32 -> {3}:f32
  Tensor neg(Loc loc = Loc::current()) const;
  /// |x|: {3}:f32 -> {3}:f32
  Tensor abs(Loc loc = Loc::current()) const;
  /// -1, 0 or 1 (floats keep NaN and -0; not bool): {3}:i32 -> {3}:i32
  Tensor sign(Loc loc = Loc::current()) const;
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
  /// e^x - 1, accurate near 0 (float only): {3}:f32 -> {3}:f32
  Tensor expm1(Loc loc = Loc::current()) const;
  /// ln(1 + x), accurate near 0 (float only): {3}:f32 -> {3}:f32
  Tensor log1p(Loc loc = Loc::current()) const;
  /// Rounds down (float only): {3}:bf16 -> {3}:bf16
  Tensor floor(Loc loc = Loc::current()) const;
  /// Rounds up (float only)
  Tensor ceil(Loc loc = Loc::current()) const;
  /// Rounds to nearest, ties away from zero (ZML's roundNearestAfz; float only): 2.5 -> 3, -0.5 -> -1
  Tensor round(Loc loc = Loc::current()) const;
  /// Rounds to nearest, ties to even (float only): 2.5 -> 2, 3.5 -> 4
  Tensor roundNearestEven(Loc loc = Loc::current()) const;
  /// Error function (float only): {3}:f16 -> {3}:f16
  Tensor erf(Loc loc = Loc::current()) const;
  /// True where x is neither inf nor NaN (float only): {3}:f32 -> {3}:bool
  Tensor isFinite(Loc loc = Loc::current()) const;
  /// Not of bool tensors, bitwise not of integers: {3}:bool -> {3}:bool; {3}:u8 -> {3}:u8
  Tensor logicalNot(Loc loc = Loc::current()) const;
  /// Number of bits set (integers only): {3}:u32 -> {3}:u32
  Tensor popcnt(Loc loc = Loc::current()) const;
  /// Number of leading zero bits (integers only): {3}:i8 -> {3}:i8, 1 -> 7
  Tensor countLeadingZeros(Loc loc = Loc::current()) const;
  /// max(x, 0)
  Tensor relu(Loc loc = Loc::current()) const;
  /// x if x > 0 else alpha * x (float only): {3}.leakyRelu(0.01) -> {3}
  Tensor leakyRelu(double alpha, Loc loc = Loc::current()) const;
  /// x if x > 0 else alpha * (e^x - 1) (float only): {3}.elu(1.0) -> {3}
  Tensor elu(double alpha, Loc loc = Loc::current()) const;
  /// 1 / (1 + e^-x) (float only)
  Tensor sigmoid(Loc loc = Loc::current()) const;
  /// x * sigmoid(x) (float only)
  Tensor silu(Loc loc = Loc::current()) const;
  /// GELU, tanh approximation as in ZML and GPT-2: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) (float only)
  Tensor gelu(Loc loc = Loc::current()) const;
  /// GELU, exact: 0.5x(1 + erf(x/sqrt 2)) (float only; PyTorch's default)
  Tensor geluErf(Loc loc = Loc::current()) const;
  /// x * sigmoid(1.702x) (float only)
  Tensor quickGelu(Loc loc = Loc::current()) const;
  /// Converts the element type: {3}:f32 .convert(f16) -> {3}:f16
  Tensor convert(DType dtype, Loc loc = Loc::current()) const;
  /// Same bits, another dtype of the same width (bool excluded): {3}:f32 .bitCast(u32) -> {3}:u32
  Tensor bitCast(DType dtype, Loc loc = Loc::current()) const;

  // ---- constants ----
  /// x + c with c in x's dtype: {3}:f16 .addConstant(1) -> {3}:f16
  Tensor addConstant(double value, Loc loc = Loc::current()) const;
  /// x * c with c in x's dtype
  Tensor mulConstant(double value, Loc loc = Loc::current()) const;
  /// x - c with c in x's dtype
  Tensor subConstant(double value, Loc loc = Loc::current()) const;
  /// x / c with c in x's dtype (as div: integers truncate, x / 0 = -1)
  Tensor divConstant(double value, Loc loc = Loc::current()) const;
  /// x^c with c in x's dtype (float only)
  Tensor powConstant(double value, Loc loc = Loc::current()) const;
  /// remainder(x, c) with c in x's dtype: {3}:f32 .fmod(2) -> {3}:f32, -3 -> -1
  Tensor fmod(double divisor, Loc loc = Loc::current()) const;
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
  /// dotGeneral accumulating in, and returning, `result` (JAX's preferred_element_type): i32 for
  /// 8-bit integers, whose signs may differ (u8 activations x i8 weights, as oneDNN and the AMX/VNNI
  /// instructions take them); f32 for floats (no rounding of the f32 sums back to bf16/f16).
  /// {m=64,k=512}:u8 .dotGeneral({k=512,n=32}:i8, {{"k","k"}}, {}, DType::i32) -> {m=64,n=32}:i32
  Tensor dotGeneral(const Tensor& rhs, const std::vector<AxisPair>& contracting,
                    const std::vector<AxisPair>& batching, DType result, Loc loc = Loc::current()) const;
  /// Contracts the given tags; tags on both sides that are not contracted are batch axes.
  /// {b=4,m=3,k=2}.dot({b=4,k=2,n=5}, {"k"}) -> {b=4,m=3,n=5}
  Tensor dot(const Tensor& rhs, const std::vector<Tag>& contracting, Loc loc = Loc::current()) const;

  // ---- shapes ----
  /// Broadcasts to a larger shape, mapping axes by tag when tagged; untagged onto untagged aligns
  /// to the right. Untagged onto tagged is an error (tag it with withTags) unless it is a scalar
  /// or all its axes have size 1: Radix never guesses which axes match by position.
  /// {3}.broad({2,3}) -> {2,3}; {d=3}.broad({d=3,b=2}) -> {d=3,b=2}; {1,1}.broad({b=2,d=3}) -> {b=2,d=3}
  Tensor broad(const Shape& shape, Loc loc = Loc::current()) const;
  /// Broadcasts with an explicit map: axis i of x becomes axis axes[i] of the result.
  /// {3}.broadcast({3,2}, {0}) -> {3,2}
  Tensor broadcast(const Shape& shape, const std::vector<int64_t>& axes, Loc loc = Loc::current()) const;
  /// Same elements in row-major order, new dims; one dim may be -1 (inferred). Leading and trailing
  /// axes whose dims are unchanged keep their tags: {b=2,s=3,d=4}.reshape({2,-1}) -> {b=2,12}
  Tensor reshape(const std::vector<int64_t>& dims, Loc loc = Loc::current()) const;
  /// Permutes axes: result axis i is input axis perm[i]. {2,3}.transpose({1,0}) -> {3,2}
  Tensor transpose(const std::vector<Axis>& permutation, Loc loc = Loc::current()) const;
  /// Sum over an axis, kept with size 1 (f16/bf16 accumulate in f32; 0 over an empty axis):
  /// {b=2,d=8}.sum("d") -> {b=2,d=1}
  Tensor sum(Axis axis, Loc loc = Loc::current()) const;
  /// Max over an axis, kept with size 1 (NaN wins; -inf or the integer min over an empty axis):
  /// {2,8}.max(1) -> {2,1}
  Tensor max(Axis axis, Loc loc = Loc::current()) const;

  // ---- comparisons, logic and selection ----
  /// x == y (strict broadcasting as binary ops; any dtype): {2,3}.eq({2,3}) -> {2,3}:bool
  Tensor eq(const Tensor& other, Loc loc = Loc::current()) const;
  /// x != y; true where either float is NaN: {2,3}.ne({}) -> {2,3}:bool
  Tensor ne(const Tensor& other, Loc loc = Loc::current()) const;
  /// x < y (signed, unsigned or float as the dtype; false with NaN): {3}.lt({3}) -> {3}:bool
  Tensor lt(const Tensor& other, Loc loc = Loc::current()) const;
  /// x <= y: {3}.le({3}) -> {3}:bool
  Tensor le(const Tensor& other, Loc loc = Loc::current()) const;
  /// x > y: {3}.gt({3}) -> {3}:bool
  Tensor gt(const Tensor& other, Loc loc = Loc::current()) const;
  /// x >= y: {3}.ge({3}) -> {3}:bool
  Tensor ge(const Tensor& other, Loc loc = Loc::current()) const;
  /// Comparisons with a constant converted to x's dtype first: {3}:f16 .eq(0) -> {3}:bool
  Tensor eq(double value, Loc loc = Loc::current()) const;
  /// x != c: {3}.ne(0) -> {3}:bool
  Tensor ne(double value, Loc loc = Loc::current()) const;
  /// x < c: {3}.lt(0) -> {3}:bool
  Tensor lt(double value, Loc loc = Loc::current()) const;
  /// x <= c: {3}.le(0) -> {3}:bool
  Tensor le(double value, Loc loc = Loc::current()) const;
  /// x > c: {3}.gt(0) -> {3}:bool
  Tensor gt(double value, Loc loc = Loc::current()) const;
  /// x >= c: {3}.ge(0) -> {3}:bool
  Tensor ge(double value, Loc loc = Loc::current()) const;
  /// Called on a bool condition: onTrue where true, else onFalse. The three broadcast strictly
  /// (scalars, or size-1 axes under equal tags); onTrue and onFalse share a dtype.
  /// {b=2,s=3}:bool .select({b=2,s=3}:f32, {}:f32) -> {b=2,s=3}:f32
  Tensor select(const Tensor& onTrue, const Tensor& onFalse, Loc loc = Loc::current()) const;

  // ---- creation (iota, arange, linspace, masks) ----
  /// Each element is its index along `axis`, in the shape's dtype (not bool; narrow integers wrap); tags kept.
  /// Tensor::iota(Shape({2,3}, i32).withTags({"s","d"}), "d") -> {s=2,d=3}:i32 holding 0,1,2,0,1,2
  static Tensor iota(const Shape& shape, Axis axis, Loc loc = Loc::current());
  /// 0, 1, ..., n-1: Tensor::arange(4, DType::i64) -> {4}:i64 holding 0,1,2,3
  static Tensor arange(int64_t n, DType dtype, Loc loc = Loc::current());
  /// start, start+step, ... up to end excluded (step != 0): arange(2, 9, 3, i32) -> {3}:i32 holding 2,5,8
  static Tensor arange(int64_t start, int64_t end, int64_t step, DType dtype, Loc loc = Loc::current());
  /// n values from start to end included, evenly spaced (computed in f64, then converted):
  /// Tensor::linspace(0, 1, 5, f32) -> {5}:f32 holding 0,0.25,0.5,0.75,1
  static Tensor linspace(double start, double end, int64_t n, DType dtype, Loc loc = Loc::current());
  /// A dense constant from host values in row-major order (count must match), converted as convert:
  /// Tensor::constantTensor(Shape({2}, f16), {1, 2}) -> {2}:f16 holding 1,2
  static Tensor constantTensor(const Shape& shape, const std::vector<double>& values, Loc loc = Loc::current());
  /// Keeps the elements with index(col) - index(row) <= k, zeroes the others (k = 0: lower
  /// triangle with the diagonal; k = -1: strictly lower). {s=3,t=3}.triangular("s", "t", 0) -> {s=3,t=3}
  Tensor triangular(Axis row, Axis col, int64_t k, Loc loc = Loc::current()) const;
  /// A bool mask of `shape`'s dims and tags, true where index(key) <= index(query) (causal attention).
  /// Tensor::causalMask(Shape({3,3}, f32).withTags({"q","k"}), "q", "k") -> {q=3,k=3}:bool
  static Tensor causalMask(const Shape& shape, Axis query, Axis key, Loc loc = Loc::current());
  /// One-hot rows of integer class indices along a new trailing axis tagged `tag` (empty: untagged);
  /// indices outside [0, numClasses) give an all-zero row. {b=2}:i32 .oneHot(5, "c", f32) -> {b=2,c=5}:f32
  Tensor oneHot(int64_t numClasses, Tag tag, DType dtype, Loc loc = Loc::current()) const;

  // ---- more reductions (multi-axis, arg, scans, softmax) ----
  // Reductions keep each reduced axis with size 1, with its tag; a list of axes reduces them all
  // (an empty list reduces nothing; an axis given twice is an error). One axis in braces, sum({1}),
  // is ambiguous between the overloads: write sum(1).
  /// Sum over several axes: {b=2,s=3,d=8}.sum({"s","d"}) -> {b=2,s=1,d=1}
  Tensor sum(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// Max over several axes: {2,3,8}.max({0,2}) -> {1,3,1}
  Tensor max(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// Min over an axis (NaN wins; +inf or the integer max over an empty axis): {2,8}.min(1) -> {2,1}
  Tensor min(Axis axis, Loc loc = Loc::current()) const;
  /// Min over several axes: {2,3,8}.min({0,2}) -> {1,3,1}
  Tensor min(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// Mean over an axis (floats only; f16/bf16 accumulate in f32; NaN over an empty axis):
  /// {b=2,d=8}.mean("d") -> {b=2,d=1}
  Tensor mean(Axis axis, Loc loc = Loc::current()) const;
  /// Mean over several axes: {b=2,s=3,d=8}.mean({"s","d"}) -> {b=2,s=1,d=1}
  Tensor mean(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// Product over an axis (f16/bf16 accumulate in f32; 1 over an empty axis): {2,8}.prod(1) -> {2,1}
  Tensor prod(Axis axis, Loc loc = Loc::current()) const;
  /// Product over several axes: {2,3,8}.prod({0,2}) -> {1,3,1}
  Tensor prod(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// True where any element is true (bool only; false over an empty axis): {2,8}:bool.any(1) -> {2,1}:bool
  Tensor any(Axis axis, Loc loc = Loc::current()) const;
  /// Any over several axes: {2,3,8}:bool.any({0,2}) -> {1,3,1}:bool
  Tensor any(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// True where all elements are true (bool only; true over an empty axis): {2,8}:bool.all(1) -> {2,1}:bool
  Tensor all(Axis axis, Loc loc = Loc::current()) const;
  /// All over several axes: {2,3,8}:bool.all({0,2}) -> {1,3,1}:bool
  Tensor all(const std::vector<Axis>& axes, Loc loc = Loc::current()) const;
  /// Max and its i32 index over a non-empty axis, both kept with size 1; the first index on ties;
  /// NaN counts as the max (as jax.numpy.argmax). {b=2,d=8}.argMax("d") -> {values {b=2,d=1},
  /// indices {b=2,d=1}:i32}
  ArgMax argMax(Axis axis, Loc loc = Loc::current()) const;
  /// Min and its i32 index, as argMax (NaN counts as the min): {2,8}.argMin(1).indices -> {2,1}:i32
  ArgMin argMin(Axis axis, Loc loc = Loc::current()) const;
  /// log(sum(exp(x))) over an axis, kept with size 1, shifted by the max so that it cannot overflow
  /// (floats only; f16/bf16 compute in f32): {b=2,d=8}.logSumExp("d") -> {b=2,d=1}
  Tensor logSumExp(Axis axis, Loc loc = Loc::current()) const;
  /// exp(x) / sum(exp(x)) over an axis, shifted by the max (floats only; f16/bf16 compute in f32);
  /// a row of only -inf gives 0s, as in ZML: {b=2,d=8}.softmax("d") -> {b=2,d=8}
  Tensor softmax(Axis axis, Loc loc = Loc::current()) const;
  /// exp(x) / (sum(exp(x)) + exp(bias)) over an axis (an attention sink), shifted by
  /// max(max(x), bias); `bias` is converted to x's dtype and broad()cast to x's shape with the axis
  /// at size 1: {h=8,q=4,k=16}.softmaxBiased("k", {h=8}) -> {h=8,q=4,k=16}
  Tensor softmaxBiased(Axis axis, const Tensor& bias, Loc loc = Loc::current()) const;
  /// x - logSumExp(x) over an axis (floats only): {b=2,d=8}.logSoftmax("d") -> {b=2,d=8}
  Tensor logSoftmax(Axis axis, Loc loc = Loc::current()) const;
  /// Inclusive running sum along an axis (f16/bf16 accumulate in f32; O(n^2) work for an axis of
  /// n <= 16, else an O(n) loop of n steps):
  /// {2,5}.cumulativeSum(1) -> {2,5}: [1,2,3] -> [1,3,6]
  Tensor cumulativeSum(Axis axis, Loc loc = Loc::current()) const;
  /// Inclusive running max along an axis (NaN propagates; cost as cumulativeSum): [1,3,2] -> [1,3,3]
  Tensor cumulativeMax(Axis axis, Loc loc = Loc::current()) const;
  /// Inclusive running min along an axis (NaN propagates; cost as cumulativeSum): [3,1,2] -> [3,1,1]
  Tensor cumulativeMin(Axis axis, Loc loc = Loc::current()) const;
  /// Inclusive running product along an axis (f16/bf16 accumulate in f32; cost as cumulativeSum): [1,2,3] -> [1,2,6]
  Tensor cumulativeProd(Axis axis, Loc loc = Loc::current()) const;

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
  /// Layout and window of a convolution. Axes by index or tag; empty spatial lists mean the axes
  /// left after batch and feature (kernel: output and input), in order; the i-th input spatial
  /// axis slides over the i-th kernel spatial axis. Per-spatial-axis lists are empty (all 1,
  /// padding 0) or have one entry per spatial axis.
  struct ConvOptions {
    std::vector<int64_t> strides;
    std::vector<std::pair<int64_t, int64_t>> padding;  // (low, high) zeros per spatial axis
    std::vector<int64_t> lhsDilation;                   // input dilation (transposed convolution)
    std::vector<int64_t> rhsDilation;                   // kernel dilation
    int64_t featureGroups = 1;                          // input features split in groups
    Axis inputBatch = 0, inputFeature = 1;
    std::vector<Axis> inputSpatial;
    Axis kernelOutput = 0, kernelInput = 1;
    std::vector<Axis> kernelSpatial;
  };
  /// N-d convolution (cross-correlation). The result keeps the input's layout and tags; its
  /// feature axis has the kernel's output size, each spatial axis (lo + (n-1)*lhsDil + 1 + hi -
  /// ((k-1)*rhsDil + 1)) / stride + 1. Kernel input size = input features / featureGroups.
  /// Floats accumulate in f32. {b=2,c=4,h=9,w=9}.convolution({o=8,i=4,kh=3,kw=3}, {.strides = {2, 2}})
  /// -> {b=2,c=8,h=4,w=4}
  Tensor convolution(const Tensor& kernel, const ConvOptions& options, Loc loc = Loc::current()) const;
  /// convolution of a rank-3 input by a rank-3 kernel: {2,4,17}.conv1d({8,4,3}, {}) -> {2,8,15}
  Tensor conv1d(const Tensor& kernel, const ConvOptions& options, Loc loc = Loc::current()) const;
  /// convolution of a rank-4 input by a rank-4 kernel; NHWC: {b=1,h=5,w=5,c=3}.conv2d({o=8,i=3,
  /// kh=3,kw=3}, {.inputFeature = "c"}) -> {b=1,h=3,w=3,c=8}
  Tensor conv2d(const Tensor& kernel, const ConvOptions& options, Loc loc = Loc::current()) const;

  /// Window of a pooling op: the pooled axes, the window size along each, strides (empty: the
  /// window), window dilations (empty: 1) and (low, high) padding (empty: none).
  struct PoolOptions {
    std::vector<Axis> axes;
    std::vector<int64_t> window;
    std::vector<int64_t> strides;
    std::vector<int64_t> dilation;
    std::vector<std::pair<int64_t, int64_t>> padding;
  };
  /// Max over each window; padding never wins. Each pooled axis becomes
  /// (lo + n + hi - ((w-1)*dil + 1)) / stride + 1. {b=1,c=3,h=8,w=8}.maxPool({.axes = {"h", "w"},
  /// .window = {2, 2}}) -> {b=1,c=3,h=4,w=4}
  Tensor maxPool(const PoolOptions& options, Loc loc = Loc::current()) const;
  /// Mean over each window (floats only, f32 accumulation); padding counts as zeros in the full
  /// window size (PyTorch's count_include_pad). {17}.avgPool({.axes = {0}, .window = {3}}) -> {5}
  Tensor avgPool(const PoolOptions& options, Loc loc = Loc::current()) const;

  /// Interpolation of resize: nearest takes source floor(i * in / out); linear uses half-pixel
  /// centers (source (i + 0.5) * in / out - 0.5, clamped), as PyTorch's align_corners=false.
  enum class ResizeMode { nearest, linear };
  /// Resizes axes to new sizes; linear on two axes is bilinear (floats only, f32 arithmetic).
  /// {b=1,h=3,w=5}.resize({{"h", 6}, {"w", 2}}, ResizeMode::linear) -> {b=1,h=6,w=2}
  Tensor resize(const std::vector<std::pair<Axis, int64_t>>& sizes, ResizeMode mode, Loc loc = Loc::current()) const;
  /// Resizes axes by integer factors: {c=2,h=3,w=4}.upsample({{"h", 2}, {"w", 2}}) -> {c=2,h=6,w=8}
  Tensor upsample(const std::vector<std::pair<Axis, int64_t>>& factors, ResizeMode mode = ResizeMode::nearest,
                  Loc loc = Loc::current()) const;

  // ---- sort and sampling ----
  /// Sorts along an axis, stable; NaN sorts last ascending and first descending, as in jax.
  /// {b=2,voc=7}.sort("voc") -> {b=2,voc=7}; {3,17}.sort(0, true) -> {3,17} (descending)
  Tensor sort(Axis axis, bool descending = false, Loc loc = Loc::current()) const;
  /// The i32 indices that sort along an axis (stable: ties keep their order, also descending).
  /// {b=2,voc=7}:f16 .argsort("voc") -> {b=2,voc=7}:i32
  Tensor argsort(Axis axis, bool descending = false, Loc loc = Loc::current()) const;
  /// The k largest along an axis in descending order (ties: lower index first; NaN largest) and
  /// their i32 indices; the axis keeps its tag with size k. 0 <= k <= dim.
  /// {b=2,voc=50}.topK(3, "voc") -> {values {b=2,voc=3}, indices {b=2,voc=3}:i32}
  TopK topK(int64_t k, Axis axis, Loc loc = Loc::current()) const;

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

/// What argMax and argMin return: the extreme values and their i32 indices, the reduced axis kept
/// with size 1 in both.
struct ArgMax {
  Tensor values;
  Tensor indices;
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

#define RADIX_EXTERN_HOST(T)                                                                  \
  extern template std::vector<T> Tensor::toVector<T>() const;                                \
  extern template std::vector<T> Tensor::localToVector<T>() const;                           \
  extern template Tensor Tensor::fromShard<T>(const Platform&, Shape, const std::vector<T>&); \
  extern template Tensor Tensor::fromValues<T>(const Platform&, Shape, const std::vector<T>&);
RADIX_HOST_TYPES_BUT_FLOAT(RADIX_EXTERN_HOST)
#undef RADIX_EXTERN_HOST
extern template std::vector<float> Tensor::toVector<float>() const;
extern template std::vector<float> Tensor::localToVector<float>() const;
extern template std::vector<bool> Tensor::toVector<bool>() const;
extern template Tensor Tensor::fromValues<bool>(const Platform&, Shape, const std::vector<bool>&);

/// Result of Tensor::topK: the k largest values and their indices (i32) along the axis.
struct TopK {
  Tensor values;
  Tensor indices;
};

}  // namespace radix
