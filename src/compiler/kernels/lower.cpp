// Recognises contractions after bufferization and replaces them with kernel calls. A
// contraction is a linalg.generic whose body is acc + ext(a) * ext(b) over projected-permutation
// maps (as dotGeneral emits it, with converts of its operands fused in); its loops are grouped
// into (batch, M, N, K) by which operands they index, each group collapsed to one strided dim
// where the strides allow it and looped around the call (scf.for) where they do not.
#include "compiler/kernels/lower.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <vector>

#include "compiler/kernels/kernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"

namespace radix::kernels {

namespace {

constexpr const char* kKernelSymbol = "radix_kernel_contract";

std::unique_ptr<llvm::MCSubtargetInfo> subtargetOf(const KernelTarget& t) {
  std::string error;
  const llvm::Triple triple(t.triple);
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target || triple.getArch() != llvm::Triple::x86_64) return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, t.cpu, t.features));
}

}  // namespace

Isa isaOf(const KernelTarget& t) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = subtargetOf(t);
  if (!info) return Isa::x86_64;
  if (info->checkFeatures("+avx512f,+avx512bw,+avx512vl,+avx512dq,+fma,+f16c")) {
    if (!info->checkFeatures("+avx512bf16")) return Isa::avx512;
    return info->checkFeatures("+amx-tile,+amx-bf16") ? Isa::amx : Isa::avx512bf16;
  }
  if (info->checkFeatures("+avx2,+fma,+f16c")) return Isa::avx2;
  return Isa::x86_64;
}

std::optional<std::vector<int64_t>> staticStrides(mlir::Value memref) {
  auto type = mlir::dyn_cast<mlir::MemRefType>(memref.getType());
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (!type || !type.hasStaticShape() || mlir::failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, mlir::ShapedType::isDynamic))
    return std::nullopt;
  return std::vector<int64_t>(strides.begin(), strides.end());
}

std::optional<Elem> elemOf(mlir::Type t) {
  if (t.isF32()) return Elem::f32;
  if (t.isF16()) return Elem::f16;
  if (t.isBF16()) return Elem::bf16;
  return std::nullopt;
}

namespace {

// The block argument `v` is (maybe through one extf to f32).
mlir::BlockArgument widened(mlir::Value v) {
  if (auto ext = v.getDefiningOp<mlir::arith::ExtFOp>()) v = ext.getIn();
  return mlir::dyn_cast<mlir::BlockArgument>(v);
}

// Body: yield(addf(acc, mulf(ext(a), ext(b)))) in any operand order.
bool isMulAddBody(mlir::linalg::GenericOp op) {
  mlir::Block& body = op.getRegion().front();
  if (body.getOperations().size() > 6) return false;
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1) return false;
  auto add = yield.getOperand(0).getDefiningOp<mlir::arith::AddFOp>();
  if (!add) return false;
  mlir::Value acc = body.getArgument(2);
  mlir::Value product = add.getLhs() == acc ? add.getRhs() : add.getRhs() == acc ? add.getLhs() : mlir::Value();
  auto mul = product ? product.getDefiningOp<mlir::arith::MulFOp>() : nullptr;
  if (!mul || !mul->hasOneUse()) return false;
  mlir::BlockArgument x = widened(mul.getLhs()), y = widened(mul.getRhs());
  if (!x || !y || x.getOwner() != &body || y.getOwner() != &body) return false;
  if (!((x.getArgNumber() == 0 && y.getArgNumber() == 1) || (x.getArgNumber() == 1 && y.getArgNumber() == 0)))
    return false;
  // Nothing else in the body (each op counted: ext, ext, mul, add, yield).
  for (mlir::Operation& o : body.without_terminator())
    if (!mlir::isa<mlir::arith::ExtFOp, mlir::arith::MulFOp, mlir::arith::AddFOp>(o)) return false;
  return true;
}

// Body: yield(addi(acc, muli(ext(a), ext(b)))), exts from i8 to i32 (extsi: i8, extui: u8), in any
// operand order: the Elems of operands 0 and 1.
std::optional<std::pair<Elem, Elem>> byteMulAddTypes(mlir::linalg::GenericOp op) {
  mlir::Block& body = op.getRegion().front();
  if (body.getOperations().size() != 5 || !body.getArgument(2).getType().isInteger(32)) return std::nullopt;
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  auto add = yield.getNumOperands() == 1 ? yield.getOperand(0).getDefiningOp<mlir::arith::AddIOp>() : nullptr;
  if (!add) return std::nullopt;
  mlir::Value acc = body.getArgument(2);
  mlir::Value product = add.getLhs() == acc ? add.getRhs() : add.getRhs() == acc ? add.getLhs() : mlir::Value();
  auto mul = product ? product.getDefiningOp<mlir::arith::MulIOp>() : nullptr;
  if (!mul || !mul->hasOneUse()) return std::nullopt;
  Elem types[2];
  bool seen[2] = {false, false};
  for (mlir::Value v : {mul.getLhs(), mul.getRhs()}) {
    mlir::Operation* ext = v.getDefiningOp();
    if (!mlir::isa_and_nonnull<mlir::arith::ExtSIOp, mlir::arith::ExtUIOp>(ext) ||
        !ext->getOperand(0).getType().isInteger(8))
      return std::nullopt;
    auto arg = mlir::dyn_cast<mlir::BlockArgument>(ext->getOperand(0));
    if (!arg || arg.getOwner() != &body || arg.getArgNumber() > 1 || seen[arg.getArgNumber()] || !arg.hasOneUse())
      return std::nullopt;
    seen[arg.getArgNumber()] = true;
    types[arg.getArgNumber()] = mlir::isa<mlir::arith::ExtSIOp>(ext) ? Elem::i8 : Elem::u8;
  }
  return std::make_pair(types[0], types[1]);
}

using Dim = ContractionDim;

// Merges dims of one group into as few strided dims as their strides allow, largest first.
std::vector<Dim> collapse(std::vector<Dim> dims, int key) {
  std::sort(dims.begin(), dims.end(), [&](const Dim& a, const Dim& b) { return a.s[key] > b.s[key]; });
  std::vector<Dim> out;
  for (const Dim& d : dims) {
    if (!out.empty()) {
      Dim& o = out.back();
      bool ok = true;
      for (int x = 0; x < 3; ++x) ok = ok && o.s[x] == d.s[x] * d.size;
      if (ok) {
        o.size *= d.size;
        for (int x = 0; x < 3; ++x) o.s[x] = d.s[x];
        continue;
      }
    }
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [](const Dim& a, const Dim& b) { return a.size > b.size; });
  return out;
}

using Plan = ContractionPlan;

std::optional<Plan> planFor(mlir::linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) return std::nullopt;
  const std::optional<std::pair<Elem, Elem>> bytes = byteMulAddTypes(op);
  if (!bytes && !isMulAddBody(op)) return std::nullopt;
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
  std::optional<Elem> ea, eb;
  if (bytes) {
    if (!types[2].getElementType().isInteger(32)) return std::nullopt;
    ea = bytes->first, eb = bytes->second;
  } else {
    if (!types[2].getElementType().isF32()) return std::nullopt;
    // Operand element types: as stored (the body widens them with extf) or f32.
    mlir::Block& body = op.getRegion().front();
    ea = elemOf(types[0].getElementType()), eb = elemOf(types[1].getElementType());
    if (!ea || !eb) return std::nullopt;
    for (int x = 0; x < 2; ++x) {
      mlir::Type stored = types[x].getElementType();
      for (mlir::Operation* user : body.getArgument(x).getUsers())
        if (!mlir::isa<mlir::arith::ExtFOp>(user) && !stored.isF32()) return std::nullopt;
    }
  }
  const auto maps = op.getIndexingMapsArray();
  const auto ranges = op.getStaticLoopRanges();
  const auto iterators = op.getIteratorTypesArray();
  std::vector<Dim> loops(ranges.size());
  for (size_t d = 0; d < ranges.size(); ++d) {
    if (mlir::ShapedType::isDynamic(ranges[d]) || ranges[d] <= 0) return std::nullopt;
    loops[d].size = ranges[d];
  }
  for (int x = 0; x < 3; ++x) {
    if (!maps[x].isProjectedPermutation()) return std::nullopt;
    for (unsigned r = 0; r < maps[x].getNumResults(); ++r)
      loops[maps[x].getDimPosition(r)].s[x] = strides[x][r];
  }
  std::vector<Dim> groups[4];  // batch, m, n, k
  for (size_t d = 0; d < loops.size(); ++d) {
    const Dim& l = loops[d];
    if (l.size == 1) continue;
    if (iterators[d] == mlir::utils::IteratorType::reduction) {
      if (l.s[2] != 0) return std::nullopt;
      groups[3].push_back(l);
    } else if (l.s[2] == 0) {
      return std::nullopt;  // a parallel loop the result does not index
    } else if (l.s[0] != 0 && l.s[1] == 0) {
      groups[1].push_back(l);
    } else if (l.s[0] == 0 && l.s[1] != 0) {
      groups[2].push_back(l);
    } else {
      groups[0].push_back(l);
    }
  }
  Plan plan{*ea, *eb, {}, {}, {}, {}, {}};
  Dim* slots[4] = {&plan.batch, &plan.m, &plan.n, &plan.k};
  const int keys[4] = {2, 2, 2, 0};
  for (int g = 0; g < 4; ++g) {
    std::vector<Dim> merged = collapse(groups[g], keys[g]);
    if (merged.empty()) continue;
    *slots[g] = merged.front();
    plan.loops.insert(plan.loops.end(), merged.begin() + 1, merged.end());
  }
  return plan;
}

void emitCall(mlir::linalg::GenericOp op, const Plan& plan, mlir::func::FuncOp decl, Isa isa, int threads,
              int64_t flags) {
  mlir::OpBuilder b(op);
  const mlir::Location loc = op.getLoc();
  auto i64 = [&](int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 64).getResult(); };
  auto toI64 = [&](mlir::Value index) {
    return mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(), index).getResult();
  };
  mlir::Value operands[3] = {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
                             op.getDpsInitOperand(0)->get()};
  mlir::Value base[3], offset[3];
  for (int x = 0; x < 3; ++x) std::tie(base[x], offset[x]) = basePointerAndOffset(b, loc, operands[x]);
  // Dims the strides cannot merge: loops around the call, moving the three offsets.
  for (const Dim& l : plan.loops) {
    auto zero = mlir::arith::ConstantIndexOp::create(b, loc, 0);
    auto upper = mlir::arith::ConstantIndexOp::create(b, loc, l.size);
    auto one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = mlir::scf::ForOp::create(b, loc, zero, upper, one);
    b.setInsertionPointToStart(loop.getBody());
    mlir::Value iv = toI64(loop.getInductionVar());
    for (int x = 0; x < 3; ++x)
      if (l.s[x] != 0) offset[x] = mlir::arith::AddIOp::create(b, loc, offset[x], mlir::arith::MulIOp::create(b, loc, iv, i64(l.s[x])));
  }
  std::vector<mlir::Value> args = contractionCallArgs(b, loc, base, offset, plan, flags);
  args.push_back(i64(threads));
  args.push_back(i64(static_cast<int64_t>(isa)));
  mlir::func::CallOp::create(b, loc, decl, args);
  op.erase();
}

}  // namespace

std::vector<mlir::Value> contractionCallArgs(mlir::OpBuilder& b, mlir::Location loc, const mlir::Value* base,
                                             const mlir::Value* offset, const ContractionPlan& plan, int64_t flags) {
  auto i64 = [&](int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 64).getResult(); };
  const int64_t types = static_cast<int64_t>(plan.aType) | (static_cast<int64_t>(plan.bType) << 8) | flags;
  return {base[0],
          offset[0],
          base[1],
          offset[1],
          base[2],
          offset[2],
          i64(types),
          i64(plan.batch.size),
          i64(plan.m.size),
          i64(plan.n.size),
          i64(plan.k.size),
          i64(plan.batch.s[0]),
          i64(plan.m.s[0]),
          i64(plan.k.s[0]),
          i64(plan.batch.s[1]),
          i64(plan.k.s[1]),
          i64(plan.n.s[1]),
          i64(plan.batch.s[2]),
          i64(plan.m.s[2]),
          i64(plan.n.s[2])};
}

mlir::func::FuncOp declareKernel(mlir::ModuleOp module, const char* name, unsigned args) {
  if (auto f = module.lookupSymbol<mlir::func::FuncOp>(name)) return f;
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto f = mlir::func::FuncOp::create(b, module.getLoc(), name,
                                      b.getFunctionType(std::vector<mlir::Type>(args, b.getI64Type()), {}));
  f.setPrivate();
  return f;
}

std::pair<mlir::Value, mlir::Value> basePointerAndOffset(mlir::OpBuilder& b, mlir::Location loc, mlir::Value memref) {
  auto toI64 = [&](mlir::Value index) { return mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(), index).getResult(); };
  auto meta = mlir::memref::ExtractStridedMetadataOp::create(b, loc, memref);
  return {toI64(mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref).getResult()),
          toI64(meta.getOffset())};
}

mlir::Value hostArray(mlir::OpBuilder& b, mlir::Operation* at, const std::vector<mlir::Value>& words) {
  const mlir::Location loc = at->getLoc();
  mlir::Value array;
  {
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&at->getParentOfType<mlir::func::FuncOp>().getBody().front());
    auto alloca =
        mlir::memref::AllocaOp::create(b, loc, mlir::MemRefType::get({int64_t(words.size())}, b.getI64Type()));
    alloca->setAttr(kHostArrayAttr, b.getUnitAttr());
    array = alloca;
  }
  for (size_t i = 0; i < words.size(); ++i)
    mlir::memref::StoreOp::create(b, loc, words[i], array,
                                  mlir::ValueRange{mlir::arith::ConstantIndexOp::create(b, loc, int64_t(i))});
  return mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                          mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, array).getResult())
      .getResult();
}

mlir::Value filledValue(mlir::Operation* op) {
  auto g = mlir::dyn_cast_or_null<mlir::linalg::GenericOp>(op);
  if (!g || g.getNumDpsInputs() != 0 || g.getNumDpsInits() != 1) return {};
  auto yield = mlir::dyn_cast<mlir::linalg::YieldOp>(g.getBody()->getTerminator());
  if (!yield || &g.getBody()->front() != yield.getOperation() || yield->getNumOperands() != 1 ||
      mlir::isa<mlir::BlockArgument>(yield->getOperand(0)))
    return {};
  return yield->getOperand(0);
}

bool isZeroFill(mlir::Operation* op) {
  const mlir::Value filled = filledValue(op);
  if (!filled || op->getNumResults() != 0) return false;
  auto generic = mlir::cast<mlir::linalg::GenericOp>(op);
  if (!generic.getIndexingMapsArray()[0].isIdentity()) return false;
  auto cst = filled.getDefiningOp<mlir::arith::ConstantOp>();
  if (!cst) return false;
  if (auto f = mlir::dyn_cast<mlir::FloatAttr>(cst.getValue())) return f.getValue().bitcastToAPInt().isZero();
  if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(cst.getValue())) return i.getValue().isZero();
  return false;
}

// The buffer a value views through reshapes (an allocation or an argument).
mlir::Value bufferUnder(mlir::Value v) {
  for (;;) {
    if (auto e = v.getDefiningOp<mlir::memref::ExpandShapeOp>()) v = e.getSrc();
    else if (auto c = v.getDefiningOp<mlir::memref::CollapseShapeOp>()) v = c.getSrc();
    else return v;
  }
}

// A static, row-major memref of `count` elements: two such views of one buffer list its
// elements in the same order.
bool contiguousOf(mlir::Value v, int64_t count) {
  auto t = mlir::dyn_cast<mlir::MemRefType>(v.getType());
  return t && t.hasStaticShape() && t.getLayout().isIdentity() && t.getNumElements() == count;
}

// The allocation or argument under a chain of views (reshapes, subviews, casts).
mlir::Value rootOf(mlir::Value v) {
  while (auto view = v.getDefiningOp<mlir::ViewLikeOpInterface>()) v = view.getViewSource();
  return v;
}

// Whether moving a library call (and its contraction) past `op` could change what it reads or
// writes: `op` may write a buffer of `read`, or read or write one of `written`. Only generic ops
// on buffers and allocations are looked into; anything else might.
bool mayInterfere(mlir::Operation* op, llvm::ArrayRef<mlir::Value> read, llvm::ArrayRef<mlir::Value> written) {
  if (mlir::isPure(op) || mlir::isa<mlir::memref::AllocOp>(op)) return false;
  auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
  if (!generic || !generic.hasPureBufferSemantics()) return true;
  for (mlir::OpOperand& operand : generic->getOpOperands()) {
    const mlir::Value root = rootOf(operand.get());
    if (llvm::is_contained(written, root)) return true;
    if (generic.isDpsInit(&operand) && llvm::is_contained(read, root)) return true;
  }
  return false;
}

// The zero fill of a contraction's result before it (ops between that leave its buffer alone),
// or null: the library call then overwrites the result instead of accumulating, and the fill
// goes with the fallback. The fill may write the result through another view of its buffer, if
// both views cover all of it.
mlir::Operation* zeroFillBefore(mlir::linalg::GenericOp op) {
  const mlir::Value c = op.getDpsInitOperand(0)->get(), root = rootOf(c);
  for (mlir::Operation* prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    auto fill = mlir::dyn_cast<mlir::linalg::GenericOp>(prev);
    if (fill && fill.hasPureBufferSemantics() && isZeroFill(fill)) {
      const mlir::Value filled = fill.getDpsInitOperand(0)->get();
      if (filled == c) return fill;
      auto type = mlir::dyn_cast<mlir::MemRefType>(bufferUnder(c).getType());
      if (type && type.hasStaticShape() && bufferUnder(filled) == bufferUnder(c) &&
          contiguousOf(filled, type.getNumElements()) && contiguousOf(c, type.getNumElements()))
        return fill;
    }
    if (mayInterfere(prev, {}, {root})) return nullptr;
  }
  return nullptr;
}

int lowerZeroFillsToMemset(mlir::ModuleOp module, int threads) {
  std::vector<mlir::linalg::GenericOp> fills;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (!isZeroFill(op)) return;
    auto type = mlir::dyn_cast<mlir::MemRefType>(op.getDpsInitOperand(0)->get().getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() || type.getNumElements() == 0) return;
    if (!type.getElementType().isIntOrFloat() || type.getElementTypeBitWidth() % 8 != 0) return;
    // A row loop's own temporaries (a softmax row's sum) stay stores: a call per row would also
    // keep LLVM from holding them in registers.
    if (op->getParentOfType<mlir::scf::ForallOp>()) return;
    fills.push_back(op);
  });
  if (fills.empty()) return 0;
  mlir::func::FuncOp decl = declareKernel(module, "radix_kernel_zero", 4);
  for (mlir::linalg::GenericOp op : fills) {
    mlir::OpBuilder b(op);
    const mlir::Location loc = op.getLoc();
    mlir::Value buffer = op.getDpsInitOperand(0)->get();
    auto type = mlir::cast<mlir::MemRefType>(buffer.getType());
    const int64_t elementBytes = type.getElementTypeBitWidth() / 8;
    auto i64 = [&](int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 64).getResult(); };
    auto [base, elements] = basePointerAndOffset(b, loc, buffer);
    mlir::Value offset = mlir::arith::MulIOp::create(b, loc, elements, i64(elementBytes));
    mlir::func::CallOp::create(b, loc, decl,
                               mlir::ValueRange{base, offset, i64(type.getNumElements() * elementBytes), i64(threads)});
    op.erase();
  }
  return static_cast<int>(fills.size());
}

bool isKernelContraction(mlir::Operation* op) {
  auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
  return generic && planFor(generic).has_value();
}

std::optional<ContractionPlan> planContraction(mlir::Operation* op) {
  auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
  return generic ? planFor(generic) : std::nullopt;
}

bool targetHasFeatures(const KernelTarget& target, const std::string& features) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = subtargetOf(target);
  return info && info->checkFeatures(features);
}

int lowerContractionsToKernels(mlir::ModuleOp module, const KernelTarget& target) {
  std::vector<std::pair<mlir::linalg::GenericOp, Plan>> found;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (auto plan = planFor(op)) found.emplace_back(op, *plan);
  });
  if (found.empty()) return 0;
  const Isa isa = isaOf(target);
  mlir::func::FuncOp decl = declareKernel(module, kKernelSymbol, 22);
  for (auto& [op, plan] : found) {
    // On AMX the tiles start C from zero instead of loading the fill's zeros (bf16 1024^3 reads
    // and writes 4 MB less); a call per loop step would overwrite the previous steps' sums.
    int64_t flags = 0;
    // 8-bit contractions overwrite on every ISA: the tiles and the VNNI kernel store their first
    // K block, and the dispatch zeroes C for the kernels that add (as the fill would have).
    const bool overwrites = isByte(plan.aType) || (isa == Isa::amx && amxTilesTake(plan.aType, plan.bType, plan.m.size,
                                                                                     plan.n.size));
    if (overwrites && plan.loops.empty())
      if (mlir::Operation* fill = zeroFillBefore(op)) {
        flags = kContractOverwrite;
        fill->erase();
      }
    emitCall(op, plan, decl, isa, target.threads, flags);
  }
  return static_cast<int>(found.size());
}

}  // namespace radix::kernels

namespace radix::kernels {

bool isMulAddGeneric(mlir::Operation* op) {
  auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
  return generic && generic.getNumDpsInputs() == 2 && generic.getNumDpsInits() == 1 && isMulAddBody(generic);
}

}  // namespace radix::kernels
