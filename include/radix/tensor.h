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
  /// Same elements in row-major order, new dims (tags dropped): {2,3}.reshape({3,2}) -> {3,2}
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
