// Contractions: dotGeneral and dot as one linalg.generic with f32 accumulation for small floats.
// After bufferization, src/compiler/kernels/lower.cpp replaces the float ones with calls into
// the GEMM/GEMV kernels (docs/compiler-notes.md, "Fast CPU: contractions").
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/kernels/quant/lower_quant.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

// linalg-fuse-elementwise-ops would pull an operand's producer into the contraction's body
// (a slice's tensor.extract, a softmax's division, a layer norm's scale): the body is then no
// longer acc + a * b, the kernel rewrite does not apply, and the producer is recomputed for
// every output column. Such operands are materialized first (bufferization.alloc_tensor with a
// copy, which fusion does not look through). Widening converts, transposes and broadcasts of arguments, of
// calls' results and of other contractions still fuse: the kernels read them in place (narrow
// types, strides).
mlir::Value materializedOperand(TraceContext& c, mlir::Location loc, mlir::Value v) {
  mlir::Value root = v;
  while (mlir::Operation* def = root.getDefiningOp()) {
    if (auto ext = mlir::dyn_cast<mlir::arith::ExtFOp>(def)) {
      root = ext.getIn();
    } else if (auto t = mlir::dyn_cast<mlir::linalg::TransposeOp>(def)) {
      root = t.getInput();
    } else if (auto bc = mlir::dyn_cast<mlir::linalg::BroadcastOp>(def)) {
      root = bc.getInput();
    } else {
      break;
    }
  }
  mlir::Operation* def = root.getDefiningOp();
  // A dequantize is kept whole by fusion and replaced with its contraction by the compiler.
  if (def && def->hasAttr(kernels::kDequantizeAttr)) return v;
  bool fusable = def && !mlir::isa<mlir::func::CallOp>(def);
  if (auto linalgOp = mlir::dyn_cast_or_null<mlir::linalg::LinalgOp>(def))
    fusable = linalgOp.getNumReductionLoops() == 0;
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  if (!fusable || type.getNumElements() == 0) return v;
  return mlir::bufferization::AllocTensorOp::create(c.builder(), loc, type, mlir::ValueRange{}, v).getResult();
}

bool isByte(DType d) { return d == DType::i8 || d == DType::u8; }

// `result`: the dtype products accumulate in and the result has (i32 for 8-bit integers, which
// may differ in sign; f32 for floats), or nullopt for the operands' own dtype.
Tensor contractTraced(const Tensor& lhs, const Tensor& rhs, const std::vector<AxisPair>& contracting,
                      const std::vector<AxisPair>& batching, std::optional<DType> result, Loc l) {
  const char* op = "dotGeneral";
  TraceContext& c = detail::currentTrace(op);
  const Shape& a = lhs.shape();
  const Shape& b = rhs.shape();
  const bool widening = result && *result != a.dtype();
  if (widening) {
    const bool bytes = isByte(a.dtype()) && isByte(b.dtype()) && *result == DType::i32;
    const bool halves = (a.dtype() == DType::f16 || a.dtype() == DType::bf16) && a.dtype() == b.dtype();
    const bool floats = halves && *result == DType::f32;
    if (!bytes && !floats)
      throw opError(op, "cannot accumulate " + a.str() + " and " + b.str() + " in " + std::string(name(*result)) +
                            ": i32 takes 8-bit integers (i8, u8), f32 takes f16 or bf16 of one dtype");
  } else if (a.dtype() != b.dtype()) {
    throw opError(op, "dtypes differ: " + a.str() + " and " + b.str() +
                          (isByte(a.dtype()) && isByte(b.dtype()) ? " (accumulate in i32 to mix i8 and u8)" : ""));
  }
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
  const DType acc = widening ? *result : isFloat(a.dtype()) && a.dtype() != DType::f64 ? DType::f32 : a.dtype();
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
  mlir::Value lhsValue = c.value(lhs, op), rhsValue = c.value(rhs, op);
  if (acc == DType::f32 || (acc == DType::i32 && isByte(a.dtype()))) {  // the kernels' dtypes
    lhsValue = materializedOperand(c, loc, lhsValue);
    rhsValue = materializedOperand(c, loc, rhsValue);
  }
  auto generic = mlir::linalg::GenericOp::create(
      c.builder(), loc, mlir::TypeRange{init.getType()},
      mlir::ValueRange{lhsValue, rhsValue}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{mapFor(roleA, slotA), mapFor(roleB, slotB), outMap}, iterators,
      [&](mlir::OpBuilder& bb, mlir::Location ll, mlir::ValueRange args) {
        mlir::Value x = args[0], y = args[1];
        auto widen = [&](mlir::Value v, DType d) -> mlir::Value {
          if (v.getType() == accType) return v;
          if (isF) return mlir::arith::ExtFOp::create(bb, ll, accType, v);
          if (isSignedInt(d)) return mlir::arith::ExtSIOp::create(bb, ll, accType, v);
          return mlir::arith::ExtUIOp::create(bb, ll, accType, v);
        };
        x = widen(x, a.dtype());
        y = widen(y, b.dtype());
        mlir::Value r = isF ? mlir::Value(mlir::arith::AddFOp::create(bb, ll, args[2], mlir::arith::MulFOp::create(bb, ll, x, y)))
                            : mlir::arith::AddIOp::create(bb, ll, args[2], mlir::arith::MulIOp::create(bb, ll, x, y));
        mlir::linalg::YieldOp::create(bb, ll, r);
      });
  if (widening) return c.wrap(generic.getResult(0), out.withDtype(acc));
  mlir::Value r = convertValue(c, loc, generic.getResult(0), acc, a.dtype(), out.withDtype(acc));
  return c.wrap(r, out);
}

}  // namespace

Tensor Tensor::dotGeneral(const Tensor& rhs, const std::vector<AxisPair>& contracting,
                          const std::vector<AxisPair>& batching, Loc l) const {
  return contractTraced(*this, rhs, contracting, batching, std::nullopt, l);
}

Tensor Tensor::dotGeneral(const Tensor& rhs, const std::vector<AxisPair>& contracting,
                          const std::vector<AxisPair>& batching, DType result, Loc l) const {
  return contractTraced(*this, rhs, contracting, batching, result, l);
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

}  // namespace radix
