// Fusion of dequantize into contractions. A dequantize op (src/ops/quant.cpp) is a plain
// linalg.generic, so upstream elementwise fusion would inline its decode into the consumer's body:
// a contraction would then decode each weight element once per row of X, and its body would no
// longer be the acc + a * b that the kernel rewrite recognizes. radix-fuse-elementwise-ops keeps
// dequantize ops whole instead. They survive bufferization as an op writing a buffer; where a
// contraction reads that buffer, the contraction becomes a radix_kernel_qcontract call on the
// packed operands of the dequantize, and the dequantize (with its buffer) goes once nothing else
// reads it. Whatever does not match stays as written: correct, only slower.
#include "compiler/kernels/quant/lower_quant.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "compiler/kernels/quant/qkernels.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/quant.h"

namespace radix::kernels {

namespace {

constexpr const char* kQKernelSymbol = "radix_kernel_qcontract";
constexpr int kQKernelArgs = 21;

// ---- fusion ----

// A transcendental (sin, cos, exp, log, tanh, ...) in a linalg body.
bool hasTranscendental(mlir::Operation* op) {
  return op->walk([](mlir::Operation* inner) {
           return mlir::isa<mlir::math::SinOp, mlir::math::CosOp, mlir::math::TanOp, mlir::math::ExpOp,
                            mlir::math::Exp2Op, mlir::math::ExpM1Op, mlir::math::LogOp, mlir::math::Log1pOp,
                            mlir::math::Log2Op, mlir::math::TanhOp, mlir::math::PowFOp, mlir::math::ErfOp,
                            mlir::math::AtanOp, mlir::math::Atan2Op>(inner)
                      ? mlir::WalkResult::interrupt()
                      : mlir::WalkResult::advance();
         }).wasInterrupted();
}

// Fusing a producer into a consumer that reads it through a broadcast recomputes it for every
// copy: rope's sin/cos over {s, hd/2} ran once per head. Cheap producers still fuse.
bool broadcastsExpensiveProducer(mlir::OpOperand* fused, mlir::Operation* producer) {
  auto consumer = mlir::dyn_cast<mlir::linalg::GenericOp>(fused->getOwner());
  if (!consumer || !mlir::isa<mlir::linalg::GenericOp>(producer)) return false;
  return consumer.getMatchingIndexingMap(fused).getNumResults() < consumer.getNumLoops() &&
         hasTranscendental(producer);
}

struct FuseElementwisePass : mlir::PassWrapper<FuseElementwisePass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  llvm::StringRef getArgument() const final { return "radix-fuse-elementwise-ops"; }
  llvm::StringRef getDescription() const final {
    return "Radix: linalg-fuse-elementwise-ops that keeps dequantize ops whole and does not recompute "
           "transcendentals per broadcast copy";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::affine::AffineDialect, mlir::linalg::LinalgDialect, mlir::memref::MemRefDialect,
                    mlir::tensor::TensorDialect>();
  }
  void runOnOperation() override {
    mlir::MLIRContext* ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    // Upstream's default (a producer with one use) minus anything touching a dequantize.
    mlir::linalg::ControlFusionFn control = [](mlir::OpOperand* fused) {
      mlir::Operation* producer = fused->get().getDefiningOp();
      return producer && producer->hasOneUse() && !isDequantize(producer) && !isDequantize(fused->getOwner()) &&
             !broadcastsExpensiveProducer(fused, producer);
    };
    mlir::linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    mlir::linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    mlir::affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<mlir::linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    mlir::linalg::populateConstantFoldLinalgOperations(patterns, control);
    mlir::GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    (void)mlir::applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

// ---- contractions of dequantized buffers -> radix_kernel_qcontract ----

std::optional<QuantType> quantTypeOf(mlir::Operation* op) {
  auto name = op->getAttrOfType<mlir::StringAttr>(kDequantizeAttr);
  if (!name) return std::nullopt;
  for (int t = 1; t <= static_cast<int>(QuantType::i4_group); ++t)
    if (quantName(static_cast<QuantType>(t)) == name.getValue().str()) return static_cast<QuantType>(t);
  return std::nullopt;
}

std::optional<Elem> elemOf(mlir::Type t) {
  if (t.isF32()) return Elem::f32;
  if (t.isF16()) return Elem::f16;
  if (t.isBF16()) return Elem::bf16;
  return std::nullopt;
}

bool isView(mlir::Operation* op) {
  return mlir::isa<mlir::memref::CollapseShapeOp, mlir::memref::ExpandShapeOp, mlir::memref::CastOp>(op);
}

// `v` and every view of it (collapse/expand/cast chains).
std::vector<mlir::Value> withViews(mlir::Value v) {
  std::vector<mlir::Value> out = {v};
  for (size_t i = 0; i < out.size(); ++i)
    for (mlir::Operation* user : out[i].getUsers())
      if (isView(user)) out.push_back(user->getResult(0));
  return out;
}

// Nothing writes `v` (or a view or subview of it): loads, linalg inputs, kernel calls' metadata.
bool isReadOnly(mlir::Value v) {
  std::vector<mlir::Value> work = {v};
  while (!work.empty()) {
    mlir::Value x = work.back();
    work.pop_back();
    for (mlir::OpOperand& use : x.getUses()) {
      mlir::Operation* user = use.getOwner();
      if (isView(user) || mlir::isa<mlir::memref::SubViewOp>(user)) {
        work.push_back(user->getResult(0));
      } else if (auto linalgOp = mlir::dyn_cast<mlir::linalg::LinalgOp>(user)) {
        if (!linalgOp.isDpsInput(&use)) return false;
      } else if (!mlir::isa<mlir::memref::LoadOp, mlir::memref::DeallocOp, mlir::memref::ExtractStridedMetadataOp,
                            mlir::memref::ExtractAlignedPointerAsIndexOp, mlir::func::ReturnOp>(user)) {
        return false;
      }
    }
  }
  return true;
}

// Row-major with unit stride along the last dim; `rowStride` gets the first dim's stride.
bool isRowMajor(mlir::Value v, int64_t* rowStride = nullptr) {
  auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType());
  if (!type || !type.hasStaticShape()) return false;
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(type.getStridesAndOffset(strides, offset))) return false;
  if (strides.empty() || strides.back() != 1) return false;
  if (strides.size() == 2) {
    if (mlir::ShapedType::isDynamic(strides[0])) return false;
    if (rowStride) *rowStride = strides[0];
    // Rows may be further apart (a slice of a wider table), never closer.
    return type.getDimSize(0) <= 1 || strides[0] >= type.getDimSize(1);
  }
  return strides.size() == 1;
}

struct Dequantize {
  mlir::Operation* op;
  QuantType type;
  mlir::Value data, scales, zeros, out;
  int64_t rows, cols, group = 0, wRowBytes = 0;
  Elem scaleType = Elem::f32;
};

std::optional<Dequantize> dequantizeOf(mlir::linalg::GenericOp op) {
  std::optional<QuantType> type = quantTypeOf(op);
  if (!type || !op.hasPureBufferSemantics() || op.getNumDpsInits() != 1) return std::nullopt;
  Dequantize d{op.getOperation(), *type, op.getDpsInputOperand(0)->get(), {}, {}, op.getDpsInitOperand(0)->get(), 0, 0};
  const unsigned inputs = op.getNumDpsInputs();
  if (inputs > 1) d.scales = op.getDpsInputOperand(1)->get();
  if (inputs > 2) d.zeros = op.getDpsInputOperand(2)->get();
  auto outType = mlir::dyn_cast<mlir::MemRefType>(d.out.getType());
  if (!outType || outType.getRank() != 2 || !outType.hasStaticShape()) return std::nullopt;
  d.rows = outType.getDimSize(0);
  d.cols = outType.getDimSize(1);
  if (!isRowMajor(d.data, &d.wRowBytes) || !isReadOnly(d.data)) return std::nullopt;
  if (d.scales) {
    auto scaleType = mlir::cast<mlir::MemRefType>(d.scales.getType());
    std::optional<Elem> e = elemOf(scaleType.getElementType());
    if (!e || !isRowMajor(d.scales) || !isReadOnly(d.scales)) return std::nullopt;
    d.scaleType = *e;
    // Scales of one row are contiguous and rows follow each other (as the kernels index them).
    if (scaleType.getRank() == 2) {
      llvm::SmallVector<int64_t> strides;
      int64_t offset;
      if (mlir::failed(scaleType.getStridesAndOffset(strides, offset)) || strides[0] != scaleType.getDimSize(1))
        return std::nullopt;
      d.group = d.cols / scaleType.getDimSize(1);
    }
  }
  if (d.zeros && (!isRowMajor(d.zeros) || !isReadOnly(d.zeros) || d.zeros.getType() != d.scales.getType()))
    return std::nullopt;
  return d;
}

// C += X · Wᵀ where input `wi` of `op` is (a view of) the dequantized buffer: replaced by a call.
bool lowerOne(mlir::linalg::GenericOp op, unsigned wi, const Dequantize& d, mlir::func::FuncOp decl, int64_t isa,
              int threads) {
  std::optional<ContractionPlan> plan = planContraction(op);
  if (!plan || plan->batch.size != 1) return false;
  const unsigned xi = 1 - wi;
  mlir::Value w = op.getDpsInputOperand(wi)->get(), x = op.getDpsInputOperand(xi)->get();
  mlir::Value c = op.getDpsInitOperand(0)->get();
  if (w == x) return false;
  // The view must be the whole buffer, offset 0 (a collapse/expand/cast of it).
  {
    llvm::SmallVector<int64_t> strides;
    int64_t offset;
    if (mlir::failed(mlir::cast<mlir::MemRefType>(w.getType()).getStridesAndOffset(strides, offset)) || offset != 0)
      return false;
  }
  // Loop groups of the plan: indexed by A only (m), by B only (n); W's side is the rows.
  const ContractionDim wRows = wi == 1 ? plan->n : plan->m, xRows = wi == 1 ? plan->m : plan->n;
  const ContractionDim& k = plan->k;
  if (k.size != d.cols || k.s[wi] != 1 || k.s[xi] != 1) return false;
  if (wRows.size != d.rows || (d.rows > 1 && wRows.s[wi] != d.cols)) return false;
  for (const ContractionDim& l : plan->loops)
    if (l.s[wi] != 0) return false;
  const Elem xType = wi == 1 ? plan->aType : plan->bType;
  if (!elemOf(mlir::cast<mlir::MemRefType>(x.getType()).getElementType())) return false;
  mlir::DominanceInfo dominance(op->getParentOfType<mlir::func::FuncOp>());
  if (!dominance.properlyDominates(d.op, op.getOperation())) return false;

  // Before anything is inserted here: zeroFillBefore stops at any op between.
  const bool overwrite = [&] {
    mlir::Operation* fill = plan->loops.empty() ? zeroFillBefore(op) : nullptr;
    if (fill) fill->erase();
    return fill != nullptr;
  }();
  mlir::OpBuilder b(op);
  const mlir::Location loc = op.getLoc();
  auto i64 = [&](int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 64).getResult(); };
  auto toI64 = [&](mlir::Value index) {
    return mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(), index).getResult();
  };
  auto pointer = [&](mlir::Value m) -> std::pair<mlir::Value, mlir::Value> {
    return m ? basePointerAndOffset(b, loc, m) : std::pair<mlir::Value, mlir::Value>{i64(0), i64(0)};
  };
  auto [xBase, xOffset] = pointer(x);
  auto [cBase, cOffset] = pointer(c);
  auto [wBase, wOffset] = pointer(d.data);
  auto [sBase, sOffset] = pointer(d.scales);
  auto [zBase, zOffset] = pointer(d.zeros);
  // Dims of X (and C) whose strides do not merge: loops around the call.
  for (const ContractionDim& l : plan->loops) {
    auto loop = mlir::scf::ForOp::create(b, loc, mlir::arith::ConstantIndexOp::create(b, loc, 0),
                                         mlir::arith::ConstantIndexOp::create(b, loc, l.size),
                                         mlir::arith::ConstantIndexOp::create(b, loc, 1));
    b.setInsertionPointToStart(loop.getBody());
    mlir::Value iv = toI64(loop.getInductionVar());
    if (l.s[xi] != 0) xOffset = mlir::arith::AddIOp::create(b, loc, xOffset, mlir::arith::MulIOp::create(b, loc, iv, i64(l.s[xi])));
    if (l.s[2] != 0) cOffset = mlir::arith::AddIOp::create(b, loc, cOffset, mlir::arith::MulIOp::create(b, loc, iv, i64(l.s[2])));
  }
  int64_t types = static_cast<int64_t>(d.type) | (static_cast<int64_t>(d.scaleType) << kQScaleShift) |
                  (static_cast<int64_t>(xType) << kQActShift);
  if (overwrite) types |= kQOverwrite;
  std::vector<mlir::Value> args = {xBase,           xOffset,          wBase,          wOffset,
                                   sBase,           sOffset,          zBase,          zOffset,
                                   cBase,           cOffset,          i64(types),     i64(xRows.size),
                                   i64(d.rows),     i64(d.cols),      i64(d.group),   i64(xRows.s[xi]),
                                   i64(d.wRowBytes), i64(xRows.s[2]), i64(wRows.s[2]), i64(threads),
                                   i64(isa)};
  mlir::func::CallOp::create(b, loc, decl, args);
  op.erase();
  return true;
}

// Bufferization may give several dequantizes one buffer (gate_proj's and up_proj's, k_proj's and
// v_proj's: same shape, a shared tensor.empty). A reader takes `d`'s weight only when `d` is the
// buffer's last writer before it: same block, and nothing between them that might write it.
bool clobbers(mlir::Operation* op, const std::vector<mlir::Value>& buffers) {
  bool writes = false;
  op->walk([&](mlir::Operation* n) {
    for (mlir::OpOperand& use : n->getOpOperands()) {
      if (std::find(buffers.begin(), buffers.end(), use.get()) == buffers.end()) continue;
      if (isView(n) || mlir::isa<mlir::memref::LoadOp>(n)) continue;
      if (auto dps = mlir::dyn_cast<mlir::DestinationStyleOpInterface>(n); dps && dps.isDpsInput(&use)) continue;
      writes = true;
    }
  });
  return writes;
}

bool lastWriterBefore(const Dequantize& d, mlir::Operation* reader, const std::vector<mlir::Value>& buffers) {
  if (reader->getBlock() != d.op->getBlock() || !d.op->isBeforeInBlock(reader)) return false;
  for (mlir::Operation* o = d.op->getNextNode(); o && o != reader; o = o->getNextNode())
    if (clobbers(o, buffers)) return false;
  return true;
}

// True when a later writer of the buffer stands between `d` and `user` (so `user` reads a later
// value), or `user` comes before `d` in a block that allocates the buffer afresh.
bool readsAnotherValue(const Dequantize& d, mlir::Operation* user, const std::vector<mlir::Value>& buffers) {
  auto alloc = d.out.getDefiningOp<mlir::memref::AllocOp>();
  if (!alloc || user->getBlock() != d.op->getBlock() || alloc->getBlock() != d.op->getBlock()) return false;
  if (user->isBeforeInBlock(d.op)) return true;
  for (mlir::Operation* o = d.op->getNextNode(); o && o != user; o = o->getNextNode())
    if (clobbers(o, buffers)) return true;
  return false;
}

// Users of the dequantized buffer other than the op itself, deallocations and unused views; a
// buffer that is not a local allocation (an output, an argument) is always read.
bool hasReaders(const Dequantize& d) {
  if (!d.out.getDefiningOp<mlir::memref::AllocOp>()) return true;
  const std::vector<mlir::Value> buffers = withViews(d.out);
  for (mlir::Value v : buffers)
    for (mlir::Operation* user : v.getUsers())
      if (user != d.op && !isView(user) && !mlir::isa<mlir::memref::DeallocOp>(user) && !isDequantize(user) &&
          !readsAnotherValue(d, user, buffers))
        return true;
  return false;
}

void eraseWithBuffer(const Dequantize& d) {
  d.op->erase();
  std::vector<mlir::Value> values = withViews(d.out);
  // Another dequantize still writes (and its readers read) the shared buffer: keep it and its dealloc.
  for (mlir::Value v : values)
    for (mlir::Operation* user : v.getUsers())
      if (!isView(user) && !mlir::isa<mlir::memref::DeallocOp>(user)) return;
  for (auto it = values.rbegin(); it != values.rend(); ++it) {
    std::vector<mlir::Operation*> deallocs;
    for (mlir::Operation* user : it->getUsers())
      if (mlir::isa<mlir::memref::DeallocOp>(user)) deallocs.push_back(user);
    for (mlir::Operation* dealloc : deallocs) dealloc->erase();
    mlir::Operation* def = it->getDefiningOp();
    if (def && it->use_empty() && (isView(def) || mlir::isa<mlir::memref::AllocOp>(def))) def->erase();
  }
}

}  // namespace

bool isDequantize(mlir::Operation* op) { return op && op->hasAttr(kDequantizeAttr); }

void registerQuantPasses() { mlir::PassRegistration<FuseElementwisePass>(); }

int lowerQuantContractions(mlir::ModuleOp module, const KernelTarget& target) {
  std::vector<mlir::linalg::GenericOp> found;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (isDequantize(op)) found.push_back(op);
  });
  if (found.empty()) return 0;
  const Isa isa = isaOf(target);
  const bool vnni = isa >= Isa::avx512 ? targetHasFeatures(target, "+avx512vnni") : targetHasFeatures(target, "+avxvnni");
  const int64_t isaArg = static_cast<int64_t>(isa) | (vnni ? kQIsaVnni : 0);
  mlir::func::FuncOp decl;
  int lowered = 0;
  for (mlir::linalg::GenericOp op : found) {
    std::optional<Dequantize> d = dequantizeOf(op);
    if (!d) continue;
    std::vector<std::pair<mlir::linalg::GenericOp, unsigned>> readers;
    const std::vector<mlir::Value> buffers = withViews(d->out);
    for (mlir::Value v : buffers)
      for (mlir::OpOperand& use : v.getUses())
        if (auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(use.getOwner());
            generic && generic != op && generic.isDpsInput(&use) && generic.getNumDpsInputs() == 2 &&
            lastWriterBefore(*d, generic, buffers))
          readers.emplace_back(generic, use.getOperandNumber());
    for (auto& [reader, wi] : readers) {
      if (!decl) decl = declareKernel(module, kQKernelSymbol, kQKernelArgs);
      if (lowerOne(reader, wi, *d, decl, isaArg, target.threads)) ++lowered;
    }
    if (!hasReaders(*d)) eraseWithBuffer(*d);
  }
  return lowered;
}

}  // namespace radix::kernels
