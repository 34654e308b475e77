// Recognises convolutions after bufferization and replaces them with radix_kernel_conv calls.
// A convolution is a multiply-add linalg.generic whose operand maps are sums of loops times
// constants (the input's `out * stride + k * dilation`), with at most one `floordiv(o, q) * c`
// term (the feature group of a grouped convolution). Each loop's strides in the three buffers
// follow from the maps; the loops are classified as M, N, K or the group and written into a
// constant descriptor (conv.h) the call passes by address.
#include "compiler/kernels/conv_lower.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "compiler/kernels/conv.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace radix::kernels {

namespace {

constexpr const char* kConvSymbol = "radix_kernel_conv";
constexpr const char* kPoolSymbol = "radix_kernel_pool";

}  // namespace

bool decompose(mlir::AffineExpr e, int64_t scale, std::vector<int64_t>& coef, std::optional<FloorTerm>& floor) {
  if (auto d = mlir::dyn_cast<mlir::AffineDimExpr>(e)) {
    coef[d.getPosition()] += scale;
    return true;
  }
  if (auto c = mlir::dyn_cast<mlir::AffineConstantExpr>(e)) return c.getValue() == 0;
  auto bin = mlir::dyn_cast<mlir::AffineBinaryOpExpr>(e);
  if (!bin) return false;
  const auto constant = [](mlir::AffineExpr x) -> std::optional<int64_t> {
    if (auto c = mlir::dyn_cast<mlir::AffineConstantExpr>(x)) return c.getValue();
    return std::nullopt;
  };
  switch (e.getKind()) {
    case mlir::AffineExprKind::Add:
      return decompose(bin.getLHS(), scale, coef, floor) && decompose(bin.getRHS(), scale, coef, floor);
    case mlir::AffineExprKind::Mul:
      if (auto c = constant(bin.getRHS())) return decompose(bin.getLHS(), scale * *c, coef, floor);
      if (auto c = constant(bin.getLHS())) return decompose(bin.getRHS(), scale * *c, coef, floor);
      return false;
    case mlir::AffineExprKind::FloorDiv: {
      auto d = mlir::dyn_cast<mlir::AffineDimExpr>(bin.getLHS());
      auto q = constant(bin.getRHS());
      if (!d || !q || *q <= 0 || floor) return false;
      floor = FloorTerm{d.getPosition(), *q, scale};
      return true;
    }
    default: return false;
  }
}

namespace {

struct ConvPlan {
  Elem aType, bType;
  ConvDim group;
  std::vector<ConvDim> m, n, k;
};

std::optional<ConvPlan> planFor(mlir::linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || !isMulAddGeneric(op) || isKernelContraction(op)) return std::nullopt;
  mlir::Value operands[3] = {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
                             op.getDpsInitOperand(0)->get()};
  mlir::MemRefType types[3];
  std::vector<int64_t> strides[3];
  for (int x = 0; x < 3; ++x) {
    auto st = staticStrides(operands[x]);
    if (!st) return std::nullopt;
    types[x] = mlir::cast<mlir::MemRefType>(operands[x].getType());
    strides[x] = std::move(*st);
  }
  if (!types[2].getElementType().isF32()) return std::nullopt;
  std::optional<Elem> ea = elemOf(types[0].getElementType()), eb = elemOf(types[1].getElementType());
  if (!ea || !eb) return std::nullopt;
  mlir::Block& body = op.getRegion().front();
  for (int x = 0; x < 2; ++x)
    for (mlir::Operation* user : body.getArgument(x).getUsers())
      if (!mlir::isa<mlir::arith::ExtFOp>(user) && !types[x].getElementType().isF32()) return std::nullopt;

  const auto maps = op.getIndexingMapsArray();
  const auto ranges = op.getStaticLoopRanges();
  const auto iterators = op.getIteratorTypesArray();
  const size_t loops = ranges.size();
  std::vector<ConvDim> dims(loops);
  for (size_t d = 0; d < loops; ++d) {
    if (mlir::ShapedType::isDynamic(ranges[d]) || ranges[d] <= 0) return std::nullopt;
    dims[d].size = ranges[d];
  }
  std::optional<FloorTerm> floor;
  int64_t floorStride = 0;
  for (int x = 0; x < 3; ++x) {
    for (unsigned r = 0; r < maps[x].getNumResults(); ++r) {
      std::vector<int64_t> coef(loops, 0);
      std::optional<FloorTerm> f;
      if (!decompose(maps[x].getResult(r), 1, coef, f)) return std::nullopt;
      if (f) {
        if (x != 0 || floor) return std::nullopt;  // one group term, in the input
        floor = f;
        floorStride = f->scale * strides[x][r];
      }
      for (size_t d = 0; d < loops; ++d) {
        int64_t& s = x == 0 ? dims[d].sa : x == 1 ? dims[d].sb : dims[d].sc;
        s += coef[d] * strides[x][r];
      }
    }
  }
  ConvPlan plan{*ea, *eb, {}, {}, {}, {}};
  for (size_t d = 0; d < loops; ++d) {
    ConvDim l = dims[d];
    const bool reduction = iterators[d] == mlir::utils::IteratorType::reduction;
    if (floor && floor->dim == d) {
      if (reduction || l.sa != 0 || l.size % floor->divisor != 0) return std::nullopt;
      const int64_t q = floor->divisor, groups = l.size / q;
      if (groups > 1) plan.group = {groups, floorStride, l.sb * q, l.sc * q};
      l.size = q;
    }
    if (l.size == 1) continue;
    if (reduction) {
      if (l.sc != 0) return std::nullopt;
      plan.k.push_back(l);
    } else if (l.sc == 0) {
      return std::nullopt;
    } else if (l.sa != 0 && l.sb != 0) {
      // Indexes all three: the group loop of a depthwise convolution (one feature per group).
      if (floor || plan.group.size != 1) return std::nullopt;
      plan.group = l;
    } else if (l.sa != 0) {
      plan.m.push_back(l);
    } else {
      plan.n.push_back(l);
    }
  }
  if (plan.m.size() > ConvProblem::kMaxDims || plan.n.size() > ConvProblem::kMaxDims ||
      plan.k.size() > ConvProblem::kMaxDims)
    return std::nullopt;
  return plan;
}

std::vector<int64_t> descriptorOf(const ConvPlan& plan) {
  std::vector<int64_t> d = {kConvDescVersion,
                            static_cast<int64_t>(plan.aType) | (static_cast<int64_t>(plan.bType) << 8),
                            static_cast<int64_t>(plan.m.size()), static_cast<int64_t>(plan.n.size()),
                            static_cast<int64_t>(plan.k.size())};
  auto add = [&](const ConvDim& x) { d.insert(d.end(), {x.size, x.sa, x.sb, x.sc}); };
  add(plan.group);
  for (const auto* role : {&plan.m, &plan.n, &plan.k})
    for (const ConvDim& x : *role) add(x);
  return d;
}

// A private constant global holding `words`; returns its name.
std::string descriptorGlobal(mlir::ModuleOp module, mlir::Location loc, const std::vector<int64_t>& words, const char* stem,
                             int index) {
  mlir::OpBuilder g(module.getContext());
  g.setInsertionPointToStart(module.getBody());
  auto descType = mlir::MemRefType::get({static_cast<int64_t>(words.size())}, g.getI64Type());
  std::string name = std::string(stem) + std::to_string(index);
  while (module.lookupSymbol(name)) name += "_";
  auto value = mlir::DenseElementsAttr::get(mlir::RankedTensorType::get(descType.getShape(), g.getI64Type()),
                                            llvm::ArrayRef<int64_t>(words));
  mlir::memref::GlobalOp::create(g, loc, g.getStringAttr(name), g.getStringAttr("private"), mlir::TypeAttr::get(descType),
                                 value, g.getUnitAttr(), g.getI64IntegerAttr(8));
  return name;
}

// Replaces `op` with decl(base, offset of each operand..., &descriptor, threads, isa).
void emitCall(mlir::ModuleOp module, mlir::Operation* op, llvm::ArrayRef<mlir::Value> operands,
              const std::vector<int64_t>& words, const char* stem, mlir::func::FuncOp decl, Isa isa, int threads,
              int index) {
  const mlir::Location loc = op->getLoc();
  const std::string name = descriptorGlobal(module, loc, words, stem, index);
  mlir::OpBuilder b(op);
  auto i64 = [&](int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 64).getResult(); };
  auto toI64 = [&](mlir::Value index) {
    return mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(), index).getResult();
  };
  std::vector<mlir::Value> args;
  for (mlir::Value v : operands) {
    auto meta = mlir::memref::ExtractStridedMetadataOp::create(b, loc, v);
    args.push_back(toI64(mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, v).getResult()));
    args.push_back(toI64(meta.getOffset()));
  }
  auto descType = mlir::MemRefType::get({static_cast<int64_t>(words.size())}, b.getI64Type());
  mlir::Value desc = mlir::memref::GetGlobalOp::create(b, loc, descType, name);
  args.push_back(toI64(mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, desc).getResult()));
  args.push_back(i64(threads));
  args.push_back(i64(static_cast<int64_t>(isa)));
  mlir::func::CallOp::create(b, loc, decl, args);
  op->erase();
}

namespace {

// The elementwise linalg.generic that only rounds a convolution's f32 sums to bf16, into a
// buffer of the same shape and (positive) strides that the call can write instead: the sums'
// buffer is an alloc read by nothing else (deallocs aside), and the bf16 buffer is an argument or
// an alloc (moved above the convolution where it follows it) that no op between the two may touch
// (mayInterfere).
mlir::linalg::GenericOp roundingConsumer(mlir::linalg::GenericOp conv) {
  mlir::Value sums = conv.getDpsInitOperand(0)->get();
  if (!sums.getDefiningOp<mlir::memref::AllocOp>()) return {};
  mlir::linalg::GenericOp round;
  for (mlir::Operation* user : sums.getUsers()) {
    if (user == conv.getOperation() || mlir::isa<mlir::memref::DeallocOp>(user)) continue;
    auto g = mlir::dyn_cast<mlir::linalg::GenericOp>(user);
    if (!g || round) return {};
    round = g;
  }
  if (!round || round->getBlock() != conv->getBlock() || !conv->isBeforeInBlock(round) ||
      !round.hasPureBufferSemantics() || round.getNumDpsInputs() != 1 || round.getNumDpsInits() != 1 ||
      round.getDpsInputOperand(0)->get() != sums || round.getNumReductionLoops() != 0)
    return {};
  for (mlir::AffineMap m : round.getIndexingMapsArray())
    if (!m.isIdentity()) return {};
  mlir::Block& body = round.getRegion().front();
  auto yield = mlir::dyn_cast<mlir::linalg::YieldOp>(body.getTerminator());
  auto trunc = yield && yield.getNumOperands() == 1 ? yield.getOperand(0).getDefiningOp<mlir::arith::TruncFOp>() : nullptr;
  if (!trunc || &body.front() != trunc.getOperation() || trunc.getIn() != body.getArgument(0) ||
      !trunc.getType().isBF16())
    return {};
  mlir::Value out = round.getDpsInitOperand(0)->get();
  auto sumsType = mlir::cast<mlir::MemRefType>(sums.getType());
  auto outType = mlir::dyn_cast<mlir::MemRefType>(out.getType());
  const auto sumsStrides = staticStrides(sums), outStrides = staticStrides(out);
  if (!outType || outType.getShape() != sumsType.getShape() || !sumsStrides || sumsStrides != outStrides) return {};
  for (int64_t st : *outStrides)
    if (st <= 0) return {};
  for (mlir::Operation* op = conv->getNextNode(); op != round.getOperation(); op = op->getNextNode())
    if (mayInterfere(op, {}, {rootOf(out)})) return {};
  auto arg = mlir::dyn_cast<mlir::BlockArgument>(out);
  mlir::Operation* def = out.getDefiningOp();
  if (arg && arg.getOwner() == &conv->getParentOfType<mlir::func::FuncOp>().getBody().front()) return round;
  auto alloc = mlir::dyn_cast_or_null<mlir::memref::AllocOp>(def);
  if (!alloc || alloc->getBlock() != conv->getBlock() || alloc->getNumOperands() != 0) return {};
  if (conv->isBeforeInBlock(alloc)) alloc->moveBefore(conv);
  return round;
}

}  // namespace

// ---- pooling ----

struct PoolPlan {
  Elem aType;
  DirectOp op;
  std::vector<ConvDim> par, window;
};

// Body: yield(maximumf(acc, a)) or yield(addf(acc, ext(a))), the window operand unused.
std::optional<DirectOp> poolBody(mlir::linalg::GenericOp op) {
  mlir::Block& body = op.getRegion().front();
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1 || !body.getArgument(1).use_empty()) return std::nullopt;
  mlir::Operation* r = yield.getOperand(0).getDefiningOp();
  if (!r || r->getNumOperands() != 2 || !mlir::isa<mlir::arith::MaximumFOp, mlir::arith::AddFOp>(r)) return std::nullopt;
  mlir::Value acc = body.getArgument(2), lhs = r->getOperand(0), rhs = r->getOperand(1);
  mlir::Value v = lhs == acc ? rhs : rhs == acc ? lhs : mlir::Value();
  if (!v) return std::nullopt;
  const bool isMax = mlir::isa<mlir::arith::MaximumFOp>(r);
  if (auto ext = v.getDefiningOp<mlir::arith::ExtFOp>(); ext && !isMax) v = ext.getIn();
  if (v != body.getArgument(0)) return std::nullopt;
  if (static_cast<size_t>(std::distance(body.begin(), body.end())) > (isMax ? 2u : 3u)) return std::nullopt;
  return isMax ? DirectOp::max : DirectOp::sum;
}

std::optional<PoolPlan> poolPlanFor(mlir::linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) return std::nullopt;
  const std::optional<DirectOp> kind = poolBody(op);
  if (!kind) return std::nullopt;
  mlir::Value operands[2] = {op.getDpsInputOperand(0)->get(), op.getDpsInitOperand(0)->get()};
  mlir::MemRefType types[2];
  std::vector<int64_t> strides[2];
  for (int x = 0; x < 2; ++x) {
    auto st = staticStrides(operands[x]);
    if (!st) return std::nullopt;
    types[x] = mlir::cast<mlir::MemRefType>(operands[x].getType());
    strides[x] = std::move(*st);
  }
  if (!types[1].getElementType().isF32()) return std::nullopt;
  std::optional<Elem> ea = elemOf(types[0].getElementType());
  if (!ea || (*kind == DirectOp::max && *ea != Elem::f32)) return std::nullopt;
  const auto maps = op.getIndexingMapsArray();
  const auto ranges = op.getStaticLoopRanges();
  const auto iterators = op.getIteratorTypesArray();
  const size_t loops = ranges.size();
  std::vector<ConvDim> dims(loops);
  for (size_t d = 0; d < loops; ++d) {
    if (mlir::ShapedType::isDynamic(ranges[d]) || ranges[d] <= 0) return std::nullopt;
    dims[d].size = ranges[d];
  }
  const mlir::AffineMap opMaps[2] = {maps[0], maps[2]};
  for (int x = 0; x < 2; ++x)
    for (unsigned r = 0; r < opMaps[x].getNumResults(); ++r) {
      std::vector<int64_t> coef(loops, 0);
      std::optional<FloorTerm> f;
      if (!decompose(opMaps[x].getResult(r), 1, coef, f) || f) return std::nullopt;
      for (size_t d = 0; d < loops; ++d) (x == 0 ? dims[d].sa : dims[d].sc) += coef[d] * strides[x][r];
    }
  PoolPlan plan{*ea, *kind, {}, {}};
  for (size_t d = 0; d < loops; ++d) {
    const ConvDim& l = dims[d];
    if (l.size == 1) continue;
    if (iterators[d] == mlir::utils::IteratorType::reduction) {
      if (l.sc != 0) return std::nullopt;
      plan.window.push_back(l);
    } else {
      if (l.sc == 0) return std::nullopt;
      plan.par.push_back(l);
    }
  }
  if (plan.par.size() > ConvProblem::kMaxDims || plan.window.size() > ConvProblem::kMaxDims) return std::nullopt;
  return plan;
}

}  // namespace

bool isWindowKernelOp(mlir::Operation* op) {
  auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
  if (!generic || generic.getNumReductionLoops() == 0 || generic.getNumDpsInputs() != 2) return false;
  const mlir::AffineMap input = generic.getIndexingMapsArray().front();
  if (input.isProjectedPermutation()) return false;
  return isMulAddGeneric(op) || poolBody(generic).has_value();
}

bool poolKernelsEnabled() {
  const char* env = std::getenv("RADIX_POOL_KERNELS");
  return env && std::string(env) == "1";
}

bool convKernelsEnabled() {
  const char* env = std::getenv("RADIX_CONV_KERNELS");
  return !(env && std::string(env) == "0");
}

int lowerConvolutionsToKernels(mlir::ModuleOp module, const KernelTarget& target) {
  if (!convKernelsEnabled()) return 0;
  std::vector<std::pair<mlir::linalg::GenericOp, ConvPlan>> convs;
  std::vector<std::pair<mlir::linalg::GenericOp, PoolPlan>> pools;
  const bool poolsToo = poolKernelsEnabled();
  module.walk([&](mlir::linalg::GenericOp op) {
    if (auto plan = planFor(op)) {
      convs.emplace_back(op, *plan);
    } else if (poolsToo) {
      if (auto pool = poolPlanFor(op)) pools.emplace_back(op, *pool);
    }
  });
  if (convs.empty() && pools.empty()) return 0;
  const Isa isa = isaOf(target);
  int index = 0;
  for (auto& [op, plan] : convs) {
    mlir::Value operands[3] = {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
                               op.getDpsInitOperand(0)->get()};
    std::vector<int64_t> words = descriptorOf(plan);
    if (mlir::Operation* fill = zeroFillBefore(op)) {
      words[1] |= kConvOverwrite;
      fill->erase();
      // The rounding to bf16 that follows folds into the call, which then writes the bf16 buffer.
      if (mlir::linalg::GenericOp round = roundingConsumer(op)) {
        words[0] = kConvDescVersionOutBf16;
        words[1] |= kConvOutBf16;
        operands[2] = round.getDpsInitOperand(0)->get();
        round->erase();
      }
    }
    emitCall(module, op, operands, words, "__radix_conv_desc_", declareKernel(module, kConvSymbol, 9), isa, target.threads, index++);
  }
  for (auto& [op, plan] : pools) {
    std::vector<int64_t> words = {kConvDescVersion, static_cast<int64_t>(plan.aType), static_cast<int64_t>(plan.op),
                                  static_cast<int64_t>(plan.par.size()), static_cast<int64_t>(plan.window.size())};
    for (const auto* role : {&plan.par, &plan.window})
      for (const ConvDim& x : *role) words.insert(words.end(), {x.size, x.sa, x.sc});
    mlir::Value operands[2] = {op.getDpsInputOperand(0)->get(), op.getDpsInitOperand(0)->get()};
    emitCall(module, op, operands, words, "__radix_pool_desc_", declareKernel(module, kPoolSymbol, 7), isa, target.threads, index++);
  }
  return index;
}

}  // namespace radix::kernels
