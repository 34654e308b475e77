// Fast CPU elementwise code, reductions and math (issue 9): passes that the lowering pipeline in
// compiler.cpp names by argument. See docs/compiler-notes.md, "Fast CPU: elementwise, reductions
// and math".
//   radix-fuse-rows    (tensors)  reassociable float reductions; row ops (softmax, norms) tiled
//                                 over rows with their producers fused: <= 2 sweeps of the input
//   radix-lower-rows   (buffers)  the row loops -> scf.for or scf.parallel (threads); noalias
//                                 on @radix_entry arguments that cannot alias
//   radix-math-approx  (loops)    exp/tanh/erf/log/... -> polynomials in f32 (no libm calls), so
//                                 that LLVM's loop vectorizer turns the loops into zmm/ymm code
#include "compiler/fast_ewise.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>

#include "compiler/kernels/conv_lower.h"
#include "compiler/kernels/quant/lower_quant.h"
#include "compiler/module_rewrites.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace radix::detail {

namespace {

// A row tile holds about this many elements (rows of fewer elements are grouped).
constexpr int64_t kRowTileElements = 2048;
// As module_rewrites.cpp's kMinParallelIterations: fewer iterations run serially even with threads.
constexpr int64_t kMinParallelRowIterations = 1 << 15;

bool isRowFusable(mlir::linalg::LinalgOp op) {
  if (!op || !op.hasPureTensorSemantics() || op->getNumResults() != 1) return false;
  if (radix::kernels::isDequantize(op)) return false;  // decoded by its contraction's kernel
  if (mlir::linalg::isaContractionOpInterface(op) || mlir::linalg::isaConvolutionOpInterface(op)) return false;
  if (radix::kernels::convKernelsEnabled() && radix::kernels::isWindowKernelOp(op)) return false;  // conv_lower.cpp
  if (!mlir::isa<mlir::TilingInterface>(op.getOperation())) return false;
  for (int64_t range : op.getStaticLoopRanges())
    if (mlir::ShapedType::isDynamic(range)) return false;
  return true;
}

/// A reduction over the last loop only, the others parallel: max, sum, sum of squares of a row.
bool isRowReduction(mlir::linalg::LinalgOp op) {
  const auto iterators = op.getIteratorTypesArray();
  if (iterators.size() < 2 || op.getNumReductionLoops() != 1) return false;
  return iterators.back() == mlir::utils::IteratorType::reduction;
}

/// Float reductions may be reassociated: LLVM keeps vector partial sums (and max) and adds them
/// at the end, which is what lets it vectorize the loop.
void markReductionsReassociable(mlir::func::FuncOp fn) {
  fn.walk([](mlir::linalg::LinalgOp op) {
    if (op.getNumReductionLoops() == 0) return;
    op.getBlock()->walk([](mlir::Operation* inner) {
      if (auto fm = mlir::dyn_cast<mlir::arith::ArithFastMathInterface>(inner)) {
        if (!mlir::isa<mlir::arith::AddFOp, mlir::arith::MulFOp, mlir::arith::MaximumFOp, mlir::arith::MinimumFOp,
                       mlir::arith::MaxNumFOp, mlir::arith::MinNumFOp>(inner))
          return;
        auto flags = fm.getFastMathFlagsAttr().getValue() | mlir::arith::FastMathFlags::reassoc;
        inner->setAttr(fm.getFastMathAttrName(), mlir::arith::FastMathFlagsAttr::get(inner->getContext(), flags));
      }
    });
  });
}

/// Non-donated arguments of the entry (read-only or fresh) cannot alias each other or anything else.
void markEntryNoalias(mlir::func::FuncOp fn) {
  if (fn.getSymName() != kEntry) return;
  mlir::Builder b(fn.getContext());
  bool anyDonated = false;
  for (unsigned a = 0; a < fn.getNumArguments(); ++a) {
    auto writable = fn.getArgAttrOfType<mlir::BoolAttr>(a, "bufferization.writable");
    if (writable && writable.getValue()) anyDonated = true;
    else if (mlir::isa<mlir::RankedTensorType>(fn.getArgument(a).getType())) fn.setArgAttr(a, "radix.noalias", b.getUnitAttr());
  }
  if (!anyDonated) fn->setAttr(kFreshOutputsAttr, b.getI64IntegerAttr(fn.getNumArguments()));
}

/// The ops feeding `root` that would be fused into its row loop: row-fusable linalg ops whose
/// every user is in the set (or the root), so that nothing is computed twice.
llvm::SetVector<mlir::Operation*> fusableProducers(mlir::linalg::LinalgOp root) {
  llvm::DenseSet<mlir::Operation*> banned;
  for (;;) {
    llvm::SetVector<mlir::Operation*> set;
    llvm::SmallVector<mlir::Operation*> work{root};
    while (!work.empty()) {
      mlir::Operation* op = work.pop_back_val();
      for (mlir::Value v : op->getOperands()) {
        auto producer = v.getDefiningOp<mlir::linalg::LinalgOp>();
        if (!producer || producer->getBlock() != root->getBlock() || banned.contains(producer)) continue;
        if (!isRowFusable(producer) || set.contains(producer)) continue;
        set.insert(producer);
        work.push_back(producer);
      }
    }
    bool changed = false;
    for (mlir::Operation* op : set)
      for (mlir::Operation* user : op->getUsers())
        if (user != root.getOperation() && !set.contains(user) && banned.insert(op).second) changed = true;
    if (!changed) return set;
  }
}

/// Iterations of `op` restricted to a slice of its result (loops in the result map take the
/// slice's sizes, the others their full range); nullopt when a size is not static.
std::optional<int64_t> iterationsForSlice(mlir::linalg::LinalgOp op, unsigned resultNumber,
                                          mlir::tensor::ExtractSliceOp slice) {
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  mlir::AffineMap map = op.getIndexingMapMatchingResult(op->getResult(resultNumber));
  const auto sizes = slice.getStaticSizes();
  if (sizes.size() != map.getNumResults()) return std::nullopt;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    auto dim = mlir::dyn_cast<mlir::AffineDimExpr>(map.getResult(i));
    if (!dim) return std::nullopt;
    if (mlir::ShapedType::isDynamic(sizes[i])) return std::nullopt;
    ranges[dim.getPosition()] = sizes[i];
  }
  int64_t n = 1;
  for (int64_t r : ranges) n *= r;
  return n;
}

int64_t product(llvm::ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

/// Tiles `root` over its leading (row) loops and fuses its row producers into the loop, so that a
/// softmax or a norm reads each row from memory at most twice and keeps it in L1/L2 in between.
bool fuseRows(mlir::RewriterBase& rewriter, mlir::linalg::LinalgOp root) {
  if (!isRowFusable(root)) return false;
  const auto iterators = root.getIteratorTypesArray();
  const size_t n = iterators.size();
  if (n < 2) return false;
  for (size_t i = 0; i + 1 < n; ++i)
    if (iterators[i] != mlir::utils::IteratorType::parallel) return false;
  const llvm::SetVector<mlir::Operation*> producers = fusableProducers(root);
  const bool hasRowReduction = llvm::any_of(producers, [](mlir::Operation* op) {
    return isRowReduction(mlir::cast<mlir::linalg::LinalgOp>(op));
  });
  if (!hasRowReduction) return false;

  const llvm::SmallVector<int64_t> ranges = root.getStaticLoopRanges();
  const int64_t rowLength = ranges[n - 1];
  // Rows per tile: the largest divisor of the row count that keeps a tile near kRowTileElements.
  int64_t rows = 1;
  for (int64_t r = std::max<int64_t>(1, kRowTileElements / std::max<int64_t>(rowLength, 1)); r >= 1; --r)
    if (ranges[n - 2] % r == 0) {
      rows = r;
      break;
    }
  llvm::SmallVector<mlir::OpFoldResult> tileSizes;
  llvm::SmallVector<int64_t> tiles;
  for (size_t i = 0; i + 1 < n; ++i) {
    const int64_t t = i + 2 == n ? rows : 1;
    tileSizes.push_back(rewriter.getIndexAttr(t));
    tiles.push_back(ranges[i] / t);
  }
  tileSizes.push_back(rewriter.getIndexAttr(0));
  const int64_t numTiles = product(tiles);
  if (numTiles < 2) return false;

  mlir::scf::SCFTilingOptions tiling;
  tiling.setTileSizes(tileSizes);
  tiling.setLoopType(mlir::scf::SCFTilingOptions::LoopType::ForallOp);
  mlir::scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn([&](mlir::tensor::ExtractSliceOp slice, mlir::OpResult producer,
                                 bool) -> std::optional<mlir::scf::SCFTileAndFuseOptions::ControlFnResult> {
    if (!producers.contains(producer.getOwner())) return std::nullopt;
    auto op = mlir::cast<mlir::linalg::LinalgOp>(producer.getOwner());
    // Only when the tiles partition the producer's work: a column reduction or a broadcast
    // operand would be recomputed by every row tile.
    auto perTile = iterationsForSlice(op, producer.getResultNumber(), slice);
    if (!perTile || *perTile * numTiles > product(op.getStaticLoopRanges())) return std::nullopt;
    return mlir::scf::SCFTileAndFuseOptions::ControlFnResult{};
  });
  rewriter.setInsertionPoint(root);
  auto result = mlir::scf::tileConsumerAndFuseProducersUsingSCF(
      rewriter, mlir::cast<mlir::TilingInterface>(root.getOperation()), options);
  if (mlir::failed(result)) return false;
  for (mlir::Value v : root->getResults()) {
    auto it = result->replacements.find(v);
    if (it != result->replacements.end()) rewriter.replaceAllUsesWith(v, it->second);
  }
  rewriter.eraseOp(root);
  return true;
}

/// linalg-fold-unit-extent-dims, but only on ops directly in the function body: the reshapes
/// it leaves inside loops (scans carry tensor<1xN> iter_args) would make bufferization allocate
/// in the loop. Unit dims of reductions kept with size 1 are what stands between a row
/// reduction and its consumer.
struct FoldUnitDimsPass : mlir::PassWrapper<FoldUnitDimsPass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FoldUnitDimsPass)
  llvm::StringRef getArgument() const final { return "radix-fold-unit-dims"; }
  llvm::StringRef getDescription() const final { return "Radix: unit dims of top-level linalg ops folded"; }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    mlir::func::FuncOp fn = getOperation();
    mlir::RewritePatternSet patterns(&getContext());
    mlir::linalg::ControlDropUnitDims options;
    mlir::Operation* body = fn.getOperation();
    options.controlFn = [body](mlir::Operation* op) -> llvm::SmallVector<unsigned> {
      auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
      if (!generic || op->getParentOp() != body || radix::kernels::isDequantize(op)) return {};
      return llvm::to_vector(llvm::seq<unsigned>(0, generic.getNumLoops()));
    };
    mlir::linalg::populateFoldUnitExtentDimsPatterns(patterns, options);
    if (mlir::failed(mlir::applyPatternsGreedily(fn, std::move(patterns)))) signalPassFailure();
  }
};

struct FuseRowsPass : mlir::PassWrapper<FuseRowsPass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseRowsPass)
  llvm::StringRef getArgument() const final { return "radix-fuse-rows"; }
  llvm::StringRef getDescription() const final { return "Radix: reassociable reductions, row ops fused over rows"; }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::scf::SCFDialect, mlir::tensor::TensorDialect, mlir::affine::AffineDialect,
                    mlir::arith::ArithDialect>();
  }
  void runOnOperation() override {
    mlir::func::FuncOp fn = getOperation();
    markEntryNoalias(fn);
    markReductionsReassociable(fn);
    if (fn.isExternal()) return;
    // Roots last to first: a root takes its producers, which are then dead.
    std::vector<mlir::Operation*> candidates;
    for (mlir::Operation& op : fn.getBody().front())
      if (mlir::isa<mlir::linalg::LinalgOp>(op)) candidates.push_back(&op);
    llvm::DenseSet<mlir::Operation*> gone;
    mlir::IRRewriter rewriter(fn.getContext());
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      mlir::Operation* op = *it;
      if (gone.contains(op) || !op->getBlock()) continue;
      auto root = mlir::cast<mlir::linalg::LinalgOp>(op);
      const llvm::SetVector<mlir::Operation*> producers = fusableProducers(root);
      if (!fuseRows(rewriter, root)) continue;
      gone.insert(op);
      // The fused producers are dead now (every user was in the set): erase them, users first.
      for (mlir::Operation* p : llvm::reverse(producers)) gone.insert(p);
      llvm::DenseSet<mlir::Operation*> erasedOps;
      bool erased = true;
      while (erased) {
        erased = false;
        for (mlir::Operation* p : producers)
          if (!erasedOps.contains(p) && p->getBlock() && p->use_empty()) {
            erasedOps.insert(p);
            rewriter.eraseOp(p);
            erased = true;
          }
      }
    }
  }
};

// ---- row reductions as vector loops ----
//
// LLVM vectorizes an f32 sum once it may reassociate it, but not a NaN-propagating max
// (llvm.maximum), and it versions every loop with run-time alias checks. A linalg.generic that
// reduces its last loop over unit-stride rows becomes, per row: kUnroll vector<VL> accumulators
// over the row, one vector.reduction, a scalar loop for the tail, one store.

constexpr int64_t kUnroll = 4;

struct Combiner {
  mlir::Operation* op = nullptr;  // the body op combining the element into the accumulator
  mlir::Value element;            // its other operand
  mlir::vector::CombiningKind kind;
  double identity = 0;
};

std::optional<Combiner> matchCombiner(mlir::linalg::GenericOp op) {
  mlir::Block& body = op.getRegion().front();
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1) return std::nullopt;
  mlir::BlockArgument acc = body.getArguments().back();
  if (!acc.hasOneUse()) return std::nullopt;
  mlir::Operation* c = yield.getOperand(0).getDefiningOp();
  if (!c || c->getBlock() != &body || c->getNumOperands() != 2 || *acc.getUsers().begin() != c) return std::nullopt;
  Combiner out;
  out.op = c;
  out.element = c->getOperand(0) == acc ? c->getOperand(1) : c->getOperand(0);
  if (out.element == acc) return std::nullopt;
  const double inf = std::numeric_limits<double>::infinity();
  using K = mlir::vector::CombiningKind;
  if (mlir::isa<mlir::arith::AddFOp>(c)) out.kind = K::ADD, out.identity = 0;
  else if (mlir::isa<mlir::arith::MulFOp>(c)) out.kind = K::MUL, out.identity = 1;
  else if (mlir::isa<mlir::arith::MaximumFOp>(c)) out.kind = K::MAXIMUMF, out.identity = -inf;
  else if (mlir::isa<mlir::arith::MinimumFOp>(c)) out.kind = K::MINIMUMF, out.identity = inf;
  else if (mlir::isa<mlir::arith::MaxNumFOp>(c)) out.kind = K::MAXNUMF, out.identity = -inf;
  else if (mlir::isa<mlir::arith::MinNumFOp>(c)) out.kind = K::MINNUMF, out.identity = inf;
  else return std::nullopt;
  return out;
}

bool isVectorizableBodyOp(mlir::Operation& op) {
  if (op.getNumRegions() != 0 || op.getNumResults() != 1) return false;
  if (!mlir::isa<mlir::arith::ArithDialect, mlir::math::MathDialect>(op.getDialect())) return false;
  if (mlir::isa<mlir::arith::ConstantOp>(op)) return true;
  if (!op.hasTrait<mlir::OpTrait::Elementwise>()) return false;
  for (mlir::Type t : op.getOperandTypes())
    if (!t.isIntOrFloat()) return false;
  return op.getResult(0).getType().isIntOrFloat();
}

/// The memref's strides when static, with unit stride on the last dimension.
bool unitInnerStride(mlir::Value memref) {
  auto type = mlir::dyn_cast<mlir::MemRefType>(memref.getType());
  if (!type || type.getRank() == 0) return false;
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(type.getStridesAndOffset(strides, offset))) return false;
  return strides.back() == 1;
}

/// Inputs of a row tile's op mapped to the same rows of the next tile (nextTiles).
using NextTiles = llvm::DenseMap<mlir::Value, mlir::Value>;

/// Rewrites `op` (buffer semantics) into vector loops; false when it does not have the form.
/// Each vector load of an input in `prefetch` is preceded by a prefetch of its next-tile twin.
bool vectorizeRowReduction(mlir::RewriterBase& rewriter, mlir::linalg::GenericOp op, bool parallelRows,
                           const NextTiles& prefetch = NextTiles()) {
  if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() > 1) return false;
  const bool reduction = op.getNumReductionLoops() == 1;
  const auto iterators = op.getIteratorTypesArray();
  const size_t n = iterators.size();
  if (n == 0 || (reduction && (iterators.back() != mlir::utils::IteratorType::reduction || op.getNumDpsInits() != 1)))
    return false;
  const llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (int64_t r : ranges)
    if (mlir::ShapedType::isDynamic(r)) return false;
  const int64_t length = ranges.back();
  std::optional<Combiner> combiner;
  if (reduction && !(combiner = matchCombiner(op))) return false;
  mlir::Block& body = op.getRegion().front();
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  int64_t lanes = 16;
  for (mlir::BlockArgument arg : body.getArguments()) {
    mlir::Type t = arg.getType();
    if (t.isF64()) lanes = 8;
    else if (!t.isF32() && !t.isBF16() && !t.isF16()) return false;
  }
  if (!reduction)
    for (unsigned k = 0; k < op.getNumDpsInits(); ++k)
      if (!op.getMatchingBlockArgument(op.getDpsInitOperand(k)).use_empty()) return false;
  if (length < lanes) return false;
  for (mlir::Operation& inner : body.without_terminator())
    if (!isVectorizableBodyOp(inner)) return false;
  // Inputs (and a map's outputs) indexed by the last loop have it last, with unit stride; a
  // reduction's output not at all.
  const auto maps = op.getIndexingMapsArray();
  const unsigned last = static_cast<unsigned>(n - 1);
  const size_t numInputs = op.getNumDpsInputs();
  for (size_t k = 0; k < maps.size(); ++k) {
    mlir::AffineMap map = maps[k];
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      auto e = map.getResult(r);
      auto dim = mlir::dyn_cast<mlir::AffineDimExpr>(e);
      auto cst = mlir::dyn_cast<mlir::AffineConstantExpr>(e);
      if (!dim && !(cst && cst.getValue() == 0)) return false;
      if (dim && dim.getPosition() == last && (r + 1 != map.getNumResults() || (reduction && k >= numInputs))) return false;
    }
    if (k >= numInputs && !reduction && !map.isFunctionOfDim(last)) return false;
    if (map.isFunctionOfDim(last) && !unitInnerStride(op->getOperand(k))) return false;
  }

  const mlir::Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto index = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(rewriter, loc, v).getResult(); };
  mlir::Value zero = index(0), one = index(1);
  const int64_t unroll = std::clamp<int64_t>(length / lanes, 1, reduction ? kUnroll : 2);
  const int64_t step = lanes * unroll, mainEnd = length / step * step;
  auto vectorType = [&](mlir::Type t) { return mlir::VectorType::get({lanes}, t); };
  const auto reassoc = mlir::arith::FastMathFlags::reassoc;
  mlir::Operation* stopAt = reduction ? combiner->op : yield.getOperation();

  auto emitRow = [&](mlir::OpBuilder& b, mlir::ValueRange rowIvs) {
    auto indicesFor = [&](mlir::AffineMap map, mlir::Value j) {
      llvm::SmallVector<mlir::Value> idx;
      for (mlir::AffineExpr e : map.getResults()) {
        if (auto dim = mlir::dyn_cast<mlir::AffineDimExpr>(e))
          idx.push_back(dim.getPosition() == last ? j : rowIvs[dim.getPosition()]);
        else
          idx.push_back(zero);
      }
      return idx;
    };
    // Row-invariant inputs (broadcast along the row): one scalar load per row.
    llvm::SmallVector<mlir::Value> invariant(numInputs);
    for (unsigned k = 0; k < numInputs; ++k)
      if (!maps[k].isFunctionOfDim(last))
        invariant[k] = mlir::memref::LoadOp::create(b, loc, op->getOperand(k), indicesFor(maps[k], zero));
    // Clones the body for one vector (vector=true) or one element; returns the value mapping.
    auto cloneBody = [&](mlir::OpBuilder& bb, mlir::Value j, bool vector) {
      mlir::IRMapping map;
      auto splat = [&](mlir::Value scalar) -> mlir::Value {
        return mlir::vector::BroadcastOp::create(bb, loc, vectorType(scalar.getType()), scalar);
      };
      for (unsigned k = 0; k < numInputs; ++k) {
        mlir::Value v;
        if (invariant[k]) v = vector ? splat(invariant[k]) : invariant[k];
        else if (vector) {
          if (auto next = prefetch.find(op->getOperand(k)); next != prefetch.end())
            mlir::memref::PrefetchOp::create(bb, loc, next->second, indicesFor(maps[k], j), /*isWrite=*/false,
                                             /*localityHint=*/3, /*isDataCache=*/true);
          v = mlir::vector::LoadOp::create(bb, loc, vectorType(body.getArgument(k).getType()), op->getOperand(k),
                                           indicesFor(maps[k], j));
        } else
          v = mlir::memref::LoadOp::create(bb, loc, op->getOperand(k), indicesFor(maps[k], j));
        map.map(body.getArgument(k), v);
      }
      for (mlir::Operation& inner : body.without_terminator()) {
        if (&inner == stopAt) break;
        for (mlir::Value operand : inner.getOperands())
          if (!map.contains(operand) && operand.getParentBlock() != &body)
            map.map(operand, vector ? splat(operand) : operand);
        if (!vector || mlir::isa<mlir::arith::ConstantOp>(inner)) {
          mlir::Operation* c = bb.clone(inner, map);
          if (vector && mlir::isa<mlir::arith::ConstantOp>(inner)) map.map(inner.getResult(0), splat(c->getResult(0)));
          continue;
        }
        mlir::OperationState state(loc, inner.getName());
        for (mlir::Value operand : inner.getOperands()) state.operands.push_back(map.lookup(operand));
        state.types.push_back(vectorType(inner.getResult(0).getType()));
        state.attributes = inner.getAttrs();
        map.map(inner.getResult(0), bb.create(state)->getResult(0));
      }
      return map;
    };
    auto valueOf = [&](mlir::OpBuilder& bb, mlir::IRMapping& map, mlir::Value v, bool vector) -> mlir::Value {
      if (map.contains(v)) return map.lookup(v);
      return vector ? mlir::vector::BroadcastOp::create(bb, loc, vectorType(v.getType()), v).getResult() : v;
    };

    if (!reduction) {  // a map: store each yielded value
      auto store = [&](mlir::OpBuilder& bb, mlir::Value j, bool vector) {
        mlir::IRMapping map = cloneBody(bb, j, vector);
        for (unsigned k = 0; k < op.getNumDpsInits(); ++k) {
          mlir::Value v = valueOf(bb, map, yield.getOperand(k), vector);
          mlir::Value out = op.getDpsInits()[k];
          auto idx = indicesFor(maps[numInputs + k], j);
          if (vector) mlir::vector::StoreOp::create(bb, loc, v, out, idx);
          else mlir::memref::StoreOp::create(bb, loc, v, out, idx);
        }
      };
      mlir::scf::ForOp::create(b, loc, zero, index(mainEnd), index(step), mlir::ValueRange{},
                               [&](mlir::OpBuilder& lb, mlir::Location, mlir::Value j, mlir::ValueRange) {
                                 for (int64_t u = 0; u < unroll; ++u)
                                   store(lb, u == 0 ? j : mlir::arith::AddIOp::create(lb, loc, j, index(u * lanes)).getResult(), true);
                                 mlir::scf::YieldOp::create(lb, loc);
                               });
      if (mainEnd < length)
        mlir::scf::ForOp::create(b, loc, index(mainEnd), index(length), one, mlir::ValueRange{},
                                 [&](mlir::OpBuilder& lb, mlir::Location, mlir::Value j, mlir::ValueRange) {
                                   store(lb, j, false);
                                   mlir::scf::YieldOp::create(lb, loc);
                                 });
      return;
    }
    auto combine = [&](mlir::OpBuilder& bb, mlir::Value element, mlir::Value acc) {
      mlir::OperationState state(loc, combiner->op->getName());
      state.operands = {element, acc};
      state.types.push_back(acc.getType());
      state.attributes = combiner->op->getAttrs();
      return bb.create(state)->getResult(0);
    };
    auto element = [&](mlir::OpBuilder& bb, mlir::Value j, bool vector) {
      mlir::IRMapping map = cloneBody(bb, j, vector);
      return valueOf(bb, map, combiner->element, vector);
    };
    mlir::Type accType = body.getArguments().back().getType();
    mlir::Value identity = mlir::arith::ConstantOp::create(
        b, loc, mlir::DenseElementsAttr::get(vectorType(accType), b.getFloatAttr(accType, combiner->identity)));
    llvm::SmallVector<mlir::Value> inits(unroll, identity);
    auto mainLoop = mlir::scf::ForOp::create(
        b, loc, zero, index(mainEnd), index(step), inits,
        [&](mlir::OpBuilder& lb, mlir::Location, mlir::Value j, mlir::ValueRange accs) {
          llvm::SmallVector<mlir::Value> next;
          for (int64_t u = 0; u < unroll; ++u) {
            mlir::Value ju = u == 0 ? j : mlir::arith::AddIOp::create(lb, loc, j, index(u * lanes)).getResult();
            next.push_back(combine(lb, element(lb, ju, true), accs[u]));
          }
          mlir::scf::YieldOp::create(lb, loc, next);
        });
    mlir::Value v = mainLoop.getResult(0);
    for (int64_t u = 1; u < unroll; ++u) v = combine(b, mainLoop.getResult(static_cast<unsigned>(u)), v);
    llvm::SmallVector<mlir::Value> outIndices = indicesFor(maps.back(), zero);
    mlir::Value init = mlir::memref::LoadOp::create(b, loc, op.getDpsInits()[0], outIndices);
    mlir::Value acc = mlir::vector::ReductionOp::create(b, loc, combiner->kind, v, init, reassoc);
    if (mainEnd < length) {
      auto tail = mlir::scf::ForOp::create(
          b, loc, index(mainEnd), index(length), one, mlir::ValueRange{acc},
          [&](mlir::OpBuilder& lb, mlir::Location, mlir::Value j, mlir::ValueRange a) {
            mlir::scf::YieldOp::create(lb, loc, combine(lb, element(lb, j, false), a[0]));
          });
      acc = tail.getResult(0);
    }
    mlir::memref::StoreOp::create(b, loc, acc, op.getDpsInits()[0], outIndices);
  };

  llvm::SmallVector<mlir::Value> lbs, ubs, steps;
  for (size_t i = 0; i + 1 < n; ++i) lbs.push_back(zero), ubs.push_back(index(ranges[i])), steps.push_back(one);
  if (lbs.empty()) {
    emitRow(rewriter, {});
  } else if (parallelRows) {
    mlir::scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps,
                                  [&](mlir::OpBuilder& b, mlir::Location, mlir::ValueRange ivs) { emitRow(b, ivs); });
  } else {
    mlir::scf::buildLoopNest(rewriter, loc, lbs, ubs, steps,
                             [&](mlir::OpBuilder& b, mlir::Location, mlir::ValueRange ivs) { emitRow(b, ivs); });
  }
  rewriter.eraseOp(op);
  return true;
}

// The inputs of `op` that are row tiles (subviews at the loop's index) of buffers from outside
// its scf.forall, each mapped to the same subview one tile further (the last tile: itself).
// Prefetching those while `op` computes hides the memory latency of the next tile's first pass,
// which otherwise waits on memory with little to compute (softmax's max): given to the tile's
// first op with math in it (softmax's exp), whose work covers the prefetches.
NextTiles nextTiles(mlir::RewriterBase& rewriter, mlir::linalg::GenericOp op) {
  auto loop = op->getParentOfType<mlir::scf::ForallOp>();
  if (!loop || loop.getRank() != 1 || op->getParentOp() != loop.getOperation()) return NextTiles();
  const std::optional<int64_t> lb = mlir::getConstantIntValue(loop.getMixedLowerBound()[0]),
                               ub = mlir::getConstantIntValue(loop.getMixedUpperBound()[0]),
                               step = mlir::getConstantIntValue(loop.getMixedStep()[0]);
  if (!lb || !ub || !step || *step <= 0 || *ub - *lb < 2 * *step || (*ub - *lb) % *step != 0) return NextTiles();
  const mlir::Value iv = loop.getInductionVars()[0];
  NextTiles out;
  for (mlir::OpOperand* input : op.getDpsInputOperands()) {
    auto tile = input->get().getDefiningOp<mlir::memref::SubViewOp>();
    if (!tile || tile->getParentOp() != loop.getOperation() || loop->isAncestor(tile.getSource().getParentBlock()->getParentOp()))
      continue;
    if (out.count(input->get()) || !llvm::is_contained(tile.getOffsets(), iv)) continue;
    rewriter.setInsertionPointAfter(tile);
    const mlir::Location loc = tile.getLoc();
    auto index = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(rewriter, loc, v).getResult(); };
    mlir::Value next = mlir::arith::AddIOp::create(rewriter, loc, iv, index(*step));
    next = mlir::arith::MinSIOp::create(rewriter, loc, next, index(*ub - *step));
    mlir::IRMapping map;
    map.map(iv, next);
    out[input->get()] = rewriter.clone(*tile, map)->getResult(0);
  }
  return out;
}

bool hasMath(mlir::linalg::GenericOp op) {
  for (mlir::Operation& inner : op.getRegion().front())
    if (mlir::isa<mlir::math::MathDialect>(inner.getDialect())) return true;
  return false;
}

// With threads, linalg ops of only parallel loops outside row loops (maps, fills, copies) become
// loop nests here: one scf.parallel (OpenMP) over the outermost loop of at least 8 iterations,
// serial scf.for inside it that LLVM vectorizes; ops under kMinParallelRowIterations stay
// serial. convert-linalg-to-parallel-loops made one OpenMP loop over every dim instead, with
// the element's indices recomputed by division each iteration: 2 threads ran a bf16
// convolution's truncf slower than 1.
void lowerMapsForThreads(mlir::IRRewriter& rewriter, mlir::func::FuncOp fn) {
  std::vector<mlir::linalg::LinalgOp> maps;
  fn.walk([&](mlir::linalg::LinalgOp op) {
    if (op->getParentOfType<mlir::scf::ForallOp>() || op->getParentOfType<mlir::scf::ParallelOp>()) return;
    if (op.getNumLoops() == 0 || op.getNumLoops() != op.getNumParallelLoops() || !op.hasPureBufferSemantics()) return;
    for (int64_t r : op.getStaticLoopRanges())
      if (mlir::ShapedType::isDynamic(r)) return;
    maps.push_back(op);
  });
  for (mlir::linalg::LinalgOp op : maps) {
    int64_t iterations = 1;
    const llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (int64_t r : ranges) iterations *= r;
    rewriter.setInsertionPoint(op);
    mlir::FailureOr<mlir::linalg::LinalgLoops> loops = mlir::linalg::linalgOpToLoops(rewriter, op);
    if (mlir::failed(loops)) continue;
    rewriter.eraseOp(op);
    if (iterations < kMinParallelRowIterations) continue;
    for (size_t d = 0; d < loops->size() && d < ranges.size(); ++d) {
      if (ranges[d] < 8) continue;
      auto loop = mlir::dyn_cast<mlir::scf::ForOp>((*loops)[d]);
      if (!loop || loop.getNumResults() != 0) break;
      rewriter.setInsertionPoint(loop);
      auto par = mlir::scf::ParallelOp::create(rewriter, loop.getLoc(), mlir::ValueRange{loop.getLowerBound()},
                                               mlir::ValueRange{loop.getUpperBound()}, mlir::ValueRange{loop.getStep()});
      rewriter.eraseOp(loop.getBody()->getTerminator());
      rewriter.inlineBlockBefore(loop.getBody(), par.getBody()->getTerminator(), par.getInductionVars());
      rewriter.eraseOp(loop);
      break;
    }
  }
}

// A row loop's temporaries (softmax's exponentials of a row) without a malloc and a free per
// row: static allocations of the body freed in it move before the loop when its rows run in
// order, and become allocas when they run in parallel (convert-scf-to-openmp scopes each
// iteration's stack).
void hoistRowTemporaries(mlir::IRRewriter& rewriter, mlir::scf::ForallOp loop, bool parallel) {
  constexpr int64_t kRowStackBytes = 64 * 1024;
  mlir::Block& body = *loop.getBody();
  std::vector<std::pair<mlir::memref::AllocOp, mlir::memref::DeallocOp>> temporaries;
  for (mlir::memref::AllocOp alloc : body.getOps<mlir::memref::AllocOp>()) {
    const mlir::MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat() ||
        (parallel && type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8) > kRowStackBytes))
      continue;
    mlir::memref::DeallocOp dealloc;
    for (mlir::Operation* user : alloc->getUsers())
      if (auto d = mlir::dyn_cast<mlir::memref::DeallocOp>(user); d && d->getBlock() == &body) dealloc = d;
    if (dealloc) temporaries.emplace_back(alloc, dealloc);
  }
  for (auto [alloc, dealloc] : temporaries) {
    if (parallel) {
      rewriter.setInsertionPoint(alloc);
      rewriter.replaceOpWithNewOp<mlir::memref::AllocaOp>(alloc, alloc.getType(), alloc.getAlignmentAttr());
      rewriter.eraseOp(dealloc);
    } else {
      alloc->moveBefore(loop);
      dealloc->moveAfter(loop);
    }
  }
}

struct LowerRowsPass : mlir::PassWrapper<LowerRowsPass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerRowsPass)
  LowerRowsPass() = default;
  LowerRowsPass(const LowerRowsPass& other) : PassWrapper(other) {}
  llvm::StringRef getArgument() const final { return "radix-lower-rows"; }
  llvm::StringRef getDescription() const final { return "Radix: row loops to scf.for/scf.parallel, entry noalias"; }
  Option<bool> parallel{*this, "parallel", llvm::cl::desc("row loops become scf.parallel (OpenMP)"),
                        llvm::cl::init(false)};
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::scf::SCFDialect, mlir::memref::MemRefDialect, mlir::affine::AffineDialect,
                    mlir::arith::ArithDialect>();
  }
  void runOnOperation() override {
    mlir::func::FuncOp fn = getOperation();
    mlir::Builder b(fn.getContext());
    if (fn.getSymName() == kEntry) {
      auto fresh = fn->getAttrOfType<mlir::IntegerAttr>(kFreshOutputsAttr);
      for (unsigned a = 0; a < fn.getNumArguments(); ++a) {
        const bool mark = fn.getArgAttr(a, "radix.noalias") || (fresh && a >= fresh.getInt());
        fn.removeArgAttr(a, "radix.noalias");
        if (mark && mlir::isa<mlir::MemRefType>(fn.getArgument(a).getType()))
          fn.setArgAttr(a, "llvm.noalias", b.getUnitAttr());
      }
      fn->removeAttr(kFreshOutputsAttr);
    }
    mlir::IRRewriter rewriter(fn.getContext());
    lowerStridedCopies(fn);
    std::vector<mlir::linalg::GenericOp> reductions;
    fn.walk([&](mlir::linalg::GenericOp op) { reductions.push_back(op); });
    std::set<mlir::Operation*> prefetched;  // row loops whose next tile is prefetched already
    for (mlir::linalg::GenericOp op : reductions) {
      const bool nested = op->getParentOfType<mlir::scf::ForallOp>() || op->getParentOfType<mlir::scf::ParallelOp>();
      int64_t iterations = 1;
      for (int64_t r : op.getStaticLoopRanges()) iterations *= r;
      // Maps outside row loops are left to LLVM's loop vectorizer (with threads they become
      // OpenMP loops over every parallel dim); reductions are done here everywhere.
      if (op.getNumReductionLoops() == 0 && !nested) continue;
      NextTiles next;
      if (auto loop = op->getParentOfType<mlir::scf::ForallOp>(); loop && hasMath(op) && prefetched.insert(loop).second)
        next = nextTiles(rewriter, op);
      vectorizeRowReduction(rewriter, op, parallel && !nested && iterations >= kMinParallelRowIterations, next);
    }
    if (parallel) lowerMapsForThreads(rewriter, fn);
    std::vector<mlir::scf::ForallOp> loops;
    fn.walk([&](mlir::scf::ForallOp loop) { loops.push_back(loop); });
    for (mlir::scf::ForallOp loop : loops) {
      hoistRowTemporaries(rewriter, loop, parallel);
      // The body runs serially within one row tile.
      std::vector<mlir::linalg::LinalgOp> inner;
      loop.walk([&](mlir::linalg::LinalgOp op) { inner.push_back(op); });
      for (mlir::linalg::LinalgOp op : inner) {
        rewriter.setInsertionPoint(op);
        if (mlir::succeeded(mlir::linalg::linalgOpToLoops(rewriter, op))) rewriter.eraseOp(op);
      }
      rewriter.setInsertionPoint(loop);
      if (loop.getOutputs().empty() &&
          mlir::succeeded(parallel ? mlir::scf::forallToParallelLoop(rewriter, loop)
                                   : mlir::scf::forallToForLoop(rewriter, loop)))
        continue;
      loop.emitError("radix-lower-rows: cannot lower this scf.forall");
      return signalPassFailure();
    }
  }
};

/// math.fma -> mulf + addf with `contract`: LLVM fuses them on CPUs with FMA and keeps them
/// apart elsewhere (a vector llvm.fma on baseline x86-64 would be one libm fmaf call per lane).
struct FmaToMulAdd : mlir::OpRewritePattern<mlir::math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::math::FmaOp op, mlir::PatternRewriter& rewriter) const override {
    auto contract = mlir::arith::FastMathFlagsAttr::get(op.getContext(), mlir::arith::FastMathFlags::contract);
    mlir::Value product = mlir::arith::MulFOp::create(rewriter, op.getLoc(), op.getA(), op.getB(), contract);
    rewriter.replaceOpWithNewOp<mlir::arith::AddFOp>(op, product, op.getC(), contract);
    return mlir::success();
  }
};

struct MathApproxPass : mlir::PassWrapper<MathApproxPass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MathApproxPass)
  llvm::StringRef getArgument() const final { return "radix-math-approx"; }
  llvm::StringRef getDescription() const final { return "Radix: f32 math as polynomials (no libm calls)"; }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::vector::VectorDialect>();
  }
  void runOnOperation() override {
    mlir::MLIRContext* ctx = &getContext();
    scaleSubnormalLogs(getOperation());
    mlir::RewritePatternSet patterns(ctx);
    // Only the functions whose error is measured and bounded (tests/math_approx_test.cpp):
    // MLIR's sin/cos lose all digits beyond |x| ~ 1e4 (and near 0), and Radix emits no other
    // math op the patterns cover (expm1, log1p, sigmoid and GELU are composites of these).
    auto which = [](llvm::StringRef name) {
      return name == "math.exp" || name == "math.log" || name == "math.tanh" || name == "math.erf";
    };
    mlir::populateMathPolynomialApproximationPatterns(patterns, which);
    patterns.add<FmaToMulAdd>(ctx);
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }

  /// The log polynomial reads the exponent field, which is wrong for subnormal x: those are
  /// scaled by 2^24 first, and 24 ln 2 is taken off the result.
  static void scaleSubnormalLogs(mlir::func::FuncOp fn) {
    std::vector<mlir::math::LogOp> logs;
    fn.walk([&](mlir::math::LogOp op) {
      if (mlir::getElementTypeOrSelf(op.getType()).isF32()) logs.push_back(op);
    });
    for (mlir::math::LogOp op : logs) {
      mlir::OpBuilder b(op);
      const mlir::Location loc = op.getLoc();
      mlir::Type type = op.getType();
      auto constant = [&](double v) -> mlir::Value {
        mlir::TypedAttr attr = b.getF32FloatAttr(static_cast<float>(v));
        if (auto vt = mlir::dyn_cast<mlir::VectorType>(type)) attr = mlir::DenseElementsAttr::get(vt, attr);
        return mlir::arith::ConstantOp::create(b, loc, attr);
      };
      mlir::Value x = op.getOperand();
      mlir::Value tiny = mlir::arith::CmpFOp::create(b, loc, mlir::arith::CmpFPredicate::OLT, x,
                                                     constant(std::numeric_limits<float>::min()));
      mlir::Value scaled = mlir::arith::SelectOp::create(
          b, loc, tiny, mlir::arith::MulFOp::create(b, loc, x, constant(16777216.0)), x);
      mlir::Value log = mlir::math::LogOp::create(b, loc, scaled, op.getFastmathAttr());
      mlir::Value shift = mlir::arith::SelectOp::create(b, loc, tiny, constant(24 * std::log(2.0)), constant(0));
      op.replaceAllUsesWith(mlir::arith::SubFOp::create(b, loc, log, shift).getResult());
      op.erase();
    }
  }
};

}  // namespace

void lowerStridedCopies(mlir::Operation* root) {
  std::vector<mlir::memref::CopyOp> copies;
  root->walk([&](mlir::memref::CopyOp op) { copies.push_back(op); });
  mlir::IRRewriter rewriter(root->getContext());
  for (mlir::memref::CopyOp op : copies) {
    auto from = mlir::dyn_cast<mlir::MemRefType>(op.getSource().getType());
    auto to = mlir::dyn_cast<mlir::MemRefType>(op.getTarget().getType());
    if (!from || !to || !from.hasStaticShape() ||
        (mlir::memref::isStaticShapeAndContiguousRowMajor(from) && mlir::memref::isStaticShapeAndContiguousRowMajor(to)))
      continue;
    rewriter.setInsertionPoint(op);
    mlir::linalg::CopyOp::create(rewriter, op.getLoc(), op.getSource(), op.getTarget());
    rewriter.eraseOp(op);
  }
}

void registerFastEwisePasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::PassRegistration<FoldUnitDimsPass>();
    mlir::PassRegistration<FuseRowsPass>();
    mlir::PassRegistration<LowerRowsPass>();
    mlir::PassRegistration<MathApproxPass>();
  });
}

}  // namespace radix::detail
