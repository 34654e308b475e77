// Elementwise ops: arith/math ops on tensors (lowered by convert-elementwise-to-linalg), constants,
// comparisons, logic, selection and dtype conversion. Composite activations at the end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

using mlir::Value;
namespace arith = mlir::arith;
namespace math = mlir::math;

const std::string kBoolArithmetic = "bool tensors have no arithmetic: ";

/// A splat of `shape` holding `bits` (integers: all-ones, INT_MIN, ... that a double cannot hold).
Value intSplat(TraceContext& c, mlir::Location loc, const Shape& shape, const llvm::APInt& bits) {
  auto type = c.tensorType(shape);
  return arith::ConstantOp::create(c.builder(), loc, type, mlir::DenseElementsAttr::get(type, bits));
}

unsigned bitsOf(DType d) { return d == DType::bool_ ? 1 : static_cast<unsigned>(sizeOf(d) * 8); }

enum class Binary { add, sub, mul, div, rem, max, min, pow, and_, or_, xor_, shl, shrl, shra };

/// Integer division and remainder as XLA defines them, without ever trapping: x / 0 = -1 (all
/// bits set), x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0. The divisor is replaced by 1
/// where it is 0, or -1 with x = INT_MIN (x / 1 = x and x % 1 = 0 are then the answers).
Value integerDivision(TraceContext& c, mlir::Location loc, Value x, Value y, const Shape& shape, bool remainder) {
  auto& b = c.builder();
  const unsigned n = bitsOf(shape.dtype());
  const bool s = isSignedInt(shape.dtype());
  Value zero = splat(c, loc, shape, 0), one = splat(c, loc, shape, 1);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
  Value bad = isZero;
  if (s) {
    Value minusOne = intSplat(c, loc, shape, llvm::APInt::getAllOnes(n));
    Value isMin = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, intSplat(c, loc, shape, llvm::APInt::getSignedMinValue(n)));
    Value isMinusOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, minusOne);
    bad = arith::OrIOp::create(b, loc, isZero, arith::AndIOp::create(b, loc, isMin, isMinusOne));
  }
  Value safe = arith::SelectOp::create(b, loc, bad, one, y);
  if (remainder) {
    Value r = s ? Value(arith::RemSIOp::create(b, loc, x, safe)) : arith::RemUIOp::create(b, loc, x, safe);
    return arith::SelectOp::create(b, loc, isZero, x, r);
  }
  Value q = s ? Value(arith::DivSIOp::create(b, loc, x, safe)) : arith::DivUIOp::create(b, loc, x, safe);
  return arith::SelectOp::create(b, loc, isZero, intSplat(c, loc, shape, llvm::APInt::getAllOnes(n)), q);
}

/// Shifts as StableHLO defines them: counts >= the bit width (or negative) give 0, or the sign
/// fill for arithmetic right shifts. Counts are clamped first: arith shifts by >= width are poison.
Value shift(TraceContext& c, mlir::Location loc, Value x, Value y, const Shape& shape, Binary kind) {
  auto& b = c.builder();
  const unsigned n = bitsOf(shape.dtype());
  Value width = splat(c, loc, shape, n);
  if (kind == Binary::shra) {
    Value count = arith::MinUIOp::create(b, loc, y, splat(c, loc, shape, n - 1));
    return arith::ShRSIOp::create(b, loc, x, count);
  }
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, y, width);
  Value zero = splat(c, loc, shape, 0);
  Value count = arith::SelectOp::create(b, loc, inRange, y, zero);
  Value r = kind == Binary::shl ? Value(arith::ShLIOp::create(b, loc, x, count)) : arith::ShRUIOp::create(b, loc, x, count);
  return arith::SelectOp::create(b, loc, inRange, r, zero);
}

Tensor binary(const Tensor& a, const Tensor& b, Binary kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape shape = binaryShape(op, a.shape(), b.shape());
  const DType d = shape.dtype();
  const bool f = isFloat(d), s = isSignedInt(d);
  switch (kind) {
    case Binary::max:
    case Binary::min: break;
    case Binary::pow:
      if (!f) throw opError(op, "needs float tensors, got " + a.shape().str() + " and " + b.shape().str());
      break;
    case Binary::and_:
    case Binary::or_:
    case Binary::xor_:
      if (f) throw opError(op, "needs bool or integer tensors, got " + a.shape().str() + " and " + b.shape().str());
      break;
    case Binary::shl:
    case Binary::shrl:
    case Binary::shra:
      if (f || d == DType::bool_)
        throw opError(op, "needs integer tensors, got " + a.shape().str() + " and " + b.shape().str());
      break;
    default:
      if (d == DType::bool_) throw opError(op, kBoolArithmetic + a.shape().str());
  }
  auto loc = c.loc(where, op);
  Value x = operandAs(c, loc, a, shape, op);
  Value y = operandAs(c, loc, b, shape, op);
  auto& bd = c.builder();
  Value r;
  switch (kind) {
    case Binary::add: r = f ? Value(arith::AddFOp::create(bd, loc, x, y)) : arith::AddIOp::create(bd, loc, x, y); break;
    case Binary::sub: r = f ? Value(arith::SubFOp::create(bd, loc, x, y)) : arith::SubIOp::create(bd, loc, x, y); break;
    case Binary::mul: r = f ? Value(arith::MulFOp::create(bd, loc, x, y)) : arith::MulIOp::create(bd, loc, x, y); break;
    case Binary::div:
      r = f ? Value(arith::DivFOp::create(bd, loc, x, y)) : integerDivision(c, loc, x, y, shape, false);
      break;
    case Binary::rem:
      r = f ? Value(arith::RemFOp::create(bd, loc, x, y)) : integerDivision(c, loc, x, y, shape, true);
      break;
    case Binary::max:
      r = f ? Value(arith::MaximumFOp::create(bd, loc, x, y))
            : s ? Value(arith::MaxSIOp::create(bd, loc, x, y)) : arith::MaxUIOp::create(bd, loc, x, y);
      break;
    case Binary::min:
      r = f ? Value(arith::MinimumFOp::create(bd, loc, x, y))
            : s ? Value(arith::MinSIOp::create(bd, loc, x, y)) : arith::MinUIOp::create(bd, loc, x, y);
      break;
    case Binary::pow: r = math::PowFOp::create(bd, loc, x, y); break;
    case Binary::and_: r = arith::AndIOp::create(bd, loc, x, y); break;
    case Binary::or_: r = arith::OrIOp::create(bd, loc, x, y); break;
    case Binary::xor_: r = arith::XOrIOp::create(bd, loc, x, y); break;
    case Binary::shl:
    case Binary::shrl:
    case Binary::shra: r = shift(c, loc, x, y, shape, kind); break;
  }
  return c.wrap(r, shape);
}

enum class Compare { eq, ne, lt, le, gt, ge };

/// Floats compare ordered (false with a NaN), except ne (true with a NaN), as IEEE and XLA do.
Tensor compare(const Tensor& a, const Tensor& b, Compare kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const Shape shape = binaryShape(op, a.shape(), b.shape());
  const DType d = shape.dtype();
  auto loc = c.loc(where, op);
  Value x = operandAs(c, loc, a, shape, op);
  Value y = operandAs(c, loc, b, shape, op);
  Value r;
  if (isFloat(d)) {
    using P = arith::CmpFPredicate;
    const P p[] = {P::OEQ, P::UNE, P::OLT, P::OLE, P::OGT, P::OGE};
    r = arith::CmpFOp::create(c.builder(), loc, p[static_cast<int>(kind)], x, y);
  } else {
    using P = arith::CmpIPredicate;
    const bool s = isSignedInt(d);
    const P p[] = {P::eq, P::ne, s ? P::slt : P::ult, s ? P::sle : P::ule, s ? P::sgt : P::ugt, s ? P::sge : P::uge};
    r = arith::CmpIOp::create(c.builder(), loc, p[static_cast<int>(kind)], x, y);
  }
  return c.wrap(r, shape.withDtype(DType::bool_));
}

enum class Unary { neg, abs, exp, log, tanh, sqrt, rsqrt, sin, cos, floor, ceil, round, roundEven, erf, sign, not_, popcnt, clz, isFinite };

enum class Domain { numbers, floats, integers, bitwise };  // bitwise: integers and bool

Domain domainOf(Unary kind) {
  switch (kind) {
    case Unary::neg:
    case Unary::abs:
    case Unary::sign: return Domain::numbers;
    case Unary::popcnt:
    case Unary::clz: return Domain::integers;
    case Unary::not_: return Domain::bitwise;
    default: return Domain::floats;
  }
}

Tensor unary(const Tensor& a, Unary kind, const char* op, const std::source_location& where) {
  TraceContext& c = detail::currentTrace(op);
  const DType d = a.dtype();
  const bool isInt = !isFloat(d) && d != DType::bool_;
  switch (domainOf(kind)) {
    case Domain::numbers:
      if (d == DType::bool_) throw opError(op, kBoolArithmetic + a.shape().str());
      break;
    case Domain::floats:
      if (!isFloat(d)) throw opError(op, "needs a float tensor, got " + a.shape().str());
      break;
    case Domain::integers:
      if (!isInt) throw opError(op, "needs an integer tensor, got " + a.shape().str());
      break;
    case Domain::bitwise:
      if (isFloat(d)) throw opError(op, "needs a bool or integer tensor, got " + a.shape().str());
      break;
  }
  auto loc = c.loc(where, op);
  Value x = c.value(a, op);
  auto& b = c.builder();
  Shape out = a.shape();
  Value r;
  switch (kind) {
    case Unary::neg:
      r = isFloat(d) ? Value(arith::NegFOp::create(b, loc, x)) : arith::SubIOp::create(b, loc, splat(c, loc, a.shape(), 0), x);
      break;
    case Unary::abs:
      if (isFloat(d)) r = math::AbsFOp::create(b, loc, x);
      else if (isSignedInt(d)) r = math::AbsIOp::create(b, loc, x);
      else r = x;
      break;
    case Unary::exp: r = math::ExpOp::create(b, loc, x); break;
    case Unary::log: r = math::LogOp::create(b, loc, x); break;
    case Unary::tanh: r = math::TanhOp::create(b, loc, x); break;
    case Unary::sqrt: r = math::SqrtOp::create(b, loc, x); break;
    case Unary::rsqrt: r = math::RsqrtOp::create(b, loc, x); break;
    case Unary::sin: r = math::SinOp::create(b, loc, x); break;
    case Unary::cos: r = math::CosOp::create(b, loc, x); break;
    case Unary::floor: r = math::FloorOp::create(b, loc, x); break;
    case Unary::ceil: r = math::CeilOp::create(b, loc, x); break;
    case Unary::round: r = math::RoundOp::create(b, loc, x); break;
    case Unary::roundEven: r = math::RoundEvenOp::create(b, loc, x); break;
    case Unary::erf: r = math::ErfOp::create(b, loc, x); break;
    case Unary::popcnt: r = math::CtPopOp::create(b, loc, x); break;
    case Unary::clz: r = math::CountLeadingZerosOp::create(b, loc, x); break;
    case Unary::not_: r = arith::XOrIOp::create(b, loc, x, intSplat(c, loc, a.shape(), llvm::APInt::getAllOnes(bitsOf(d)))); break;
    case Unary::sign: {
      // -1, 0 or 1; floats keep -0, +0 and NaN (neither comparison holds for them).
      Value zero = splat(c, loc, a.shape(), 0);
      Value pos, neg;
      if (isFloat(d)) {
        pos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
        neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
      } else {
        pos = arith::CmpIOp::create(b, loc, isSignedInt(d) ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::ugt, x, zero);
        neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
      }
      r = arith::SelectOp::create(b, loc, pos, splat(c, loc, a.shape(), 1), x);
      if (!isUnsignedInt(d)) r = arith::SelectOp::create(b, loc, neg, splat(c, loc, a.shape(), -1), r);
      break;
    }
    case Unary::isFinite: {
      // |x| < inf is false for inf and NaN.
      Value inf = splat(c, loc, a.shape(), std::numeric_limits<double>::infinity());
      r = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, math::AbsFOp::create(b, loc, x), inf);
      out = out.withDtype(DType::bool_);
      break;
    }
  }
  return c.wrap(r, out);
}

/// f16/bf16 go through f32 for composites whose rounding matters (expm1, log1p).
template <class F>
Tensor inF32(const Tensor& x, F&& f, const std::source_location& l) {
  if (x.dtype() != DType::f16 && x.dtype() != DType::bf16) return f(x);
  return f(x.convert(DType::f32, l)).convert(x.dtype(), l);
}

void requireFloat(const Tensor& x, const char* op) {
  if (!isFloat(x.dtype())) throw opError(op, "needs a float tensor, got " + x.shape().str());
}

}  // namespace

// ---- elementwise, binary ----
Tensor Tensor::add(const Tensor& o, Loc l) const { return binary(*this, o, Binary::add, "add", l); }
Tensor Tensor::sub(const Tensor& o, Loc l) const { return binary(*this, o, Binary::sub, "sub", l); }
Tensor Tensor::mul(const Tensor& o, Loc l) const { return binary(*this, o, Binary::mul, "mul", l); }
Tensor Tensor::div(const Tensor& o, Loc l) const { return binary(*this, o, Binary::div, "div", l); }
Tensor Tensor::remainder(const Tensor& o, Loc l) const { return binary(*this, o, Binary::rem, "remainder", l); }
Tensor Tensor::maximum(const Tensor& o, Loc l) const { return binary(*this, o, Binary::max, "maximum", l); }
Tensor Tensor::minimum(const Tensor& o, Loc l) const { return binary(*this, o, Binary::min, "minimum", l); }
Tensor Tensor::pow(const Tensor& o, Loc l) const { return binary(*this, o, Binary::pow, "pow", l); }
Tensor Tensor::logicalAnd(const Tensor& o, Loc l) const { return binary(*this, o, Binary::and_, "logicalAnd", l); }
Tensor Tensor::logicalOr(const Tensor& o, Loc l) const { return binary(*this, o, Binary::or_, "logicalOr", l); }
Tensor Tensor::logicalXor(const Tensor& o, Loc l) const { return binary(*this, o, Binary::xor_, "logicalXor", l); }
Tensor Tensor::shiftLeft(const Tensor& o, Loc l) const { return binary(*this, o, Binary::shl, "shiftLeft", l); }
Tensor Tensor::shiftRightLogical(const Tensor& o, Loc l) const { return binary(*this, o, Binary::shrl, "shiftRightLogical", l); }
Tensor Tensor::shiftRightArithmetic(const Tensor& o, Loc l) const {
  return binary(*this, o, Binary::shra, "shiftRightArithmetic", l);
}

Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi, Loc l) const {
  if (dtype() == DType::bool_) throw opError("clamp", kBoolArithmetic + shape_.str());
  return renamingErrors("clamp", [&] { return maximum(lo, l).minimum(hi, l); });
}
Tensor Tensor::clamp(double lo, double hi, Loc l) const {
  if (dtype() == DType::bool_) throw opError("clamp", kBoolArithmetic + shape_.str());
  return renamingErrors("clamp", [&] { return maximum(scalar(lo, dtype(), l), l).minimum(scalar(hi, dtype(), l), l); });
}

// ---- elementwise, unary ----
Tensor Tensor::neg(Loc l) const { return unary(*this, Unary::neg, "neg", l); }
Tensor Tensor::abs(Loc l) const { return unary(*this, Unary::abs, "abs", l); }
Tensor Tensor::sign(Loc l) const { return unary(*this, Unary::sign, "sign", l); }
Tensor Tensor::exp(Loc l) const { return unary(*this, Unary::exp, "exp", l); }
Tensor Tensor::log(Loc l) const { return unary(*this, Unary::log, "log", l); }
Tensor Tensor::tanh(Loc l) const { return unary(*this, Unary::tanh, "tanh", l); }
Tensor Tensor::sqrt(Loc l) const { return unary(*this, Unary::sqrt, "sqrt", l); }
Tensor Tensor::rsqrt(Loc l) const { return unary(*this, Unary::rsqrt, "rsqrt", l); }
Tensor Tensor::sin(Loc l) const { return unary(*this, Unary::sin, "sin", l); }
Tensor Tensor::cos(Loc l) const { return unary(*this, Unary::cos, "cos", l); }
Tensor Tensor::floor(Loc l) const { return unary(*this, Unary::floor, "floor", l); }
Tensor Tensor::ceil(Loc l) const { return unary(*this, Unary::ceil, "ceil", l); }
Tensor Tensor::round(Loc l) const { return unary(*this, Unary::round, "round", l); }
Tensor Tensor::roundNearestEven(Loc l) const { return unary(*this, Unary::roundEven, "roundNearestEven", l); }
Tensor Tensor::erf(Loc l) const { return unary(*this, Unary::erf, "erf", l); }
Tensor Tensor::isFinite(Loc l) const { return unary(*this, Unary::isFinite, "isFinite", l); }
Tensor Tensor::logicalNot(Loc l) const { return unary(*this, Unary::not_, "logicalNot", l); }
Tensor Tensor::popcnt(Loc l) const { return unary(*this, Unary::popcnt, "popcnt", l); }
Tensor Tensor::countLeadingZeros(Loc l) const { return unary(*this, Unary::clz, "countLeadingZeros", l); }

// Kahan's trick: with u = e^x rounded, (u - 1) * x / log(u) cancels the rounding error of u, where
// exp(x) - 1 loses all digits for small x. u = 1, u = 0 and u = inf are the answers' own cases.
Tensor Tensor::expm1(Loc l) const {
  requireFloat(*this, "expm1");
  return renamingErrors("expm1", [&] {
    return inF32(*this, [&](const Tensor& x) {
      Tensor u = x.exp(l), um1 = u.subConstant(1, l);
      Tensor r = um1.mul(x.div(u.log(l), l), l);  // x / log(u) ~ 1: no overflow near x = 88
      r = u.eq(1.0, l).select(x, r, l);
      r = um1.eq(-1.0, l).select(scalar(-1, x.dtype(), l), r, l);
      return u.isFinite(l).select(r, u, l);
    }, l);
  });
}

// Same trick: with u = 1 + x rounded, log(u) * x / (u - 1).
Tensor Tensor::log1p(Loc l) const {
  requireFloat(*this, "log1p");
  return renamingErrors("log1p", [&] {
    return inF32(*this, [&](const Tensor& x) {
      Tensor u = x.addConstant(1, l), lu = u.log(l);
      Tensor r = lu.mul(x.div(u.subConstant(1, l), l), l);  // x / (u - 1) ~ 1: no overflow for large x
      r = u.eq(1.0, l).select(x, r, l);
      return u.isFinite(l).logicalAnd(u.gt(0.0, l), l).select(r, lu, l);
    }, l);
  });
}

Tensor Tensor::relu(Loc l) const {
  if (dtype() == DType::bool_) throw opError("relu", kBoolArithmetic + shape_.str());
  return renamingErrors("relu", [&] { return maximum(scalar(0, dtype(), l), l); });
}

Tensor Tensor::leakyRelu(double alpha, Loc l) const {
  requireFloat(*this, "leakyRelu");
  return renamingErrors("leakyRelu", [&] { return gt(0.0, l).select(*this, mulConstant(alpha, l), l); });
}

Tensor Tensor::elu(double alpha, Loc l) const {
  requireFloat(*this, "elu");
  return renamingErrors("elu", [&] { return gt(0.0, l).select(*this, expm1(l).mulConstant(alpha, l), l); });
}

Tensor Tensor::sigmoid(Loc l) const {
  requireFloat(*this, "sigmoid");
  return renamingErrors("sigmoid", [&] {
    Tensor one = scalar(1, dtype(), l);
    return one.div(one.add(neg(l).exp(l), l), l);
  });
}

Tensor Tensor::silu(Loc l) const {
  requireFloat(*this, "silu");
  return renamingErrors("silu", [&] { return mul(sigmoid(l), l); });
}

Tensor Tensor::gelu(Loc l) const {
  requireFloat(*this, "gelu");
  return renamingErrors("gelu", [&] {
    const double k = std::sqrt(2 / std::numbers::pi);
    Tensor inner = add(mul(*this, l).mul(*this, l).mulConstant(0.044715, l), l).mulConstant(k, l);
    return mulConstant(0.5, l).mul(inner.tanh(l).addConstant(1, l), l);
  });
}

Tensor Tensor::geluErf(Loc l) const {
  requireFloat(*this, "geluErf");
  return renamingErrors("geluErf", [&] {
    return mulConstant(0.5, l).mul(mulConstant(1 / std::numbers::sqrt2, l).erf(l).addConstant(1, l), l);
  });
}

Tensor Tensor::quickGelu(Loc l) const {
  requireFloat(*this, "quickGelu");
  return renamingErrors("quickGelu", [&] { return mul(mulConstant(1.702, l).sigmoid(l), l); });
}

Tensor Tensor::convert(DType to, Loc l) const {
  checkDType(to, "convert");
  TraceContext& c = detail::currentTrace("convert");
  const Shape out = renamingErrors("convert", [&] { return shape_.withDtype(to); });  // checks `to`
  auto loc = c.loc(l, "convert");
  Value r = convertValue(c, loc, c.value(*this, "convert"), dtype(), to, shape_);
  return c.wrap(r, out);
}

Tensor Tensor::bitCast(DType to, Loc l) const {
  TraceContext& c = detail::currentTrace("bitCast");
  const Shape out = renamingErrors("bitCast", [&] { return shape_.withDtype(to); });  // checks `to`
  if (dtype() == DType::bool_ || to == DType::bool_ || sizeOf(dtype()) != sizeOf(to))
    throw opError("bitCast", "needs dtypes of one width (bool excluded), got " + shape_.str() + " to " +
                                 std::string(name(to)));
  auto loc = c.loc(l, "bitCast");
  Value x = c.value(*this, "bitCast");
  if (to == dtype()) return c.wrap(x, shape_);
  Value r = arith::BitcastOp::create(c.builder(), loc, c.tensorType(out), x);
  return c.wrap(r, out);
}

// ---- comparisons, logic and selection ----
Tensor Tensor::eq(const Tensor& o, Loc l) const { return compare(*this, o, Compare::eq, "eq", l); }
Tensor Tensor::ne(const Tensor& o, Loc l) const { return compare(*this, o, Compare::ne, "ne", l); }
Tensor Tensor::lt(const Tensor& o, Loc l) const { return compare(*this, o, Compare::lt, "lt", l); }
Tensor Tensor::le(const Tensor& o, Loc l) const { return compare(*this, o, Compare::le, "le", l); }
Tensor Tensor::gt(const Tensor& o, Loc l) const { return compare(*this, o, Compare::gt, "gt", l); }
Tensor Tensor::ge(const Tensor& o, Loc l) const { return compare(*this, o, Compare::ge, "ge", l); }
Tensor Tensor::eq(double v, Loc l) const {
  return renamingErrors("eq", [&] { return compare(*this, scalar(v, dtype(), l), Compare::eq, "eq", l); });
}
Tensor Tensor::ne(double v, Loc l) const {
  return renamingErrors("ne", [&] { return compare(*this, scalar(v, dtype(), l), Compare::ne, "ne", l); });
}
Tensor Tensor::lt(double v, Loc l) const {
  return renamingErrors("lt", [&] { return compare(*this, scalar(v, dtype(), l), Compare::lt, "lt", l); });
}
Tensor Tensor::le(double v, Loc l) const {
  return renamingErrors("le", [&] { return compare(*this, scalar(v, dtype(), l), Compare::le, "le", l); });
}
Tensor Tensor::gt(double v, Loc l) const {
  return renamingErrors("gt", [&] { return compare(*this, scalar(v, dtype(), l), Compare::gt, "gt", l); });
}
Tensor Tensor::ge(double v, Loc l) const {
  return renamingErrors("ge", [&] { return compare(*this, scalar(v, dtype(), l), Compare::ge, "ge", l); });
}

Tensor Tensor::select(const Tensor& onTrue, const Tensor& onFalse, Loc l) const {
  TraceContext& c = detail::currentTrace("select");
  if (dtype() != DType::bool_) throw opError("select", "the condition must be bool, got " + shape_.str());
  const Shape values = binaryShape("select", onTrue.shape(), onFalse.shape());
  Shape out;
  try {
    out = binaryShape("select", shape_, values.withDtype(DType::bool_)).withDtype(values.dtype());
  } catch (const Error&) {
    throw opError("select", "condition " + shape_.str() + " and values " + onTrue.shape().str() + ", " +
                                onFalse.shape().str() + " do not broadcast together");
  }
  auto loc = c.loc(l, "select");
  Value cond = operandAs(c, loc, *this, out.withDtype(DType::bool_), "select");
  Value t = operandAs(c, loc, onTrue, out, "select");
  Value f = operandAs(c, loc, onFalse, out, "select");
  return c.wrap(arith::SelectOp::create(c.builder(), loc, cond, t, f), out);
}

// ---- constants ----
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
Tensor Tensor::subConstant(double v, Loc l) const {
  return renamingErrors("subConstant", [&] { return sub(scalar(v, dtype(), l), l); });
}
Tensor Tensor::mulConstant(double v, Loc l) const {
  return renamingErrors("mulConstant", [&] { return mul(scalar(v, dtype(), l), l); });
}
Tensor Tensor::divConstant(double v, Loc l) const {
  return renamingErrors("divConstant", [&] { return div(scalar(v, dtype(), l), l); });
}
Tensor Tensor::powConstant(double v, Loc l) const {
  return renamingErrors("powConstant", [&] { return pow(scalar(v, dtype(), l), l); });
}
Tensor Tensor::fmod(double v, Loc l) const {
  return renamingErrors("fmod", [&] { return remainder(scalar(v, dtype(), l), l); });
}

}  // namespace radix
