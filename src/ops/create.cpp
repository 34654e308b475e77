// Creation ops: iota and ranges (linalg.generic over linalg.index), dense constants from host
// values, and masks built from them (triangular, causal, one-hot).
#include <cmath>
#include <limits>
#include <string>

#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

using mlir::Value;
namespace arith = mlir::arith;

/// A tensor of `shape` (whose dtype is the element type `body` yields) whose elements are
/// body(index along `axis` as i64).
template <class F>
Value generateAlong(TraceContext& c, mlir::Location loc, const Shape& shape, int64_t axis, F&& body) {
  auto& b = c.builder();
  const auto identity = mlir::AffineMap::getMultiDimIdentityMap(static_cast<unsigned>(shape.rank()), b.getContext());
  std::vector<mlir::utils::IteratorType> iterators(shape.rank(), mlir::utils::IteratorType::parallel);
  Value init = emptyLike(c, loc, shape);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{identity}, iterators, [&](mlir::OpBuilder& bb, mlir::Location ll, mlir::ValueRange) {
        Value i = mlir::linalg::IndexOp::create(bb, ll, static_cast<uint64_t>(axis));
        Value i64 = arith::IndexCastOp::create(bb, ll, bb.getI64Type(), i);
        mlir::linalg::YieldOp::create(bb, ll, body(bb, ll, i64));
      });
  return generic.getResult(0);
}

}  // namespace

Tensor Tensor::iota(const Shape& shape, Axis axis, Loc l) {
  TraceContext& c = detail::currentTrace("iota");
  if (shape.dtype() == DType::bool_) throw opError("iota", "needs a numeric dtype, got " + shape.str());
  const int64_t ax = shape.axis(axis, "iota");
  auto loc = c.loc(l, "iota");
  const Shape wide = renamingErrors("iota", [&] { return shape.withDtype(DType::i64); });  // may be too large
  Value r = generateAlong(c, loc, wide, ax, [](mlir::OpBuilder&, mlir::Location, Value i) { return i; });
  return c.wrap(convertValue(c, loc, r, DType::i64, shape.dtype(), shape), shape);
}

Tensor Tensor::arange(int64_t n, DType dtype, Loc l) {
  if (n < 0) throw opError("arange", "needs n >= 0, got " + std::to_string(n));
  return renamingErrors("arange", [&] { return iota(Shape({n}, dtype), 0, l); });
}

Tensor Tensor::arange(int64_t start, int64_t end, int64_t step, DType dtype, Loc l) {
  TraceContext& c = detail::currentTrace("arange");
  if (step == 0) throw opError("arange", "needs a step != 0");
  if (dtype == DType::bool_) throw opError("arange", "needs a numeric dtype, got bool");
  // Count of start + i*step strictly before end, in 128-bit arithmetic (no overflow).
  const __int128 span = static_cast<__int128>(end) - start;
  const __int128 n = (span == 0 || (span > 0) != (step > 0)) ? 0 : (span + step - (step > 0 ? 1 : -1)) / step;
  if (n > std::numeric_limits<int64_t>::max())
    throw opError("arange", "too many values from " + std::to_string(start) + " to " + std::to_string(end));
  const Shape shape = renamingErrors("arange", [&] { return Shape({static_cast<int64_t>(n)}, dtype); });
  const Shape wide = shape.withDtype(DType::i64);
  auto loc = c.loc(l, "arange");
  Value r = generateAlong(c, loc, wide, 0, [&](mlir::OpBuilder& b, mlir::Location ll, Value i) -> Value {
    Value s = arith::ConstantOp::create(b, ll, b.getI64IntegerAttr(step));
    Value o = arith::ConstantOp::create(b, ll, b.getI64IntegerAttr(start));
    return arith::AddIOp::create(b, ll, o, arith::MulIOp::create(b, ll, i, s));
  });
  return c.wrap(convertValue(c, loc, r, DType::i64, dtype, shape), shape);
}

Tensor Tensor::linspace(double start, double end, int64_t n, DType dtype, Loc l) {
  TraceContext& c = detail::currentTrace("linspace");
  if (n < 0) throw opError("linspace", "needs n >= 0, got " + std::to_string(n));
  if (dtype == DType::bool_) throw opError("linspace", "needs a numeric dtype, got bool");
  if (!std::isfinite(start) || !std::isfinite(end))
    throw opError("linspace", "needs finite bounds, got " + std::to_string(start) + " and " + std::to_string(end));
  const double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0;
  const Shape shape = renamingErrors("linspace", [&] { return Shape({n}, dtype); });
  const Shape wide = shape.withDtype(DType::f64);
  auto loc = c.loc(l, "linspace");
  // The second half counts back from end, so that the last value is end exactly (as PyTorch); n = 1 gives start.
  Value r = generateAlong(c, loc, wide, 0, [&](mlir::OpBuilder& b, mlir::Location ll, Value i) -> Value {
    auto f64 = [&](double v) { return arith::ConstantOp::create(b, ll, b.getF64FloatAttr(v)); };
    Value fi = arith::SIToFPOp::create(b, ll, b.getF64Type(), i);
    Value fromStart = arith::AddFOp::create(b, ll, f64(start), arith::MulFOp::create(b, ll, fi, f64(step)));
    Value back = arith::SubFOp::create(b, ll, f64(static_cast<double>(n - 1)), fi);
    Value fromEnd = arith::SubFOp::create(b, ll, f64(end), arith::MulFOp::create(b, ll, back, f64(step)));
    Value firstHalf = arith::CmpIOp::create(b, ll, arith::CmpIPredicate::slt, i, arith::ConstantOp::create(b, ll, b.getI64IntegerAttr((n + 1) / 2)));
    return arith::SelectOp::create(b, ll, firstHalf, fromStart, fromEnd);
  });
  return c.wrap(convertValue(c, loc, r, DType::f64, dtype, wide), shape);
}

Tensor Tensor::constantTensor(const Shape& shape, const std::vector<double>& values, Loc l) {
  TraceContext& c = detail::currentTrace("constantTensor");
  if (static_cast<int64_t>(values.size()) != shape.count())
    throw opError("constantTensor", std::to_string(values.size()) + " values for " + shape.str() + ", which holds " +
                                        std::to_string(shape.count()));
  std::vector<mlir::Attribute> attrs;
  attrs.reserve(values.size());
  for (double v : values) attrs.push_back(scalarAttr(c, shape.dtype(), v));
  auto type = c.tensorType(shape);
  Value r = arith::ConstantOp::create(c.builder(), c.loc(l, "constantTensor"), type, mlir::DenseElementsAttr::get(type, attrs));
  return c.wrap(r, shape);
}

Tensor Tensor::triangular(Axis row, Axis col, int64_t k, Loc l) const {
  const int64_t r = shape_.axis(row, "triangular"), cl = shape_.axis(col, "triangular");
  if (r == cl) throw opError("triangular", "row and column are one axis (" + std::to_string(r) + ") of " + shape_.str());
  return renamingErrors("triangular", [&] {
    const Shape s = shape_.withDtype(DType::i64);
    Tensor keep = iota(s, cl, l).sub(iota(s, r, l), l).le(static_cast<double>(k), l);
    return keep.select(*this, scalar(0, dtype(), l), l);
  });
}

Tensor Tensor::causalMask(const Shape& shape, Axis query, Axis key, Loc l) {
  const int64_t q = shape.axis(query, "causalMask"), k = shape.axis(key, "causalMask");
  if (q == k) throw opError("causalMask", "query and key are one axis (" + std::to_string(q) + ") of " + shape.str());
  return renamingErrors("causalMask", [&] {
    const Shape s = shape.withDtype(DType::i64);
    return iota(s, k, l).le(iota(s, q, l), l);
  });
}

Tensor Tensor::oneHot(int64_t numClasses, Tag tag, DType to, Loc l) const {
  if (isFloat(dtype()) || dtype() == DType::bool_)
    throw opError("oneHot", "needs integer class indices, got " + shape_.str());
  if (numClasses < 0) throw opError("oneHot", "needs numClasses >= 0, got " + std::to_string(numClasses));
  renamingErrors("oneHot", [&] { return shape_.withDtype(to); });  // checks `to`
  if (rank() >= Shape::kMaxRank) throw opError("oneHot", "no room for a new axis in " + shape_.str());
  if (!tag.empty() && shape_.hasTag(tag) >= 0)
    throw opError("oneHot", "tag " + quote(tag.name()) + " is already an axis of " + shape_.str());
  return renamingErrors("oneHot", [&] {
    std::vector<int64_t> dims = shape_.dims(), axes(rank());
    dims.push_back(numClasses);
    Shape out(dims, DType::i64);
    for (int64_t i = 0; i < rank(); ++i) out = out.withTag(i, shape_.tag(i)), axes[i] = i;
    out = out.withTag(rank(), tag);
    Tensor indices = convert(DType::i64, l).broadcast(out, axes, l);
    return indices.eq(iota(out, -1, l), l).convert(to, l);
  });
}

}  // namespace radix
