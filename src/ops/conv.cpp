// Convolution and pooling as one linalg.generic each over a padded (and, for input dilation,
// spread) input, and resizing; padding and resizing are linalg.generics that gather with
// tensor.extract in their bodies.
#include <algorithm>
#include <cmath>
#include <limits>

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

using Pads = std::vector<std::pair<int64_t, int64_t>>;

/// One entry per spatial axis: empty gives n copies of `fallback`; every entry must be >= min.
std::vector<int64_t> perAxis(const char* op, const char* what, const std::vector<int64_t>& v, size_t n,
                             int64_t fallback, int64_t min, const std::string& shapes) {
  if (v.empty()) return std::vector<int64_t>(n, fallback);
  if (v.size() != n)
    throw opError(op, std::string(what) + " has " + std::to_string(v.size()) + " entries for " + std::to_string(n) +
                          " axes: " + shapes);
  for (int64_t x : v)
    if (x < min)
      throw opError(op, std::string(what) + " " + std::to_string(x) + " is below " + std::to_string(min) + ": " + shapes);
  return v;
}

Pads perAxisPads(const char* op, const Pads& v, size_t n, const std::string& shapes) {
  if (v.empty()) return Pads(n, {0, 0});
  if (v.size() != n)
    throw opError(op, "padding has " + std::to_string(v.size()) + " (low, high) pairs for " + std::to_string(n) +
                          " axes: " + shapes);
  for (auto [lo, hi] : v)
    if (lo < 0 || hi < 0)
      throw opError(op, "padding (" + std::to_string(lo) + ", " + std::to_string(hi) + ") is negative: " + shapes);
  return v;
}

/// Size of n elements with d-1 holes between neighbours.
int64_t spread(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

/// Pads `x` (of shape s) along `axes` by (low, high) and spreads it by `dilation` (holes between
/// elements), filling with `fill`. `padded` receives the result's dims. Without holes or cuts:
/// a fill, then x inserted into its interior (a strided copy, which the CPU lowers to vector
/// loops). Otherwise one linalg.generic that gathers with tensor.extract.
mlir::Value padAndSpread(TraceContext& c, mlir::Location loc, mlir::Value x, const Shape& s, const std::vector<int64_t>& axes,
                         const Pads& pads, const std::vector<int64_t>& dilation, double fill, Shape& padded) {
  const int64_t rank = s.rank();
  std::vector<int64_t> dims = s.dims(), lo(rank, 0), step(rank, 1);
  std::vector<bool> moved(rank, false);
  bool changed = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    lo[a] = pads[i].first;
    step[a] = s.dim(a) > 1 ? dilation[i] : 1;
    dims[a] = lo[a] + spread(s.dim(a), step[a]) + pads[i].second;
    moved[a] = dims[a] != s.dim(a) || lo[a] != 0;
    changed |= moved[a];
  }
  padded = Shape(dims, s.dtype());
  if (!changed) return x;
  mlir::Value init = emptyLike(c, loc, padded);
  mlir::TypedAttr fillAttr = scalarAttr(c, s.dtype(), fill);
  bool framed = true;  // no holes and no cut: the fill, then x copied into its interior
  for (size_t i = 0; i < axes.size(); ++i) framed = framed && step[axes[i]] == 1 && pads[i].first >= 0 && pads[i].second >= 0;
  if (framed) {
    mlir::Value f = mlir::arith::ConstantOp::create(c.builder(), loc, fillAttr);
    mlir::Value frame = mlir::linalg::FillOp::create(c.builder(), loc, mlir::ValueRange{f}, mlir::ValueRange{init}).getResult(0);
    llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
    for (int64_t a = 0; a < rank; ++a) {
      offsets.push_back(c.builder().getIndexAttr(lo[a]));
      sizes.push_back(c.builder().getIndexAttr(s.dim(a)));
      strides.push_back(c.builder().getIndexAttr(1));
    }
    return mlir::tensor::InsertSliceOp::create(c.builder(), loc, x, frame, offsets, sizes, strides).getResult();
  }
  std::vector<mlir::AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i) exprs.push_back(mlir::getAffineDimExpr(static_cast<unsigned>(i), &c.mlir()));
  std::vector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      c.builder(), loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{mlir::AffineMap::get(static_cast<unsigned>(rank), 0, exprs, &c.mlir())}, iterators,
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) {
        namespace arith = mlir::arith;
        auto index = [&](int64_t n) { return arith::ConstantIndexOp::create(b, l, n).getResult(); };
        auto both = [&](mlir::Value p, mlir::Value q) { return p ? mlir::Value(arith::AndIOp::create(b, l, p, q)) : q; };
        std::vector<mlir::Value> at;
        mlir::Value valid;
        for (int64_t a = 0; a < rank; ++a) {
          mlir::Value i = mlir::linalg::IndexOp::create(b, l, static_cast<uint64_t>(a));
          if (!moved[a]) {
            at.push_back(i);
            continue;
          }
          mlir::Value q = arith::SubIOp::create(b, l, i, index(lo[a]));
          valid = both(valid, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, q, index(0)));
          if (step[a] != 1) {
            mlir::Value rem = arith::RemSIOp::create(b, l, q, index(step[a]));
            valid = both(valid, arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, rem, index(0)));
            q = arith::DivSIOp::create(b, l, q, index(step[a]));
          }
          valid = both(valid, arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, q, index(s.dim(a))));
          q = arith::MaxSIOp::create(b, l, q, index(0));
          at.push_back(arith::MinSIOp::create(b, l, q, index(s.dim(a) - 1)));
        }
        mlir::Value v = mlir::tensor::ExtractOp::create(b, l, x, at);
        mlir::Value f = arith::ConstantOp::create(b, l, fillAttr);
        mlir::linalg::YieldOp::create(b, l, mlir::ValueRange{arith::SelectOp::create(b, l, valid, v, f)});
      });
  return generic.getResult(0);
}

/// An operand the window op must read from memory: elementwise fusion would otherwise pull its
/// producer (the padding's gather, a ReLU) into the op's body, recomputed for every window tap,
/// and the op would no longer be a convolution or pooling the kernels (compiler/kernels/conv*)
/// recognise. As dotGeneral's operands (contract.cpp): arguments and calls' and reductions'
/// results are read in place; anything else is copied first (bufferization.alloc_tensor).
mlir::Value materialized(TraceContext& c, mlir::Location loc, mlir::Value v) {
  mlir::Value root = v;
  while (auto ext = root.getDefiningOp<mlir::arith::ExtFOp>()) root = ext.getIn();
  mlir::Operation* def = root.getDefiningOp();
  bool fusable = def && !mlir::isa<mlir::func::CallOp, mlir::tensor::InsertSliceOp>(def);
  if (auto linalgOp = mlir::dyn_cast_or_null<mlir::linalg::LinalgOp>(def)) fusable = linalgOp.getNumReductionLoops() == 0;
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  if (!fusable || type.getNumElements() == 0) return v;
  return mlir::bufferization::AllocTensorOp::create(c.builder(), loc, type, mlir::ValueRange{}, v).getResult();
}

/// The axes of a convolution operand: {first, second, spatial...}.
std::vector<int64_t> convLayout(const char* op, const Shape& s, Axis first, Axis second, const std::vector<Axis>& spatial,
                                const char* firstName, const char* secondName, const char* which) {
  const int64_t i = s.axis(first, op), j = s.axis(second, op);
  if (i == j)
    throw opError(op, std::string(which) + " " + firstName + " and " + secondName + " axes are both axis " +
                          std::to_string(i) + " of " + s.str());
  std::vector<int64_t> r{i, j};
  if (spatial.empty()) {
    for (int64_t d = 0; d < s.rank(); ++d)
      if (d != i && d != j) r.push_back(d);
    return r;
  }
  if (static_cast<int64_t>(spatial.size()) != s.rank() - 2)
    throw opError(op, std::string(which) + " has " + std::to_string(spatial.size()) + " spatial axes for " +
                          std::to_string(s.rank() - 2) + ": " + s.str());
  for (const Axis& a : spatial) {
    const int64_t d = s.axis(a, op);
    if (std::find(r.begin(), r.end(), d) != r.end())
      throw opError(op, std::string(which) + " axis " + a.str() + " appears twice in the layout of " + s.str());
    r.push_back(d);
  }
  return r;
}

DType accumulatorOf(DType d) { return d == DType::f16 || d == DType::bf16 ? DType::f32 : d; }

mlir::AffineMap mapOf(TraceContext& c, int64_t loops, const std::vector<mlir::AffineExpr>& exprs) {
  return mlir::AffineMap::get(static_cast<unsigned>(loops), 0, exprs, &c.mlir());
}

Tensor convolve(const Tensor& x, const Tensor& kernel, const Tensor::ConvOptions& o, const char* op,
                const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape& a = x.shape();
  const Shape& w = kernel.shape();
  const std::string both = "input " + a.str() + " and kernel " + w.str();
  if (a.dtype() != w.dtype()) throw opError(op, "dtypes differ: " + both);
  if (a.dtype() == DType::bool_) throw opError(op, "bool tensors have no arithmetic: " + both);
  if (a.rank() < 3 || a.rank() != w.rank())
    throw opError(op, "input and kernel need equal ranks >= 3 (batch, feature, spatial axes): " + both);
  const int64_t rank = a.rank(), ns = rank - 2;
  const std::vector<int64_t> in = convLayout(op, a, o.inputBatch, o.inputFeature, o.inputSpatial, "batch", "feature", "input");
  const std::vector<int64_t> ker = convLayout(op, w, o.kernelOutput, o.kernelInput, o.kernelSpatial, "output", "input", "kernel");
  const std::vector<int64_t> strides = perAxis(op, "strides", o.strides, ns, 1, 1, both);
  const std::vector<int64_t> lhsDilation = perAxis(op, "lhsDilation", o.lhsDilation, ns, 1, 1, both);
  const std::vector<int64_t> rhsDilation = perAxis(op, "rhsDilation", o.rhsDilation, ns, 1, 1, both);
  const Pads pads = perAxisPads(op, o.padding, ns, both);
  const int64_t groups = o.featureGroups;
  const int64_t features = a.dim(in[1]), outputs = w.dim(ker[0]), groupFeatures = w.dim(ker[1]);
  if (groups < 1) throw opError(op, "featureGroups " + std::to_string(groups) + " is below 1: " + both);
  if (features % groups != 0 || groupFeatures * groups != features)
    throw opError(op, "kernel input size " + std::to_string(groupFeatures) + " must be input features " +
                          std::to_string(features) + " / featureGroups " + std::to_string(groups) + ": " + both);
  if (outputs % groups != 0)
    throw opError(op, "kernel output size " + std::to_string(outputs) + " is not divisible by featureGroups " +
                          std::to_string(groups) + ": " + both);
  std::vector<int64_t> dims = a.dims();
  dims[in[1]] = outputs;
  for (int64_t i = 0; i < ns; ++i) {
    const int64_t padded = pads[i].first + spread(a.dim(in[2 + i]), lhsDilation[i]) + pads[i].second;
    const int64_t window = spread(w.dim(ker[2 + i]), rhsDilation[i]);
    if (window == 0 || padded < window)
      throw opError(op, "the kernel window (" + std::to_string(window) + ") along spatial axis " + std::to_string(i) +
                            " does not fit the padded input (" + std::to_string(padded) + "): " + both);
    dims[in[2 + i]] = (padded - window) / strides[i] + 1;
  }
  std::vector<Tag> tags;
  for (int64_t i = 0; i < rank; ++i) tags.push_back(a.tag(i));
  const Shape out = Shape(dims, a.dtype()).withTags(tags);

  // An axis with one output position reads exactly one window: the padded input is cut to it,
  // as the loop ranges otherwise disagree once unit-dim folding leaves the window's loop alone.
  Pads used = pads;
  for (int64_t i = 0; i < ns; ++i)
    if (dims[in[2 + i]] == 1)
      used[i].second = spread(w.dim(ker[2 + i]), rhsDilation[i]) - pads[i].first - spread(a.dim(in[2 + i]), lhsDilation[i]);
  auto loc = c.loc(where, op);
  Shape padded;
  mlir::Value input = materialized(c, loc, padAndSpread(c, loc, c.value(x, op), a, std::vector<int64_t>(in.begin() + 2, in.end()),
                                                        used, lhsDilation, 0, padded));
  const DType acc = accumulatorOf(a.dtype());
  // Loops: the output's axes, then the group's input feature, then the kernel's spatial axes.
  const int64_t loops = rank + 1 + ns, feature = rank;
  auto d = [&](int64_t i) { return mlir::getAffineDimExpr(static_cast<unsigned>(i), &c.mlir()); };
  std::vector<mlir::AffineExpr> inExprs(rank), kerExprs(rank), outExprs;
  inExprs[in[0]] = d(in[0]);
  inExprs[in[1]] = groups > 1 ? d(in[1]).floorDiv(outputs / groups) * groupFeatures + d(feature) : d(feature);
  kerExprs[ker[0]] = d(in[1]);
  kerExprs[ker[1]] = d(feature);
  for (int64_t i = 0; i < ns; ++i) {
    inExprs[in[2 + i]] = d(in[2 + i]) * strides[i] + d(rank + 1 + i) * rhsDilation[i];
    kerExprs[ker[2 + i]] = d(rank + 1 + i);
  }
  for (int64_t i = 0; i < rank; ++i) outExprs.push_back(d(i));
  std::vector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  iterators.insert(iterators.end(), 1 + ns, mlir::utils::IteratorType::reduction);
  mlir::Value init = filled(c, loc, out.withDtype(acc), 0);
  const bool isF = isFloat(acc);
  mlir::Type accType = c.elementType(acc);
  auto generic = mlir::linalg::GenericOp::create(
      c.builder(), loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{input, c.value(kernel, op)},
      mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{mapOf(c, loops, inExprs), mapOf(c, loops, kerExprs), mapOf(c, loops, outExprs)},
      iterators, [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        mlir::Value p = args[0], q = args[1];
        if (p.getType() != accType) {
          p = mlir::arith::ExtFOp::create(b, l, accType, p);
          q = mlir::arith::ExtFOp::create(b, l, accType, q);
        }
        mlir::Value r = isF ? mlir::Value(mlir::arith::AddFOp::create(b, l, args[2], mlir::arith::MulFOp::create(b, l, p, q)))
                            : mlir::arith::AddIOp::create(b, l, args[2], mlir::arith::MulIOp::create(b, l, p, q));
        mlir::linalg::YieldOp::create(b, l, r);
      });
  return c.wrap(convertValue(c, loc, generic.getResult(0), acc, a.dtype(), out.withDtype(acc)), out);
}

enum class Pool { max, avg };

Tensor pool(const Tensor& x, const Tensor::PoolOptions& o, Pool kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape& s = x.shape();
  const DType dt = s.dtype();
  if (dt == DType::bool_) throw opError(op, "bool tensors have no arithmetic: " + s.str());
  if (kind == Pool::avg && !isFloat(dt)) throw opError(op, "averages need a float tensor, got " + s.str());
  const size_t np = o.axes.size();
  if (np == 0) throw opError(op, "no axes to pool in " + s.str());
  std::vector<int64_t> axes;
  for (const Axis& a : o.axes) {
    const int64_t i = s.axis(a, op);
    if (std::find(axes.begin(), axes.end(), i) != axes.end())
      throw opError(op, "axis " + a.str() + " is pooled twice in " + s.str());
    axes.push_back(i);
  }
  if (o.window.size() != np)
    throw opError(op, "window has " + std::to_string(o.window.size()) + " sizes for " + std::to_string(np) +
                          " pooled axes of " + s.str());
  const std::vector<int64_t> window = perAxis(op, "window", o.window, np, 1, 1, s.str());
  const std::vector<int64_t> strides = o.strides.empty() ? window : perAxis(op, "strides", o.strides, np, 1, 1, s.str());
  const std::vector<int64_t> dilation = perAxis(op, "dilation", o.dilation, np, 1, 1, s.str());
  const Pads pads = perAxisPads(op, o.padding, np, s.str());
  std::vector<int64_t> dims = s.dims();
  int64_t windowCount = 1;
  for (size_t p = 0; p < np; ++p) {
    const int64_t padded = pads[p].first + s.dim(axes[p]) + pads[p].second, span = spread(window[p], dilation[p]);
    if (padded < span)
      throw opError(op, "the window (" + std::to_string(span) + ") along axis " + o.axes[p].str() +
                            " does not fit the padded input (" + std::to_string(padded) + "): " + s.str());
    dims[axes[p]] = (padded - span) / strides[p] + 1;
    windowCount *= window[p];
  }
  std::vector<Tag> tags;
  for (int64_t i = 0; i < s.rank(); ++i) tags.push_back(s.tag(i));
  const Shape out = Shape(dims, dt).withTags(tags);

  double lowest = 0;
  if (kind == Pool::max) {
    if (isFloat(dt)) lowest = -std::numeric_limits<double>::infinity();
    else if (isSignedInt(dt)) lowest = -std::ldexp(1.0, static_cast<int>(sizeOf(dt) * 8 - 1));
  }
  Pads used = pads;  // as in convolve: one output position reads exactly one window
  for (size_t p = 0; p < np; ++p)
    if (dims[axes[p]] == 1) used[p].second = spread(window[p], dilation[p]) - pads[p].first - s.dim(axes[p]);
  auto loc = c.loc(where, op);
  Shape padded;
  mlir::Value input =
      materialized(c, loc, padAndSpread(c, loc, c.value(x, op), s, axes, used, std::vector<int64_t>(np, 1), lowest, padded));
  const DType acc = kind == Pool::avg ? accumulatorOf(dt) : dt;
  const int64_t rank = s.rank(), loops = rank + static_cast<int64_t>(np);
  auto d = [&](int64_t i) { return mlir::getAffineDimExpr(static_cast<unsigned>(i), &c.mlir()); };
  std::vector<mlir::AffineExpr> inExprs, windowExprs, outExprs;
  for (int64_t i = 0; i < rank; ++i) {
    inExprs.push_back(d(i));
    outExprs.push_back(d(i));
  }
  for (size_t p = 0; p < np; ++p) {
    inExprs[axes[p]] = d(axes[p]) * strides[p] + d(rank + p) * dilation[p];
    windowExprs.push_back(d(rank + p));
  }
  // The window operand only gives the reduction loops their sizes, as linalg's pooling ops do.
  mlir::Value windowShape = emptyLike(c, loc, Shape(window, dt));
  std::vector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  iterators.insert(iterators.end(), np, mlir::utils::IteratorType::reduction);
  mlir::Value init = filled(c, loc, out.withDtype(acc), lowest);
  mlir::Type accType = c.elementType(acc);
  const bool isF = isFloat(dt), isS = isSignedInt(dt);
  auto generic = mlir::linalg::GenericOp::create(
      c.builder(), loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{input, windowShape}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{mapOf(c, loops, inExprs), mapOf(c, loops, windowExprs), mapOf(c, loops, outExprs)},
      iterators, [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        mlir::Value v = args[0], r;
        if (kind == Pool::avg) {
          if (v.getType() != accType) v = mlir::arith::ExtFOp::create(b, l, accType, v);
          r = mlir::arith::AddFOp::create(b, l, args[2], v);
        } else {
          r = isF ? mlir::Value(mlir::arith::MaximumFOp::create(b, l, args[2], v))
              : isS ? mlir::Value(mlir::arith::MaxSIOp::create(b, l, args[2], v))
                    : mlir::Value(mlir::arith::MaxUIOp::create(b, l, args[2], v));
        }
        mlir::linalg::YieldOp::create(b, l, r);
      });
  mlir::Value r = generic.getResult(0);
  if (kind == Pool::avg)
    r = mlir::arith::MulFOp::create(c.builder(), loc, r, splat(c, loc, out.withDtype(acc), 1.0 / windowCount));
  return c.wrap(convertValue(c, loc, r, acc, dt, out.withDtype(acc)), out);
}

Tensor resizeImpl(const Tensor& x, const std::vector<std::pair<Axis, int64_t>>& sizes, Tensor::ResizeMode mode,
                  const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape& s = x.shape();
  const bool linear = mode == Tensor::ResizeMode::linear;
  if (linear && !isFloat(s.dtype())) throw opError(op, "linear resizing needs a float tensor, got " + s.str());
  if (sizes.empty()) throw opError(op, "no axes to resize in " + s.str());
  std::vector<int64_t> dims = s.dims(), axes;
  for (auto [a, n] : sizes) {
    const int64_t i = s.axis(a, op);
    if (std::find(axes.begin(), axes.end(), i) != axes.end())
      throw opError(op, "axis " + a.str() + " is resized twice in " + s.str());
    if (n < 1) throw opError(op, "new size " + std::to_string(n) + " of axis " + a.str() + " is below 1 for " + s.str());
    if (s.dim(i) < 1) throw opError(op, "axis " + a.str() + " of " + s.str() + " is empty: nothing to resize");
    axes.push_back(i);
    dims[i] = n;
  }
  std::vector<Tag> tags;
  for (int64_t i = 0; i < s.rank(); ++i) tags.push_back(s.tag(i));
  const Shape out = Shape(dims, s.dtype()).withTags(tags);
  auto loc = c.loc(where, op);
  mlir::Value input = c.value(x, op);
  const int64_t rank = s.rank();
  std::vector<mlir::AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i) exprs.push_back(mlir::getAffineDimExpr(static_cast<unsigned>(i), &c.mlir()));
  std::vector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  mlir::Value init = emptyLike(c, loc, out);
  mlir::Type elem = c.elementType(s.dtype()), f32 = c.builder().getF32Type();
  auto generic = mlir::linalg::GenericOp::create(
      c.builder(), loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{mapOf(c, rank, exprs)}, iterators,
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) {
        auto index = [&](int64_t n) { return mlir::arith::ConstantIndexOp::create(b, l, n).getResult(); };
        std::vector<mlir::Value> at;
        for (int64_t i = 0; i < rank; ++i) at.push_back(mlir::linalg::IndexOp::create(b, l, static_cast<uint64_t>(i)));
        if (!linear) {
          for (int64_t a : axes) {
            mlir::Value scaled = mlir::arith::MulIOp::create(b, l, at[a], index(s.dim(a)));
            at[a] = mlir::arith::DivUIOp::create(b, l, scaled, index(dims[a]));
          }
          mlir::linalg::YieldOp::create(b, l, mlir::ValueRange{mlir::tensor::ExtractOp::create(b, l, input, at)});
          return;
        }
        // Per resized axis: the two neighbours i0 <= i1 and the weight of i1.
        auto f32Const = [&](double v) { return mlir::arith::ConstantOp::create(b, l, b.getF32FloatAttr(static_cast<float>(v))).getResult(); };
        std::vector<mlir::Value> lower, upper, weight;
        for (int64_t a : axes) {
          mlir::Value j = mlir::arith::IndexCastOp::create(b, l, b.getI64Type(), at[a]);
          mlir::Value jf = mlir::arith::SIToFPOp::create(b, l, f32, j);
          mlir::Value src = mlir::arith::MulFOp::create(b, l, mlir::arith::AddFOp::create(b, l, jf, f32Const(0.5)),
                                                        f32Const(static_cast<double>(s.dim(a)) / static_cast<double>(dims[a])));
          src = mlir::arith::SubFOp::create(b, l, src, f32Const(0.5));
          src = mlir::arith::MaximumFOp::create(b, l, src, f32Const(0));
          mlir::Value i0 = mlir::arith::FPToSIOp::create(b, l, b.getI64Type(), src);  // src >= 0: floor
          mlir::Value last = mlir::arith::ConstantOp::create(b, l, b.getI64IntegerAttr(s.dim(a) - 1));
          i0 = mlir::arith::MinSIOp::create(b, l, i0, last);
          mlir::Value i1 = mlir::arith::MinSIOp::create(
              b, l, mlir::arith::AddIOp::create(b, l, i0, mlir::arith::ConstantOp::create(b, l, b.getI64IntegerAttr(1))), last);
          mlir::Value w1 = mlir::arith::SubFOp::create(b, l, src, mlir::arith::SIToFPOp::create(b, l, f32, i0));
          lower.push_back(mlir::arith::IndexCastOp::create(b, l, b.getIndexType(), i0));
          upper.push_back(mlir::arith::IndexCastOp::create(b, l, b.getIndexType(), i1));
          weight.push_back(w1);
        }
        mlir::Value sum;
        for (uint64_t corner = 0; corner < (uint64_t{1} << axes.size()); ++corner) {
          std::vector<mlir::Value> where = at;
          mlir::Value wgt;
          for (size_t k = 0; k < axes.size(); ++k) {
            const bool up = (corner >> k) & 1;
            where[axes[k]] = up ? upper[k] : lower[k];
            mlir::Value wk = up ? weight[k] : mlir::Value(mlir::arith::SubFOp::create(b, l, f32Const(1), weight[k]));
            wgt = wgt ? mlir::Value(mlir::arith::MulFOp::create(b, l, wgt, wk)) : wk;
          }
          mlir::Value v = mlir::tensor::ExtractOp::create(b, l, input, where);
          if (elem != f32) v = elem.getIntOrFloatBitWidth() < 32 ? mlir::Value(mlir::arith::ExtFOp::create(b, l, f32, v))
                                                                 : mlir::Value(mlir::arith::TruncFOp::create(b, l, f32, v));
          v = mlir::arith::MulFOp::create(b, l, v, wgt);
          sum = sum ? mlir::Value(mlir::arith::AddFOp::create(b, l, sum, v)) : v;
        }
        if (elem != f32)
          sum = elem.getIntOrFloatBitWidth() < 32 ? mlir::Value(mlir::arith::TruncFOp::create(b, l, elem, sum))
                                                  : mlir::Value(mlir::arith::ExtFOp::create(b, l, elem, sum));
        mlir::linalg::YieldOp::create(b, l, sum);
      });
  return c.wrap(generic.getResult(0), out);
}

}  // namespace

Tensor Tensor::convolution(const Tensor& kernel, const ConvOptions& options, Loc l) const {
  return convolve(*this, kernel, options, "convolution", l);
}

Tensor Tensor::conv1d(const Tensor& kernel, const ConvOptions& options, Loc l) const {
  if (rank() != 3 || kernel.rank() != 3)
    throw opError("conv1d", "needs rank-3 input and kernel, got input " + shape_.str() + " and kernel " + kernel.shape_.str());
  return convolve(*this, kernel, options, "conv1d", l);
}

Tensor Tensor::conv2d(const Tensor& kernel, const ConvOptions& options, Loc l) const {
  if (rank() != 4 || kernel.rank() != 4)
    throw opError("conv2d", "needs rank-4 input and kernel, got input " + shape_.str() + " and kernel " + kernel.shape_.str());
  return convolve(*this, kernel, options, "conv2d", l);
}

Tensor Tensor::maxPool(const PoolOptions& options, Loc l) const { return pool(*this, options, Pool::max, "maxPool", l); }
Tensor Tensor::avgPool(const PoolOptions& options, Loc l) const { return pool(*this, options, Pool::avg, "avgPool", l); }

Tensor Tensor::resize(const std::vector<std::pair<Axis, int64_t>>& sizes, ResizeMode mode, Loc l) const {
  return resizeImpl(*this, sizes, mode, "resize", l);
}

Tensor Tensor::upsample(const std::vector<std::pair<Axis, int64_t>>& factors, ResizeMode mode, Loc l) const {
  const char* op = "upsample";
  std::vector<std::pair<Axis, int64_t>> sizes;
  for (auto [a, f] : factors) {
    if (f < 1) throw opError(op, "factor " + std::to_string(f) + " of axis " + a.str() + " is below 1 for " + shape_.str());
    sizes.emplace_back(a, shape_.dim(shape_.axis(a, op)) * f);
  }
  return resizeImpl(*this, sizes, mode, op, l);
}

}  // namespace radix
