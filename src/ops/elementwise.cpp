// Elementwise ops: arith/math ops on tensors (lowered by convert-elementwise-to-linalg), constants
// and dtype conversion.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

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

}  // namespace radix
