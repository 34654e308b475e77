// Reductions over one axis, kept with size 1.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

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

}  // namespace

Tensor Tensor::sum(Axis axis, Loc l) const { return reduce(*this, axis, Reduce::sum, "sum", l); }
Tensor Tensor::max(Axis axis, Loc l) const { return reduce(*this, axis, Reduce::max, "max", l); }

}  // namespace radix
