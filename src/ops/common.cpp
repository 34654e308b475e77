// Helpers shared by the op families: constants, empty tensors, reshape and broadcast of values,
// strict broadcasting of binary operands, dtype conversion.
#include "ops/common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace radix::ops {

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

Error opError(const char* op, const std::string& what) { return Error(std::string("[") + op + "] " + what); }

mlir::TypedAttr scalarAttr(TraceContext& c, DType dtype, double v) {
  mlir::Type t = c.elementType(dtype);
  if (isFloat(dtype)) return c.builder().getFloatAttr(t, v);
  if (dtype == DType::bool_) return c.builder().getIntegerAttr(t, v != 0 ? 1 : 0);
  // As convert() does: saturate to the dtype's range, NaN -> 0.
  const unsigned bits = static_cast<unsigned>(sizeOf(dtype) * 8);
  if (std::isnan(v)) return c.builder().getIntegerAttr(t, 0);
  if (isSignedInt(dtype)) {
    const double lo = -std::ldexp(1.0, static_cast<int>(bits) - 1), hi = std::ldexp(1.0, static_cast<int>(bits) - 1);
    const int64_t x = v <= lo ? std::numeric_limits<int64_t>::min() >> (64 - bits)
                      : v >= hi ? std::numeric_limits<int64_t>::max() >> (64 - bits)
                                : static_cast<int64_t>(v);
    return c.builder().getIntegerAttr(t, x);
  }
  const double hi = std::ldexp(1.0, static_cast<int>(bits));
  const uint64_t x = v <= 0 ? 0 : v >= hi ? (~uint64_t{0} >> (64 - bits)) : static_cast<uint64_t>(v);
  return c.builder().getIntegerAttr(t, mlir::APInt(bits, x));
}

mlir::Value splat(TraceContext& c, mlir::Location loc, const Shape& shape, double v) {
  auto type = c.tensorType(shape);
  auto attr = mlir::DenseElementsAttr::get(type, mlir::cast<mlir::Attribute>(scalarAttr(c, shape.dtype(), v)));
  return mlir::arith::ConstantOp::create(c.builder(), loc, type, attr);
}

mlir::Value emptyLike(TraceContext& c, mlir::Location loc, const Shape& shape) {
  return mlir::tensor::EmptyOp::create(c.builder(), loc, shape.dims(), c.elementType(shape.dtype()));
}

mlir::Value filled(TraceContext& c, mlir::Location loc, const Shape& shape, double v) {
  mlir::Value init = mlir::arith::ConstantOp::create(c.builder(), loc, scalarAttr(c, shape.dtype(), v));
  return mlir::linalg::FillOp::create(c.builder(), loc, init, emptyLike(c, loc, shape)).getResult(0);
}

mlir::Value reshapeValue(TraceContext& c, mlir::Location loc, mlir::Value v, const Shape& from, const Shape& to) {
  if (from.dims() == to.dims()) return v;
  auto& b = c.builder();
  auto flatType = mlir::RankedTensorType::get({from.count()}, c.elementType(from.dtype()));
  mlir::Value flat = v;
  if (from.rank() != 1) {
    std::vector<mlir::ReassociationIndices> r;
    if (from.rank() > 0) {
      mlir::ReassociationIndices all(from.rank());
      std::iota(all.begin(), all.end(), 0);
      r.push_back(all);
      flat = mlir::tensor::CollapseShapeOp::create(b, loc, flatType, v, r);
    } else {
      flat = mlir::tensor::ExpandShapeOp::create(b, loc, flatType, v, r);
    }
  }
  if (to.rank() == 1) return flat;
  std::vector<mlir::ReassociationIndices> r;
  if (to.rank() == 0) return mlir::tensor::CollapseShapeOp::create(b, loc, c.tensorType(to.withDtype(from.dtype())), flat, r);
  mlir::ReassociationIndices all(to.rank());
  std::iota(all.begin(), all.end(), 0);
  r.push_back(all);
  return mlir::tensor::ExpandShapeOp::create(b, loc, c.tensorType(to.withDtype(from.dtype())), flat, r);
}

mlir::Value broadcastValue(TraceContext& c, mlir::Location loc, mlir::Value v, const Shape& from, const Shape& to,
                           const std::vector<int64_t>& axes) {
  std::vector<std::pair<int64_t, int64_t>> kept;  // (target axis, source axis)
  for (int64_t i = 0; i < from.rank(); ++i)
    if (from.dim(i) == to.dim(axes[i])) kept.emplace_back(axes[i], i);
  std::vector<int64_t> keptDims;
  for (auto [t, s] : kept) keptDims.push_back(from.dim(s));
  Shape squeezed(keptDims, from.dtype());
  mlir::Value x = v;
  if (static_cast<int64_t>(kept.size()) != from.rank()) x = reshapeValue(c, loc, v, from, squeezed);
  std::vector<std::pair<int64_t, int64_t>> order = kept;
  for (size_t i = 0; i < order.size(); ++i) order[i].second = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> perm;
  for (auto [t, s] : order) perm.push_back(s);
  std::vector<int64_t> sortedDims;
  for (int64_t p : perm) sortedDims.push_back(keptDims[p]);
  if (!std::is_sorted(perm.begin(), perm.end())) {
    auto out = emptyLike(c, loc, Shape(sortedDims, from.dtype()));
    x = mlir::linalg::TransposeOp::create(c.builder(), loc, x, out, perm).getResult()[0];
  }
  std::vector<int64_t> added;
  std::vector<bool> isKept(to.rank(), false);
  for (auto [t, s] : kept) isKept[t] = true;
  for (int64_t i = 0; i < to.rank(); ++i)
    if (!isKept[i]) added.push_back(i);
  if (added.empty()) return x;
  auto out = emptyLike(c, loc, to.withDtype(from.dtype()));
  return mlir::linalg::BroadcastOp::create(c.builder(), loc, x, out, added).getResult()[0];
}

bool isPositionalGuess(const Shape& untagged, const Shape& tagged) {
  if (untagged.isTagged() || !tagged.isTagged()) return false;
  for (int64_t i = 0; i < untagged.rank(); ++i)
    if (untagged.dim(i) != 1) return true;
  return false;
}

Error untaggedError(const char* op, const Shape& untagged, const Shape& tagged) {
  // Suggest, for each axis in order, the next tagged axis of the same size.
  std::string hint;
  int64_t next = 0;
  for (int64_t i = 0; i < untagged.rank() && next >= 0; ++i) {
    int64_t found = -1;
    for (int64_t t = next; t < tagged.rank() && found < 0; ++t)
      if (!tagged.tag(t).empty() && tagged.dim(t) == untagged.dim(i)) found = t;
    if (found < 0) {
      next = -1;
      break;
    }
    hint += (i ? ", " : "") + quote(tagged.tag(found).name());
    next = found + 1;
  }
  const std::string example = next >= 0 ? "x.withTags({" + hint + "})" : "x.withTags({...}) with tags of " + tagged.str();
  return opError(op, untagged.str() + " is untagged and " + tagged.str() +
                         " is tagged: Radix does not align axes by position; tag it with the axes it maps to, e.g. " +
                         example);
}

Shape binaryShape(const char* op, const Shape& a, const Shape& b) {
  if (a.dtype() != b.dtype())
    throw opError(op, "dtypes differ: " + a.str() + " and " + b.str() + " (use convert)");
  if (a.rank() == 0) return b;
  if (b.rank() == 0) return a;
  if (isPositionalGuess(a, b)) throw untaggedError(op, a, b);
  if (isPositionalGuess(b, a)) throw untaggedError(op, b, a);
  if (a.rank() != b.rank()) throw opError(op, "ranks differ: " + a.str() + " and " + b.str());
  // Untagged size-1 axes take the other side's tags.
  const bool ones = !a.isTagged() || !b.isTagged();
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < a.rank(); ++i) {
    if (!(a.tag(i) == b.tag(i)) && !ones)
      throw opError(op, "tags differ at axis " + std::to_string(i) + ": " + a.str() + " and " + b.str());
    if (a.dim(i) != b.dim(i) && a.dim(i) != 1 && b.dim(i) != 1)
      throw opError(op, "dims differ at axis " + std::to_string(i) + ": " + a.str() + " and " + b.str());
    dims.push_back(a.dim(i) == 1 ? b.dim(i) : a.dim(i));  // a size-1 axis broadcasts, also to size 0
  }
  Shape s(dims, a.dtype());
  for (int64_t i = 0; i < a.rank(); ++i) s = s.withTag(i, a.tag(i).empty() ? b.tag(i) : a.tag(i));
  return s;
}

mlir::Value operandAs(TraceContext& c, mlir::Location loc, const Tensor& t, const Shape& target, const char* op) {
  mlir::Value v = c.value(t, op);
  if (t.shape().dims() == target.dims()) return v;
  // A splat constant becomes a splat of the target shape, so that arith folds see it.
  if (auto cst = v.getDefiningOp<mlir::arith::ConstantOp>())
    if (auto dense = mlir::dyn_cast<mlir::SplatElementsAttr>(cst.getValue()))
      return mlir::arith::ConstantOp::create(
          c.builder(), loc,
          mlir::DenseElementsAttr::get(c.tensorType(target.withDtype(t.dtype())), dense.getSplatValue<mlir::Attribute>()));
  std::vector<int64_t> axes;
  if (t.rank() > 0)
    for (int64_t i = 0; i < t.rank(); ++i) axes.push_back(i);
  return broadcastValue(c, loc, v, t.shape(), target, axes);
}

mlir::Value convertValue(TraceContext& c, mlir::Location loc, mlir::Value x, DType from, DType to, const Shape& shape) {
  if (from == to) return x;
  auto& b = c.builder();
  auto type = c.tensorType(shape.withDtype(to));
  const unsigned fromBits = static_cast<unsigned>(sizeOf(from) * 8), toBits = static_cast<unsigned>(sizeOf(to) * 8);
  if (to == DType::bool_) {
    mlir::Value zero = splat(c, loc, shape.withDtype(from), 0);
    if (isFloat(from)) return mlir::arith::CmpFOp::create(b, loc, mlir::arith::CmpFPredicate::UNE, x, zero);
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ne, x, zero);
  }
  if (isFloat(from) && isFloat(to)) {
    // f16 <-> bf16, and f64 -> bf16 (no runtime routine truncates f64 to bf16 directly; through
    // f32 it can round twice, off by one bf16 ulp in rare ties).
    if ((from == DType::f16 && to == DType::bf16) || (from == DType::bf16 && to == DType::f16) ||
        (from == DType::f64 && to == DType::bf16)) {
      const auto f32 = c.tensorType(shape.withDtype(DType::f32));
      mlir::Value wide = from == DType::f64 ? mlir::Value(mlir::arith::TruncFOp::create(b, loc, f32, x))
                                            : mlir::arith::ExtFOp::create(b, loc, f32, x);
      return mlir::arith::TruncFOp::create(b, loc, type, wide);
    }
    if (toBits > fromBits) return mlir::arith::ExtFOp::create(b, loc, type, x);
    return mlir::arith::TruncFOp::create(b, loc, type, x);
  }
  if (isFloat(to)) {
    if (isSignedInt(from)) return mlir::arith::SIToFPOp::create(b, loc, type, x);
    return mlir::arith::UIToFPOp::create(b, loc, type, x);
  }
  if (isFloat(from)) {
    // Saturates, NaN -> 0 (as XLA): fptosi/fptoui of an out-of-range value is poison, so such
    // inputs become 0 first, then the bound. The bounds are powers of two, exact in every float
    // type (or inf in f16, where x >= inf still catches inf).
    const bool s = isSignedInt(to);
    const Shape fs = shape.withDtype(from);
    const double above = std::ldexp(1.0, static_cast<int>(s ? toBits - 1 : toBits));
    using P = mlir::arith::CmpFPredicate;
    mlir::Value tooBig = mlir::arith::CmpFOp::create(b, loc, P::OGE, x, splat(c, loc, fs, above));
    mlir::Value tooSmall = mlir::arith::CmpFOp::create(b, loc, P::OLE, x, splat(c, loc, fs, s ? -above : 0.0));
    mlir::Value isNan = mlir::arith::CmpFOp::create(b, loc, P::UNO, x, x);
    mlir::Value bad = mlir::arith::OrIOp::create(b, loc, mlir::arith::OrIOp::create(b, loc, tooBig, tooSmall), isNan);
    mlir::Value safe = mlir::arith::SelectOp::create(b, loc, bad, splat(c, loc, fs, 0), x);
    mlir::Value r = s ? mlir::Value(mlir::arith::FPToSIOp::create(b, loc, type, safe))
                      : mlir::arith::FPToUIOp::create(b, loc, type, safe);
    auto bound = [&](const llvm::APInt& v) {
      return mlir::arith::ConstantOp::create(b, loc, type, mlir::DenseElementsAttr::get(type, v));
    };
    const llvm::APInt hi = s ? llvm::APInt::getSignedMaxValue(toBits) : llvm::APInt::getMaxValue(toBits);
    const llvm::APInt lo = s ? llvm::APInt::getSignedMinValue(toBits) : llvm::APInt::getZero(toBits);
    r = mlir::arith::SelectOp::create(b, loc, tooBig, bound(hi), r);
    return mlir::arith::SelectOp::create(b, loc, tooSmall, bound(lo), r);
  }
  const unsigned fromWidth = from == DType::bool_ ? 1 : fromBits;
  if (toBits == fromWidth) return mlir::arith::BitcastOp::create(b, loc, type, x);
  if (toBits < fromWidth) return mlir::arith::TruncIOp::create(b, loc, type, x);
  if (isSignedInt(from)) return mlir::arith::ExtSIOp::create(b, loc, type, x);
  return mlir::arith::ExtUIOp::create(b, loc, type, x);
}

mlir::Value generate(TraceContext& c, mlir::Location loc, const Shape& out,
                     const std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, const std::vector<mlir::Value>&)>& body) {
  auto& b = c.builder();
  mlir::Value init = emptyLike(c, loc, out);
  if (out.count() == 0) return init;
  const unsigned n = static_cast<unsigned>(out.rank());
  std::vector<mlir::utils::IteratorType> iters(n, mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{mlir::AffineMap::getMultiDimIdentityMap(n, &c.mlir())}, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange) {
        std::vector<mlir::Value> at;
        for (unsigned i = 0; i < n; ++i) at.push_back(mlir::linalg::IndexOp::create(nb, nl, i));
        mlir::linalg::YieldOp::create(nb, nl, body(nb, nl, at));
      });
  return generic.getResult(0);
}

}  // namespace radix::ops
