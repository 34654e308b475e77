// Sorting along one axis: sort, argsort, topK. No upstream op sorts, so each is a stable
// bottom-up merge sort emitted as scf.for loops over tensors (tensor.extract / tensor.insert
// threaded through iter_args, which one-shot-bufferize turns into in-place loads and stores).
// The axis is moved last and the other axes flattened into rows: {rows, n}. topK keeps only the
// first k of each merged run once runs are longer than k: n log k work instead of n log n.
#include <algorithm>
#include <limits>
#include <numeric>

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

mlir::Value indexConst(mlir::OpBuilder& b, mlir::Location loc, int64_t v) {
  return mlir::arith::ConstantIndexOp::create(b, loc, v);
}

/// x < y in the order of the sort: NaN above +inf (all NaNs equal), -0 == +0; integers by sign.
mlir::Value less(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x, mlir::Value y, DType d) {
  using mlir::arith::CmpFPredicate;
  using mlir::arith::CmpIPredicate;
  if (isFloat(d)) {
    mlir::Value lt = mlir::arith::CmpFOp::create(b, loc, CmpFPredicate::OLT, x, y);
    mlir::Value yNan = mlir::arith::CmpFOp::create(b, loc, CmpFPredicate::UNO, y, y);
    mlir::Value xNum = mlir::arith::CmpFOp::create(b, loc, CmpFPredicate::ORD, x, x);
    return mlir::arith::OrIOp::create(b, loc, lt, mlir::arith::AndIOp::create(b, loc, yNan, xNum));
  }
  return mlir::arith::CmpIOp::create(b, loc, isSignedInt(d) ? CmpIPredicate::slt : CmpIPredicate::ult, x, y);
}

/// {rows, n}:i32 holding the column index.
mlir::Value columnIota(TraceContext& c, mlir::Location loc, int64_t rows, int64_t n) {
  auto& b = c.builder();
  Shape s({rows, n}, DType::i32);
  auto map = b.getMultiDimIdentityMap(2);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{c.tensorType(s)}, mlir::ValueRange{}, mlir::ValueRange{emptyLike(c, loc, s)},
      llvm::ArrayRef<mlir::AffineMap>{map}, {mlir::utils::IteratorType::parallel, mlir::utils::IteratorType::parallel},
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange) {
        mlir::Value i = mlir::linalg::IndexOp::create(nb, l, 1);
        mlir::linalg::YieldOp::create(nb, l, mlir::ValueRange{mlir::arith::IndexCastOp::create(nb, l, nb.getI32Type(), i)});
      });
  return generic.getResult(0);
}

/// Keys (and their indices) in two slots, {2, rows, n}: each pass merges one slot into the other.
struct Run {
  mlir::Value keys, indices;
};

/// One pass of the bottom-up merge from slot `from` into slot `to`: the runs of `width` (each
/// holding its first min(width, limit) elements) are merged pairwise into runs of
/// min(2 width, limit). Reads and writes go through the same tensor, so it bufferizes in place.
Run mergePass(mlir::OpBuilder& b, mlir::Location loc, Run run, mlir::Value from, mlir::Value to, int64_t rows, int64_t n,
              mlir::Value width, int64_t limit, DType keyType, bool descending) {
  const bool withIndices = run.indices != nullptr;
  mlir::Value c0 = indexConst(b, loc, 0), c1 = indexConst(b, loc, 1), cn = indexConst(b, loc, n), cLimit = indexConst(b, loc, limit);
  mlir::Value twice = mlir::arith::AddIOp::create(b, loc, width, width);
  mlir::Value runLen = mlir::arith::MinSIOp::create(b, loc, width, cLimit);
  mlir::Value outLen = mlir::arith::MinSIOp::create(b, loc, twice, cLimit);
  std::vector<mlir::Value> init = {run.keys};
  if (withIndices) init.push_back(run.indices);
  auto rowLoop = mlir::scf::ForOp::create(
      b, loc, c0, indexConst(b, loc, rows), c1, init,
      [&](mlir::OpBuilder& b, mlir::Location loc, mlir::Value r, mlir::ValueRange rowArgs) {
        auto pairLoop = mlir::scf::ForOp::create(
            b, loc, c0, cn, twice, rowArgs,
            [&](mlir::OpBuilder& b, mlir::Location loc, mlir::Value p, mlir::ValueRange pairArgs) {
              auto add = [&](mlir::Value x, mlir::Value y) { return mlir::arith::AddIOp::create(b, loc, x, y).getResult(); };
              auto minN = [&](mlir::Value x) { return mlir::arith::MinSIOp::create(b, loc, x, cn).getResult(); };
              mlir::Value leftEnd = minN(add(p, runLen));
              mlir::Value rightStart = minN(add(p, width));
              mlir::Value rightEnd = minN(add(add(p, width), runLen));
              mlir::Value outEnd = minN(add(p, outLen));
              mlir::Value minusOne = indexConst(b, loc, -1);
              mlir::Value leftLast = add(leftEnd, minusOne), rightLast = add(rightEnd, minusOne);
              mlir::Value rightNonEmpty = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::slt, rightStart, rightEnd);
              std::vector<mlir::Value> mergeInit = {p, rightStart};
              mergeInit.insert(mergeInit.end(), pairArgs.begin(), pairArgs.end());
              auto merge = mlir::scf::ForOp::create(
                  b, loc, p, outEnd, c1, mergeInit,
                  [&](mlir::OpBuilder& b, mlir::Location loc, mlir::Value o, mlir::ValueRange it) {
                    using mlir::arith::CmpIPredicate;
                    mlir::Value i = it[0], j = it[1];
                    // Reads stay inside the runs: an exhausted side reads its last element.
                    mlir::Value ic = mlir::arith::MinSIOp::create(b, loc, i, leftLast);
                    mlir::Value jc = mlir::arith::SelectOp::create(b, loc, rightNonEmpty,
                                                                   mlir::arith::MinSIOp::create(b, loc, j, rightLast), ic);
                    mlir::Value a = mlir::tensor::ExtractOp::create(b, loc, it[2], mlir::ValueRange{from, r, ic});
                    mlir::Value z = mlir::tensor::ExtractOp::create(b, loc, it[2], mlir::ValueRange{from, r, jc});
                    mlir::Value leftDone = mlir::arith::CmpIOp::create(b, loc, CmpIPredicate::sge, i, leftEnd);
                    mlir::Value rightOk = mlir::arith::CmpIOp::create(b, loc, CmpIPredicate::slt, j, rightEnd);
                    // Stable: the right element goes first only when strictly before the left one.
                    mlir::Value rightFirst = descending ? less(b, loc, a, z, keyType) : less(b, loc, z, a, keyType);
                    mlir::Value takeRight = mlir::arith::OrIOp::create(
                        b, loc, leftDone, mlir::arith::AndIOp::create(b, loc, rightOk, rightFirst));
                    mlir::Value v = mlir::arith::SelectOp::create(b, loc, takeRight, z, a);
                    std::vector<mlir::Value> next = {
                        mlir::arith::SelectOp::create(b, loc, takeRight, i, mlir::arith::AddIOp::create(b, loc, i, c1)),
                        mlir::arith::SelectOp::create(b, loc, takeRight, mlir::arith::AddIOp::create(b, loc, j, c1), j),
                        mlir::tensor::InsertOp::create(b, loc, v, it[2], mlir::ValueRange{to, r, o})};
                    if (withIndices) {
                      mlir::Value ia = mlir::tensor::ExtractOp::create(b, loc, it[3], mlir::ValueRange{from, r, ic});
                      mlir::Value iz = mlir::tensor::ExtractOp::create(b, loc, it[3], mlir::ValueRange{from, r, jc});
                      mlir::Value iv = mlir::arith::SelectOp::create(b, loc, takeRight, iz, ia);
                      next.push_back(mlir::tensor::InsertOp::create(b, loc, iv, it[3], mlir::ValueRange{to, r, o}));
                    }
                    mlir::scf::YieldOp::create(b, loc, next);
                  });
              mlir::scf::YieldOp::create(b, loc, merge.getResults().drop_front(2));
            });
        mlir::scf::YieldOp::create(b, loc, pairLoop.getResults());
      });
  return {rowLoop.getResult(0), withIndices ? rowLoop.getResult(1) : mlir::Value()};
}

/// A {2, rows, n} tensor holding `x` ({rows, n}) in slot 0.
mlir::Value inSlotZero(TraceContext& c, mlir::Location loc, mlir::Value x, const Shape& flat) {
  auto& b = c.builder();
  const Shape two({2, flat.dim(0), flat.dim(1)}, flat.dtype());
  auto attrs = [&](std::initializer_list<int64_t> v) {
    std::vector<mlir::OpFoldResult> out;
    for (int64_t e : v) out.push_back(b.getIndexAttr(e));
    return out;
  };
  return mlir::tensor::InsertSliceOp::create(b, loc, x, emptyLike(c, loc, two), attrs({0, 0, 0}), attrs({1, flat.dim(0), flat.dim(1)}),
                                             attrs({1, 1, 1}));
}

/// The first columns of slot `slot` of a {2, rows, n} tensor, as a {rows, limit} copy (a slice
/// would be a strided view, which the runtime can't copy).
mlir::Value firstColumns(TraceContext& c, mlir::Location loc, mlir::Value x, int64_t slot, const Shape& to) {
  auto& b = c.builder();
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{c.tensorType(to)}, mlir::ValueRange{}, mlir::ValueRange{emptyLike(c, loc, to)},
      llvm::ArrayRef<mlir::AffineMap>{b.getMultiDimIdentityMap(2)}, {mlir::utils::IteratorType::parallel, mlir::utils::IteratorType::parallel},
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange) {
        mlir::Value i = mlir::linalg::IndexOp::create(nb, l, 0), j = mlir::linalg::IndexOp::create(nb, l, 1);
        mlir::Value k = indexConst(nb, l, slot);
        mlir::linalg::YieldOp::create(nb, l, mlir::ValueRange{mlir::tensor::ExtractOp::create(nb, l, x, mlir::ValueRange{k, i, j})});
      });
  return generic.getResult(0);
}

struct SortedValues {
  mlir::Value keys, indices;  // in the input's axis order, axis size `limit`
  Shape keysShape, indicesShape;
};

/// Sorts `x` along `axis` and keeps the first `limit` of each row.
SortedValues sortAlong(TraceContext& c, mlir::Location loc, const Tensor& x, int64_t ax, bool descending, int64_t limit,
                       bool withIndices, const char* op) {
  auto& b = c.builder();
  const Shape& shape = x.shape();
  const DType d = shape.dtype();
  const int64_t n = shape.dim(ax), rank = shape.rank();
  if (withIndices && n > std::numeric_limits<int32_t>::max())
    throw opError(op, "axis " + std::to_string(ax) + " of " + shape.str() + " is too long for i32 indices");
  // Move the axis last and flatten the others into rows; sort f16/bf16 as f32 (exact).
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != ax) perm.push_back(i);
  perm.push_back(ax);
  std::vector<int64_t> movedDims;
  for (int64_t p : perm) movedDims.push_back(shape.dim(p));
  const DType keyType = (d == DType::f16 || d == DType::bf16) ? DType::f32 : d;
  const Shape moved(movedDims, keyType);
  mlir::Value v = convertValue(c, loc, c.value(x, op), d, keyType, shape);
  if (ax != rank - 1)
    v = mlir::linalg::TransposeOp::create(b, loc, v, emptyLike(c, loc, moved), perm).getResult()[0];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < movedDims.size(); ++i) rows *= movedDims[i];
  const Shape flat({rows, n}, keyType);
  v = reshapeValue(c, loc, v, moved, flat);

  // One pass per iteration of a loop (the IR stays small whatever n), from one slot of a
  // {2, rows, n} tensor into the other.
  Run run{v, withIndices ? columnIota(c, loc, rows, n) : mlir::Value()};
  int64_t passes = 0;
  while ((int64_t{1} << passes) < n) ++passes;
  const Shape kept({rows, limit}, keyType);
  if (limit == 0 || rows == 0) {  // nothing to sort
    run = {emptyLike(c, loc, kept), withIndices ? emptyLike(c, loc, kept.withDtype(DType::i32)) : mlir::Value()};
  } else if (passes > 0) {
    std::vector<mlir::Value> init = {inSlotZero(c, loc, run.keys, flat)};
    if (withIndices) init.push_back(inSlotZero(c, loc, run.indices, flat.withDtype(DType::i32)));
    init.push_back(indexConst(b, loc, 1));
    auto loop = mlir::scf::ForOp::create(
        b, loc, indexConst(b, loc, 0), indexConst(b, loc, passes), indexConst(b, loc, 1), init,
        [&](mlir::OpBuilder& b, mlir::Location loc, mlir::Value pass, mlir::ValueRange it) {
          mlir::Value width = it.back();
          mlir::Value from = mlir::arith::AndIOp::create(b, loc, pass, indexConst(b, loc, 1));
          mlir::Value to = mlir::arith::SubIOp::create(b, loc, indexConst(b, loc, 1), from);
          Run merged = mergePass(b, loc, {it[0], withIndices ? it[1] : mlir::Value()}, from, to, rows, n, width, limit, keyType,
                                 descending);
          std::vector<mlir::Value> next = {merged.keys};
          if (withIndices) next.push_back(merged.indices);
          next.push_back(mlir::arith::AddIOp::create(b, loc, width, width));
          mlir::scf::YieldOp::create(b, loc, next);
        });
    const int64_t slot = passes % 2;
    run.keys = firstColumns(c, loc, loop.getResult(0), slot, kept);
    if (withIndices) run.indices = firstColumns(c, loc, loop.getResult(1), slot, kept.withDtype(DType::i32));
  }

  // Put the axis back.
  std::vector<int64_t> keptDims = movedDims;
  keptDims.back() = limit;
  std::vector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i) inverse[perm[i]] = i;
  std::vector<int64_t> outDims = shape.dims();
  outDims[ax] = limit;
  Shape out(outDims, d);
  for (int64_t i = 0; i < rank; ++i) out = out.withTag(i, shape.tag(i));
  auto finish = [&](mlir::Value flatValue, DType type) {
    mlir::Value r = reshapeValue(c, loc, flatValue, kept.withDtype(type), Shape(keptDims, type));
    if (ax != rank - 1) r = mlir::linalg::TransposeOp::create(b, loc, r, emptyLike(c, loc, out.withDtype(type)), inverse).getResult()[0];
    return r;
  };
  SortedValues result;
  result.keysShape = out;
  result.keys = convertValue(c, loc, finish(run.keys, keyType), keyType, d, out.withDtype(keyType));
  if (withIndices) {
    result.indicesShape = out.withDtype(DType::i32);
    result.indices = finish(run.indices, DType::i32);
  }
  return result;
}

}  // namespace

Tensor Tensor::sort(Axis axis, bool descending, Loc l) const {
  const char* op = "sort";
  TraceContext& c = detail::currentTrace(op);
  const int64_t ax = shape_.axis(axis, op);
  SortedValues s = sortAlong(c, c.loc(l, op), *this, ax, descending, shape_.dim(ax), false, op);
  return c.wrap(s.keys, s.keysShape);
}

Tensor Tensor::argsort(Axis axis, bool descending, Loc l) const {
  const char* op = "argsort";
  TraceContext& c = detail::currentTrace(op);
  const int64_t ax = shape_.axis(axis, op);
  SortedValues s = sortAlong(c, c.loc(l, op), *this, ax, descending, shape_.dim(ax), true, op);
  return c.wrap(s.indices, s.indicesShape);
}

TopK Tensor::topK(int64_t k, Axis axis, Loc l) const {
  const char* op = "topK";
  TraceContext& c = detail::currentTrace(op);
  const int64_t ax = shape_.axis(axis, op);
  if (k < 0 || k > shape_.dim(ax))
    throw opError(op, "k=" + std::to_string(k) + " out of range [0, " + std::to_string(shape_.dim(ax)) + "] for axis " +
                          axis.str() + " of " + shape_.str());
  SortedValues s = sortAlong(c, c.loc(l, op), *this, ax, true, k, true, op);
  return TopK{c.wrap(s.keys, s.keysShape), c.wrap(s.indices, s.indicesShape)};
}

}  // namespace radix
