// The CUDA lowering (docs/gpu.md). On tensors, long reductions with few outputs are split in two
// (radix-split-reductions). On buffers, bf16 attention calls cuDNN and contractions cuBLASLt
// (with its epilogues) where the runtime has them;
// every other linalg op (and each contraction, for when it has not) becomes a kernel of one
// thread per output element (a reduction runs sequentially in its thread), launched from the
// host code, which keeps only launches, library calls, device allocations and copies. MLIR's
// own passes then make the cubin (those of gpu-lower-to-nvvm-pipeline: NVVM, LLVM's NVPTX back
// end, ptxas).
#include "compiler/gpu.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/fast_ewise.h"
#include "compiler/kernels/attention.h"
#include "compiler/kernels/conv.h"
#include "compiler/kernels/conv_lower.h"
#include "compiler/kernels/lower.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/error.h"
#include "runtime/cudnn.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace radix::detail {
namespace {

using kernels::bufferUnder;
using kernels::contiguousOf;
using kernels::mayInterfere;
using kernels::rootOf;
using kernels::zeroFillBefore;


// Threads per block of the element-wise kernels.
constexpr int64_t kBlockThreads = 256;
// The largest buffer whose elements host code may read or write (copied whole for each access).
constexpr int64_t kMaxStagedBytes = 256;

bool insideKernel(mlir::Operation* op) {
  return op->getParentOfType<mlir::gpu::LaunchOp>() || op->getParentOfType<mlir::gpu::GPUModuleOp>();
}

bool touchesMemory(mlir::Operation* root) {
  bool found = false;
  root->walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::memref::LoadOp, mlir::memref::StoreOp>(op)) found = true;
  });
  return found;
}

// A runtime library entry (runtime/cublaslt.cpp, cudnn.cpp): `args` i64 values, an i32 status.
mlir::func::FuncOp declareLibraryCall(mlir::ModuleOp module, llvm::StringRef name, unsigned args) {
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto decl = mlir::func::FuncOp::create(b, module.getLoc(), name,
                                         b.getFunctionType(std::vector<mlir::Type>(args, b.getI64Type()), {b.getI32Type()}));
  decl.setPrivate();
  return decl;
}

// Calls the library entry at b's insertion point; the scf.if taken when it answers non-zero (the
// library cannot take the call), for the generated code to move into.
mlir::scf::IfOp callWithFallback(mlir::OpBuilder& b, mlir::Location loc, mlir::func::FuncOp decl,
                                 const std::vector<mlir::Value>& args) {
  const mlir::Value status = mlir::func::CallOp::create(b, loc, decl, args).getResult(0);
  const mlir::Value zero = mlir::arith::ConstantIntOp::create(b, loc, 0, 32);
  const mlir::Value fallback = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ne, status, zero);
  return mlir::scf::IfOp::create(b, loc, fallback, /*withElseRegion=*/false);
}

// Every use of `buffer`, through reshapes, is one of `allowed` or a dealloc.
bool onlyUsedBy(mlir::Value buffer, llvm::ArrayRef<mlir::Operation*> allowed) {
  for (mlir::Operation* user : buffer.getUsers()) {
    if (mlir::isa<mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp>(user)) {
      if (!onlyUsedBy(user->getResult(0), allowed)) return false;
    } else if (!mlir::isa<mlir::memref::DeallocOp>(user) && !llvm::is_contained(allowed, user)) {
      return false;
    }
  }
  return true;
}

// What cuBLASLt's epilogue can do of the element-wise op that reads a contraction's result (a
// temporary buffer nothing else reads): the first steps of its body, a conversion to f16/bf16
// and a bias along the result's rows (bias[j], before or after the conversion).
struct Epilogue {
  mlir::linalg::GenericOp consumer;
  mlir::OpOperand* result = nullptr;    // the consumer's operand reading the contraction's result
  mlir::OpOperand* bias = nullptr;      // or null
  std::vector<mlir::Operation*> chain;  // the steps (and the bias's extf), in order
  mlir::Value value;                    // what they compute, of the epilogue's type
  bool whole = false;                   // the consumer computes nothing else
};

std::optional<Epilogue> epilogueAfter(mlir::linalg::GenericOp op, const kernels::ContractionPlan& plan,
                                      mlir::Operation* fill) {
  if (!fill || !plan.loops.empty()) return std::nullopt;
  const mlir::Value c = op.getDpsInitOperand(0)->get(), buffer = bufferUnder(c);
  auto bufferType = mlir::dyn_cast<mlir::MemRefType>(buffer.getType());
  if (!bufferType || !bufferType.hasStaticShape()) return std::nullopt;
  const int64_t count = bufferType.getNumElements();
  if (!contiguousOf(buffer, count) || !contiguousOf(c, count)) return std::nullopt;
  // The consumer, past ops that the contraction (moved to it) does not depend on.
  const mlir::Value read[2] = {rootOf(op.getDpsInputOperand(0)->get()), rootOf(op.getDpsInputOperand(1)->get())};
  mlir::Operation* next = op->getNextNode();
  while (next && !mayInterfere(next, read, {rootOf(c)})) next = next->getNextNode();
  auto consumer = mlir::dyn_cast_or_null<mlir::linalg::GenericOp>(next);
  if (!consumer || !consumer.hasPureBufferSemantics() || consumer.getNumDpsInits() != 1 ||
      consumer.getNumLoops() != consumer.getNumParallelLoops())
    return std::nullopt;
  Epilogue e;
  e.consumer = consumer;
  for (mlir::OpOperand* in : consumer.getDpsInputOperands()) {
    if (bufferUnder(in->get()) != buffer) continue;
    if (e.result) return std::nullopt;
    e.result = in;
  }
  // Nothing else may read C (a temporary), unless the consumer overwrites it whole (in place):
  // readers after it see its result.
  const mlir::Value out = consumer.getDpsInitOperand(0)->get();
  const bool overwrites = bufferUnder(out) == buffer && contiguousOf(out, count);
  const bool temporary = buffer.getDefiningOp<mlir::memref::AllocOp>() &&
                         onlyUsedBy(buffer, {fill, op.getOperation(), consumer.getOperation()});
  if (!e.result || !contiguousOf(e.result->get(), count) || !consumer.getMatchingIndexingMap(e.result).isIdentity() ||
      !(overwrites || temporary))
    return std::nullopt;
  // A bias is one element per column j of the result: its map keeps the last loop, which runs
  // over the result's last dim, and that dim is the contraction's N, contiguous, rows packed.
  const int64_t rank = consumer.getNumLoops();
  const bool columnsAreN = rank > 0 && consumer.getStaticLoopRanges().back() == plan.n.size && plan.n.s[2] == 1 &&
                           (plan.m.size == 1 || plan.m.s[2] == plan.n.size);
  auto takeBias = [&](mlir::Operation* user, mlir::Value acc) {
    auto add = mlir::dyn_cast<mlir::arith::AddFOp>(user);
    if (!add || e.bias || !columnsAreN) return false;
    mlir::Value other = add.getLhs() == acc ? add.getRhs() : add.getLhs();
    mlir::Operation* ext = nullptr;
    if (auto x = other.getDefiningOp<mlir::arith::ExtFOp>()) ext = x, other = x.getIn();
    auto arg = mlir::dyn_cast<mlir::BlockArgument>(other);
    if (!arg || arg.getOwner() != consumer.getBody() || arg.getArgNumber() >= consumer.getNumDpsInputs() ||
        !kernels::elemOf(arg.getType()))
      return false;
    mlir::OpOperand* operand = consumer.getDpsInputOperand(arg.getArgNumber());
    const mlir::AffineMap map = consumer.getMatchingIndexingMap(operand);
    if (map.getNumResults() != 1 || map.getResult(0) != mlir::getAffineDimExpr(unsigned(rank - 1), op.getContext()))
      return false;
    e.bias = operand;
    if (ext) e.chain.push_back(ext);
    e.chain.push_back(add);
    e.value = add.getResult();
    return true;
  };
  e.value = consumer.getMatchingBlockArgument(e.result);
  auto single = [](mlir::Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; };
  if (mlir::Operation* user = single(e.value)) (void)takeBias(user, e.value);
  if (auto trunc = mlir::dyn_cast_or_null<mlir::arith::TruncFOp>(single(e.value));
      trunc && (trunc.getType().isBF16() || trunc.getType().isF16())) {
    e.chain.push_back(trunc);
    e.value = trunc.getResult();
  }
  if (mlir::Operation* user = single(e.value)) (void)takeBias(user, e.value);
  if (e.chain.empty()) return std::nullopt;
  auto yield = mlir::cast<mlir::linalg::YieldOp>(consumer.getBody()->getTerminator());
  e.whole = yield.getNumOperands() == 1 && yield.getOperand(0) == e.value && e.value.hasOneUse() &&
            consumer.getNumDpsInputs() == (e.bias ? 2u : 1u) && contiguousOf(out, count);
  return e;
}

// The epilogue's result buffer D (the consumer's output when it is the whole consumer, else a new
// buffer the consumer then reads), and, for the fallback, the op that computes it from C.
std::pair<mlir::Value, mlir::Operation*> applyEpilogue(mlir::OpBuilder& b, Epilogue& e) {
  mlir::linalg::GenericOp consumer = e.consumer;
  const mlir::Location loc = consumer.getLoc();
  if (e.whole) return {consumer.getDpsInitOperand(0)->get(), consumer};
  auto cType = mlir::cast<mlir::MemRefType>(e.result->get().getType());
  auto dType = mlir::MemRefType::get(cType.getShape(), e.value.getType());
  const mlir::Value d = mlir::memref::AllocOp::create(b, loc, dType);
  mlir::Operation* fallback;
  {
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(consumer);
    mlir::memref::DeallocOp::create(b, loc, d);
    std::vector<mlir::Value> inputs = {e.result->get()};
    std::vector<mlir::AffineMap> maps = {consumer.getMatchingIndexingMap(e.result)};
    if (e.bias) inputs.push_back(e.bias->get()), maps.push_back(consumer.getMatchingIndexingMap(e.bias));
    maps.push_back(b.getMultiDimIdentityMap(unsigned(cType.getRank())));
    const mlir::BlockArgument resultArg = consumer.getMatchingBlockArgument(e.result);
    const mlir::BlockArgument biasArg = e.bias ? consumer.getMatchingBlockArgument(e.bias) : nullptr;
    fallback = mlir::linalg::GenericOp::create(
        b, loc, inputs, mlir::ValueRange{d}, maps,
        std::vector<mlir::utils::IteratorType>(size_t(cType.getRank()), mlir::utils::IteratorType::parallel),
        [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
          mlir::IRMapping map;
          map.map(resultArg, args[0]);
          if (biasArg) map.map(biasArg, args[1]);
          for (mlir::Operation* step : e.chain) nb.clone(*step, map);
          mlir::linalg::YieldOp::create(nb, l, map.lookup(e.value));
        });
  }
  // The consumer reads D in place of C and the steps' result.
  mlir::BlockArgument arg = consumer.getMatchingBlockArgument(e.result);
  e.result->set(d);
  arg.setType(e.value.getType());
  e.value.replaceAllUsesWith(arg);
  for (auto it = e.chain.rbegin(); it != e.chain.rend(); ++it)
    if ((*it)->use_empty()) (*it)->erase();
  return {d, fallback};
}

// Contractions through cuBLASLt (runtime/cublaslt.cpp): a call that answers non-zero when the
// library cannot take the problem, and the generated kernels under an scf.if for that case.
// Contractions with loops around the library call (strides that do not merge) keep the kernels.
// A conversion and a bias after a contraction go into the library call's epilogue.
void lowerContractionsToLibrary(mlir::ModuleOp module) {
  std::vector<std::pair<mlir::linalg::GenericOp, kernels::ContractionPlan>> found;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (auto plan = kernels::planContraction(op); plan && plan->loops.empty() && !kernels::isByte(plan->aType))
      found.emplace_back(op, *plan);
  });
  if (found.empty()) return;
  const mlir::func::FuncOp decl = declareLibraryCall(module, "radix_cuda_contract", 27);
  mlir::OpBuilder b(module.getContext());
  for (auto& [op, plan] : found) {
    mlir::Operation* fill = zeroFillBefore(op);
    std::optional<Epilogue> epilogue = epilogueAfter(op, plan, fill);
    // With an epilogue the call goes where its consumer was: its output may be allocated after
    // the contraction, and nothing between touches the contraction's buffers.
    b.setInsertionPoint(epilogue ? epilogue->consumer.getOperation() : op.getOperation());
    const mlir::Location loc = op.getLoc();
    auto i64Const = [&](int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 64).getResult(); };
    mlir::Value base[3], offset[3];
    const mlir::Value operands[3] = {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
                                     op.getDpsInitOperand(0)->get()};
    for (int x = 0; x < 3; ++x) std::tie(base[x], offset[x]) = kernels::basePointerAndOffset(b, loc, operands[x]);
    std::vector<mlir::Value> args = kernels::contractionCallArgs(b, loc, base, offset, plan);
    args.push_back(i64Const(fill ? 0 : 1));
    mlir::Value extra[6] = {i64Const(0), i64Const(0), i64Const(0), i64Const(0), i64Const(0), i64Const(0)};
    mlir::Operation* fallbackEpilogue = nullptr;
    if (epilogue) {
      mlir::Value d;
      std::tie(d, fallbackEpilogue) = applyEpilogue(b, *epilogue);  // its new buffer allocated here
      std::tie(extra[0], extra[1]) = kernels::basePointerAndOffset(b, loc, d);
      extra[2] = i64Const(int64_t(*kernels::elemOf(mlir::cast<mlir::MemRefType>(d.getType()).getElementType())));
      if (epilogue->bias) {
        const mlir::Value bias = epilogue->bias->get();
        std::tie(extra[3], extra[4]) = kernels::basePointerAndOffset(b, loc, bias);
        extra[5] = i64Const(int64_t(*kernels::elemOf(mlir::cast<mlir::MemRefType>(bias.getType()).getElementType())));
      }
    }
    args.insert(args.end(), std::begin(extra), std::end(extra));
    mlir::Operation* end = callWithFallback(b, loc, decl, args).thenBlock()->getTerminator();
    if (fill) fill->moveBefore(end);
    op->moveBefore(end);
    if (fallbackEpilogue) fallbackEpilogue->moveBefore(end);
  }
}

// nn::sdpa's calls through cuDNN (runtime/cudnn.cpp): radix_kernel_attention's argument array,
// built on the host, goes to radix_cuda_attention, which answers non-zero when cuDNN cannot take
// the call; the call of the composition then runs under an scf.if. Calls that the runtime's own
// rule (cuda::attentionShape: f32, a window, a soft cap, ...) refuses whatever the run keep the
// composition alone.
void lowerAttentionToLibrary(mlir::ModuleOp module) {
  std::vector<std::pair<mlir::func::CallOp, kernels::AttentionPlan>> calls = kernels::attentionCalls(module);
  std::erase_if(calls, [](const auto& c) { return !cuda::attentionShape(c.second.values.data()); });
  if (calls.empty()) return;
  const mlir::func::FuncOp decl = declareLibraryCall(module, "radix_cuda_attention", 1);
  mlir::OpBuilder b(module.getContext());
  for (auto& [call, plan] : calls) {
    b.setInsertionPoint(call);
    auto ifOp = callWithFallback(b, call.getLoc(), decl, {kernels::attentionArgArray(b, call, plan)});
    call->moveBefore(ifOp.thenBlock()->getTerminator());
  }
}

// The zero padding ops/conv.cpp's padAndSpread writes into a convolution's input: a zero fill,
// then the source copied into a subview (framedPaddingOf); or, where the padding also cuts, a
// generic with no inputs whose body loads the source at clamped (index - before) positions and
// selects 0 outside it. cuDNN pads by itself: the convolution can read the source.
struct Padding {
  std::vector<mlir::Operation*> ops;  // in program order
  mlir::Value source;
  std::vector<int64_t> before, after;  // per axis
};

std::optional<Padding> framedPaddingOf(mlir::linalg::GenericOp conv, mlir::Value x, mlir::MemRefType padded) {
  mlir::memref::CopyOp copy;
  mlir::Operation* fill = nullptr;
  for (mlir::Operation* prev = conv->getPrevNode(); prev && !fill; prev = prev->getPrevNode()) {
    auto c = mlir::dyn_cast<mlir::memref::CopyOp>(prev);
    auto g = mlir::dyn_cast<mlir::linalg::GenericOp>(prev);
    if (!copy && c && rootOf(c.getTarget()) == x)
      copy = c;
    else if (copy && g && g.hasPureBufferSemantics() && kernels::isZeroFill(g) && g.getDpsInitOperand(0)->get() == x)
      fill = g;
    else if (mayInterfere(prev, {}, {x}))
      return std::nullopt;
  }
  auto sub = copy ? copy.getTarget().getDefiningOp<mlir::memref::SubViewOp>() : nullptr;
  if (!fill || !sub || sub.getSource() != x || !sub->hasOneUse() || !onlyUsedBy(x, {fill, sub, conv})) return std::nullopt;
  auto source = mlir::dyn_cast<mlir::MemRefType>(copy.getSource().getType());
  if (!source || !source.hasStaticShape() || source.getRank() != padded.getRank()) return std::nullopt;
  Padding p{{fill, copy}, copy.getSource(), {}, {}};
  for (int64_t d = 0; d < padded.getRank(); ++d) {
    const int64_t before = sub.getStaticOffsets()[d], size = source.getDimSize(d);
    if (mlir::ShapedType::isDynamic(before) || sub.getStaticStrides()[d] != 1 || sub.getStaticSizes()[d] != size)
      return std::nullopt;
    p.before.push_back(before), p.after.push_back(padded.getDimSize(d) - before - size);
  }
  for (mlir::Operation* between = copy->getNextNode(); between != conv.getOperation(); between = between->getNextNode())
    if (mayInterfere(between, {rootOf(p.source)}, {x})) return std::nullopt;
  return p;
}

std::optional<Padding> paddingOf(mlir::linalg::GenericOp conv, mlir::Value x) {
  auto padded = mlir::dyn_cast<mlir::MemRefType>(x.getType());
  if (!padded || !padded.hasStaticShape() || !x.getDefiningOp<mlir::memref::AllocOp>()) return std::nullopt;
  if (auto framed = framedPaddingOf(conv, x, padded)) return framed;
  mlir::linalg::GenericOp op;
  for (mlir::Operation* prev = conv->getPrevNode(); prev; prev = prev->getPrevNode()) {
    auto g = mlir::dyn_cast<mlir::linalg::GenericOp>(prev);
    if (g && g.hasPureBufferSemantics() && g.getNumDpsInits() == 1 && g.getDpsInitOperand(0)->get() == x) {
      op = g;
      break;
    }
    if (mayInterfere(prev, {}, {x})) return std::nullopt;
  }
  if (!op || op.getNumDpsInputs() != 0 || op.getNumLoops() != op.getNumParallelLoops() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity() || !onlyUsedBy(x, {op, conv}))
    return std::nullopt;
  auto yield = mlir::cast<mlir::linalg::YieldOp>(op.getBody()->getTerminator());
  auto select = yield.getNumOperands() == 1 ? yield.getOperand(0).getDefiningOp<mlir::arith::SelectOp>() : nullptr;
  auto zero = select ? select.getFalseValue().getDefiningOp<mlir::arith::ConstantOp>() : nullptr;
  auto load = select ? select.getTrueValue().getDefiningOp<mlir::memref::LoadOp>() : nullptr;
  auto zeroValue = zero ? mlir::dyn_cast<mlir::FloatAttr>(zero.getValue()) : nullptr;
  if (!load || !zeroValue || !zeroValue.getValue().isPosZero() || load.getMemRefType().getRank() != padded.getRank() ||
      !load.getMemRefType().hasStaticShape())
    return std::nullopt;
  auto indexOf = [&](mlir::Value v) -> int64_t {
    auto i = v.getDefiningOp<mlir::linalg::IndexOp>();
    return i && i->getParentOp() == op.getOperation() ? int64_t(i.getDim()) : -1;
  };
  auto constant = [](mlir::Value v) -> std::optional<int64_t> {
    if (auto c = v.getDefiningOp<mlir::arith::ConstantIndexOp>()) return c.value();
    return std::nullopt;
  };
  Padding p{{op}, load.getMemRef(), {}, {}};
  for (int64_t d = 0; d < padded.getRank(); ++d) {
    const mlir::Value index = load.getIndices()[d];
    const int64_t size = load.getMemRefType().getDimSize(d);
    // min(max(index(d) - before, 0), size - 1), its steps folded away where they do nothing.
    int64_t before = 0;
    mlir::Value v = index;
    if (auto min = v.getDefiningOp<mlir::arith::MinSIOp>()) {
      if (constant(min.getRhs()) != size - 1) return std::nullopt;
      v = min.getLhs();
    }
    if (auto max = v.getDefiningOp<mlir::arith::MaxSIOp>()) {
      if (constant(max.getRhs()) != 0) return std::nullopt;
      v = max.getLhs();
    }
    if (auto sub = v.getDefiningOp<mlir::arith::SubIOp>()) {
      if (!constant(sub.getRhs())) return std::nullopt;
      before = *constant(sub.getRhs());
      v = sub.getLhs();
    }
    if (indexOf(v) != d) return std::nullopt;
    const int64_t after = padded.getDimSize(d) - before - size;
    if (before < 0 || after < 0) return std::nullopt;
    p.before.push_back(before), p.after.push_back(after);
  }
  // The padding moves to the convolution's fallback: nothing between may write its source.
  for (mlir::Operation* between = op->getNextNode(); between != conv.getOperation(); between = between->getNextNode())
    if (mayInterfere(between, {rootOf(p.source)}, {x})) return std::nullopt;
  return p;
}

// A convolution generic (ops/conv.cpp's form on buffers: output loops, then the group's input
// feature and the window's taps) as cuDNN sees it: radix_cuda_conv's words after the pointers
// (kernels/conv.h's kCudaConv* layout), the input it reads (the padding's source where the
// padding folds into cuDNN's), or nullopt for anything else.
struct CudnnConv {
  std::vector<int64_t> words;
  mlir::Value x;
  std::vector<mlir::Operation*> padding = {};  // moves to the fallback
};

std::optional<CudnnConv> cudnnConvolution(mlir::linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || !kernels::isMulAddGeneric(op) || kernels::isKernelContraction(op) ||
      op.getNumDpsInputs() != 2)
    return std::nullopt;
  mlir::MemRefType types[3];
  std::vector<int64_t> strides[3];
  const mlir::Value operands[3] = {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
                                   op.getDpsInitOperand(0)->get()};
  for (int x = 0; x < 3; ++x) {
    auto st = kernels::staticStrides(operands[x]);
    if (!st) return std::nullopt;
    types[x] = mlir::cast<mlir::MemRefType>(operands[x].getType());
    strides[x] = std::move(*st);
  }
  const auto xType = kernels::elemOf(types[0].getElementType()), wType = kernels::elemOf(types[1].getElementType());
  if (!xType || xType != wType || !types[2].getElementType().isF32()) return std::nullopt;
  const auto maps = op.getIndexingMapsArray();
  const llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  const auto iterators = op.getIteratorTypesArray();
  const size_t loops = ranges.size();
  auto reduction = [&](size_t l) { return iterators[l] == mlir::utils::IteratorType::reduction; };
  // The output indexes each parallel loop once; the kernel each of its loops plainly: the output
  // feature (parallel), the input feature and the taps (reductions).
  if (!maps[2].isProjectedPermutation() || maps[2].getNumResults() != op.getNumParallelLoops()) return std::nullopt;
  std::vector<int> kernelAxis(loops, -1), outputAxis(loops, -1);
  for (unsigned r = 0; r < maps[2].getNumResults(); ++r) outputAxis[maps[2].getDimPosition(r)] = int(r);
  int64_t outFeature = -1;
  for (unsigned r = 0; r < maps[1].getNumResults(); ++r) {
    auto d = mlir::dyn_cast<mlir::AffineDimExpr>(maps[1].getResult(r));
    if (!d) return std::nullopt;
    kernelAxis[d.getPosition()] = int(r);
    if (!reduction(d.getPosition())) {
      if (outFeature >= 0) return std::nullopt;
      outFeature = d.getPosition();
    }
  }
  if (outFeature < 0 || maps[1].getNumResults() != types[1].getRank()) return std::nullopt;
  // The input: a batch axis (one parallel loop), a feature axis (the input-feature loop, plus the
  // group's offset: outFeature floordiv q * gf), and spatial axes (position * stride + tap *
  // dilation).
  struct Spatial {
    int64_t axis, position, stride, tap, dilation;
  };
  int64_t batchAxis = -1, batchLoop = -1, featureAxis = -1, featureLoop = -1, groups = 1;
  std::vector<Spatial> spatial;
  for (unsigned r = 0; r < maps[0].getNumResults(); ++r) {
    std::vector<int64_t> coef(loops, 0);
    std::optional<kernels::FloorTerm> floor;
    if (!kernels::decompose(maps[0].getResult(r), 1, coef, floor)) return std::nullopt;
    std::vector<size_t> used;
    for (size_t l = 0; l < loops; ++l)
      if (coef[l] != 0) used.push_back(l);
    if (used.size() == 1 && !reduction(used[0]) && coef[used[0]] == 1 && !floor && batchAxis < 0) {
      batchAxis = r, batchLoop = int64_t(used[0]);
    } else if (used.size() == 1 && reduction(used[0]) && coef[used[0]] == 1 && featureAxis < 0) {
      featureAxis = r, featureLoop = int64_t(used[0]);
      if (floor) {
        if (int64_t(floor->dim) != outFeature || floor->scale != ranges[used[0]] || ranges[outFeature] % floor->divisor)
          return std::nullopt;
        groups = ranges[outFeature] / floor->divisor;
      }
    } else if (used.size() == 2 && !floor && int64_t(used[0]) == outFeature && reduction(used[1]) &&
               coef[used[1]] == 1 && coef[used[0]] == ranges[used[1]] && featureAxis < 0) {
      // One output feature per group (depthwise): the group's offset outFeature floordiv 1 * gf
      // folded into a plain term.
      featureAxis = r, featureLoop = int64_t(used[1]), groups = ranges[outFeature];
    } else if (used.size() == 2 && !floor && !reduction(used[0]) && reduction(used[1])) {
      spatial.push_back({int64_t(r), int64_t(used[0]), coef[used[0]], int64_t(used[1]), coef[used[1]]});
    } else {
      return std::nullopt;
    }
  }
  if (batchAxis < 0 || featureAxis < 0 || spatial.empty() || batchLoop == outFeature ||
      kernelAxis[featureLoop] < 0 || maps[0].getNumResults() != types[0].getRank() || types[2].getRank() != types[0].getRank())
    return std::nullopt;
  const int64_t ns = int64_t(spatial.size());
  if (op.getNumParallelLoops() != unsigned(2 + ns) || op.getNumReductionLoops() != unsigned(1 + ns)) return std::nullopt;
  CudnnConv out{{int64_t(*xType), ns, 1 /* accumulate */, ranges[batchLoop], types[0].getDimSize(featureAxis),
                 ranges[outFeature], groups},
                operands[0]};
  std::vector<int64_t>& words = out.words;
  if (types[0].getDimSize(featureAxis) != groups * ranges[featureLoop]) return std::nullopt;
  // Zeros around the spatial axes only: cuDNN's padding.
  std::optional<Padding> padding = paddingOf(op, operands[0]);
  if (padding && (padding->before[batchAxis] || padding->after[batchAxis] || padding->before[featureAxis] ||
                  padding->after[featureAxis]))
    padding.reset();
  std::vector<int64_t> xStrides = strides[0];
  if (padding) {
    if (auto source = kernels::staticStrides(padding->source)) xStrides = std::move(*source);
    else padding.reset();
  }
  for (const Spatial& sp : spatial) {
    if (kernelAxis[sp.tap] < 0) return std::nullopt;
    const int64_t before = padding ? padding->before[sp.axis] : 0, after = padding ? padding->after[sp.axis] : 0;
    words.insert(words.end(), {types[0].getDimSize(sp.axis) - before - after, ranges[sp.tap], ranges[sp.position],
                               sp.stride, sp.dilation, before, after});
  }
  if (padding) out.x = padding->source, out.padding = padding->ops;
  // Strides in elements: X {n, c, spatial...}, W {k, c / groups, taps...}, Y {n, k, positions...}.
  words.insert(words.end(), {xStrides[batchAxis], xStrides[featureAxis]});
  for (const Spatial& sp : spatial) words.push_back(xStrides[sp.axis]);
  words.insert(words.end(), {strides[1][kernelAxis[outFeature]], strides[1][kernelAxis[featureLoop]]});
  for (const Spatial& sp : spatial) words.push_back(strides[1][kernelAxis[sp.tap]]);
  words.insert(words.end(), {strides[2][outputAxis[batchLoop]], strides[2][outputAxis[outFeature]]});
  for (const Spatial& sp : spatial) words.push_back(strides[2][outputAxis[sp.position]]);
  return out;
}

// Convolutions through cuDNN (runtime/cudnn.cpp's radix_cuda_conv), the generic under an scf.if
// for what cuDNN cannot take; a zero fill of the output before it moves there too (beta = 0), and
// so does the padding of the input that cuDNN does itself.
void lowerConvolutionsToLibrary(mlir::ModuleOp module) {
  std::vector<std::pair<mlir::linalg::GenericOp, CudnnConv>> found;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (auto conv = cudnnConvolution(op)) found.emplace_back(op, std::move(*conv));
  });
  if (found.empty()) return;
  const mlir::func::FuncOp decl = declareLibraryCall(module, "radix_cuda_conv", 7);
  mlir::OpBuilder b(module.getContext());
  for (auto& [op, conv] : found) {
    mlir::Operation* fill = zeroFillBefore(op);
    b.setInsertionPoint(op);
    const mlir::Location loc = op.getLoc();
    conv.words[kernels::kCudaConvAccumulate] = fill ? 0 : 1;
    std::vector<mlir::Value> args, array;
    for (mlir::Value v : {conv.x, op.getDpsInputOperand(1)->get(), op.getDpsInitOperand(0)->get()}) {
      auto [base, offset] = kernels::basePointerAndOffset(b, loc, v);
      args.insert(args.end(), {base, offset});
    }
    for (int64_t w : conv.words) array.push_back(mlir::arith::ConstantIntOp::create(b, loc, w, 64));
    args.push_back(kernels::hostArray(b, op, array));
    mlir::Operation* end = callWithFallback(b, loc, decl, args).thenBlock()->getTerminator();
    for (mlir::Operation* pad : conv.padding) pad->moveBefore(end);
    if (fill) fill->moveBefore(end);
    op->moveBefore(end);
  }
}

// A reduction with few outputs runs one thread per output: a row's softmax or norm, or a whole
// sum, in one thread. Splitting its reduced dim in two (linalg::splitReduction) makes a first
// op with `ratio` times the outputs, each reducing a chunk, and a second that combines the
// chunks: both map to threads as any other op. Contractions (cuBLASLt's) are left alone.
constexpr int64_t kEnoughOutputs = 4096;     // outputs that keep a GPU busy without a split
constexpr int64_t kMinSplitLength = 256;     // shorter reductions stay whole
constexpr int64_t kChunk = 64;               // elements each thread of the first op reduces

// The split ratio for a reduction of `length` elements over `outputs` outputs: the divisor of
// `length` nearest above length / kChunk, such that outputs x ratio stays within a few waves;
// 0 for none.
int64_t splitRatio(int64_t outputs, int64_t length) {
  if (outputs >= kEnoughOutputs || length < kMinSplitLength) return 0;
  for (int64_t r = std::max<int64_t>(2, length / kChunk); r <= length / 8; ++r)
    if (length % r == 0) return outputs * r <= (int64_t{1} << 20) ? r : 0;
  return 0;
}

struct SplitReductionsPass : mlir::PassWrapper<SplitReductionsPass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SplitReductionsPass)
  llvm::StringRef getArgument() const final { return "radix-split-reductions"; }
  llvm::StringRef getDescription() const final {
    return "Radix: reductions with few outputs split in two, for one thread per output on a GPU";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect, mlir::arith::ArithDialect>();
  }
  void runOnOperation() override {
    std::vector<mlir::linalg::GenericOp> ops;
    getOperation().walk([&](mlir::linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() && op.getNumReductionLoops() == 1 && op.getNumDpsInits() == 1 &&
          !mlir::linalg::isaContractionOpInterface(op))
        ops.push_back(op);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::linalg::GenericOp op : ops) {
      const llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      const auto iterators = op.getIteratorTypesArray();
      int64_t outputs = 1, length = 0;
      unsigned reduced = 0;
      bool dynamic = false;
      for (unsigned d = 0; d < ranges.size(); ++d) {
        dynamic = dynamic || mlir::ShapedType::isDynamic(ranges[d]);
        if (iterators[d] == mlir::utils::IteratorType::reduction) length = ranges[d], reduced = d;
        else outputs *= ranges[d];
      }
      if (dynamic || reduced + 1 != ranges.size()) continue;
      const int64_t chunks = splitRatio(outputs, length);
      if (chunks == 0) continue;
      rewriter.setInsertionPoint(op);
      // The chunk index becomes the intermediate's last dim; each chunk's elements are contiguous.
      (void)mlir::linalg::splitReduction(rewriter, op, [&](mlir::linalg::LinalgOp) {
        return mlir::linalg::SplitReductionOptions{chunks, reduced, /*innerParallel=*/false};
      });
    }
  }
};

// Loops of a linalg op without parallel dims (a full reduction) stay sequential: one thread of
// their own, as a one-iteration scf.parallel, instead of host code over device memory.
void wrapSequentialLoops(mlir::ModuleOp module) {
  std::vector<mlir::scf::ForOp> loops;
  module.walk([&](mlir::scf::ForOp f) {
    if (!f->getParentOfType<mlir::scf::ParallelOp>() && !f->getParentOfType<mlir::scf::ForOp>() && touchesMemory(f))
      loops.push_back(f);
  });
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::scf::ForOp f : loops) {
    rewriter.setInsertionPoint(f);
    const mlir::Value zero = mlir::arith::ConstantIndexOp::create(rewriter, f.getLoc(), 0);
    const mlir::Value one = mlir::arith::ConstantIndexOp::create(rewriter, f.getLoc(), 1);
    auto single = mlir::scf::ParallelOp::create(rewriter, f.getLoc(), mlir::ValueRange{zero}, mlir::ValueRange{one},
                                                mlir::ValueRange{one});
    f->moveBefore(single.getBody()->getTerminator());
  }
}

// Each outermost scf.parallel: its dims collapsed into one, tiled by the block size (blocks x
// threads once gpu-map-parallel-loops has run).
void tileOutermostLoops(mlir::ModuleOp module) {
  std::vector<mlir::scf::ParallelOp> loops;
  module.walk([&](mlir::scf::ParallelOp p) {
    if (!p->getParentOfType<mlir::scf::ParallelOp>()) loops.push_back(p);
  });
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::scf::ParallelOp p : loops) {
    const unsigned rank = p.getNumLoops();
    if (rank > 1) {
      std::vector<unsigned> all(rank);
      for (unsigned i = 0; i < rank; ++i) all[i] = i;
      rewriter.setInsertionPoint(p);
      mlir::collapseParallelLoops(rewriter, p, {all});
    }
  }
  loops.clear();
  module.walk([&](mlir::scf::ParallelOp p) {
    if (!p->getParentOfType<mlir::scf::ParallelOp>()) loops.push_back(p);
  });
  // Constant inner bounds (an scf.if guards the last block): convert-parallel-loops-to-gpu needs them.
  for (mlir::scf::ParallelOp p : loops) mlir::scf::tileParallelLoop(p, {kBlockThreads}, /*noMinMaxBounds=*/true);
}

// One gpu.module for all kernels: code generation then runs ptxas once per program instead of
// once per kernel (49 kernels of a GPT-2 step: 1.5 s of ptxas start-ups). Kernels are renamed
// after their module (unique symbols); a module holding anything besides its kernel stays apart.
void mergeKernelModules(mlir::ModuleOp module) {
  std::vector<mlir::gpu::GPUModuleOp> modules;
  for (auto m : module.getOps<mlir::gpu::GPUModuleOp>()) modules.push_back(m);
  if (modules.size() < 2) return;
  mlir::MLIRContext* ctx = module.getContext();
  mlir::gpu::GPUModuleOp into = modules.front();
  std::map<std::pair<std::string, std::string>, std::string> renamed;
  for (mlir::gpu::GPUModuleOp m : modules) {
    std::vector<mlir::gpu::GPUFuncOp> funcs;
    bool onlyKernels = true;
    for (mlir::Operation& op : m.getBody()->getOperations()) {
      if (auto f = mlir::dyn_cast<mlir::gpu::GPUFuncOp>(op)) funcs.push_back(f);
      else onlyKernels = false;
    }
    if ((!onlyKernels || funcs.size() != 1) && m != into) continue;
    if (m == into && (!onlyKernels || funcs.size() != 1)) return;  // keep it simple: nothing to merge into
    mlir::gpu::GPUFuncOp f = funcs.front();
    const std::string newName = m.getName().str();
    renamed[{m.getName().str(), f.getName().str()}] = newName;
    f.setName(newName);
    if (m != into) f->moveBefore(into.getBody(), into.getBody()->end());
  }
  module.walk([&](mlir::gpu::LaunchFuncOp launch) {
    auto it = renamed.find({launch.getKernelModuleName().str(), launch.getKernelName().str()});
    if (it == renamed.end()) return;
    launch.setKernelAttr(mlir::SymbolRefAttr::get(ctx, into.getName(), {mlir::FlatSymbolRefAttr::get(ctx, it->second)}));
  });
  for (mlir::gpu::GPUModuleOp m : modules)
    if (m != into && m.getBody()->empty()) m->erase();
}

// Host buffers become device buffers: allocations, frees and copies outside kernels. gpu-to-llvm
// takes only the async forms: each gets its own stream, waited for at once.
void moveHostBuffersToDevice(mlir::ModuleOp module) {
  mlir::IRRewriter rewriter(module.getContext());
  std::vector<mlir::Operation*> ops;
  module.walk([&](mlir::Operation* op) {
    if (!insideKernel(op) && !op->hasAttr(kernels::kHostArrayAttr) &&
        mlir::isa<mlir::memref::AllocOp, mlir::memref::AllocaOp, mlir::memref::DeallocOp, mlir::memref::CopyOp>(op))
      ops.push_back(op);
  });
  const mlir::Type token = mlir::gpu::AsyncTokenType::get(module.getContext());
  for (mlir::Operation* op : ops) {
    rewriter.setInsertionPoint(op);
    const mlir::Location loc = op->getLoc();
    const mlir::Value start = mlir::gpu::WaitOp::create(rewriter, loc, token, mlir::ValueRange()).getAsyncToken();
    mlir::Value done;
    // memref.alloc and memref.alloca: the same operands, the same device allocation.
    auto allocate = [&](auto alloc) {
      auto g = mlir::gpu::AllocOp::create(rewriter, loc, alloc.getType(), token, mlir::ValueRange{start},
                                          alloc.getDynamicSizes(), alloc.getSymbolOperands(), false);
      mlir::gpu::WaitOp::create(rewriter, loc, mlir::Type(), mlir::ValueRange{g.getAsyncToken()});
      rewriter.replaceOp(op, g.getMemref());
    };
    if (auto alloc = mlir::dyn_cast<mlir::memref::AllocOp>(op)) {
      allocate(alloc);
      continue;
    }
    if (auto alloca = mlir::dyn_cast<mlir::memref::AllocaOp>(op)) {
      allocate(alloca);
      continue;
    }
    if (auto dealloc = mlir::dyn_cast<mlir::memref::DeallocOp>(op))
      done = mlir::gpu::DeallocOp::create(rewriter, loc, token, mlir::ValueRange{start}, dealloc.getMemref()).getAsyncToken();
    else if (auto copy = mlir::dyn_cast<mlir::memref::CopyOp>(op))
      done = mlir::gpu::MemcpyOp::create(rewriter, loc, token, mlir::ValueRange{start}, copy.getTarget(), copy.getSource())
                 .getAsyncToken();
    mlir::gpu::WaitOp::create(rewriter, loc, mlir::Type(), mlir::ValueRange{done});
    rewriter.eraseOp(op);
  }
  // Small buffers the host reads (a runtime position, a loop bound, an RNG's state) come over in
  // a copy of their own, whole, for each access.
  auto staged = [](mlir::MemRefType t) {
    if (!t.hasStaticShape() || !t.getLayout().isIdentity() || !t.getElementType().isIntOrFloat()) return false;
    return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8) <= kMaxStagedBytes;
  };
  std::vector<mlir::memref::LoadOp> loads;
  module.walk([&](mlir::memref::LoadOp load) {
    if (!insideKernel(load) && staged(load.getMemRefType())) loads.push_back(load);
  });
  // A copy on a stream of its own, waited for.
  auto copyNow = [&](mlir::Location loc, mlir::Value to, mlir::Value from) {
    const mlir::Value start = mlir::gpu::WaitOp::create(rewriter, loc, token, mlir::ValueRange()).getAsyncToken();
    const mlir::Value done = mlir::gpu::MemcpyOp::create(rewriter, loc, token, mlir::ValueRange{start}, to, from).getAsyncToken();
    mlir::gpu::WaitOp::create(rewriter, loc, mlir::Type(), mlir::ValueRange{done});
  };
  for (mlir::memref::LoadOp load : loads) {
    rewriter.setInsertionPoint(load);
    const mlir::Value host = mlir::memref::AllocaOp::create(rewriter, load.getLoc(), load.getMemRefType());
    copyNow(load.getLoc(), host, load.getMemref());
    load.getMemrefMutable().assign(host);
  }
  // What the host computes (the next position, the RNG's next state) goes back the same way:
  // the buffer's other elements first come over, so that a store changes only its own.
  std::vector<mlir::memref::StoreOp> stores;
  module.walk([&](mlir::memref::StoreOp store) {
    if (!insideKernel(store) && staged(store.getMemRefType())) stores.push_back(store);
  });
  for (mlir::memref::StoreOp store : stores) {
    rewriter.setInsertionPoint(store);
    const mlir::Location loc = store.getLoc();
    const mlir::Value host = mlir::memref::AllocaOp::create(rewriter, loc, store.getMemRefType());
    if (store.getMemRefType().getNumElements() > 1) copyNow(loc, host, store.getMemref());
    mlir::memref::StoreOp::create(rewriter, loc, store.getValueToStore(), host, store.getIndices());
    copyNow(loc, store.getMemref(), host);
    rewriter.eraseOp(store);
  }
}

// What the host code may still do: launch, allocate, copy, call, return, and index arithmetic.
void checkHostCode(mlir::ModuleOp module, const std::string& target) {
  module.walk([&](mlir::Operation* op) {
    if (insideKernel(op) || op->getParentOfType<mlir::gpu::GPUModuleOp>()) return;
    // Staged scalars (moveHostBuffersToDevice) live in host allocas; anything else is device memory.
    mlir::Value memref;
    if (auto load = mlir::dyn_cast<mlir::memref::LoadOp>(op)) memref = load.getMemref();
    if (auto store = mlir::dyn_cast<mlir::memref::StoreOp>(op)) memref = store.getMemref();
    if (memref && !memref.getDefiningOp<mlir::memref::AllocaOp>()) {
      std::string where;
      llvm::raw_string_ostream os(where);
      op->getLoc().print(os);
      throw Error("[compile] " + target + ": the program reads or writes a tensor element on the host (" + where +
                  "): control flow or indices that depend on tensor values do not run on the GPU yet");
    }
  });
}

}  // namespace

void registerGpuPasses() {
  static std::once_flag once;
  std::call_once(once, [] { mlir::PassRegistration<SplitReductionsPass>(); });
}

void initNvptxOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

namespace {
bool executableIn(const std::string& dir, const char* name) {
  return !dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0;
}
}  // namespace

std::string findPtxas() {
  static const std::string found = [] {
    // MLIR runs the ptxas it finds on PATH: where PATH has none, the toolkit's folder is added.
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "";
    for (size_t start = 0; start <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      if (executableIn(dirs.substr(start, end - start), "ptxas")) return dirs.substr(start, end - start);
      start = end + 1;
    }
    const char* env = std::getenv("RADIX_CUDA_PATH");
    for (const std::string& root : {std::string(env ? env : ""), std::string("/usr/local/cuda")}) {
      if (!executableIn(root.empty() ? "" : root + "/bin", "ptxas")) continue;
      const std::string bin = root + "/bin";
      ::setenv("PATH", (dirs.empty() ? bin : dirs + ":" + bin).c_str(), 1);
      return bin;
    }
    return std::string();
  }();
  return found;
}

std::string cudaArch(std::string_view target) {
  if (!target.starts_with("cuda:")) return "";
  return std::string(target.substr(5));
}

void lowerForCuda(mlir::ModuleOp module, const std::string& target, const PipelineRunner& runPipeline) {
  const std::string arch = cudaArch(target);
  if (findPtxas().empty())
    throw Error("[compile] " + target + " needs ptxas, the CUDA toolkit's assembler: none on PATH, in $RADIX_CUDA_PATH/bin "
                "or /usr/local/cuda/bin");
  // PTX 8.0 is the first to know sm_90a; the toolkit's ptxas (13.0) takes it.
  const std::string features = "+ptx80";
  // No canonicalization before mapping: it would fold one-iteration parallel loops into host code.
  lowerAttentionToLibrary(module);
  lowerConvolutionsToLibrary(module);
  lowerContractionsToLibrary(module);
  lowerStridedCopies(module);
  runPipeline("func.func(convert-linalg-to-parallel-loops)", "cuda loops");
  wrapSequentialLoops(module);
  tileOutermostLoops(module);
  runPipeline("func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu),gpu-kernel-outlining,lower-affine,canonicalize,cse",
              "cuda kernels");
  mergeKernelModules(module);
  moveHostBuffersToDevice(module);
  checkHostCode(module, target);
  // gpu-lower-to-nvvm-pipeline's passes, but with host functions left to gpu-to-llvm, which
  // converts them with bare pointers: the packed entry the runtime calls (one data pointer per
  // buffer) is then the CPU executables'. Kernels take full descriptors (subviews of the KV
  // cache have dynamic offsets).
  runPipeline("convert-nvgpu-to-nvvm,convert-vector-to-scf,convert-scf-to-cf,convert-nvvm-to-llvm,"
              "expand-strided-metadata,lower-affine,"
              "gpu.module(math-extend-to-supported-types{target-type=f32},arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}),"
              "nvvm-attach-target{chip=" + arch + " features=" + features + " O=3},"
              // Kernels first, so that their arith and math become libdevice calls (remf: __nv_fmodf)
              // rather than LLVM ops NVVM lacks; then the host's (erf through libm).
              "gpu.module(convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),"
              "convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,convert-index-to-llvm,canonicalize,cse,"
              "gpu-to-llvm{use-bare-pointers-for-host=1},gpu-module-to-binary{format=bin},"
              "canonicalize,cse,reconcile-unrealized-casts",
              "cuda code generation");
}

}  // namespace radix::detail
