// Indexing: gather (single values by index tensors), gatherSlices, scatter, dynamicSlice and
// dynamicUpdateSlice. Gathers are linalg.generic ops whose body reads with tensor.extract;
// scatter is a loop nest of tensor.insert (sequential, so that duplicate indices are defined).
#include <algorithm>
#include <functional>

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

/// The result shape of a gather-like op: at most rank 8, no tag twice. `what` says what made
/// it: "indexing {voc=5,d=3}:f32 with {s=2}:i32".
Shape resultShape(const char* op, const std::vector<int64_t>& dims, const std::vector<Tag>& tags, DType dtype,
                  const std::string& what) {
  if (dims.size() > static_cast<size_t>(Shape::kMaxRank))
    throw opError(op, "result of " + what + " would have rank " + std::to_string(dims.size()));
  for (size_t i = 0; i < tags.size(); ++i)
    for (size_t j = i + 1; j < tags.size(); ++j)
      if (!tags[i].empty() && tags[i] == tags[j])
        throw opError(op, "tag " + quote(tags[i].name()) + " would name two axes of the result of " + what);
  return renamingErrors(op, [&] { return Shape(dims, dtype).withTags(tags); });
}

bool isIndexType(DType d) { return !isFloat(d) && d != DType::bool_; }

/// An index value (any integer type) as `index`, clamped into [lo, hi].
mlir::Value clampedIndex(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, DType dtype, int64_t lo,
                         int64_t hi) {
  mlir::Value i;
  if (isUnsignedInt(dtype))
    i = mlir::arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  else
    i = mlir::arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  mlir::Value hiV = mlir::arith::ConstantIndexOp::create(b, loc, hi);
  if (isUnsignedInt(dtype)) return mlir::arith::MinUIOp::create(b, loc, i, hiV);
  mlir::Value loV = mlir::arith::ConstantIndexOp::create(b, loc, lo);
  return mlir::arith::MaxSIOp::create(b, loc, mlir::arith::MinSIOp::create(b, loc, i, hiV), loV);
}

/// scf.for loops over `dims` carrying tensors (`init`); body(acc, ivs) returns the next ones.
std::vector<mlir::Value> loopNest(
    mlir::OpBuilder& b, mlir::Location loc, const std::vector<int64_t>& dims, const std::vector<mlir::Value>& init,
    const std::function<std::vector<mlir::Value>(const std::vector<mlir::Value>&, const std::vector<mlir::Value>&)>& body) {
  mlir::Value c0 = mlir::arith::ConstantIndexOp::create(b, loc, 0), c1 = mlir::arith::ConstantIndexOp::create(b, loc, 1);
  std::vector<mlir::Value> ivs;
  std::function<std::vector<mlir::Value>(size_t, const std::vector<mlir::Value>&)> nest =
      [&](size_t d, const std::vector<mlir::Value>& acc) -> std::vector<mlir::Value> {
    if (d == dims.size()) return body(acc, ivs);
    mlir::Value ub = mlir::arith::ConstantIndexOp::create(b, loc, dims[d]);
    auto loop = mlir::scf::ForOp::create(b, loc, c0, ub, c1, acc);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ivs.push_back(loop.getInductionVar());
    std::vector<mlir::Value> iterArgs(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
    mlir::scf::YieldOp::create(b, loc, nest(d + 1, iterArgs));
    ivs.pop_back();
    return std::vector<mlir::Value>(loop.getResults().begin(), loop.getResults().end());
  };
  return nest(0, init);
}

/// Where each axis of gather's result comes from.
struct GatherPlan {
  std::vector<int64_t> indexed;     // axes of x, in the order of the index tensors
  Shape indexShape;                 // the shape of every index tensor
  std::vector<int64_t> batchOf;     // index axis j -> the axis of x it batches, or -1
  std::vector<int64_t> resultOfX;   // axis k of x -> its result axis (-1 for indexed axes)
  std::vector<int64_t> resultOfIndex;  // index axis j -> its result axis
  Shape out;
};

GatherPlan planGather(const char* op, TraceContext& c, const Shape& x, const std::vector<std::pair<Axis, Tensor>>& indices) {
  GatherPlan p;
  if (indices.empty()) throw opError(op, "no index tensors for " + x.str());
  p.indexShape = indices[0].second.shape();
  for (const auto& [axis, t] : indices) {
    const int64_t a = x.axis(axis, op);
    if (std::find(p.indexed.begin(), p.indexed.end(), a) != p.indexed.end())
      throw opError(op, "axis " + axis.str() + " of " + x.str() + " is indexed twice");
    p.indexed.push_back(a);
    c.value(t, op);
    if (!isIndexType(t.dtype()))
      throw opError(op, "index tensor " + t.shape().str() + " for axis " + axis.str() + " of " + x.str() + " is not of an integer dtype");
    if (t.shape().dims() != p.indexShape.dims() || t.shape().withDtype(p.indexShape.dtype()) != p.indexShape)
      throw opError(op, "index tensors differ: " + p.indexShape.str() + " and " + t.shape().str());
    if (x.dim(a) == 0) throw opError(op, "can't index axis " + axis.str() + " of " + x.str() + ": it is empty");
  }
  const Shape& is = p.indexShape;
  p.batchOf.assign(is.rank(), -1);
  for (int64_t j = 0; j < is.rank(); ++j) {
    if (is.tag(j).empty()) continue;
    const int64_t k = x.hasTag(is.tag(j));
    if (k < 0) continue;
    if (std::find(p.indexed.begin(), p.indexed.end(), k) != p.indexed.end())
      throw opError(op, "index axis " + quote(is.tag(j).name()) + " of " + is.str() + " is also an indexed axis of " + x.str());
    if (is.dim(j) != x.dim(k))
      throw opError(op, "batch axis " + quote(is.tag(j).name()) + " differs: " + x.str() + " and index " + is.str());
    p.batchOf[j] = k;
  }
  const int64_t first = *std::min_element(p.indexed.begin(), p.indexed.end());
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  p.resultOfX.assign(x.rank(), -1);
  p.resultOfIndex.assign(is.rank(), -1);
  for (int64_t k = 0; k < x.rank(); ++k) {
    if (k == first)
      for (int64_t j = 0; j < is.rank(); ++j) {
        if (p.batchOf[j] >= 0) continue;
        p.resultOfIndex[j] = static_cast<int64_t>(dims.size());
        dims.push_back(is.dim(j));
        tags.push_back(is.tag(j));
      }
    if (std::find(p.indexed.begin(), p.indexed.end(), k) != p.indexed.end()) continue;
    p.resultOfX[k] = static_cast<int64_t>(dims.size());
    dims.push_back(x.dim(k));
    tags.push_back(x.tag(k));
  }
  for (int64_t j = 0; j < is.rank(); ++j)
    if (p.batchOf[j] >= 0) p.resultOfIndex[j] = p.resultOfX[p.batchOf[j]];
  p.out = resultShape(op, dims, tags, x.dtype(), "indexing " + x.str() + " with " + is.str());
  return p;
}

/// A scalar integer tensor's value as `index`, clamped into [0, hi].
mlir::Value scalarOffset(const char* op, TraceContext& c, mlir::Location loc, const Tensor& t, const Shape& x, const Axis& axis,
                         int64_t hi) {
  mlir::Value v = c.value(t, op);
  if (t.rank() != 0 || !isIndexType(t.dtype()))
    throw opError(op, "offset for axis " + axis.str() + " of " + x.str() + " must be a scalar integer tensor, not " + t.shape().str());
  auto& b = c.builder();
  mlir::Value e = mlir::tensor::ExtractOp::create(b, loc, v, mlir::ValueRange{});
  return clampedIndex(b, loc, e, t.dtype(), 0, hi);
}

}  // namespace

Tensor Tensor::gather(const std::vector<std::pair<Axis, Tensor>>& indices, Loc l) const {
  const char* op = "gather";
  TraceContext& c = detail::currentTrace(op);
  mlir::Value x = c.value(*this, op);
  const GatherPlan p = planGather(op, c, shape_, indices);
  auto loc = c.loc(l, op);
  auto& b = c.builder();
  auto* ctx = &c.mlir();
  const unsigned n = static_cast<unsigned>(p.out.rank());
  std::vector<mlir::Value> ins;
  std::vector<mlir::AffineMap> maps;
  for (const auto& [axis, t] : indices) {
    ins.push_back(c.value(t, op));
    std::vector<mlir::AffineExpr> exprs;
    for (int64_t j = 0; j < p.indexShape.rank(); ++j)
      exprs.push_back(mlir::getAffineDimExpr(static_cast<unsigned>(p.resultOfIndex[j]), ctx));
    maps.push_back(mlir::AffineMap::get(n, 0, exprs, ctx));
  }
  maps.push_back(mlir::AffineMap::getMultiDimIdentityMap(n, ctx));
  mlir::Value init = emptyLike(c, loc, p.out);
  if (p.out.count() == 0) return c.wrap(init, p.out);
  std::vector<mlir::utils::IteratorType> iters(n, mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{init.getType()}, ins, mlir::ValueRange{init}, maps, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        std::vector<mlir::Value> coords(rank());
        for (int64_t k = 0; k < rank(); ++k)
          if (p.resultOfX[k] >= 0) coords[k] = mlir::linalg::IndexOp::create(nb, nl, static_cast<uint64_t>(p.resultOfX[k]));
        for (size_t i = 0; i < p.indexed.size(); ++i) {
          const int64_t k = p.indexed[i];
          coords[k] = clampedIndex(nb, nl, args[i], indices[i].second.dtype(), 0, shape_.dim(k) - 1);
        }
        mlir::Value e = mlir::tensor::ExtractOp::create(nb, nl, x, coords);
        mlir::linalg::YieldOp::create(nb, nl, e);
      });
  return c.wrap(generic.getResult(0), p.out);
}

Tensor Tensor::gatherSlices(const std::vector<std::pair<Axis, int64_t>>& sizes, const Tensor& starts, Loc l) const {
  const char* op = "gatherSlices";
  TraceContext& c = detail::currentTrace(op);
  mlir::Value x = c.value(*this, op);
  mlir::Value st = c.value(starts, op);
  const Shape& ss = starts.shape();
  if (!isIndexType(ss.dtype())) throw opError(op, "starts " + ss.str() + " are not of an integer dtype");
  if (sizes.empty()) throw opError(op, "no axes to slice in " + shape_.str());
  std::vector<int64_t> sliced, sliceSize(rank(), -1);
  for (const auto& [axis, size] : sizes) {
    const int64_t a = shape_.axis(axis, op);
    if (sliceSize[a] >= 0) throw opError(op, "axis " + axis.str() + " of " + shape_.str() + " is sliced twice");
    if (size < 0 || size > shape_.dim(a))
      throw opError(op, "slice size " + std::to_string(size) + " for axis " + axis.str() + " of " + shape_.str() + " is out of range");
    sliced.push_back(a);
    sliceSize[a] = size;
  }
  if (ss.rank() == 0) throw opError(op, "starts " + ss.str() + " need an axis of coordinates (tagged \"coord\", else the last)");
  const int64_t coord = ss.hasTag("coord") >= 0 ? ss.hasTag("coord") : ss.rank() - 1;
  if (ss.dim(coord) != static_cast<int64_t>(sliced.size()))
    throw opError(op, "starts " + ss.str() + " hold " + std::to_string(ss.dim(coord)) + " coordinates for " +
                          std::to_string(sliced.size()) + " sliced axes of " + shape_.str());
  std::vector<int64_t> batchOf(ss.rank(), -1);
  for (int64_t j = 0; j < ss.rank(); ++j) {
    if (j == coord || ss.tag(j).empty()) continue;
    const int64_t k = shape_.hasTag(ss.tag(j));
    if (k < 0) continue;
    if (sliceSize[k] >= 0)
      throw opError(op, "starts axis " + quote(ss.tag(j).name()) + " of " + ss.str() + " is also a sliced axis of " + shape_.str());
    if (ss.dim(j) != shape_.dim(k))
      throw opError(op, "batch axis " + quote(ss.tag(j).name()) + " differs: " + shape_.str() + " and starts " + ss.str());
    batchOf[j] = k;
  }
  std::vector<int64_t> dims, resultOfStarts(ss.rank(), -1), resultOfX(rank());
  std::vector<Tag> tags;
  for (int64_t j = 0; j < ss.rank(); ++j) {
    if (j == coord || batchOf[j] >= 0) continue;
    resultOfStarts[j] = static_cast<int64_t>(dims.size());
    dims.push_back(ss.dim(j));
    tags.push_back(ss.tag(j));
  }
  for (int64_t k = 0; k < rank(); ++k) {
    resultOfX[k] = static_cast<int64_t>(dims.size());
    dims.push_back(sliceSize[k] >= 0 ? sliceSize[k] : shape_.dim(k));
    tags.push_back(shape_.tag(k));
  }
  for (int64_t j = 0; j < ss.rank(); ++j)
    if (batchOf[j] >= 0) resultOfStarts[j] = resultOfX[batchOf[j]];
  Shape out = resultShape(op, dims, tags, dtype(), "slicing " + shape_.str() + " at " + ss.str());
  auto loc = c.loc(l, op);
  mlir::Value r = generate(c, loc, out, [&](mlir::OpBuilder& nb, mlir::Location nl, const std::vector<mlir::Value>& at) {
    std::vector<mlir::Value> startCoords(ss.rank());
    for (int64_t j = 0; j < ss.rank(); ++j)
      if (j != coord) startCoords[j] = at[resultOfStarts[j]];
    std::vector<mlir::Value> coords(rank());
    for (int64_t k = 0; k < rank(); ++k) coords[k] = at[resultOfX[k]];
    for (size_t i = 0; i < sliced.size(); ++i) {
      const int64_t k = sliced[i];
      startCoords[coord] = mlir::arith::ConstantIndexOp::create(nb, nl, static_cast<int64_t>(i));
      mlir::Value s = mlir::tensor::ExtractOp::create(nb, nl, st, startCoords);
      mlir::Value start = clampedIndex(nb, nl, s, ss.dtype(), 0, shape_.dim(k) - sliceSize[k]);
      coords[k] = mlir::arith::AddIOp::create(nb, nl, start, coords[k]);
    }
    return mlir::tensor::ExtractOp::create(nb, nl, x, coords).getResult();
  });
  return c.wrap(r, out);
}

Tensor Tensor::scatter(const std::vector<std::pair<Axis, Tensor>>& indices, const Tensor& updates, ScatterMode mode,
                       Loc l) const {
  const char* op = "scatter";
  TraceContext& c = detail::currentTrace(op);
  mlir::Value x = c.value(*this, op);
  mlir::Value u = c.value(updates, op);
  const GatherPlan p = planGather(op, c, shape_, indices);
  const Shape& us = updates.shape();
  if (us.dims() != p.out.dims() || us.dtype() != dtype())
    throw opError(op, "updates " + us.str() + " must have the shape " + p.out.str() + " (x " + shape_.str() + " indexed by " +
                          p.indexShape.str() + ")");
  for (int64_t i = 0; i < us.rank(); ++i)
    if (!us.tag(i).empty() && !(us.tag(i) == p.out.tag(i)))
      throw opError(op, "updates " + us.str() + " must have the shape " + p.out.str() + " (tags differ at axis " + std::to_string(i) + ")");
  auto loc = c.loc(l, op);
  if (us.count() == 0) return c.wrap(x, shape_);
  auto& b = c.builder();
  std::vector<mlir::Value> idx;
  for (const auto& [axis, t] : indices) idx.push_back(c.value(t, op));
  mlir::Value c0 = mlir::arith::ConstantIndexOp::create(b, loc, 0);

  // The loops write the updates into fresh tensors (a sum, or a value and a mask), never into x:
  // an scf.for that writes an argument conflicts with donating that argument to the result.
  // One elementwise pass then combines them with x.
  const Shape maskShape = shape_.withDtype(DType::bool_);
  std::vector<mlir::Value> init = {filled(c, loc, shape_, 0)};
  if (mode == ScatterMode::replace) init.push_back(filled(c, loc, maskShape, 0));
  auto combine = [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::Value a, mlir::Value v) -> mlir::Value {
    if (isFloat(dtype())) return mlir::arith::AddFOp::create(nb, nl, a, v);
    if (dtype() == DType::bool_) return mlir::arith::OrIOp::create(nb, nl, a, v);
    return mlir::arith::AddIOp::create(nb, nl, a, v);
  };
  // The innermost body: one update element at `ivs` (the result coordinates of gather).
  auto body = [&](const std::vector<mlir::Value>& acc, const std::vector<mlir::Value>& ivs) -> std::vector<mlir::Value> {
    std::vector<mlir::Value> coords(rank());
    for (int64_t k = 0; k < rank(); ++k)
      if (p.resultOfX[k] >= 0) coords[k] = ivs[p.resultOfX[k]];
    mlir::Value valid;
    for (size_t i = 0; i < p.indexed.size(); ++i) {
      const int64_t k = p.indexed[i];
      const DType d = indices[i].second.dtype();
      std::vector<mlir::Value> at;
      for (int64_t j = 0; j < p.indexShape.rank(); ++j) at.push_back(ivs[p.resultOfIndex[j]]);
      mlir::Value raw = mlir::tensor::ExtractOp::create(b, loc, idx[i], at);
      mlir::Value wide = isUnsignedInt(d) ? mlir::arith::IndexCastUIOp::create(b, loc, b.getIndexType(), raw).getResult()
                                          : mlir::arith::IndexCastOp::create(b, loc, b.getIndexType(), raw).getResult();
      mlir::Value dim = mlir::arith::ConstantIndexOp::create(b, loc, shape_.dim(k));
      // Unsigned compare: negative indices are huge, so one test covers both ends.
      mlir::Value inRange = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, wide, dim);
      valid = valid ? mlir::arith::AndIOp::create(b, loc, valid, inRange).getResult() : inRange;
      coords[k] = mlir::arith::SelectOp::create(b, loc, inRange, wide, c0);
    }
    mlir::Value upd = mlir::tensor::ExtractOp::create(b, loc, u, ivs);
    mlir::Value old = mlir::tensor::ExtractOp::create(b, loc, acc[0], coords);
    mlir::Value next = mode == ScatterMode::add ? combine(b, loc, old, upd) : upd;
    next = mlir::arith::SelectOp::create(b, loc, valid, next, old);
    std::vector<mlir::Value> out = {mlir::tensor::InsertOp::create(b, loc, next, acc[0], coords)};
    if (mode == ScatterMode::replace) {
      mlir::Value seen = mlir::tensor::ExtractOp::create(b, loc, acc[1], coords);
      mlir::Value mark = mlir::arith::OrIOp::create(b, loc, seen, valid);
      out.push_back(mlir::tensor::InsertOp::create(b, loc, mark, acc[1], coords));
    }
    return out;
  };
  const std::vector<mlir::Value> written = loopNest(b, loc, us.dims(), init, body);
  std::vector<mlir::Value> ins = {x};
  ins.insert(ins.end(), written.begin(), written.end());
  const unsigned n = static_cast<unsigned>(rank());
  std::vector<mlir::AffineMap> maps(ins.size() + 1, mlir::AffineMap::getMultiDimIdentityMap(n, &c.mlir()));
  std::vector<mlir::utils::IteratorType> iters(n, mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{x.getType()}, ins, mlir::ValueRange{emptyLike(c, loc, shape_)}, maps, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        mlir::Value r = mode == ScatterMode::add ? combine(nb, nl, args[0], args[1])
                                                 : mlir::arith::SelectOp::create(nb, nl, args[2], args[1], args[0]).getResult();
        mlir::linalg::YieldOp::create(nb, nl, r);
      });
  return c.wrap(generic.getResult(0), shape_);
}

Tensor Tensor::dynamicSlice(const std::vector<std::pair<Axis, DynSlice>>& slices, Loc l) const {
  const char* op = "dynamicSlice";
  TraceContext& c = detail::currentTrace(op);
  mlir::Value x = c.value(*this, op);
  auto loc = c.loc(l, op);
  std::vector<mlir::Value> offsets(rank());
  std::vector<int64_t> dims = shape_.dims();
  for (const auto& [axis, s] : slices) {
    const int64_t a = shape_.axis(axis, op);
    if (offsets[a]) throw opError(op, "axis " + axis.str() + " of " + shape_.str() + " is sliced twice");
    if (s.len < 0 || s.len > shape_.dim(a))
      throw opError(op, "length " + std::to_string(s.len) + " for axis " + axis.str() + " of " + shape_.str() + " is out of range");
    offsets[a] = scalarOffset(op, c, loc, s.start, shape_, axis, shape_.dim(a) - s.len);
    dims[a] = s.len;
  }
  Shape out = Shape(dims, dtype());
  for (int64_t i = 0; i < rank(); ++i) out = out.withTag(i, shape_.tag(i));
  // Read with tensor.extract rather than tensor.extract_slice: a strided slice copied out as a
  // memref would need a runtime library call.
  mlir::Value r = generate(c, loc, out, [&](mlir::OpBuilder& nb, mlir::Location nl, const std::vector<mlir::Value>& at) {
    std::vector<mlir::Value> coords(at);
    for (size_t i = 0; i < coords.size(); ++i)
      if (offsets[i]) coords[i] = mlir::arith::AddIOp::create(nb, nl, offsets[i], at[i]);
    return mlir::tensor::ExtractOp::create(nb, nl, x, coords).getResult();
  });
  return c.wrap(r, out);
}

Tensor Tensor::dynamicSlice1d(Axis axis, const DynSlice& slice, Loc l) const {
  return renamingErrors("dynamicSlice1d", [&] { return dynamicSlice({{axis, slice}}, l); });
}

Tensor Tensor::dynamicUpdateSlice(const std::vector<std::pair<Axis, Tensor>>& offsets, const Tensor& update, Loc l) const {
  const char* op = "dynamicUpdateSlice";
  TraceContext& c = detail::currentTrace(op);
  mlir::Value x = c.value(*this, op);
  mlir::Value v = c.value(update, op);
  const Shape& us = update.shape();
  if (us.rank() != rank() || us.dtype() != dtype())
    throw opError(op, "update " + us.str() + " does not fit into " + shape_.str() + " (rank and dtype must agree)");
  for (int64_t i = 0; i < rank(); ++i) {
    if (!us.tag(i).empty() && !shape_.tag(i).empty() && !(us.tag(i) == shape_.tag(i)))
      throw opError(op, "tags differ at axis " + std::to_string(i) + ": " + shape_.str() + " and update " + us.str());
    if (us.dim(i) > shape_.dim(i))
      throw opError(op, "update " + us.str() + " is larger than " + shape_.str() + " at axis " + std::to_string(i));
  }
  auto loc = c.loc(l, op);
  auto& b = c.builder();
  std::vector<mlir::Value> at(rank());
  for (const auto& [axis, t] : offsets) {
    const int64_t a = shape_.axis(axis, op);
    if (at[a]) throw opError(op, "axis " + axis.str() + " of " + shape_.str() + " has two offsets");
    at[a] = scalarOffset(op, c, loc, t, shape_, axis, shape_.dim(a) - us.dim(a));
  }
  if (us.count() == 0) return c.wrap(x, shape_);
  // One tensor.insert_slice: it writes only the window into x's buffer (a memcpy when the window
  // is contiguous, as the KV-cache write {s=1,h,d} into {s,h,d}; MLIR's memrefCopy otherwise).
  std::vector<mlir::OpFoldResult> sliceOffsets, sizes, strides;
  for (int64_t k = 0; k < rank(); ++k) {
    sliceOffsets.push_back(at[k] ? mlir::OpFoldResult(at[k]) : mlir::OpFoldResult(b.getIndexAttr(0)));
    sizes.push_back(b.getIndexAttr(us.dim(k)));
    strides.push_back(b.getIndexAttr(1));
  }
  return c.wrap(mlir::tensor::InsertSliceOp::create(b, loc, v, x, sliceOffsets, sizes, strides), shape_);
}

Tensor Tensor::dynamicUpdateSlice1d(Axis axis, const Tensor& offset, const Tensor& update, Loc l) const {
  return renamingErrors("dynamicUpdateSlice1d", [&] { return dynamicUpdateSlice({{axis, offset}}, update, l); });
}

}  // namespace radix
