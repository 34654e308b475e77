// Explicit collectives (radix/collectives.h): traced as shard ops on the module's grid, lowered
// with the partitioner's own collectives (src/compiler/shard.cpp).
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "ops/common.h"
#include "radix/collectives.h"
#include "runtime/runtime.h"

namespace radix {

namespace {

using ops::opError;

constexpr const char* kGrid = "radix_grid";

int partitionsOf(detail::TraceContext& c) {
  return detail::shardedAcrossProcesses(c.platform()) ? c.platform().sharding().numPartitions : 1;
}

mlir::FlatSymbolRefAttr gridOf(detail::TraceContext& c) {
  mlir::ModuleOp module = c.module();
  mlir::MLIRContext* ctx = module.getContext();
  ctx->getOrLoadDialect<mlir::shard::ShardDialect>();
  if (!module.lookupSymbol(kGrid)) {
    mlir::OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    auto grid = mlir::shard::GridOp::create(b, module.getLoc(), kGrid, llvm::ArrayRef<int64_t>{partitionsOf(c)});
    grid.setPrivate();
  }
  return mlir::FlatSymbolRefAttr::get(ctx, kGrid);
}

mlir::shard::ReductionKind kindOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return mlir::shard::ReductionKind::Sum;
    case ReduceOp::max: return mlir::shard::ReductionKind::Max;
    case ReduceOp::min: return mlir::shard::ReductionKind::Min;
  }
  throw Error("[allReduce] unknown ReduceOp " + std::to_string(static_cast<int>(op)));
}

Shape resized(const Shape& s, int64_t axis, int64_t dim) {
  std::vector<int64_t> dims = s.dims();
  dims[axis] = dim;
  std::vector<Tag> tags;
  for (int64_t i = 0; i < s.rank(); ++i) tags.push_back(s.tag(i));
  return Shape(dims, s.dtype()).withTags(tags);
}

mlir::RankedTensorType typeOf(const Shape& s, mlir::Type element) {
  return mlir::RankedTensorType::get(s.dims(), element);
}

}  // namespace

Tensor allReduce(const Tensor& t, ReduceOp op, Loc where) {
  detail::TraceContext& c = detail::currentTrace("allReduce");
  mlir::Value x = c.value(t, "allReduce");
  kindOf(op);
  if (t.dtype() == DType::bool_ && op == ReduceOp::sum) throw opError("allReduce", "sum of bool " + t.shape().str());
  if (partitionsOf(c) == 1) return t;
  auto loc = c.loc(where, "allReduce");
  auto& b = c.builder();
  mlir::MLIRContext* ctx = b.getContext();
  auto r = mlir::shard::AllReduceOp::create(b, loc, x.getType(), gridOf(c), mlir::DenseI16ArrayAttr::get(ctx, {0}), x,
                                            mlir::shard::ReductionKindAttr::get(ctx, kindOf(op)));
  return c.wrap(r.getResult(), t.shape());
}

Tensor allGather(const Tensor& t, Axis axis, Loc where) {
  detail::TraceContext& c = detail::currentTrace("allGather");
  mlir::Value x = c.value(t, "allGather");
  const int64_t a = t.shape().axis(axis, "allGather");
  const int p = partitionsOf(c);
  if (p == 1) return t;
  const Shape out = resized(t.shape(), a, t.dim(a) * p);
  auto loc = c.loc(where, "allGather");
  auto& b = c.builder();
  auto type = typeOf(out, mlir::cast<mlir::RankedTensorType>(x.getType()).getElementType());
  auto r = mlir::shard::AllGatherOp::create(b, loc, type, gridOf(c), mlir::DenseI16ArrayAttr::get(b.getContext(), {0}), x,
                                            b.getIndexAttr(a));
  return c.wrap(r.getResult(), out);
}

Tensor reduceScatter(const Tensor& t, Axis axis, ReduceOp op, Loc where) {
  detail::TraceContext& c = detail::currentTrace("reduceScatter");
  mlir::Value x = c.value(t, "reduceScatter");
  const int64_t a = t.shape().axis(axis, "reduceScatter");
  kindOf(op);
  const int p = partitionsOf(c);
  if (t.dim(a) % p != 0)
    throw opError("reduceScatter", "axis " + std::to_string(a) + " of " + t.shape().str() + " is not divisible by the " +
                                       std::to_string(p) + " partitions");
  if (t.dtype() == DType::bool_ && op == ReduceOp::sum) throw opError("reduceScatter", "sum of bool " + t.shape().str());
  if (p == 1) return t;
  const Shape out = resized(t.shape(), a, t.dim(a) / p);
  auto loc = c.loc(where, "reduceScatter");
  auto& b = c.builder();
  mlir::MLIRContext* ctx = b.getContext();
  auto type = typeOf(out, mlir::cast<mlir::RankedTensorType>(x.getType()).getElementType());
  auto r = mlir::shard::ReduceScatterOp::create(b, loc, type, gridOf(c), mlir::DenseI16ArrayAttr::get(ctx, {0}), x,
                                                mlir::shard::ReductionKindAttr::get(ctx, kindOf(op)), b.getIndexAttr(a));
  return c.wrap(r.getResult(), out);
}

Tensor allToAll(const Tensor& t, Axis splitAxis, Axis concatAxis, Loc where) {
  detail::TraceContext& c = detail::currentTrace("allToAll");
  mlir::Value x = c.value(t, "allToAll");
  const int64_t s = t.shape().axis(splitAxis, "allToAll"), k = t.shape().axis(concatAxis, "allToAll");
  const int p = partitionsOf(c);
  if (t.dim(s) % p != 0)
    throw opError("allToAll", "split axis " + std::to_string(s) + " of " + t.shape().str() + " is not divisible by the " +
                                  std::to_string(p) + " partitions");
  if (p == 1) return t;
  if (s == k) throw opError("allToAll", "split and concat axes are both " + std::to_string(s) + " of " + t.shape().str());
  const Shape out = resized(resized(t.shape(), s, t.dim(s) / p), k, t.dim(k) * p);
  auto loc = c.loc(where, "allToAll");
  auto& b = c.builder();
  auto type = typeOf(out, mlir::cast<mlir::RankedTensorType>(x.getType()).getElementType());
  auto r = mlir::shard::AllToAllOp::create(b, loc, type, gridOf(c), mlir::DenseI16ArrayAttr::get(b.getContext(), {0}), x,
                                           b.getIndexAttr(s), b.getIndexAttr(k));
  return c.wrap(r.getResult(), out);
}

}  // namespace radix
