#pragma once
// Private to src/ops: the helpers every op family uses to check inputs and emit MLIR values.
#include <functional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "radix/error.h"
#include "radix/tensor.h"
#include "trace/context.h"

namespace radix::ops {

using detail::TensorAccess;
using detail::TraceContext;

/// "\"d\""
std::string quote(std::string_view s);
/// Error("[op] what")
Error opError(const char* op, const std::string& what);

/// A scalar attribute of `dtype` holding v (converted as convert() would).
mlir::TypedAttr scalarAttr(TraceContext& c, DType dtype, double v);
/// A dense splat constant of `shape`.
mlir::Value splat(TraceContext& c, mlir::Location loc, const Shape& shape, double v);
/// tensor.empty of `shape`.
mlir::Value emptyLike(TraceContext& c, mlir::Location loc, const Shape& shape);
/// linalg.fill of `shape` with v.
mlir::Value filled(TraceContext& c, mlir::Location loc, const Shape& shape, double v);
/// Row-major reshape of a value from `from` to `to` (same count).
mlir::Value reshapeValue(TraceContext& c, mlir::Location loc, mlir::Value v, const Shape& from, const Shape& to);
/// Broadcasts `v` of shape `from` into `to`: axis i of `from` goes to axis axes[i] of `to`,
/// where dims are equal or from's dim is 1.
mlir::Value broadcastValue(TraceContext& c, mlir::Location loc, mlir::Value v, const Shape& from, const Shape& to,
                           const std::vector<int64_t>& axes);
/// True when `untagged` has no tags, `tagged` has some, and `untagged` is not all size-1 axes:
/// aligning them by position would guess which axes match.
bool isPositionalGuess(const Shape& untagged, const Shape& tagged);
/// "[op] {16} is untagged and {b=2,c=16,h=16,w=16} is tagged: tag it, e.g. x.withTags({\"c\"})"
Error untaggedError(const char* op, const Shape& untagged, const Shape& tagged);
/// Strict broadcasting of a binary op's operands: equal dims, a scalar side, or equal rank with
/// equal tags where one side has size 1 (an untagged side of size-1 axes takes the other's tags).
/// Throws "[op] ..." otherwise.
Shape binaryShape(const char* op, const Shape& a, const Shape& b);
/// The value of `t` broadcast to `target` (as binaryShape allows).
mlir::Value operandAs(TraceContext& c, mlir::Location loc, const Tensor& t, const Shape& target, const char* op);
/// Converts a value of `shape` from one dtype to another (floats to integers saturate).
mlir::Value convertValue(TraceContext& c, mlir::Location loc, mlir::Value x, DType from, DType to, const Shape& shape);

/// A linalg.generic that computes each element of `out` with `body`, given the result coordinates
/// (linalg.index). Inputs are read with tensor.extract in the body, so no slice is ever copied as a
/// strided memref (whose copy would need a runtime library call).
mlir::Value generate(TraceContext& c, mlir::Location loc, const Shape& out,
                     const std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, const std::vector<mlir::Value>&)>& body);

/// Runs the ops a composite op is built from, renaming their errors after the op the user called:
/// "[maximum] ..." from relu becomes "[relu] ...".
template <class F>
auto renamingErrors(const char* op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    const std::string what = e.what();
    const size_t end = what.find("] ");
    throw opError(op, end == std::string::npos ? what : what.substr(end + 2));
  }
}

}  // namespace radix::ops
