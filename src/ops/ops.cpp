// Every Tensor op: check the inputs, compute the result shape, emit upstream MLIR.
// Elementwise ops are arith/math ops on tensors (lowered by convert-elementwise-to-linalg);
// structured ops are linalg named ops or linalg.generic.
#include <algorithm>
#include <limits>
#include <numeric>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "radix/tensor.h"
#include "trace/context.h"

namespace radix {

using detail::TensorAccess;
using detail::TraceContext;

namespace {

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

Error opError(const char* op, const std::string& what) { return Error(std::string("[") + op + "] " + what); }

/// A scalar attribute of the element type of `shape`.
mlir::TypedAttr scalarAttr(TraceContext& c, DType dtype, double v) {
  mlir::Type t = c.elementType(dtype);
  if (isFloat(dtype)) return c.builder().getFloatAttr(t, v);
  if (dtype == DType::bool_) return c.builder().getIntegerAttr(t, v != 0 ? 1 : 0);
  return c.builder().getIntegerAttr(t, static_cast<int64_t>(v));
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

/// Row-major reshape of a value (collapse to 1-D, expand to the target; canonicalize folds).
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

/// Broadcasts `v` of shape `from` into `to`: axis i of `from` goes to axis axes[i] of `to`,
/// where dims are equal or from's dim is 1.
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

/// Strict broadcasting of a binary op's operands: equal dims, a scalar side, or equal rank with
/// equal tags where one side has size 1.
Shape binaryShape(const char* op, const Shape& a, const Shape& b) {
  if (a.dtype() != b.dtype())
    throw opError(op, "dtypes differ: " + a.str() + " and " + b.str() + " (use convert)");
  if (a.rank() == 0) return b;
  if (b.rank() == 0) return a;
  if (a.rank() != b.rank()) throw opError(op, "ranks differ: " + a.str() + " and " + b.str());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < a.rank(); ++i) {
    if (!(a.tag(i) == b.tag(i)))
      throw opError(op, "tags differ at axis " + std::to_string(i) + ": " + a.str() + " and " + b.str());
    if (a.dim(i) != b.dim(i) && a.dim(i) != 1 && b.dim(i) != 1)
      throw opError(op, "dims differ at axis " + std::to_string(i) + ": " + a.str() + " and " + b.str());
    dims.push_back(std::max(a.dim(i), b.dim(i)));
  }
  Shape s(dims, a.dtype());
  for (int64_t i = 0; i < a.rank(); ++i) s = s.withTag(i, a.tag(i));
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

enum class Binary { add, sub, mul, div, max, min };

Tensor binary(const Tensor& a, const Tensor& b, Binary kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape shape = binaryShape(op, a.shape(), b.shape());
  const DType d = shape.dtype();
  if (d == DType::bool_ && kind != Binary::max && kind != Binary::min)
    throw opError(op, "bool tensors have no arithmetic: " + a.shape().str());
  auto loc = c.loc(where, op);
  mlir::Value x = operandAs(c, loc, a, shape, op);
  mlir::Value y = operandAs(c, loc, b, shape, op);
  auto& bd = c.builder();
  mlir::Value r;
  const bool f = isFloat(d), s = isSignedInt(d);
  switch (kind) {
    case Binary::add: r = f ? mlir::Value(mlir::arith::AddFOp::create(bd, loc, x, y)) : mlir::arith::AddIOp::create(bd, loc, x, y); break;
    case Binary::sub: r = f ? mlir::Value(mlir::arith::SubFOp::create(bd, loc, x, y)) : mlir::arith::SubIOp::create(bd, loc, x, y); break;
    case Binary::mul: r = f ? mlir::Value(mlir::arith::MulFOp::create(bd, loc, x, y)) : mlir::arith::MulIOp::create(bd, loc, x, y); break;
    case Binary::div:
      r = f ? mlir::Value(mlir::arith::DivFOp::create(bd, loc, x, y))
            : s ? mlir::Value(mlir::arith::DivSIOp::create(bd, loc, x, y)) : mlir::arith::DivUIOp::create(bd, loc, x, y);
      break;
    case Binary::max:
      r = f ? mlir::Value(mlir::arith::MaximumFOp::create(bd, loc, x, y))
            : s ? mlir::Value(mlir::arith::MaxSIOp::create(bd, loc, x, y)) : mlir::arith::MaxUIOp::create(bd, loc, x, y);
      break;
    case Binary::min:
      r = f ? mlir::Value(mlir::arith::MinimumFOp::create(bd, loc, x, y))
            : s ? mlir::Value(mlir::arith::MinSIOp::create(bd, loc, x, y)) : mlir::arith::MinUIOp::create(bd, loc, x, y);
      break;
  }
  return c.wrap(r, shape);
}

enum class Unary { neg, abs, exp, log, tanh, sqrt, rsqrt, sin, cos };

Tensor unary(const Tensor& a, Unary kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const DType d = a.dtype();
  const bool floatOnly = kind != Unary::neg && kind != Unary::abs;
  if (floatOnly && !isFloat(d)) throw opError(op, "needs a float tensor, got " + a.shape().str());
  if (d == DType::bool_) throw opError(op, "bool tensors have no arithmetic: " + a.shape().str());
  auto loc = c.loc(where, op);
  mlir::Value x = c.value(a, op);
  auto& b = c.builder();
  mlir::Value r;
  switch (kind) {
    case Unary::neg:
      r = isFloat(d) ? mlir::Value(mlir::arith::NegFOp::create(b, loc, x))
                     : mlir::arith::SubIOp::create(b, loc, splat(c, loc, a.shape(), 0), x);
      break;
    case Unary::abs:
      if (isFloat(d)) r = mlir::math::AbsFOp::create(b, loc, x);
      else if (isSignedInt(d)) r = mlir::math::AbsIOp::create(b, loc, x);
      else r = x;
      break;
    case Unary::exp: r = mlir::math::ExpOp::create(b, loc, x); break;
    case Unary::log: r = mlir::math::LogOp::create(b, loc, x); break;
    case Unary::tanh: r = mlir::math::TanhOp::create(b, loc, x); break;
    case Unary::sqrt: r = mlir::math::SqrtOp::create(b, loc, x); break;
    case Unary::rsqrt: r = mlir::math::RsqrtOp::create(b, loc, x); break;
    case Unary::sin: r = mlir::math::SinOp::create(b, loc, x); break;
    case Unary::cos: r = mlir::math::CosOp::create(b, loc, x); break;
  }
  Tensor out = c.wrap(r, a.shape());
  return out;
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
    if ((from == DType::f16 && to == DType::bf16) || (from == DType::bf16 && to == DType::f16)) {
      mlir::Value wide = mlir::arith::ExtFOp::create(b, loc, c.tensorType(shape.withDtype(DType::f32)), x);
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
    if (isSignedInt(to)) return mlir::arith::FPToSIOp::create(b, loc, type, x);
    return mlir::arith::FPToUIOp::create(b, loc, type, x);
  }
  const unsigned fromWidth = from == DType::bool_ ? 1 : fromBits;
  if (toBits == fromWidth) return mlir::arith::BitcastOp::create(b, loc, type, x);
  if (toBits < fromWidth) return mlir::arith::TruncIOp::create(b, loc, type, x);
  if (isSignedInt(from)) return mlir::arith::ExtSIOp::create(b, loc, type, x);
  return mlir::arith::ExtUIOp::create(b, loc, type, x);
}

enum class Reduce { sum, max };

Tensor reduce(const Tensor& a, Axis axis, Reduce kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const int64_t ax = a.shape().axis(axis, op);
  auto loc = c.loc(where, op);
  const DType d = a.dtype();
  if (d == DType::bool_) throw opError(op, "bool tensors have no arithmetic: " + a.shape().str());
  const DType acc = (kind == Reduce::sum && (d == DType::f16 || d == DType::bf16)) ? DType::f32 : d;
  mlir::Value x = convertValue(c, loc, c.value(a, op), d, acc, a.shape());
  std::vector<int64_t> dims = a.shape().dims();
  dims.erase(dims.begin() + ax);
  Shape reduced(dims, acc);
  double init = 0;
  if (kind == Reduce::max) {
    if (isFloat(d)) init = -std::numeric_limits<double>::infinity();
    else if (isSignedInt(d)) init = -std::ldexp(1.0, static_cast<int>(sizeOf(d) * 8 - 1));
  }
  mlir::Value initValue = filled(c, loc, reduced, init);
  const bool f = isFloat(acc), s = isSignedInt(acc);
  auto reduceOp = mlir::linalg::ReduceOp::create(
      c.builder(), loc, mlir::ValueRange{x}, mlir::ValueRange{initValue}, llvm::ArrayRef<int64_t>{ax},
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        mlir::Value r;
        if (kind == Reduce::sum)
          r = f ? mlir::Value(mlir::arith::AddFOp::create(b, l, args[0], args[1])) : mlir::arith::AddIOp::create(b, l, args[0], args[1]);
        else
          r = f ? mlir::Value(mlir::arith::MaximumFOp::create(b, l, args[0], args[1]))
                : s ? mlir::Value(mlir::arith::MaxSIOp::create(b, l, args[0], args[1])) : mlir::arith::MaxUIOp::create(b, l, args[0], args[1]);
        mlir::linalg::YieldOp::create(b, l, r);
      });
  std::vector<int64_t> keptDims = a.shape().dims();
  keptDims[ax] = 1;
  Shape out(keptDims, d);
  for (int64_t i = 0; i < a.rank(); ++i) out = out.withTag(i, a.shape().tag(i));
  mlir::Value r = reshapeValue(c, loc, reduceOp.getResult(0), reduced, out.withDtype(acc));
  r = convertValue(c, loc, r, acc, d, out.withDtype(acc));
  return c.wrap(r, out);
}

/// Runs the ops a composite op is built from, renaming their errors after the op the user called:
/// "[maximum] ..." from relu becomes "[relu] ...".
template <class F>
Tensor renamingErrors(const char* op, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    const std::string what = e.what();
    const size_t end = what.find("] ");
    throw opError(op, end == std::string::npos ? what : what.substr(end + 2));
  }
}

}  // namespace

Tensor Tensor::add(const Tensor& o, Loc l) const { return binary(*this, o, Binary::add, "add", l); }
Tensor Tensor::sub(const Tensor& o, Loc l) const { return binary(*this, o, Binary::sub, "sub", l); }
Tensor Tensor::mul(const Tensor& o, Loc l) const { return binary(*this, o, Binary::mul, "mul", l); }
Tensor Tensor::div(const Tensor& o, Loc l) const { return binary(*this, o, Binary::div, "div", l); }
Tensor Tensor::maximum(const Tensor& o, Loc l) const { return binary(*this, o, Binary::max, "maximum", l); }
Tensor Tensor::minimum(const Tensor& o, Loc l) const { return binary(*this, o, Binary::min, "minimum", l); }

Tensor Tensor::neg(Loc l) const { return unary(*this, Unary::neg, "neg", l); }
Tensor Tensor::abs(Loc l) const { return unary(*this, Unary::abs, "abs", l); }
Tensor Tensor::exp(Loc l) const { return unary(*this, Unary::exp, "exp", l); }
Tensor Tensor::log(Loc l) const { return unary(*this, Unary::log, "log", l); }
Tensor Tensor::tanh(Loc l) const { return unary(*this, Unary::tanh, "tanh", l); }
Tensor Tensor::sqrt(Loc l) const { return unary(*this, Unary::sqrt, "sqrt", l); }
Tensor Tensor::rsqrt(Loc l) const { return unary(*this, Unary::rsqrt, "rsqrt", l); }
Tensor Tensor::sin(Loc l) const { return unary(*this, Unary::sin, "sin", l); }
Tensor Tensor::cos(Loc l) const { return unary(*this, Unary::cos, "cos", l); }

Tensor Tensor::relu(Loc l) const {
  if (dtype() == DType::bool_) throw opError("relu", "bool tensors have no arithmetic: " + shape_.str());
  return renamingErrors("relu", [&] { return maximum(scalar(0, dtype(), l), l); });
}

Tensor Tensor::sigmoid(Loc l) const {
  if (!isFloat(dtype())) throw opError("sigmoid", "needs a float tensor, got " + shape_.str());
  return renamingErrors("sigmoid", [&] {
    Tensor one = scalar(1, dtype(), l);
    return one.div(one.add(neg(l).exp(l), l), l);
  });
}

Tensor Tensor::convert(DType to, Loc l) const {
  TraceContext& c = detail::currentTrace("convert");
  auto loc = c.loc(l, "convert");
  mlir::Value r = convertValue(c, loc, c.value(*this, "convert"), dtype(), to, shape_);
  return c.wrap(r, shape_.withDtype(to));
}

Tensor Tensor::scalar(double value, DType dtype, Loc l) {
  TraceContext& c = detail::currentTrace("scalar");
  Shape s({}, dtype);
  return c.wrap(splat(c, c.loc(l, "scalar"), s, value), s);
}

Tensor Tensor::constant(const Shape& shape, double value, Loc l) {
  TraceContext& c = detail::currentTrace("constant");
  return c.wrap(splat(c, c.loc(l, "constant"), shape, value), shape);
}

Tensor Tensor::addConstant(double v, Loc l) const {
  return renamingErrors("addConstant", [&] { return add(scalar(v, dtype(), l), l); });
}
Tensor Tensor::mulConstant(double v, Loc l) const {
  return renamingErrors("mulConstant", [&] { return mul(scalar(v, dtype(), l), l); });
}

Tensor Tensor::dotGeneral(const Tensor& rhs, const std::vector<AxisPair>& contracting,
                          const std::vector<AxisPair>& batching, Loc l) const {
  const char* op = "dotGeneral";
  TraceContext& c = detail::currentTrace(op);
  const Shape& a = shape_;
  const Shape& b = rhs.shape_;
  if (a.dtype() != b.dtype()) throw opError(op, "dtypes differ: " + a.str() + " and " + b.str());
  if (a.dtype() == DType::bool_) throw opError(op, "bool tensors have no arithmetic: " + a.str());
  enum Role { free, batch, contract };
  std::vector<Role> roleA(a.rank(), free), roleB(b.rank(), free);
  std::vector<int64_t> slotA(a.rank(), -1), slotB(b.rank(), -1);
  auto mark = [&](const std::vector<AxisPair>& pairs, Role role, const char* what) {
    for (size_t k = 0; k < pairs.size(); ++k) {
      int64_t i = a.axis(pairs[k].first, op), j = b.axis(pairs[k].second, op);
      if (roleA[i] != free || roleB[j] != free)
        throw opError(op, std::string(what) + " axis pair (" + pairs[k].first.str() + ", " + pairs[k].second.str() +
                              ") reuses an axis: " + a.str() + " and " + b.str());
      if (a.dim(i) != b.dim(j))
        throw opError(op, std::string(what) + " axes (" + pairs[k].first.str() + ", " + pairs[k].second.str() +
                              ") differ in size: " + a.str() + " and " + b.str());
      roleA[i] = role;
      roleB[j] = role;
      slotA[i] = slotB[j] = static_cast<int64_t>(k);
    }
  };
  mark(batching, batch, "batching");
  mark(contracting, contract, "contracting");
  const int64_t nb = static_cast<int64_t>(batching.size()), nc = static_cast<int64_t>(contracting.size());
  std::vector<int64_t> outDims;
  std::vector<Tag> outTags;
  for (const AxisPair& p : batching) {
    int64_t i = a.axis(p.first, op);
    outDims.push_back(a.dim(i));
    outTags.push_back(a.tag(i));
  }
  int64_t nl = 0, nr = 0;
  for (int64_t i = 0; i < a.rank(); ++i)
    if (roleA[i] == free) {
      slotA[i] = nb + nl++;
      outDims.push_back(a.dim(i));
      outTags.push_back(a.tag(i));
    }
  for (int64_t j = 0; j < b.rank(); ++j)
    if (roleB[j] == free) {
      slotB[j] = nb + nl + nr++;
      outDims.push_back(b.dim(j));
      outTags.push_back(b.tag(j));
    }
  if (outDims.size() > Shape::kMaxRank) throw opError(op, "result rank exceeds 8: " + a.str() + " and " + b.str());
  for (size_t i = 0; i < outTags.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (!outTags[i].empty() && outTags[i] == outTags[j]) outTags[i] = Tag();
  Shape out = Shape(outDims, a.dtype()).withTags(outTags);

  auto loc = c.loc(l, op);
  const DType acc = isFloat(a.dtype()) && a.dtype() != DType::f64 ? DType::f32 : a.dtype();
  const int64_t loops = nb + nl + nr + nc;
  auto dimExpr = [&](int64_t d) { return mlir::getAffineDimExpr(static_cast<unsigned>(d), &c.mlir()); };
  auto mapFor = [&](const std::vector<Role>& roles, const std::vector<int64_t>& slots) {
    std::vector<mlir::AffineExpr> exprs;
    for (size_t i = 0; i < roles.size(); ++i)
      exprs.push_back(dimExpr(roles[i] == contract ? nb + nl + nr + slots[i] : slots[i]));
    return mlir::AffineMap::get(static_cast<unsigned>(loops), 0, exprs, &c.mlir());
  };
  std::vector<mlir::AffineExpr> outExprs;
  for (int64_t i = 0; i < nb + nl + nr; ++i) outExprs.push_back(dimExpr(i));
  auto outMap = mlir::AffineMap::get(static_cast<unsigned>(loops), 0, outExprs, &c.mlir());
  std::vector<mlir::utils::IteratorType> iterators(nb + nl + nr, mlir::utils::IteratorType::parallel);
  iterators.insert(iterators.end(), nc, mlir::utils::IteratorType::reduction);
  mlir::Value init = filled(c, loc, out.withDtype(acc), 0);
  const bool isF = isFloat(acc);
  mlir::Type accType = c.elementType(acc);
  auto generic = mlir::linalg::GenericOp::create(
      c.builder(), loc, mlir::TypeRange{init.getType()},
      mlir::ValueRange{c.value(*this, op), c.value(rhs, op)}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{mapFor(roleA, slotA), mapFor(roleB, slotB), outMap}, iterators,
      [&](mlir::OpBuilder& bb, mlir::Location ll, mlir::ValueRange args) {
        mlir::Value x = args[0], y = args[1];
        if (x.getType() != accType) {
          x = mlir::arith::ExtFOp::create(bb, ll, accType, x);
          y = mlir::arith::ExtFOp::create(bb, ll, accType, y);
        }
        mlir::Value r = isF ? mlir::Value(mlir::arith::AddFOp::create(bb, ll, args[2], mlir::arith::MulFOp::create(bb, ll, x, y)))
                            : mlir::arith::AddIOp::create(bb, ll, args[2], mlir::arith::MulIOp::create(bb, ll, x, y));
        mlir::linalg::YieldOp::create(bb, ll, r);
      });
  mlir::Value r = convertValue(c, loc, generic.getResult(0), acc, a.dtype(), out.withDtype(acc));
  return c.wrap(r, out);
}

Tensor Tensor::dot(const Tensor& rhs, const std::vector<Tag>& contracting, Loc l) const {
  std::vector<AxisPair> contract, batch;
  for (Tag t : contracting) {
    if (shape_.hasTag(t) < 0) throw opError("dot", "no axis tagged " + quote(t.name()) + " in lhs " + shape_.str());
    if (rhs.shape_.hasTag(t) < 0) throw opError("dot", "no axis tagged " + quote(t.name()) + " in rhs " + rhs.shape_.str());
    contract.emplace_back(t, t);
  }
  for (int64_t i = 0; i < rank(); ++i) {
    Tag t = shape_.tag(i);
    if (t.empty() || rhs.shape_.hasTag(t) < 0) continue;
    if (std::find(contracting.begin(), contracting.end(), t) != contracting.end()) continue;
    batch.emplace_back(t, t);
  }
  return renamingErrors("dot", [&] { return dotGeneral(rhs, contract, batch, l); });
}

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
  Shape out(dims, dtype());
  if (out.count() != shape_.count())
    throw opError(op, "can't reshape " + shape_.str() + " (" + std::to_string(shape_.count()) + " elements) to " + out.str());
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

Tensor Tensor::sum(Axis axis, Loc l) const { return reduce(*this, axis, Reduce::sum, "sum", l); }
Tensor Tensor::max(Axis axis, Loc l) const { return reduce(*this, axis, Reduce::max, "max", l); }

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
