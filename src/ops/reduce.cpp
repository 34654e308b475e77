// Reductions over one or several axes (kept with size 1), arg-reductions, inclusive scans, and
// the max-shifted composites built on them (logSumExp, softmax, logSoftmax).
#include <algorithm>
#include <cmath>
#include <limits>

#include "llvm/ADT/APInt.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

enum class Reduce { sum, prod, max, min, any, all };

bool isHalf(DType d) { return d == DType::f16 || d == DType::bf16; }

/// Sums and products of f16/bf16 accumulate in f32; max/min are exact in any dtype.
DType accumulatorOf(Reduce kind, DType d) {
  return (kind == Reduce::sum || kind == Reduce::prod) && isHalf(d) ? DType::f32 : d;
}

/// any/all take bools; the others take numbers.
void checkDtype(Reduce kind, const Shape& s, const char* op) {
  const bool logical = kind == Reduce::any || kind == Reduce::all;
  if (logical && s.dtype() != DType::bool_) throw opError(op, "needs a bool tensor, got " + s.str());
  if (!logical && s.dtype() == DType::bool_) throw opError(op, "bool tensors have no arithmetic: " + s.str());
}

/// The neutral element of `kind` in `d` (exact for 64-bit integers).
mlir::Value identityOf(mlir::OpBuilder& b, mlir::Location loc, mlir::Type type, Reduce kind, DType d) {
  if (isFloat(d)) {
    const double inf = std::numeric_limits<double>::infinity();
    const double v = kind == Reduce::sum ? 0 : kind == Reduce::prod ? 1 : kind == Reduce::max ? -inf : inf;
    return mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  }
  const unsigned bits = d == DType::bool_ ? 1 : static_cast<unsigned>(sizeOf(d) * 8);
  const bool s = isSignedInt(d);
  llvm::APInt v;
  switch (kind) {
    case Reduce::sum: case Reduce::any: v = llvm::APInt::getZero(bits); break;
    case Reduce::prod: case Reduce::all: v = llvm::APInt(bits, 1); break;
    case Reduce::max: v = s ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getMinValue(bits); break;
    case Reduce::min: v = s ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits); break;
  }
  return mlir::arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

/// One step of `kind` on scalars of `d` (max/min of floats propagate NaN).
mlir::Value combine(mlir::OpBuilder& b, mlir::Location l, Reduce kind, DType d, mlir::Value x, mlir::Value acc) {
  const bool f = isFloat(d), s = isSignedInt(d);
  switch (kind) {
    case Reduce::sum:
      return f ? mlir::Value(mlir::arith::AddFOp::create(b, l, x, acc)) : mlir::arith::AddIOp::create(b, l, x, acc);
    case Reduce::prod:
      return f ? mlir::Value(mlir::arith::MulFOp::create(b, l, x, acc)) : mlir::arith::MulIOp::create(b, l, x, acc);
    case Reduce::max:
      if (f) return mlir::arith::MaximumFOp::create(b, l, x, acc);
      return s ? mlir::Value(mlir::arith::MaxSIOp::create(b, l, x, acc)) : mlir::arith::MaxUIOp::create(b, l, x, acc);
    case Reduce::min:
      if (f) return mlir::arith::MinimumFOp::create(b, l, x, acc);
      return s ? mlir::Value(mlir::arith::MinSIOp::create(b, l, x, acc)) : mlir::arith::MinUIOp::create(b, l, x, acc);
    case Reduce::any: return mlir::arith::OrIOp::create(b, l, x, acc);
    case Reduce::all: return mlir::arith::AndIOp::create(b, l, x, acc);
  }
  return acc;
}

/// Resolved axes, sorted; throws on an axis out of range or named twice.
std::vector<int64_t> resolveAxes(const Shape& s, const std::vector<Axis>& axes, const char* op) {
  std::vector<int64_t> out;
  for (const Axis& a : axes) {
    const int64_t i = s.axis(a, op);
    if (std::find(out.begin(), out.end(), i) != out.end())
      throw opError(op, "axis " + a.str() + " repeats axis " + std::to_string(i) + " of " + s.str());
    out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// `s` with the given axes set to size 1, tags kept, in dtype `d`.
Shape keptShape(const Shape& s, const std::vector<int64_t>& axes, DType d) {
  std::vector<int64_t> dims = s.dims();
  for (int64_t a : axes) dims[a] = 1;
  Shape out(dims, d);
  for (int64_t i = 0; i < s.rank(); ++i) out = out.withTag(i, s.tag(i));
  return out;
}

/// A linalg.reduce of `kind` over `axes` of `a`, in accumulatorOf(kind) and shaped as keptShape.
mlir::Value reduceValue(TraceContext& c, mlir::Location loc, const Tensor& a, const std::vector<int64_t>& axes, Reduce kind,
                        const char* op) {
  const DType d = a.dtype(), acc = accumulatorOf(kind, d);
  mlir::Value x = convertValue(c, loc, c.value(a, op), d, acc, a.shape());
  if (axes.empty()) return x;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < a.rank(); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) dims.push_back(a.shape().dim(i));
  const Shape reduced(dims, acc);
  auto& b = c.builder();
  mlir::Value init = mlir::linalg::FillOp::create(b, loc, identityOf(b, loc, c.elementType(acc), kind, acc),
                                                  emptyLike(c, loc, reduced))
                         .getResult(0);
  auto reduceOp = mlir::linalg::ReduceOp::create(
      b, loc, mlir::ValueRange{x}, mlir::ValueRange{init}, axes,
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        mlir::linalg::YieldOp::create(nb, l, combine(nb, l, kind, acc, args[0], args[1]));
      });
  return reshapeValue(c, loc, reduceOp.getResult(0), reduced, keptShape(a.shape(), axes, acc));
}

Tensor reduce(const Tensor& a, const std::vector<Axis>& axisList, Reduce kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const std::vector<int64_t> axes = resolveAxes(a.shape(), axisList, op);
  checkDtype(kind, a.shape(), op);
  auto loc = c.loc(where, op);
  const DType d = a.dtype(), acc = accumulatorOf(kind, d);
  const Shape out = keptShape(a.shape(), axes, d);
  mlir::Value r = reduceValue(c, loc, a, axes, kind, op);
  return c.wrap(convertValue(c, loc, r, acc, d, out), out);
}

Tensor meanOf(const Tensor& a, const std::vector<Axis>& axisList, const std::source_location& where) {
  const char* op = "mean";
  TraceContext& c = detail::currentTrace(op);
  const std::vector<int64_t> axes = resolveAxes(a.shape(), axisList, op);
  if (!isFloat(a.dtype())) throw opError(op, "needs a float tensor, got " + a.shape().str() + " (use convert)");
  auto loc = c.loc(where, op);
  const DType d = a.dtype(), acc = accumulatorOf(Reduce::sum, d);
  const Shape out = keptShape(a.shape(), axes, d);
  double n = 1;
  for (int64_t i : axes) n *= static_cast<double>(a.shape().dim(i));
  mlir::Value sum = reduceValue(c, loc, a, axes, Reduce::sum, op);
  // 0 / 0 = NaN over an empty axis, as numpy's mean.
  mlir::Value r = mlir::arith::DivFOp::create(c.builder(), loc, sum, splat(c, loc, out.withDtype(acc), n));
  return c.wrap(convertValue(c, loc, r, acc, d, out), out);
}

/// One linalg.generic with two outputs (value, i32 index) whose body keeps the better of the
/// accumulator and the current element. The choice does not depend on the visiting order: NaN
/// beats numbers, and on ties (NaN ties too) the smaller index wins.
ArgMax argReduce(const Tensor& a, Axis axis, bool isMax, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape& s = a.shape();
  const int64_t ax = s.axis(axis, op);
  if (s.dim(ax) == 0) throw opError(op, "axis " + axis.str() + " has size 0 in " + s.str());
  if (s.dim(ax) > std::numeric_limits<int32_t>::max())
    throw opError(op, "axis " + axis.str() + " of " + s.str() + " is too long for i32 indices");
  auto loc = c.loc(where, op);
  auto& b = c.builder();
  const DType d = a.dtype();
  mlir::Value x = c.value(a, op);
  std::vector<int64_t> dims = s.dims();
  dims.erase(dims.begin() + ax);
  const Shape reduced(dims, d), reducedIdx(dims, DType::i32);
  mlir::Type i32 = c.elementType(DType::i32);
  mlir::Value initV = mlir::linalg::FillOp::create(b, loc, identityOf(b, loc, c.elementType(d), isMax ? Reduce::max : Reduce::min, d),
                                                   emptyLike(c, loc, reduced))
                          .getResult(0);
  // No index is past the end, so every element beats the initial accumulator or ties it earlier.
  mlir::Value sentinel = mlir::arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, std::numeric_limits<int32_t>::max()));
  mlir::Value initI = mlir::linalg::FillOp::create(b, loc, sentinel, emptyLike(c, loc, reducedIdx)).getResult(0);

  const unsigned rank = static_cast<unsigned>(s.rank());
  std::vector<mlir::AffineExpr> outExprs;
  std::vector<mlir::utils::IteratorType> iterators;
  for (unsigned i = 0; i < rank; ++i) {
    if (static_cast<int64_t>(i) != ax) outExprs.push_back(b.getAffineDimExpr(i));
    iterators.push_back(static_cast<int64_t>(i) == ax ? mlir::utils::IteratorType::reduction : mlir::utils::IteratorType::parallel);
  }
  mlir::AffineMap inMap = b.getMultiDimIdentityMap(rank);
  mlir::AffineMap outMap = mlir::AffineMap::get(rank, 0, outExprs, b.getContext());
  const bool f = isFloat(d), sgn = isSignedInt(d);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{c.tensorType(reduced), c.tensorType(reducedIdx)}, mlir::ValueRange{x},
      mlir::ValueRange{initV, initI}, llvm::ArrayRef<mlir::AffineMap>{inMap, outMap, outMap}, iterators,
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        using mlir::arith::CmpFPredicate;
        using mlir::arith::CmpIPredicate;
        mlir::Value xv = args[0], v = args[1], i = args[2];
        mlir::Value idx = mlir::arith::IndexCastOp::create(nb, l, i32, mlir::linalg::IndexOp::create(nb, l, static_cast<uint64_t>(ax)));
        mlir::Value earlier = mlir::arith::CmpIOp::create(nb, l, CmpIPredicate::slt, idx, i);
        mlir::Value take;
        if (f) {
          auto cmp = [&](CmpFPredicate p, mlir::Value p0, mlir::Value p1) { return mlir::Value(mlir::arith::CmpFOp::create(nb, l, p, p0, p1)); };
          auto orV = [&](mlir::Value p0, mlir::Value p1) { return mlir::Value(mlir::arith::OrIOp::create(nb, l, p0, p1)); };
          auto andV = [&](mlir::Value p0, mlir::Value p1) { return mlir::Value(mlir::arith::AndIOp::create(nb, l, p0, p1)); };
          mlir::Value xNaN = cmp(CmpFPredicate::UNO, xv, xv), vNumber = cmp(CmpFPredicate::ORD, v, v);
          mlir::Value better = cmp(isMax ? CmpFPredicate::OGT : CmpFPredicate::OLT, xv, v);
          mlir::Value same = cmp(CmpFPredicate::OEQ, xv, v);
          // A NaN beats a number, or an earlier NaN; a number beats a smaller number or ties earlier.
          mlir::Value takeNaN = andV(xNaN, orV(vNumber, earlier));
          mlir::Value takeNumber = andV(vNumber, orV(better, andV(same, earlier)));
          take = orV(takeNaN, takeNumber);
        } else {
          const CmpIPredicate p = isMax ? (sgn ? CmpIPredicate::sgt : CmpIPredicate::ugt) : (sgn ? CmpIPredicate::slt : CmpIPredicate::ult);
          mlir::Value better = mlir::arith::CmpIOp::create(nb, l, p, xv, v);
          mlir::Value same = mlir::arith::CmpIOp::create(nb, l, CmpIPredicate::eq, xv, v);
          take = mlir::arith::OrIOp::create(nb, l, better, mlir::arith::AndIOp::create(nb, l, same, earlier));
        }
        mlir::Value newV = mlir::arith::SelectOp::create(nb, l, take, xv, v);
        mlir::Value newI = mlir::arith::SelectOp::create(nb, l, take, idx, i);
        mlir::linalg::YieldOp::create(nb, l, mlir::ValueRange{newV, newI});
      });
  const Shape out = keptShape(s, {ax}, d), outIdx = out.withDtype(DType::i32);
  mlir::Value values = reshapeValue(c, loc, generic.getResult(0), reduced, out);
  mlir::Value indices = reshapeValue(c, loc, generic.getResult(1), reducedIdx, outIdx);
  return ArgMax{c.wrap(values, out), c.wrap(indices, outIdx)};
}

/// Axes up to this size scan with the O(n^2) form (one parallel op); longer ones with the loop.
constexpr int64_t kMaxQuadraticScan = 16;

/// Inclusive scan as one linalg.generic over (..., i, ..., j) where j is a reduction dim:
/// out[..., i, ...] = combine over j <= i of x[..., j, ...]. O(n^2) in the axis size n, with no
/// loop-carried dependency, so it lowers like any reduction (and the outer axes run in parallel).
mlir::Value scanQuadratic(TraceContext& c, mlir::Location loc, mlir::Value x, const Shape& wide, int64_t ax, Reduce kind) {
  auto& b = c.builder();
  const DType acc = wide.dtype();
  mlir::Type elem = c.elementType(acc);
  mlir::Value init = mlir::linalg::FillOp::create(b, loc, identityOf(b, loc, elem, kind, acc), emptyLike(c, loc, wide)).getResult(0);
  const unsigned rank = static_cast<unsigned>(wide.rank()), j = rank;
  std::vector<mlir::AffineExpr> inExprs, outExprs;
  std::vector<mlir::utils::IteratorType> iterators;
  for (unsigned i = 0; i < rank; ++i) {
    inExprs.push_back(b.getAffineDimExpr(static_cast<int64_t>(i) == ax ? j : i));
    outExprs.push_back(b.getAffineDimExpr(i));
    iterators.push_back(mlir::utils::IteratorType::parallel);
  }
  iterators.push_back(mlir::utils::IteratorType::reduction);
  mlir::AffineMap inMap = mlir::AffineMap::get(rank + 1, 0, inExprs, b.getContext());
  mlir::AffineMap outMap = mlir::AffineMap::get(rank + 1, 0, outExprs, b.getContext());
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{c.tensorType(wide)}, mlir::ValueRange{x}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{inMap, outMap}, iterators,
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        mlir::Value i = mlir::linalg::IndexOp::create(nb, l, static_cast<uint64_t>(ax));
        mlir::Value k = mlir::linalg::IndexOp::create(nb, l, static_cast<uint64_t>(j));
        mlir::Value inside = mlir::arith::CmpIOp::create(nb, l, mlir::arith::CmpIPredicate::ule, k, i);
        // Select, not multiply: a NaN or inf past i must not leak into out[i].
        mlir::Value xv = mlir::arith::SelectOp::create(nb, l, inside, args[0], identityOf(nb, l, elem, kind, acc));
        mlir::linalg::YieldOp::create(nb, l, combine(nb, l, kind, acc, xv, args[1]));
      });
  return generic.getResult(0);
}

/// Inclusive scan as an scf.for over axis `ax` carrying the running slice and the result: step k
/// combines slice k of x into the running slice (one linalg.generic, in place) and inserts it at
/// k. O(n) work, n sequential steps, each parallel over the other axes. Slices must be contiguous
/// (ax == 0, see scan).
mlir::Value scanLoop(TraceContext& c, mlir::Location loc, mlir::Value x, const Shape& wide, int64_t ax, Reduce kind) {
  auto& b = c.builder();
  const DType acc = wide.dtype();
  std::vector<int64_t> sliceDims = wide.dims();
  sliceDims[ax] = 1;
  const Shape slice(sliceDims, acc);
  auto sliceType = c.tensorType(slice);
  mlir::Value running = mlir::linalg::FillOp::create(b, loc, identityOf(b, loc, c.elementType(acc), kind, acc),
                                                     emptyLike(c, loc, slice))
                            .getResult(0);
  mlir::Value lower = mlir::arith::ConstantIndexOp::create(b, loc, 0);
  mlir::Value upper = mlir::arith::ConstantIndexOp::create(b, loc, wide.dim(ax));
  mlir::Value step = mlir::arith::ConstantIndexOp::create(b, loc, 1);
  const unsigned rank = static_cast<unsigned>(wide.rank());
  mlir::AffineMap identity = b.getMultiDimIdentityMap(rank);
  std::vector<mlir::utils::IteratorType> parallel(rank, mlir::utils::IteratorType::parallel);
  auto loop = mlir::scf::ForOp::create(
      b, loc, lower, upper, step, mlir::ValueRange{emptyLike(c, loc, wide), running},
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::Value k, mlir::ValueRange carried) {
        llvm::SmallVector<mlir::OpFoldResult> offsets(rank, nb.getIndexAttr(0)), sizes, strides(rank, nb.getIndexAttr(1));
        offsets[ax] = k;
        for (int64_t d : sliceDims) sizes.push_back(nb.getIndexAttr(d));
        mlir::Value xk = mlir::tensor::ExtractSliceOp::create(nb, l, sliceType, x, offsets, sizes, strides);
        mlir::Value next = mlir::linalg::GenericOp::create(
                               nb, l, mlir::TypeRange{sliceType}, mlir::ValueRange{xk}, mlir::ValueRange{carried[1]},
                               llvm::ArrayRef<mlir::AffineMap>{identity, identity}, parallel,
                               [&](mlir::OpBuilder& gb, mlir::Location gl, mlir::ValueRange args) {
                                 mlir::linalg::YieldOp::create(gb, gl, combine(gb, gl, kind, acc, args[0], args[1]));
                               })
                               .getResult(0);
        mlir::Value out = mlir::tensor::InsertSliceOp::create(nb, l, next, carried[0], offsets, sizes, strides);
        mlir::scf::YieldOp::create(nb, l, mlir::ValueRange{out, next});
      });
  return loop.getResult(0);
}

/// Inclusive scan along an axis: the O(n^2) form up to kMaxQuadraticScan, the O(n) loop above
/// (with the axis moved to the front and back: two transposes, O(count)).
Tensor scan(const Tensor& a, Axis axis, Reduce kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape& s = a.shape();
  const int64_t ax = s.axis(axis, op);
  checkDtype(kind, s, op);
  auto loc = c.loc(where, op);
  const DType d = a.dtype(), acc = accumulatorOf(kind, d);
  mlir::Value x = convertValue(c, loc, c.value(a, op), d, acc, s);
  const Shape wide = s.withDtype(acc);
  mlir::Value r;
  if (s.count() == 0) {
    r = emptyLike(c, loc, wide);  // nothing to scan (and slices of a zero-size axis would not verify)
  } else if (s.dim(ax) <= kMaxQuadraticScan) {
    r = scanQuadratic(c, loc, x, wide, ax, kind);
  } else if (ax == 0) {
    r = scanLoop(c, loc, x, wide, 0, kind);
  } else {
    // The loop scans axis 0, where each slice is contiguous: slices of another axis are strided,
    // and their copies would lower to a call of the memrefCopy runtime function.
    std::vector<int64_t> perm = {ax}, inverse(s.rank()), dims = {s.dim(ax)};
    for (int64_t i = 0; i < s.rank(); ++i)
      if (i != ax) perm.push_back(i), dims.push_back(s.dim(i));
    for (int64_t i = 0; i < s.rank(); ++i) inverse[perm[i]] = i;
    const Shape front(dims, acc);
    auto& b = c.builder();
    mlir::Value moved = mlir::linalg::TransposeOp::create(b, loc, x, emptyLike(c, loc, front), perm).getResult()[0];
    mlir::Value scanned = scanLoop(c, loc, moved, front, 0, kind);
    r = mlir::linalg::TransposeOp::create(b, loc, scanned, emptyLike(c, loc, wide), inverse).getResult()[0];
  }
  return c.wrap(convertValue(c, loc, r, acc, d, s), s);
}

/// m where finite, else 0: the shift of logSumExp and softmax, so that a row of -inf (or one
/// holding +inf) gives what the unshifted formula gives instead of inf - inf.
Tensor finiteOrZero(const Tensor& m, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  auto loc = c.loc(where, op);
  auto& b = c.builder();
  const Shape& s = m.shape();
  mlir::Value v = c.value(m, op);
  mlir::Value magnitude = mlir::math::AbsFOp::create(b, loc, v);
  mlir::Value finite = mlir::arith::CmpFOp::create(b, loc, mlir::arith::CmpFPredicate::OLT, magnitude,
                                                   splat(c, loc, s, std::numeric_limits<double>::infinity()));
  return c.wrap(mlir::arith::SelectOp::create(b, loc, finite, v, splat(c, loc, s, 0)), s);
}

/// y, with 0 on the rows where rowMax is -inf (rows of only -inf; NaN rows keep their NaN).
Tensor zeroOnMinusInfRows(const Tensor& y, const Tensor& rowMax, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  auto loc = c.loc(where, op);
  auto& b = c.builder();
  const Shape& s = y.shape();
  mlir::Value m = operandAs(c, loc, rowMax, s, op);
  mlir::Value keep = mlir::arith::CmpFOp::create(b, loc, mlir::arith::CmpFPredicate::UNE, m,
                                                 splat(c, loc, s, -std::numeric_limits<double>::infinity()));
  return c.wrap(mlir::arith::SelectOp::create(b, loc, keep, c.value(y, op), splat(c, loc, s, 0)), s);
}

/// x in f32 when it is f16/bf16 (softmax and friends compute in f32); throws unless float.
Tensor widened(const Tensor& x, const char* op, const std::source_location& where) {
  if (!isFloat(x.dtype())) throw opError(op, "needs a float tensor, got " + x.shape().str() + " (use convert)");
  return isHalf(x.dtype()) ? x.convert(DType::f32, where) : x;
}

Tensor narrowed(const Tensor& x, DType d, const std::source_location& where) {
  return x.dtype() == d ? x : x.convert(d, where);
}

}  // namespace

Tensor Tensor::sum(Axis axis, Loc l) const { return reduce(*this, {axis}, Reduce::sum, "sum", l); }
Tensor Tensor::max(Axis axis, Loc l) const { return reduce(*this, {axis}, Reduce::max, "max", l); }
Tensor Tensor::sum(const std::vector<Axis>& axes, Loc l) const { return reduce(*this, axes, Reduce::sum, "sum", l); }
Tensor Tensor::max(const std::vector<Axis>& axes, Loc l) const { return reduce(*this, axes, Reduce::max, "max", l); }
Tensor Tensor::min(Axis axis, Loc l) const { return reduce(*this, {axis}, Reduce::min, "min", l); }
Tensor Tensor::min(const std::vector<Axis>& axes, Loc l) const { return reduce(*this, axes, Reduce::min, "min", l); }
Tensor Tensor::mean(Axis axis, Loc l) const { return meanOf(*this, {axis}, l); }
Tensor Tensor::mean(const std::vector<Axis>& axes, Loc l) const { return meanOf(*this, axes, l); }
Tensor Tensor::prod(Axis axis, Loc l) const { return reduce(*this, {axis}, Reduce::prod, "prod", l); }
Tensor Tensor::prod(const std::vector<Axis>& axes, Loc l) const { return reduce(*this, axes, Reduce::prod, "prod", l); }
Tensor Tensor::any(Axis axis, Loc l) const { return reduce(*this, {axis}, Reduce::any, "any", l); }
Tensor Tensor::any(const std::vector<Axis>& axes, Loc l) const { return reduce(*this, axes, Reduce::any, "any", l); }
Tensor Tensor::all(Axis axis, Loc l) const { return reduce(*this, {axis}, Reduce::all, "all", l); }
Tensor Tensor::all(const std::vector<Axis>& axes, Loc l) const { return reduce(*this, axes, Reduce::all, "all", l); }

ArgMax Tensor::argMax(Axis axis, Loc l) const { return argReduce(*this, axis, true, "argMax", l); }
ArgMin Tensor::argMin(Axis axis, Loc l) const { return argReduce(*this, axis, false, "argMin", l); }

Tensor Tensor::cumulativeSum(Axis axis, Loc l) const { return scan(*this, axis, Reduce::sum, "cumulativeSum", l); }
Tensor Tensor::cumulativeMax(Axis axis, Loc l) const { return scan(*this, axis, Reduce::max, "cumulativeMax", l); }
Tensor Tensor::cumulativeMin(Axis axis, Loc l) const { return scan(*this, axis, Reduce::min, "cumulativeMin", l); }
Tensor Tensor::cumulativeProd(Axis axis, Loc l) const { return scan(*this, axis, Reduce::prod, "cumulativeProd", l); }

Tensor Tensor::logSumExp(Axis axis, Loc l) const {
  return renamingErrors("logSumExp", [&] {
    const Tensor x = widened(*this, "logSumExp", l);
    const Tensor m = finiteOrZero(x.max(axis, l), "logSumExp", l);
    return narrowed(x.sub(m, l).exp(l).sum(axis, l).log(l).add(m, l), dtype(), l);
  });
}

Tensor Tensor::softmax(Axis axis, Loc l) const {
  return renamingErrors("softmax", [&] {
    const Tensor x = widened(*this, "softmax", l);
    const Tensor m = x.max(axis, l);
    const Tensor e = x.sub(finiteOrZero(m, "softmax", l), l).exp(l);
    // A row of only -inf (a fully masked attention row) gives 0 rather than 0/0, as in ZML.
    // One division per row, a multiplication per element (vdivps is the slowest vector op).
    const Tensor inverse = scalar(1, x.dtype(), l).div(e.sum(axis, l), l);
    return narrowed(zeroOnMinusInfRows(e.mul(inverse, l), m, "softmax", l), dtype(), l);
  });
}

Tensor Tensor::softmaxBiased(Axis axis, const Tensor& bias, Loc l) const {
  return renamingErrors("softmaxBiased", [&] {
    const Tensor x = widened(*this, "softmaxBiased", l);
    const Tensor rowMax = x.max(axis, l);
    const Tensor b = (bias.dtype() == x.dtype() ? bias : bias.convert(x.dtype(), l)).broad(rowMax.shape(), l);
    const Tensor m = rowMax.maximum(b, l);
    const Tensor shift = finiteOrZero(m, "softmaxBiased", l);
    const Tensor e = x.sub(shift, l).exp(l);
    const Tensor denominator = e.sum(axis, l).add(b.sub(shift, l).exp(l), l);
    return narrowed(zeroOnMinusInfRows(e.div(denominator, l), m, "softmaxBiased", l), dtype(), l);
  });
}

Tensor Tensor::logSoftmax(Axis axis, Loc l) const {
  return renamingErrors("logSoftmax", [&] {
    const Tensor x = widened(*this, "logSoftmax", l);
    const Tensor shifted = x.sub(finiteOrZero(x.max(axis, l), "logSoftmax", l), l);
    return narrowed(shifted.sub(shifted.exp(l).sum(axis, l).log(l), l), dtype(), l);
  });
}

}  // namespace radix
