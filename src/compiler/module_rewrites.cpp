// Rewrites of the module between compileModule's pipelines (compiler.cpp): the entry's signature
// before bufferization, buffers and copies after it, loops and symbols before LLVM.
#include "compiler/module_rewrites.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/kernels/lower.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "runtime/cache.h"

namespace radix::detail {

namespace {

// Ops with fewer iterations than this run as serial loops even with threads: a fork-join costs
// more than the work, and every OpenMP region is more code for LLVM.
constexpr int64_t kMinParallelIterations = 1 << 15;

/// Private functions return each value once (buffer-results-to-out-params crashes on
/// duplicates); call sites reuse the one result.
void dedupeCalleeResults(mlir::ModuleOp module) {
  mlir::OpBuilder b(module.getContext());
  std::vector<mlir::func::FuncOp> functions(module.getOps<mlir::func::FuncOp>().begin(),
                                            module.getOps<mlir::func::FuncOp>().end());
  for (mlir::func::FuncOp fn : functions) {
    if (fn.getSymName() == kTracedEntry || fn.isExternal()) continue;
    auto ret = mlir::cast<mlir::func::ReturnOp>(fn.getBody().front().getTerminator());
    std::vector<size_t> slot(ret.getNumOperands());
    std::vector<mlir::Value> unique;
    for (size_t i = 0; i < ret.getNumOperands(); ++i) {
      auto it = std::find(unique.begin(), unique.end(), ret.getOperand(i));
      slot[i] = static_cast<size_t>(it - unique.begin());
      if (it == unique.end()) unique.push_back(ret.getOperand(i));
    }
    if (unique.size() == ret.getNumOperands()) continue;
    std::vector<mlir::Type> types;
    for (mlir::Value v : unique) types.push_back(v.getType());
    ret->setOperands(unique);
    fn.setType(b.getFunctionType(fn.getArgumentTypes(), types));
    fn.removeResAttrsAttr();
    std::vector<mlir::func::CallOp> calls;
    module.walk([&](mlir::func::CallOp call) {
      if (call.getCallee() == fn.getSymName()) calls.push_back(call);
    });
    for (mlir::func::CallOp call : calls) {
      b.setInsertionPoint(call);
      auto replacement = mlir::func::CallOp::create(b, call.getLoc(), fn, call.getOperands());
      for (size_t i = 0; i < slot.size(); ++i) call.getResult(i).replaceAllUsesWith(replacement.getResult(slot[i]));
      call.erase();
    }
  }
}

bool isZeroSize(mlir::Type type) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(type);
  return t && t.getNumElements() == 0 && t.getRank() != 1;
}

mlir::RankedTensorType flatZero(mlir::Type type) {
  return mlir::RankedTensorType::get({0}, mlir::cast<mlir::RankedTensorType>(type).getElementType());
}

}  // namespace

// radix::call functions stay functions in the object: LLVM would otherwise inline each call
// site (12 copies of a transformer block) and spend most of a cold compile on the copies.
void keepCallsOutOfLine(mlir::ModuleOp module) {
  mlir::Builder b(module.getContext());
  module.walk([&](mlir::LLVM::LLVMFuncOp fn) {
    if (fn.isExternal() || !fn.isPrivate()) return;
    fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
  });
}

void lowerSmallOpsToLoops(mlir::ModuleOp module) {
  std::vector<mlir::linalg::LinalgOp> small;
  module.walk([&](mlir::linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics()) return;
    if (op->getParentOfType<mlir::scf::ForallOp>()) return;  // row loops: radix-lower-rows (fast_ewise.cpp)
    int64_t iterations = 1;
    for (int64_t range : op.getStaticLoopRanges()) {
      if (mlir::ShapedType::isDynamic(range)) return;
      iterations *= range;
    }
    if (iterations < kMinParallelIterations) small.push_back(op);
  });
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::linalg::LinalgOp op : small) {
    rewriter.setInsertionPoint(op);
    if (mlir::succeeded(mlir::linalg::linalgOpToLoops(rewriter, op))) rewriter.eraseOp(op);
  }
}

void addConstantString(mlir::ModuleOp module, const char* symbol, const std::string& text) {
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto type = mlir::LLVM::LLVMArrayType::get(b.getI8Type(), static_cast<unsigned>(text.size()));
  mlir::LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true, mlir::LLVM::Linkage::External, symbol,
                               b.getStringAttr(text));
}

void addEntryKey(mlir::ModuleOp module, const std::string& text) { addConstantString(module, kEntryKeySymbol, text); }

/// CSE gives contractions of one shape a single zero-filled init, and convolutions' zero frames
/// (ops/conv.cpp) of one shape a single fill; each writes it in place (the contraction, or the
/// insert of the input into its frame), so bufferization copies the fill for every one of them.
/// Each gets a fill of its own instead (through the reshapes between, if any).
void unshareFilledDestinations(mlir::ModuleOp module) {
  std::vector<mlir::OpOperand*> destinations;
  module.walk([&](mlir::Operation* op) {
    auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
    if (generic && generic.getNumReductionLoops() > 0 && generic.getNumDpsInits() == 1)
      destinations.push_back(generic.getDpsInitOperand(0));
    if (auto insert = mlir::dyn_cast<mlir::tensor::InsertSliceOp>(op)) destinations.push_back(&insert.getDestMutable());
  });
  for (mlir::OpOperand* init : destinations) {
    mlir::Operation* op = init->getOwner();
    std::vector<mlir::Operation*> chain;  // from the init back to the fill
    bool shared = false;
    for (mlir::Value v = init->get(); mlir::Operation* def = v.getDefiningOp(); v = def->getOperand(0)) {
      shared = shared || !v.hasOneUse();
      chain.push_back(def);
      if (kernels::filledValue(def) || !mlir::isa<mlir::tensor::ExpandShapeOp, mlir::tensor::CollapseShapeOp>(def)) break;
    }
    if (chain.empty() || !shared || !kernels::filledValue(chain.back())) continue;
    mlir::OpBuilder b(op);
    mlir::IRMapping map;
    mlir::Value out = chain.back()->getOperand(0);
    if (auto empty = out.getDefiningOp<mlir::tensor::EmptyOp>()) map.map(out, b.clone(*empty)->getResult(0));
    mlir::Value fresh;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) fresh = b.clone(**it, map)->getResult(0);
    init->set(fresh);
  }
}

/// In a whileLoop body, an elementwise op that computes a state value into a fresh tensor writes
/// into the state argument it reads at the same index instead (its body never reads the init), so
/// that bufferization carries the state in place: no new buffer per iteration, and no copy of the
/// state where the condition forwards it. Where the argument is still read later, bufferization
/// gives the op a new buffer, as before.
void writeLoopStateInPlace(mlir::ModuleOp module) {
  module.walk([&](mlir::linalg::GenericOp op) {
    auto loop = mlir::dyn_cast<mlir::scf::WhileOp>(op->getParentOp());
    if (!loop || op->getBlock() != loop.getAfterBody() || !op.hasPureTensorSemantics() || op.getNumDpsInits() != 1)
      return;
    mlir::OpOperand* init = op.getDpsInitOperand(0);
    if (!init->get().getDefiningOp<mlir::tensor::EmptyOp>() || op.payloadUsesValueFromOperand(init) ||
        !op.getMatchingIndexingMap(init).isIdentity())
      return;
    for (mlir::OpOperand* in : op.getDpsInputOperands()) {
      auto arg = mlir::dyn_cast<mlir::BlockArgument>(in->get());
      if (!arg || arg.getOwner() != loop.getAfterBody() || arg.getType() != init->get().getType() ||
          !op.getMatchingIndexingMap(in).isIdentity() || llvm::count(op->getOperands(), in->get()) != 1)
        continue;
      init->set(in->get());
      return;
    }
  });
}

/// @main as traced -> the entry the runtime calls: C interface, donated arguments written in
/// place (materialize_in_destination into the argument), others read-only.
std::vector<int32_t> prepareEntry(mlir::ModuleOp module, const Signature& signature) {
  dedupeCalleeResults(module);
  auto main = module.lookupSymbol<mlir::func::FuncOp>(kTracedEntry);
  main.setSymName(kEntry);
  mlir::OpBuilder b(module.getContext());
  std::vector<bool> donated(signature.argShapes.size(), false);
  for (int32_t a : signature.donations)
    if (a >= 0) donated[a] = true;
  for (size_t a = 0; a < donated.size(); ++a) main.setArgAttr(a, "bufferization.writable", b.getBoolAttr(donated[a]));
  auto ret = mlir::cast<mlir::func::ReturnOp>(main.getBody().front().getTerminator());
  b.setInsertionPoint(ret);
  for (size_t i = 0; i < signature.donations.size(); ++i) {
    const int32_t a = signature.donations[i];
    if (a < 0) continue;
    mlir::Value arg = main.getArgument(a);
    auto m = mlir::bufferization::MaterializeInDestinationOp::create(b, ret.getLoc(), ret.getOperand(i), arg);
    ret.setOperand(i, m.getResult());
  }
  // Each value is returned once: buffer-results-to-out-params does not handle duplicates.
  std::vector<int32_t> alias(ret.getNumOperands(), -1);
  std::vector<mlir::Value> unique;
  std::vector<mlir::Type> types;
  for (size_t i = 0; i < ret.getNumOperands(); ++i) {
    mlir::Value v = ret.getOperand(i);
    for (size_t j = 0; j < i && alias[i] < 0; ++j)
      if (ret.getOperand(j) == v) alias[i] = static_cast<int32_t>(j);
    if (alias[i] >= 0) continue;
    unique.push_back(v);
    types.push_back(v.getType());
  }
  if (unique.size() != ret.getNumOperands()) {
    ret->setOperands(unique);
    main.setType(b.getFunctionType(main.getArgumentTypes(), types));
    main.removeResAttrsAttr();
  }
  return alias;
}

/// Functions take zero-size tensors as tensor<0xT> (the bare-pointer calling convention rejects
/// memref<3x0xT>) and return none: they hold no data, so uses see a tensor.empty of the original
/// type. @main's dropped results get alias kNoData: the runtime passes and copies nothing for them.
void retypeZeroSizeBoundaries(mlir::ModuleOp module, std::vector<int32_t>& mainAlias) {
  mlir::OpBuilder b(module.getContext());
  auto emptyOf = [&](mlir::Location loc, mlir::Type type) {
    auto t = mlir::cast<mlir::RankedTensorType>(type);
    return mlir::tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType()).getResult();
  };
  std::vector<mlir::func::FuncOp> functions(module.getOps<mlir::func::FuncOp>().begin(),
                                            module.getOps<mlir::func::FuncOp>().end());
  for (mlir::func::FuncOp fn : functions) {
    if (fn.isExternal()) continue;
    mlir::Block& entry = fn.getBody().front();
    auto ret = mlir::cast<mlir::func::ReturnOp>(entry.getTerminator());
    bool changed = false;
    b.setInsertionPointToStart(&entry);
    for (mlir::BlockArgument arg : entry.getArguments()) {
      if (!isZeroSize(arg.getType())) continue;
      arg.replaceAllUsesWith(emptyOf(arg.getLoc(), arg.getType()));
      arg.setType(flatZero(arg.getType()));
      changed = true;
    }
    std::vector<mlir::Type> oldResults(fn.getResultTypes().begin(), fn.getResultTypes().end());
    std::vector<bool> dropped(oldResults.size(), false);
    std::vector<mlir::Value> kept;
    for (size_t i = 0; i < oldResults.size(); ++i) {
      mlir::Value v = ret.getOperand(i);
      dropped[i] = mlir::cast<mlir::RankedTensorType>(v.getType()).getNumElements() == 0;
      if (!dropped[i]) kept.push_back(v);
      changed |= dropped[i];
    }
    if (!changed) continue;
    std::vector<mlir::Operation*> producers;
    for (size_t i = 0; i < oldResults.size(); ++i)
      if (dropped[i]) producers.push_back(ret.getOperand(i).getDefiningOp());
    ret->setOperands(kept);
    for (mlir::Operation* p : producers)
      if (auto m = mlir::dyn_cast_or_null<mlir::bufferization::MaterializeInDestinationOp>(p))
        if (m->use_empty()) m->erase();
    fn.setType(b.getFunctionType(entry.getArgumentTypes(), ret.getOperandTypes()));
    if (fn.getSymName() == kEntry) {
      // mainAlias: per original result, -1 (returned) or an earlier result it duplicates.
      size_t unique = 0;
      std::vector<bool> gone(mainAlias.size(), false);
      for (size_t r = 0; r < mainAlias.size(); ++r) {
        if (mainAlias[r] >= 0) continue;
        gone[r] = dropped[unique++];
      }
      for (size_t r = 0; r < mainAlias.size(); ++r)
        if (gone[r] || (mainAlias[r] >= 0 && gone[static_cast<size_t>(mainAlias[r])])) mainAlias[r] = kNoData;
      fn.removeResAttrsAttr();
      continue;
    }
    std::vector<mlir::func::CallOp> calls;
    module.walk([&](mlir::func::CallOp call) {
      if (call.getCallee() == fn.getSymName()) calls.push_back(call);
    });
    for (mlir::func::CallOp call : calls) {
      b.setInsertionPoint(call);
      std::vector<mlir::Value> operands;
      for (mlir::Value v : call.getOperands())
        operands.push_back(isZeroSize(v.getType()) ? emptyOf(call.getLoc(), flatZero(v.getType())) : v);
      auto replacement = mlir::func::CallOp::create(b, call.getLoc(), fn, operands);
      size_t next = 0;
      for (size_t i = 0; i < oldResults.size(); ++i)
        call.getResult(i).replaceAllUsesWith(dropped[i] ? emptyOf(call.getLoc(), oldResults[i])
                                                        : replacement.getResult(next++));
      call.erase();
    }
  }
}

/// A donated result's out-parameter is its argument's own buffer (the runtime passes the same
/// pointer), so the copy of that argument into it, which bufferization leaves when the result was
/// computed in place, is a full pass over the buffer that does nothing: a KV-cache write would
/// otherwise cost the whole cache every call.
void dropDonatedSelfCopies(mlir::ModuleOp module, const Signature& signature,
                           const std::vector<int32_t>& resultAlias) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>(kEntry);
  if (!main || main.isExternal()) return;
  const size_t numArgs = signature.argShapes.size();
  std::vector<std::pair<mlir::Value, mlir::Value>> selfCopies;
  size_t out = numArgs;
  for (size_t r = 0; r < resultAlias.size() && r < signature.donations.size(); ++r) {
    if (resultAlias[r] != -1) continue;
    const size_t outParam = out++;
    const int32_t a = signature.donations[r];
    if (a < 0 || outParam >= main.getNumArguments()) continue;
    selfCopies.emplace_back(main.getArgument(static_cast<unsigned>(a)), main.getArgument(static_cast<unsigned>(outParam)));
  }
  if (selfCopies.empty()) return;
  std::vector<mlir::Operation*> dead;
  main.walk([&](mlir::memref::CopyOp copy) {
    for (const auto& [from, to] : selfCopies)
      if ((copy.getSource() == from && copy.getTarget() == to) || (copy.getSource() == from && copy.getTarget() == from))
        dead.push_back(copy);
  });
  for (mlir::Operation* op : dead) op->erase();
}

// A result computed into a temporary and copied into its out-parameter through a reshape (unit
// dims folded away: a {1, c, h, w} convolution computes {c, h, w}) is computed in the
// out-parameter itself, seen through the inverse reshape. buffer-results-to-out-params'
// hoist-static-allocs does this only for a temporary returned as it is. Only fresh
// out-parameters (kFreshOutputsAttr: nothing donated) that nothing else touches, and
// temporaries whose every use, through views, comes before the copy.
void writeReshapedResultsInPlace(mlir::ModuleOp module) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>(kEntry);
  if (!main || main.isExternal()) return;
  auto fresh = main->getAttrOfType<mlir::IntegerAttr>(kFreshOutputsAttr);
  if (!fresh) return;
  mlir::Block& body = main.getBody().front();
  std::vector<mlir::memref::CopyOp> copies;
  for (mlir::Operation& op : body)
    if (auto copy = mlir::dyn_cast<mlir::memref::CopyOp>(op)) copies.push_back(copy);
  for (mlir::memref::CopyOp copy : copies) {
    auto dst = mlir::dyn_cast<mlir::BlockArgument>(copy.getTarget());
    if (!dst || dst.getOwner() != &body || dst.getArgNumber() < fresh.getInt() || !dst.hasOneUse()) continue;
    if (!mlir::cast<mlir::MemRefType>(dst.getType()).getLayout().isIdentity()) continue;
    mlir::Operation* reshape = copy.getSource().getDefiningOp();
    if (!reshape || !mlir::isa<mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp>(reshape) ||
        !reshape->getResult(0).hasOneUse())
      continue;
    auto alloc = reshape->getOperand(0).getDefiningOp<mlir::memref::AllocOp>();
    if (!alloc || alloc->getBlock() != &body || !alloc.getDynamicSizes().empty() || !alloc.getType().getLayout().isIdentity())
      continue;
    std::vector<mlir::Operation*> deallocs;
    std::vector<mlir::Value> aliases{alloc.getResult()};
    bool safe = true;
    for (size_t i = 0; i < aliases.size() && safe; ++i)
      for (mlir::Operation* user : aliases[i].getUsers()) {
        if (user == reshape) continue;
        if (mlir::isa<mlir::memref::DeallocOp>(user)) {
          deallocs.push_back(user);
        } else if (auto view = mlir::dyn_cast<mlir::ViewLikeOpInterface>(user); view && view.getViewSource() == aliases[i]) {
          aliases.push_back(user->getResult(0));
        } else {
          mlir::Operation* at = body.findAncestorOpInBlock(*user);
          safe = at && at->isBeforeInBlock(copy);
        }
        if (!safe) break;
      }
    if (!safe) continue;
    mlir::OpBuilder b(alloc);
    mlir::Value view;
    if (auto expand = mlir::dyn_cast<mlir::memref::ExpandShapeOp>(reshape))
      view = mlir::memref::CollapseShapeOp::create(b, alloc.getLoc(), alloc.getType(), dst, expand.getReassociationIndices());
    else
      view = mlir::memref::ExpandShapeOp::create(b, alloc.getLoc(), alloc.getType(), dst,
                                                 mlir::cast<mlir::memref::CollapseShapeOp>(reshape).getReassociationIndices());
    for (mlir::Operation* d : deallocs) d->erase();
    copy->erase();
    reshape->erase();
    alloc.getResult().replaceAllUsesWith(view);
    alloc->erase();
  }
}


void dropFusionBarriers(mlir::Operation* root) {
  std::vector<mlir::bufferization::AllocTensorOp> copies;
  root->walk([&](mlir::bufferization::AllocTensorOp op) {
    if (op.getCopy() && op.getDynamicSizes().empty()) copies.push_back(op);
  });
  for (auto op : copies) {
    op.getResult().replaceAllUsesWith(op.getCopy());
    op->erase();
  }
}

}  // namespace radix::detail
