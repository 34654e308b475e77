// The CUDA lowering (docs/gpu.md). On tensors, long reductions with few outputs are split in two
// (radix-split-reductions). On buffers, contractions call cuBLASLt where the runtime has it;
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
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/error.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace radix::detail {
namespace {

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

// The zero fill of a contraction's result just before it (only pure ops between), or null: the
// library call then overwrites the result instead of accumulating, and the fill goes with the
// fallback.
mlir::Operation* zeroFillBefore(mlir::linalg::GenericOp op) {
  for (mlir::Operation* prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (mlir::isPure(prev)) continue;
    auto fill = mlir::dyn_cast<mlir::linalg::GenericOp>(prev);
    if (fill && fill.hasPureBufferSemantics() && kernels::isZeroFill(fill) &&
        fill.getDpsInitOperand(0)->get() == op.getDpsInitOperand(0)->get())
      return fill;
    return nullptr;
  }
  return nullptr;
}

// Contractions through cuBLASLt (runtime/cublaslt.cpp): a call that answers non-zero when the
// library cannot take the problem, and the generated kernels under an scf.if for that case.
// Contractions with loops around the library call (strides that do not merge) keep the kernels.
void lowerContractionsToLibrary(mlir::ModuleOp module) {
  std::vector<std::pair<mlir::linalg::GenericOp, kernels::ContractionPlan>> found;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (auto plan = kernels::planContraction(op); plan && plan->loops.empty()) found.emplace_back(op, *plan);
  });
  if (found.empty()) return;
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto i64 = b.getI64Type();
  auto decl = mlir::func::FuncOp::create(b, module.getLoc(), "radix_cuda_contract",
                                         b.getFunctionType(std::vector<mlir::Type>(21, i64), {b.getI32Type()}));
  decl.setPrivate();
  for (auto& [op, plan] : found) {
    mlir::Operation* fill = zeroFillBefore(op);
    b.setInsertionPoint(op);
    const mlir::Location loc = op.getLoc();
    mlir::Value base[3], offset[3];
    const mlir::Value operands[3] = {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
                                     op.getDpsInitOperand(0)->get()};
    for (int x = 0; x < 3; ++x) std::tie(base[x], offset[x]) = kernels::basePointerAndOffset(b, loc, operands[x]);
    std::vector<mlir::Value> args = kernels::contractionCallArgs(b, loc, base, offset, plan);
    args.push_back(mlir::arith::ConstantIntOp::create(b, loc, fill ? 0 : 1, 64));
    const mlir::Value status = mlir::func::CallOp::create(b, loc, decl, args).getResult(0);
    const mlir::Value zero = mlir::arith::ConstantIntOp::create(b, loc, 0, 32);
    const mlir::Value fallback = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ne, status, zero);
    auto ifOp = mlir::scf::IfOp::create(b, loc, fallback, /*withElseRegion=*/false);
    mlir::Operation* end = ifOp.thenBlock()->getTerminator();
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
    if (!insideKernel(op) && mlir::isa<mlir::memref::AllocOp, mlir::memref::AllocaOp, mlir::memref::DeallocOp,
                                       mlir::memref::CopyOp>(op))
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
  lowerContractionsToLibrary(module);
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
