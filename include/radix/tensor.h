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
  /// Same elements in row-major order, new dims (tags dropped): {2,3}.reshape({3,2}) -> {3,2}
  Tensor reshape(const std::vector<int64_t>& dims, Loc loc = Loc::current()) const;
  /// Permutes axes: result axis i is input axis perm[i]. {2,3}.transpose({1,0}) -> {3,2}
  Tensor transpose(const std::vector<Axis>& permutation, Loc loc = Loc::current()) const;
  /// Sum over an axis, kept with size 1: {b=2,d=8}.sum("d") -> {b=2,d=1}
  Tensor sum(Axis axis, Loc loc = Loc::current()) const;
  /// Max over an axis, kept with size 1: {2,8}.max(1) -> {2,1}
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

  // ---- more shape ops (split/merge axes, pad, slice, concatenate) ----

  // ---- indexing (gather, scatter, dynamic slices) ----

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
