// Shape ops: broadcasts, reshapes, transposes, split/merge/squeeze/insert axes, pad, reverse,
// static slices, concatenate, repeat/stutter, roll; and buffer donation (reuseBuffer).
#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <numeric>

#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

std::string dimsStr(const std::vector<int64_t>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "}";
}

std::vector<Tag> tagsOf(const Shape& s) {
  std::vector<Tag> tags;
  for (int64_t i = 0; i < s.rank(); ++i) tags.push_back(s.tag(i));
  return tags;
}

/// A checked shape: rank <= 8, dims >= 0, no tag on two axes; errors name `op`.
Shape makeShape(const char* op, const std::vector<int64_t>& dims, const std::vector<Tag>& tags, DType dtype,
                const Shape& from) {
  if (dims.size() > static_cast<size_t>(Shape::kMaxRank))
    throw opError(op, "result of " + from.str() + " would have rank " + std::to_string(dims.size()) +
                          ", more than the maximum of " + std::to_string(Shape::kMaxRank));
  for (int64_t d : dims)
    if (d < 0) throw opError(op, "negative dim " + std::to_string(d) + " in " + dimsStr(dims) + " from " + from.str());
  for (size_t i = 0; i < tags.size(); ++i)
    for (size_t j = i + 1; j < tags.size(); ++j)
      if (!tags[i].empty() && tags[i] == tags[j])
        throw opError(op, "tag " + quote(tags[i].name()) + " would name two axes of the result of " + from.str());
  return renamingErrors(op, [&] { return Shape(dims, dtype).withTags(tags); });
}

/// An index in [-rank-1, rank] or a tag, as a position to insert axes before.
int64_t insertPosition(const Shape& s, Axis position, const char* op) {
  if (position.isTag()) return s.axis(position, op);
  int64_t p = position.index();
  if (p < -s.rank() - 1 || p > s.rank())
    throw opError(op, "position " + std::to_string(p) + " out of range for inserting axes into " + s.str());
  return p < 0 ? p + s.rank() + 1 : p;
}

/// A copy of x into `out` where result element (d0, d1, ...) reads x at exprs(d0, d1, ...).
mlir::Value affineCopy(TraceContext& c, mlir::Location loc, mlir::Value x, const Shape& out,
                       const std::vector<mlir::AffineExpr>& exprs) {
  auto& b = c.builder();
  mlir::Value init = emptyLike(c, loc, out);
  if (out.count() == 0) return init;
  auto* ctx = &c.mlir();
  auto inMap = mlir::AffineMap::get(static_cast<unsigned>(out.rank()), 0, exprs, ctx);
  auto outMap = mlir::AffineMap::getMultiDimIdentityMap(static_cast<unsigned>(out.rank()), ctx);
  std::vector<mlir::utils::IteratorType> iters(out.rank(), mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{x}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{inMap, outMap}, iters,
      [](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        mlir::linalg::YieldOp::create(nb, nl, args[0]);
      });
  return generic.getResult(0);
}

mlir::Value indexConst(mlir::OpBuilder& b, mlir::Location loc, int64_t v) {
  return mlir::arith::ConstantIndexOp::create(b, loc, v);
}

/// max(min(v, hi), lo) on `index` values.
mlir::Value clampIndex(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, int64_t lo, int64_t hi) {
  mlir::Value m = mlir::arith::MinSIOp::create(b, loc, v, indexConst(b, loc, hi));
  return mlir::arith::MaxSIOp::create(b, loc, m, indexConst(b, loc, lo));
}

}  // namespace

Tensor Tensor::broadcast(const Shape& target, const std::vector<int64_t>& axes, Loc l) const {
  const char* op = "broadcast";
  TraceContext& c = detail::currentTrace(op);
  if (static_cast<int64_t>(axes.size()) != rank())
    throw opError(op, std::to_string(axes.size()) + " axes for " + shape_.str());
  std::vector<bool> used(target.rank(), false);
  std::vector<int64_t> resolved;
  for (int64_t i = 0; i < rank(); ++i) {
    int64_t t = target.axis(axes[i], op);
    if (used[t]) throw opError(op, "axis " + std::to_string(t) + " of " + target.str() + " is targeted twice");
    used[t] = true;
    if (!shape_.tag(i).empty() && !target.tag(t).empty() && !(shape_.tag(i) == target.tag(t)))
      throw opError(op, "axis " + std::to_string(i) + " of " + shape_.str() + " is tagged " +
                            quote(shape_.tag(i).name()) + " but goes to axis " + std::to_string(t) + " of " +
                            target.str() + ", tagged " + quote(target.tag(t).name()));
    if (shape_.dim(i) != target.dim(t) && shape_.dim(i) != 1)
      throw opError(op, "can't broadcast axis " + std::to_string(i) + " of " + shape_.str() + " to axis " +
                            std::to_string(t) + " of " + target.str());
    resolved.push_back(t);
  }
  auto loc = c.loc(l, op);
  Shape out = target.withDtype(dtype());
  return c.wrap(broadcastValue(c, loc, c.value(*this, op), shape_, out, resolved), out);
}

Tensor Tensor::broad(const Shape& target, Loc l) const {
  const char* op = "broad";
  std::vector<int64_t> axes;
  if (rank() > target.rank()) throw opError(op, "can't broadcast " + shape_.str() + " to smaller " + target.str());
  if (isPositionalGuess(shape_, target)) throw untaggedError(op, shape_, target);
  if (isPositionalGuess(target, shape_) && rank() > 0) throw untaggedError(op, target, shape_);
  if (rank() == target.rank() || rank() == 0) {
    for (int64_t i = 0; i < rank(); ++i) {
      if (!shape_.tag(i).empty() && !target.tag(i).empty() && !(shape_.tag(i) == target.tag(i)))
        throw opError(op, "tags differ at axis " + std::to_string(i) + ": " + shape_.str() + " to " + target.str());
      axes.push_back(i);
    }
  } else if (shape_.isTagged()) {
    for (int64_t i = 0; i < rank(); ++i) {
      if (shape_.tag(i).empty()) throw opError(op, "axis " + std::to_string(i) + " of " + shape_.str() + " has no tag to map into " + target.str());
      int64_t t = target.hasTag(shape_.tag(i));
      if (t < 0) throw opError(op, "no axis tagged " + quote(shape_.tag(i).name()) + " in " + target.str());
      axes.push_back(t);
    }
  } else {
    for (int64_t i = 0; i < rank(); ++i) axes.push_back(target.rank() - rank() + i);
  }
  return renamingErrors(op, [&] { return broadcast(target, axes, l); });
}

Tensor Tensor::reshape(const std::vector<int64_t>& dims, Loc l) const {
  const char* op = "reshape";
  TraceContext& c = detail::currentTrace(op);
  if (dims.size() > static_cast<size_t>(Shape::kMaxRank))
    throw opError(op, "can't reshape " + shape_.str() + " to " + dimsStr(dims) + ": rank " + std::to_string(dims.size()) +
                          " exceeds the maximum of " + std::to_string(Shape::kMaxRank));
  std::vector<int64_t> resolved = dims;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (inferred >= 0) throw opError(op, "more than one -1 in " + dimsStr(dims) + " for " + shape_.str());
      inferred = static_cast<int64_t>(i);
    } else if (dims[i] < 0) {
      throw opError(op, "negative dim " + std::to_string(dims[i]) + " in " + dimsStr(dims) + " for " + shape_.str());
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      throw opError(op, "can't reshape " + shape_.str() + " (" + std::to_string(shape_.count()) + " elements) to " + dimsStr(dims));
    }
  }
  if (inferred >= 0) {
    if (known == 0 || shape_.count() % known != 0)
      throw opError(op, "can't infer the -1 in " + dimsStr(dims) + " from " + shape_.str() + " (" +
                            std::to_string(shape_.count()) + " elements)");
    resolved[inferred] = shape_.count() / known;
  }
  Shape out = renamingErrors(op, [&] { return Shape(resolved, dtype()); });
  if (out.count() != shape_.count())
    throw opError(op, "can't reshape " + shape_.str() + " (" + std::to_string(shape_.count()) + " elements) to " + out.str());
  // Tags of the unchanged leading and trailing axes survive.
  const int64_t r = std::min(rank(), out.rank());
  int64_t prefix = 0, suffix = 0;
  while (prefix < r && shape_.dim(prefix) == out.dim(prefix)) ++prefix;
  while (suffix < r - prefix && shape_.dim(rank() - 1 - suffix) == out.dim(out.rank() - 1 - suffix)) ++suffix;
  for (int64_t i = 0; i < prefix; ++i) out = out.withTag(i, shape_.tag(i));
  for (int64_t j = 0; j < suffix; ++j) out = out.withTag(out.rank() - 1 - j, shape_.tag(rank() - 1 - j));
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::transpose(const std::vector<Axis>& permutation, Loc l) const {
  const char* op = "transpose";
  TraceContext& c = detail::currentTrace(op);
  if (static_cast<int64_t>(permutation.size()) != rank())
    throw opError(op, std::to_string(permutation.size()) + " axes in the permutation of " + shape_.str());
  std::vector<int64_t> perm, dims;
  std::vector<Tag> tags;
  std::vector<bool> seen(rank(), false);
  for (const Axis& a : permutation) {
    int64_t i = shape_.axis(a, op);
    if (seen[i]) throw opError(op, "axis " + a.str() + " appears twice in the permutation of " + shape_.str());
    seen[i] = true;
    perm.push_back(i);
    dims.push_back(shape_.dim(i));
    tags.push_back(shape_.tag(i));
  }
  Shape out = Shape(dims, dtype()).withTags(tags);
  auto loc = c.loc(l, op);
  mlir::Value x = c.value(*this, op);
  if (std::is_sorted(perm.begin(), perm.end())) return c.wrap(x, out);
  auto init = emptyLike(c, loc, out);
  return c.wrap(mlir::linalg::TransposeOp::create(c.builder(), loc, x, init, perm).getResult()[0], out);
}

Tensor Tensor::splitAxis(Axis axis, const std::vector<std::pair<Tag, int64_t>>& parts, Loc l) const {
  const char* op = "splitAxis";
  TraceContext& c = detail::currentTrace(op);
  const int64_t a = shape_.axis(axis, op);
  if (parts.empty()) throw opError(op, "no parts to split axis " + axis.str() + " of " + shape_.str() + " into");
  std::vector<int64_t> partDims;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t d = parts[i].second;
    partDims.push_back(d);
    if (d == -1) {
      if (inferred >= 0) throw opError(op, "more than one -1 in " + dimsStr(partDims) + " for axis " + axis.str() + " of " + shape_.str());
      inferred = static_cast<int64_t>(i);
    } else if (d < 0) {
      throw opError(op, "negative dim " + std::to_string(d) + " for axis " + axis.str() + " of " + shape_.str());
    } else {
      known *= d;
    }
  }
  if (inferred >= 0) {
    if (known == 0 || shape_.dim(a) % known != 0)
      throw opError(op, "can't split axis " + axis.str() + " of " + shape_.str() + " into " + dimsStr(partDims));
    partDims[inferred] = shape_.dim(a) / known;
  }
  if (std::accumulate(partDims.begin(), partDims.end(), int64_t{1}, std::multiplies<>()) != shape_.dim(a))
    throw opError(op, "can't split axis " + axis.str() + " of " + shape_.str() + " into " + dimsStr(partDims));
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int64_t i = 0; i < rank(); ++i) {
    if (i != a) {
      dims.push_back(shape_.dim(i));
      tags.push_back(shape_.tag(i));
      continue;
    }
    for (size_t k = 0; k < parts.size(); ++k) {
      dims.push_back(partDims[k]);
      tags.push_back(parts[k].first);
    }
  }
  Shape out = makeShape(op, dims, tags, dtype(), shape_);
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::mergeAxes(const std::vector<Axis>& axes, Tag tag, Loc l) const {
  const char* op = "mergeAxes";
  TraceContext& c = detail::currentTrace(op);
  if (axes.empty()) throw opError(op, "no axes to merge in " + shape_.str());
  std::vector<int64_t> idx;
  for (const Axis& a : axes) idx.push_back(shape_.axis(a, op));
  for (size_t i = 1; i < idx.size(); ++i)
    if (idx[i] != idx[0] + static_cast<int64_t>(i))
      throw opError(op, "axes to merge must be adjacent and in order; axis " + axes[i].str() + " of " + shape_.str() +
                            " does not follow axis " + axes[i - 1].str());
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int64_t i = 0; i < rank(); ++i) {
    if (i > idx.front() && i <= idx.back()) {
      dims.back() *= shape_.dim(i);
      continue;
    }
    dims.push_back(shape_.dim(i));
    tags.push_back(i == idx.front() ? tag : shape_.tag(i));
  }
  Shape out = makeShape(op, dims, tags, dtype(), shape_);
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::flatten(Loc l) const {
  const char* op = "flatten";
  TraceContext& c = detail::currentTrace(op);
  Shape out({shape_.count()}, dtype());
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::squeeze(Axis axis, Loc l) const {
  const char* op = "squeeze";
  TraceContext& c = detail::currentTrace(op);
  const int64_t a = shape_.axis(axis, op);
  if (shape_.dim(a) != 1) throw opError(op, "axis " + axis.str() + " of " + shape_.str() + " has size " + std::to_string(shape_.dim(a)) + ", not 1");
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int64_t i = 0; i < rank(); ++i)
    if (i != a) dims.push_back(shape_.dim(i)), tags.push_back(shape_.tag(i));
  Shape out = makeShape(op, dims, tags, dtype(), shape_);
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::squeeze(Loc l) const {
  const char* op = "squeeze";
  TraceContext& c = detail::currentTrace(op);
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int64_t i = 0; i < rank(); ++i)
    if (shape_.dim(i) != 1) dims.push_back(shape_.dim(i)), tags.push_back(shape_.tag(i));
  Shape out = makeShape(op, dims, tags, dtype(), shape_);
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::insertAxes(Axis position, const std::vector<Tag>& newTags, Loc l) const {
  const char* op = "insertAxes";
  TraceContext& c = detail::currentTrace(op);
  const int64_t p = insertPosition(shape_, position, op);
  std::vector<int64_t> dims = shape_.dims();
  std::vector<Tag> tags = tagsOf(shape_);
  dims.insert(dims.begin() + p, newTags.size(), 1);
  tags.insert(tags.begin() + p, newTags.begin(), newTags.end());
  Shape out = makeShape(op, dims, tags, dtype(), shape_);
  auto loc = c.loc(l, op);
  return c.wrap(reshapeValue(c, loc, c.value(*this, op), shape_, out), out);
}

Tensor Tensor::appendAxes(const std::vector<Tag>& tags, Loc l) const {
  return renamingErrors("appendAxes", [&] { return insertAxes(rank(), tags, l); });
}

Tensor Tensor::rename(const std::vector<std::pair<Tag, Tag>>& renames, Loc l) const {
  const char* op = "rename";
  TraceContext& c = detail::currentTrace(op);
  std::vector<Tag> tags = tagsOf(shape_);
  for (const auto& [from, to] : renames) {
    const int64_t i = from.empty() ? -1 : shape_.hasTag(from);
    if (i < 0) throw opError(op, "no axis tagged " + quote(from.name()) + " in " + shape_.str());
    tags[i] = to;
  }
  Shape out = makeShape(op, shape_.dims(), tags, dtype(), shape_);
  c.loc(l, op);
  return c.wrap(c.value(*this, op), out);
}

Tensor Tensor::swapAxes(Axis a, Axis b, Loc l) const {
  const char* op = "swapAxes";
  const int64_t i = shape_.axis(a, op), j = shape_.axis(b, op);
  std::vector<Axis> perm;
  for (int64_t k = 0; k < rank(); ++k) perm.push_back(k == i ? j : k == j ? i : k);
  return renamingErrors(op, [&] { return transpose(perm, l); });
}

Tensor Tensor::pad(const std::vector<std::pair<Axis, Padding>>& padding, double value, Loc l) const {
  const char* op = "pad";
  TraceContext& c = detail::currentTrace(op);
  std::vector<Padding> per(rank());
  std::vector<bool> seen(rank(), false);
  for (const auto& [axis, p] : padding) {
    const int64_t a = shape_.axis(axis, op);
    if (seen[a]) throw opError(op, "axis " + axis.str() + " of " + shape_.str() + " is padded twice");
    seen[a] = true;
    if (p.interior < 0)
      throw opError(op, "negative interior padding " + std::to_string(p.interior) + " for axis " + axis.str() + " of " + shape_.str());
    constexpr int64_t kLimit = int64_t{1} << 40;  // keeps the arithmetic below far from overflow
    if (p.low > kLimit || p.low < -kLimit || p.high > kLimit || p.high < -kLimit ||
        p.interior > kLimit / std::max<int64_t>(shape_.dim(a), 1))
      throw opError(op, "padding of axis " + axis.str() + " of " + shape_.str() + " is too large");
    per[a] = p;
  }
  std::vector<int64_t> finalDims;
  for (int64_t i = 0; i < rank(); ++i) {
    const int64_t d = shape_.dim(i);
    const Padding& p = per[i];
    finalDims.push_back(d + std::max(d - 1, int64_t{0}) * p.interior + p.low + p.high);
    if (finalDims.back() < 0)
      throw opError(op, "padding {low=" + std::to_string(p.low) + ",high=" + std::to_string(p.high) + "} crops more than axis " +
                            std::to_string(i) + " of " + shape_.str() + " holds");
  }
  Shape out = makeShape(op, finalDims, tagsOf(shape_), dtype(), shape_);
  auto loc = c.loc(l, op);
  mlir::Value x = c.value(*this, op);
  if (shape_.count() == 0) return c.wrap(filled(c, loc, out, value), out);
  mlir::TypedAttr padAttr = scalarAttr(c, dtype(), value);
  // Result element o reads x[(o - low) / (interior + 1)] where that is a whole index in range.
  mlir::Value result = generate(c, loc, out, [&](mlir::OpBuilder& b, mlir::Location nl, const std::vector<mlir::Value>& at) {
    std::vector<mlir::Value> src;
    mlir::Value valid;
    auto both = [&](mlir::Value cond) { valid = valid ? mlir::arith::AndIOp::create(b, nl, valid, cond).getResult() : cond; };
    using Pred = mlir::arith::CmpIPredicate;
    for (int64_t i = 0; i < rank(); ++i) {
      const Padding& p = per[i];
      const int64_t step = p.interior + 1, d = shape_.dim(i);
      mlir::Value pos = mlir::arith::SubIOp::create(b, nl, at[i], indexConst(b, nl, p.low));
      both(mlir::arith::CmpIOp::create(b, nl, Pred::sge, pos, indexConst(b, nl, 0)));
      mlir::Value q = pos;
      if (step > 1) {
        mlir::Value stepV = indexConst(b, nl, step);
        mlir::Value rem = mlir::arith::RemSIOp::create(b, nl, pos, stepV);
        both(mlir::arith::CmpIOp::create(b, nl, Pred::eq, rem, indexConst(b, nl, 0)));
        q = mlir::arith::DivSIOp::create(b, nl, pos, stepV);
      }
      both(mlir::arith::CmpIOp::create(b, nl, Pred::slt, q, indexConst(b, nl, d)));
      src.push_back(clampIndex(b, nl, q, 0, d - 1));
    }
    mlir::Value v = mlir::tensor::ExtractOp::create(b, nl, x, src);
    mlir::Value padV = mlir::arith::ConstantOp::create(b, nl, padAttr);
    return valid ? mlir::arith::SelectOp::create(b, nl, valid, v, padV).getResult() : v;
  });
  return c.wrap(result, out);
}

Tensor Tensor::reverse(const std::vector<Axis>& axes, Loc l) const {
  const char* op = "reverse";
  TraceContext& c = detail::currentTrace(op);
  std::vector<bool> reversed(rank(), false);
  for (const Axis& a : axes) {
    const int64_t i = shape_.axis(a, op);
    if (reversed[i]) throw opError(op, "axis " + a.str() + " of " + shape_.str() + " is given twice");
    reversed[i] = true;
  }
  auto loc = c.loc(l, op);
  mlir::Value x = c.value(*this, op);
  if (std::find(reversed.begin(), reversed.end(), true) == reversed.end()) return c.wrap(x, shape_);
  std::vector<mlir::AffineExpr> exprs;
  for (int64_t i = 0; i < rank(); ++i) {
    mlir::AffineExpr d = mlir::getAffineDimExpr(static_cast<unsigned>(i), &c.mlir());
    exprs.push_back(reversed[i] ? shape_.dim(i) - 1 - d : d);
  }
  return c.wrap(affineCopy(c, loc, x, shape_, exprs), shape_);
}

Tensor Tensor::slice(const std::vector<std::pair<Axis, Slice>>& slices, Loc l) const {
  const char* op = "slice";
  TraceContext& c = detail::currentTrace(op);
  std::vector<int64_t> offsets(rank(), 0), sizes = shape_.dims(), strides(rank(), 1);
  std::vector<bool> seen(rank(), false);
  for (const auto& [axis, s] : slices) {
    const int64_t a = shape_.axis(axis, op);
    if (seen[a]) throw opError(op, "axis " + axis.str() + " of " + shape_.str() + " is sliced twice");
    seen[a] = true;
    if (s.step < 1) throw opError(op, "step " + std::to_string(s.step) + " for axis " + axis.str() + " of " + shape_.str() + " must be >= 1");
    const int64_t d = shape_.dim(a);
    auto clampIndex = [d](int64_t i) {
      if (i < 0) i = i < -d ? 0 : i + d;
      return std::min(i, d);
    };
    const int64_t start = clampIndex(s.start), end = s.end == Slice::kToTheEnd ? d : clampIndex(s.end);
    offsets[a] = start;
    strides[a] = s.step;
    sizes[a] = end > start ? (end - start - 1) / s.step + 1 : 0;
  }
  Shape out = makeShape(op, sizes, tagsOf(shape_), dtype(), shape_);
  auto loc = c.loc(l, op);
  mlir::Value x = c.value(*this, op);
  if (out.dims() == shape_.dims()) return c.wrap(x, out);
  // Read with tensor.extract: an identity indexing map on a shorter axis does not verify, and a
  // strided extract_slice copied out as a memref would need a runtime library call.
  mlir::Value result = generate(c, loc, out, [&](mlir::OpBuilder& b, mlir::Location nl, const std::vector<mlir::Value>& at) {
    std::vector<mlir::Value> src;
    for (int64_t i = 0; i < rank(); ++i) {
      mlir::Value v = at[i];
      if (strides[i] != 1) v = mlir::arith::MulIOp::create(b, nl, v, indexConst(b, nl, strides[i]));
      if (offsets[i] != 0) v = mlir::arith::AddIOp::create(b, nl, v, indexConst(b, nl, offsets[i]));
      src.push_back(v);
    }
    return mlir::tensor::ExtractOp::create(b, nl, x, src).getResult();
  });
  return c.wrap(result, out);
}

Tensor Tensor::slice1d(Axis axis, Slice s, Loc l) const {
  return renamingErrors("slice1d", [&] { return slice({{axis, s}}, l); });
}

Tensor Tensor::choose(const std::vector<std::pair<Axis, int64_t>>& indices, Loc l) const {
  const char* op = "choose";
  std::vector<std::pair<Axis, Slice>> slices;
  std::vector<int64_t> axes;
  for (const auto& [axis, i] : indices) {
    const int64_t a = shape_.axis(axis, op), d = shape_.dim(a);
    if (i < -d || i >= d)
      throw opError(op, "index " + std::to_string(i) + " out of range for axis " + axis.str() + " of " + shape_.str());
    const int64_t start = i < 0 ? i + d : i;
    slices.push_back({a, Slice{.start = start, .end = start + 1}});
    axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end(), std::greater<>());
  return renamingErrors(op, [&] {
    Tensor t = slice(slices, l);
    for (int64_t a : axes) t = t.squeeze(a, l);
    return t;
  });
}

Tensor Tensor::choose1d(Axis axis, int64_t index, Loc l) const {
  return renamingErrors("choose1d", [&] { return choose({{axis, index}}, l); });
}

Tensor Tensor::concatenate(const std::vector<Tensor>& tensors, Axis axis, Loc l) {
  const char* op = "concatenate";
  TraceContext& c = detail::currentTrace(op);
  if (tensors.empty()) throw opError(op, "no tensors to concatenate");
  const Shape& first = tensors[0].shape();
  const int64_t a = first.axis(axis, op);
  std::vector<int64_t> dims = first.dims();
  std::vector<Tag> tags = tagsOf(first);
  dims[a] = 0;
  for (const Tensor& t : tensors) {
    const Shape& s = t.shape();
    c.value(t, op);
    if (s.rank() != first.rank() || s.dtype() != first.dtype())
      throw opError(op, "can't concatenate " + s.str() + " with " + first.str() + " along axis " + axis.str());
    for (int64_t i = 0; i < s.rank(); ++i) {
      if (!s.tag(i).empty() && !tags[i].empty() && !(s.tag(i) == tags[i]))
        throw opError(op, "tags differ at axis " + std::to_string(i) + ": " + first.str() + " and " + s.str());
      if (tags[i].empty()) tags[i] = s.tag(i);
      if (i != a && s.dim(i) != first.dim(i))
        throw opError(op, "dims differ at axis " + std::to_string(i) + ": " + first.str() + " and " + s.str() +
                              " (concatenating along axis " + axis.str() + ")");
    }
    dims[a] += s.dim(a);
  }
  Shape out = makeShape(op, dims, tags, first.dtype(), first);
  auto loc = c.loc(l, op);
  if (tensors.size() == 1) return c.wrap(c.value(tensors[0], op), out);
  // Element o along the axis comes from the last input that starts at or before o.
  std::vector<std::pair<mlir::Value, std::pair<int64_t, int64_t>>> parts;  // value, (start, dim)
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    if (t.shape().count() > 0) parts.push_back({c.value(t, op), {start, t.dim(a)}});
    start += t.dim(a);
  }
  mlir::Value result = generate(c, loc, out, [&](mlir::OpBuilder& b, mlir::Location nl, const std::vector<mlir::Value>& at) {
    mlir::Value v;
    for (const auto& [value, range] : parts) {
      std::vector<mlir::Value> src = at;
      mlir::Value pos = mlir::arith::SubIOp::create(b, nl, at[a], indexConst(b, nl, range.first));
      src[a] = clampIndex(b, nl, pos, 0, range.second - 1);
      mlir::Value e = mlir::tensor::ExtractOp::create(b, nl, value, src);
      if (!v) {
        v = e;
        continue;
      }
      mlir::Value after = mlir::arith::CmpIOp::create(b, nl, mlir::arith::CmpIPredicate::sge, at[a], indexConst(b, nl, range.first));
      v = mlir::arith::SelectOp::create(b, nl, after, e, v);
    }
    return v;
  });
  return c.wrap(result, out);
}

Tensor Tensor::stack(const std::vector<Tensor>& tensors, Axis position, Tag tag, Loc l) {
  const char* op = "stack";
  if (tensors.empty()) throw opError(op, "no tensors to stack");
  for (const Tensor& t : tensors)
    if (t.shape() != tensors[0].shape()) throw opError(op, "shapes differ: " + tensors[0].shape().str() + " and " + t.shape().str());
  return renamingErrors(op, [&] {
    const int64_t p = insertPosition(tensors[0].shape(), position, op);
    std::vector<Tensor> expanded;
    for (const Tensor& t : tensors) expanded.push_back(t.insertAxes(p, {tag}, l));
    return concatenate(expanded, p, l);
  });
}

namespace {
/// repeat and stutter: each axis grows `times` fold; `source(d, dim, times)` maps an output index
/// expression to the input index.
Tensor tiled(const Tensor& x, const char* op, const std::vector<int64_t>& times, const std::source_location& l,
             mlir::AffineExpr (*source)(mlir::AffineExpr, int64_t, int64_t)) {
  TraceContext& c = detail::currentTrace(op);
  const Shape& shape = x.shape();
  if (static_cast<int64_t>(times.size()) != x.rank())
    throw opError(op, std::to_string(times.size()) + " repeat counts for " + shape.str());
  std::vector<int64_t> dims;
  std::vector<mlir::AffineExpr> exprs;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (times[i] < 1) throw opError(op, "repeat count " + std::to_string(times[i]) + " for axis " + std::to_string(i) + " of " + shape.str() + " must be >= 1");
    if (shape.dim(i) > 0 && times[i] > (int64_t{1} << 40) / shape.dim(i))
      throw opError(op, "repeat count " + std::to_string(times[i]) + " for axis " + std::to_string(i) + " of " + shape.str() + " is too large");
    dims.push_back(shape.dim(i) * times[i]);
    mlir::AffineExpr d = mlir::getAffineDimExpr(static_cast<unsigned>(i), &c.mlir());
    exprs.push_back(times[i] > 1 && shape.dim(i) > 0 ? source(d, shape.dim(i), times[i]) : d);
  }
  Shape out = makeShape(op, dims, tagsOf(shape), x.dtype(), shape);
  auto loc = c.loc(l, op);
  mlir::Value v = c.value(x, op);
  if (out.dims() == shape.dims()) return c.wrap(v, out);
  return c.wrap(affineCopy(c, loc, v, out, exprs), out);
}
}  // namespace

Tensor Tensor::repeat(const std::vector<int64_t>& times, Loc l) const {
  return tiled(*this, "repeat", times, l, [](mlir::AffineExpr d, int64_t dim, int64_t) { return d % dim; });
}

Tensor Tensor::repeat1d(Axis axis, int64_t times, Loc l) const {
  const char* op = "repeat1d";
  std::vector<int64_t> all(rank(), 1);
  all[shape_.axis(axis, op)] = times;
  return renamingErrors(op, [&] { return repeat(all, l); });
}

Tensor Tensor::stutter(const std::vector<int64_t>& times, Loc l) const {
  return tiled(*this, "stutter", times, l, [](mlir::AffineExpr d, int64_t, int64_t n) { return d.floorDiv(n); });
}

Tensor Tensor::stutter1d(Axis axis, int64_t times, Loc l) const {
  const char* op = "stutter1d";
  std::vector<int64_t> all(rank(), 1);
  all[shape_.axis(axis, op)] = times;
  return renamingErrors(op, [&] { return stutter(all, l); });
}

std::vector<Tensor> Tensor::split(Axis axis, const std::vector<int64_t>& sizes, Loc l) const {
  const char* op = "split";
  detail::currentTrace(op);
  const int64_t a = shape_.axis(axis, op);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw opError(op, "negative size " + std::to_string(s) + " in " + dimsStr(sizes) + " for " + shape_.str());
    total += s;
  }
  if (total != shape_.dim(a))
    throw opError(op, "sizes " + dimsStr(sizes) + " sum to " + std::to_string(total) + ", not to axis " + axis.str() + " of " + shape_.str());
  std::vector<Tensor> parts;
  int64_t start = 0;
  return renamingErrors(op, [&] {
    for (int64_t s : sizes) {
      parts.push_back(slice({{a, Slice{.start = start, .end = start + s}}}, l));
      start += s;
    }
    return parts;
  });
}

std::vector<Tensor> Tensor::chunkExact(Axis axis, int64_t n, Loc l) const {
  const char* op = "chunkExact";
  const int64_t a = shape_.axis(axis, op);
  if (n < 1 || n > std::max<int64_t>(shape_.dim(a), 1) || shape_.dim(a) % n != 0)
    throw opError(op, "axis " + axis.str() + " of " + shape_.str() + " does not split into " + std::to_string(n) + " equal chunks");
  return renamingErrors(op, [&] { return split(a, std::vector<int64_t>(n, shape_.dim(a) / n), l); });
}

std::vector<Tensor> Tensor::chunkAllowTrailing(Axis axis, int64_t size, Loc l) const {
  const char* op = "chunkAllowTrailing";
  const int64_t a = shape_.axis(axis, op);
  if (size < 1) throw opError(op, "chunk size " + std::to_string(size) + " for axis " + axis.str() + " of " + shape_.str() + " must be >= 1");
  std::vector<int64_t> sizes;
  for (int64_t left = shape_.dim(a); left > 0; left -= size) sizes.push_back(std::min(left, size));
  return renamingErrors(op, [&] { return split(a, sizes, l); });
}

Tensor Tensor::toDiagonal(Axis axis, std::pair<Tag, Tag> newTags, Loc l) const {
  const char* op = "toDiagonal";
  TraceContext& c = detail::currentTrace(op);
  const int64_t a = shape_.axis(axis, op);
  std::vector<int64_t> dims = shape_.dims();
  std::vector<Tag> tags = tagsOf(shape_);
  dims.insert(dims.begin() + a + 1, shape_.dim(a));
  tags[a] = newTags.first;
  tags.insert(tags.begin() + a + 1, newTags.second);
  Shape out = makeShape(op, dims, tags, dtype(), shape_);
  auto loc = c.loc(l, op);
  mlir::Value x = c.value(*this, op);
  mlir::Value init = emptyLike(c, loc, out);
  if (out.count() == 0) return c.wrap(init, out);
  // Result (.., i, j, ..) reads x(.., i, ..): the input map drops j; the body keeps i == j.
  auto& b = c.builder();
  auto* ctx = &c.mlir();
  const unsigned n = static_cast<unsigned>(out.rank());
  std::vector<mlir::AffineExpr> exprs;
  for (unsigned i = 0; i < n; ++i)
    if (i != static_cast<unsigned>(a) + 1) exprs.push_back(mlir::getAffineDimExpr(i, ctx));
  auto inMap = mlir::AffineMap::get(n, 0, exprs, ctx);
  std::vector<mlir::utils::IteratorType> iters(n, mlir::utils::IteratorType::parallel);
  mlir::TypedAttr zero = scalarAttr(c, dtype(), 0);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{x}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{inMap, mlir::AffineMap::getMultiDimIdentityMap(n, ctx)}, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        mlir::Value i = mlir::linalg::IndexOp::create(nb, nl, static_cast<uint64_t>(a));
        mlir::Value j = mlir::linalg::IndexOp::create(nb, nl, static_cast<uint64_t>(a + 1));
        mlir::Value onDiagonal = mlir::arith::CmpIOp::create(nb, nl, mlir::arith::CmpIPredicate::eq, i, j);
        mlir::Value z = mlir::arith::ConstantOp::create(nb, nl, zero);
        mlir::linalg::YieldOp::create(nb, nl, mlir::arith::SelectOp::create(nb, nl, onDiagonal, args[0], z).getResult());
      });
  return c.wrap(generic.getResult(0), out);
}

std::vector<Tensor> Tensor::cartesianProduct(const std::vector<Tensor>& vectors, Loc l) {
  const char* op = "cartesianProduct";
  detail::currentTrace(op);
  if (vectors.empty()) throw opError(op, "no tensors");
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (const Tensor& v : vectors) {
    if (v.rank() != 1) throw opError(op, "expects rank-1 tensors, got " + v.shape().str());
    dims.push_back(v.dim(0));
    tags.push_back(v.shape().tag(0));
  }
  std::vector<Tensor> out;
  const Shape grid = makeShape(op, dims, tags, DType::f32, vectors[0].shape());
  return renamingErrors(op, [&] {
    for (size_t i = 0; i < vectors.size(); ++i)
      out.push_back(vectors[i].broadcast(grid.withDtype(vectors[i].dtype()), {static_cast<int64_t>(i)}, l));
    return out;
  });
}

Tensor Tensor::cartesianProductStacked(const std::vector<Tensor>& vectors, Tag tag, Loc l) {
  const char* op = "cartesianProductStacked";
  for (const Tensor& v : vectors)
    if (!vectors.empty() && v.dtype() != vectors[0].dtype())
      throw opError(op, "dtypes differ: " + vectors[0].shape().str() + " and " + v.shape().str());
  return renamingErrors(op, [&] {
    std::vector<Tensor> grids = cartesianProduct(vectors, l);
    return stack(grids, -1, tag, l);
  });
}

Tensor Tensor::roll(Axis axis, int64_t shift, Loc l) const {
  const char* op = "roll";
  TraceContext& c = detail::currentTrace(op);
  const int64_t a = shape_.axis(axis, op);
  const int64_t d = shape_.dim(a);
  auto loc = c.loc(l, op);
  mlir::Value x = c.value(*this, op);
  const int64_t s = d == 0 ? 0 : ((shift % d) + d) % d;
  if (s == 0) return c.wrap(x, shape_);
  std::vector<mlir::AffineExpr> exprs;
  for (int64_t i = 0; i < rank(); ++i) {
    mlir::AffineExpr e = mlir::getAffineDimExpr(static_cast<unsigned>(i), &c.mlir());
    exprs.push_back(i == a ? (e + (d - s)) % d : e);
  }
  return c.wrap(affineCopy(c, loc, x, shape_, exprs), shape_);
}

Tensor Tensor::reuseBuffer(const Tensor& origin, Loc) const {
  const char* op = "reuseBuffer";
  TraceContext& c = detail::currentTrace(op);
  c.value(*this, op);
  c.value(origin, op);
  if (!shape_.sameDimsAndDtype(origin.shape_))
    throw opError(op, "result " + shape_.str() + " can't take the buffer of " + origin.shape_.str());
  const int32_t source = origin.donation_ >= 0 ? origin.donation_ : origin.argument_;
  if (source < 0)
    throw opError(op, "origin " + origin.shape_.str() + " is not an argument of the traced function (nor reuses one)");
  Tensor t = *this;
  t.donation_ = source;
  return t;
}

}  // namespace radix
