// Lowering (linalg on tensors -> LLVM), JIT, and the on-disk executable cache.
#include "compiler/compiler.h"

#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "runtime/cache.h"
#include "compiler/kernels/conv_lower.h"
#include "compiler/kernels/lower.h"
#include "compiler/kernels/quant/lower_quant.h"
#include "compiler/gpu.h"
#include "compiler/profile_sites.h"
#include "compiler/shard.h"
#include "compiler/fast_ewise.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "radix/error.h"
#include "radix/version.h"
#include "runtime/mpi.h"
#include "runtime/profiler.h"
#include "runtime/runtime.h"

namespace radix::detail {

namespace {

namespace fs = std::filesystem;

// @main is renamed in the lowered module: a JIT-ed `main` meets the program's own and LLVM's
// special treatment of that name.
constexpr const char* kTracedEntry = "main";
constexpr const char* kEntry = "radix_entry";

// Before prepareEntry: each value once.
const char* kInlinePipeline = "symbol-dce,canonicalize,cse,canonicalize";

// Tensors -> fused linalg on tensors -> buffers.
const char* kFusePipeline =
    "convert-elementwise-to-linalg,"
    // radix-fuse-elementwise-ops is linalg-fuse-elementwise-ops keeping dequantize ops whole
    // (kernels/quant/lower_quant.cpp), so that their contractions take the fused-decode kernels.
    "func.func(linalg-generalize-named-ops,radix-fuse-elementwise-ops),canonicalize,cse,"
    // fast_ewise.cpp: unit dims folded (reshapes out of the way), row ops fused over rows.
    "func.func(radix-fold-unit-dims,canonicalize,cse,radix-fuse-elementwise-ops,radix-fuse-rows),canonicalize,cse";
// The CUDA path's (compiler/gpu.cpp): upstream fusion only, the row kernels are the CPU's.
const char* kCudaFusePipeline =
    "convert-elementwise-to-linalg,func.func(linalg-generalize-named-ops,linalg-fuse-elementwise-ops),canonicalize,cse,"
    "func.func(radix-split-reductions),canonicalize,cse";  // gpu.cpp
// Between the two: writeLoopStateInPlace.
const char* kBufferizePipeline =
    "eliminate-empty-tensors,"
    "one-shot-bufferize{allow-return-allocs-from-loops bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map unknown-type-conversion=identity-layout-map},"
    // A private function that writes an argument in place returns that argument: its call sites
    // use the argument, so a donated buffer written inside a radix::call is not copied back.
    "drop-equivalent-buffer-results,"
    "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},canonicalize,"
    "buffer-deallocation-pipeline,convert-bufferization-to-memref";

// Buffers -> loops -> LLVM. With threads != 1, the outer parallel loops of each linalg op
// become OpenMP work-sharing loops (libomp).
std::string loopsPipeline(int threads) {
  const bool parallel = threads != 1;
  std::string p = std::string("func.func(radix-lower-rows{parallel=") + (parallel ? "1" : "0") + "}),";  // fast_ewise.cpp
  if (parallel) {
    p += "func.func(convert-linalg-to-parallel-loops),lower-affine,convert-scf-to-openmp{num-threads=" +
         std::to_string(std::max(threads, 0)) + "},canonicalize,";
  } else {
    p += "func.func(convert-linalg-to-loops),lower-affine,convert-scf-to-cf,canonicalize,";
  }
  // use-generic-functions: allocations go to runtime/alloc.cpp, which reuses large blocks.
  p += "expand-strided-metadata,lower-affine,"
       "func.func(math-extend-to-supported-types{target-type=f32}),func.func(radix-math-approx),"
       "func.func(arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}),"
       "func.func(arith-expand{include-bf16}),convert-vector-to-llvm,finalize-memref-to-llvm{use-generic-functions},";
  // alloca_scope regions made by scf-to-openmp must reach LLVM before scf becomes cf.
  if (parallel) p += "convert-scf-to-cf,";
  // Shapes are static: functions take bare data pointers, not memref descriptors, which keeps
  // call sites small (SelectionDAG is superlinear in the size of a basic block). Functions are
  // converted before OpenMP, whose conversion would otherwise convert them with descriptors.
  p += "convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,convert-cf-to-llvm,"
       "convert-func-to-llvm{use-bare-ptr-memref-call-conv},";
  if (parallel) p += "convert-openmp-to-llvm,";
  p += "convert-index-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts";
  return p;
}

// radix::call functions stay functions in the object: LLVM would otherwise inline each call
// site (12 copies of a transformer block) and spend most of a cold compile on the copies.
void keepCallsOutOfLine(mlir::ModuleOp module) {
  mlir::Builder b(module.getContext());
  module.walk([&](mlir::LLVM::LLVMFuncOp fn) {
    if (fn.isExternal() || !fn.isPrivate()) return;
    fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
  });
}

// Ops with fewer iterations than this run as serial loops even with threads: a fork-join costs
// more than the work, and every OpenMP region is more code for LLVM.
constexpr int64_t kMinParallelIterations = 1 << 15;

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

void addEntryKey(mlir::ModuleOp module, const std::string& text) {
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto type = mlir::LLVM::LLVMArrayType::get(b.getI8Type(), static_cast<unsigned>(text.size()));
  mlir::LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true, mlir::LLVM::Linkage::External,
                               kEntryKeySymbol, b.getStringAttr(text));
}

// RADIX_ATTENTION=composed compiles nn::sdpa's composition instead of the fused kernel.
bool fusedAttentionOn() {
  const char* v = std::getenv("RADIX_ATTENTION");
  return v == nullptr || std::string_view(v) != "composed";
}

bool profileOn(const CompileOptions& options) { return options.profile ? *options.profile : profileEnvOn(); }

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

void initLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Translates a one-function module with a parameter attribute once, so that the function-local
/// statics MLIR's LLVM translation builds on first use (convertParameterAttrs) exist before two
/// compiles run at once: the first use from two threads is a race that ThreadSanitizer reports.
void warmTranslation() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::LLVM::LLVMDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(
      "llvm.func @warm(%arg0: !llvm.ptr {llvm.noalias, llvm.nonnull}) { llvm.return }", &ctx);
  if (!module) return;
  llvm::LLVMContext llvmContext;
  (void)mlir::translateModuleToLLVMIR(*module, llvmContext);
}

void registerPassesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::registerAllPasses();
    registerFastEwisePasses();
    registerGpuPasses();
    kernels::registerQuantPasses();
    warmTranslation();
  });
}

struct Target {
  std::string triple, cpu, features;
  std::string str() const { return triple + "|" + cpu + "|" + features; }
};


Target hostTarget(const CompileOptions& options) {
  Target t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = options.targetCpu.empty() ? std::string(llvm::sys::getHostCPUName()) : options.targetCpu;
  if (!options.targetFeatures.empty() || !options.targetCpu.empty()) {
    t.features = options.targetFeatures;  // an overridden CPU brings its own default features
  } else {
    static const std::string host = [] {  // the host does not change: read it once (warm path)
      // Off features too: a CPU name implies features (emeraldrapids: AMX) that this host may
      // lack (a hypervisor or kernel that hides the tile state).
      std::vector<std::string> on;
      for (auto& f : llvm::sys::getHostCPUFeatures()) on.push_back((f.second ? "+" : "-") + f.first().str());
      std::sort(on.begin(), on.end());
      std::string joined;
      for (size_t i = 0; i < on.size(); ++i) joined += (i ? "," : "") + on[i];
      return joined;
    }();
    t.features = host;
  }
  return t;
}

// What code for `platform` is generated for: the host (or the overridden CPU); for a CUDA
// platform, the host side, which runs on whatever x86-64 CPU serves the GPU: baseline code.
Target targetOf(const Platform& platform) {
  if (cudaArch(platform.target()).empty()) return hostTarget(platform.options());
  return Target{llvm::sys::getProcessTriple(), "x86-64", ""};
}

llvm::orc::JITTargetMachineBuilder machineBuilder(const Target& target, int optLevel) {
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.triple)};
  jtmb.setCPU(target.cpu);
  std::vector<std::string> features;
  std::stringstream ss(target.features);
  for (std::string f; std::getline(ss, f, ',');)
    if (!f.empty()) features.push_back(f);
  jtmb.addFeatures(features);
  jtmb.setCodeGenOptLevel(optLevel <= 0 ? llvm::CodeGenOptLevel::None
                          : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                          : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                          : llvm::CodeGenOptLevel::Aggressive);
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  return jtmb;
}

std::string errorText(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return s;
}

/// Writes the IR after each pass (matching a regex) into a folder, and names the failing pass.
class DumpInstrumentation : public mlir::PassInstrumentation {
 public:
  DumpInstrumentation(std::string dir, std::string regex, bool everyPass, int& counter)
      : dir_(std::move(dir)), everyPass_(everyPass), index_(counter) {
    // Only when dumping: std::regex is slow to build (and races on the locale's narrow cache).
    if (everyPass_ && !dir_.empty()) regex_.emplace(regex.empty() ? ".*" : regex);
  }
  void runAfterPass(mlir::Pass* pass, mlir::Operation* op) override {
    ++index_;
    if (!everyPass_ || dir_.empty()) return;
    std::string arg = pass->getArgument().str();
    if (!regex_ || !std::regex_search(arg, *regex_)) return;
    char name[256];
    std::snprintf(name, sizeof name, "%03d_%s.mlir", index_, arg.empty() ? "pass" : arg.c_str());
    std::error_code ec;
    fs::create_directories(fs::path(dir_) / "passes", ec);
    std::ofstream out(fs::path(dir_) / "passes" / name);
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os);
    out << text;
  }
  void runAfterPassFailed(mlir::Pass* pass, mlir::Operation* op) override {
    failedPass_ = pass->getArgument().str();
    if (failedPass_.empty()) failedPass_ = pass->getName().str();
    if (!dir_.empty()) {
      std::error_code ec;
      fs::create_directories(dir_, ec);
      failedPath_ = (fs::path(dir_) / ("failed_" + failedPass_ + ".mlir")).string();
      std::ofstream out(failedPath_);
      std::string text;
      llvm::raw_string_ostream os(text);
      op->print(os);
      out << text;
    }
  }
  std::string failedPass_, failedPath_;

 private:
  std::string dir_;
  std::optional<std::regex> regex_;
  bool everyPass_;
  int& index_;
};

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

bool isZeroSize(mlir::Type type) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(type);
  return t && t.getNumElements() == 0 && t.getRank() != 1;
}

mlir::RankedTensorType flatZero(mlir::Type type) {
  return mlir::RankedTensorType::get({0}, mlir::cast<mlir::RankedTensorType>(type).getElementType());
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
// out-parameters (radix.fresh_outputs_after: nothing donated) that nothing else touches, and
// temporaries whose every use, through views, comes before the copy.
void writeReshapedResultsInPlace(mlir::ModuleOp module) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>(kEntry);
  if (!main || main.isExternal()) return;
  auto fresh = main->getAttrOfType<mlir::IntegerAttr>("radix.fresh_outputs_after");
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

}  // namespace

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

static std::string cacheKeyMaterial(const Target& t, const CompileOptions& o) {
  // codegenHash(): the pipeline and the compiled code's ABI, renewed by any change to their
  // sources. Profiling off adds nothing, so a plain compile's key is the same with it off.
  return t.str() + "|radix " RADIX_VERSION "|llvm " LLVM_VERSION_STRING "|codegen " + codegenHash() +
         "|O" + std::to_string(o.optLevel) + "|threads " + std::to_string(o.threads) + "|extra " + o.extraPasses +
         (profileOn(o) ? "|profile" : "") + (fusedAttentionOn() ? "" : "|composed-attention") +
         (kernels::convKernelsEnabled() ? "" : "|conv-loops");
}

namespace {
// What the runtime needs to load and call the entry without the compiler (radix::Program): the
// signature and the features the code may use, as the target machine has them.
ProgramEntry programEntry(const llvm::TargetMachine& tm, const std::string& name, const Platform& platform,
                          const Signature& signature) {
  ProgramEntry p;
  p.name = name;
  p.target = std::string(platform.target());
  p.arch = tm.getTargetTriple().getArchName().str();
  p.cpu = tm.getTargetCPU().str();
  const llvm::MCSubtargetInfo* info = tm.getMCSubtargetInfo();
  for (const auto& kv : info->getAllProcessorFeatures())
    if (info->getFeatureBits()[kv.Value]) p.features.emplace_back(kv.Key);
  p.signature = signature;
  p.signature.argTypes = nullptr;
  return p;
}

// `object`: also return the object's bytes (sharded compiles send them to the other ranks).
CompiledCode compileModuleHere(mlir::ModuleOp module, const std::string& moduleText, const Platform& platform,
                               const std::string& name, const Signature& signature, uint64_t key, std::string* object) {
  TraceEvent total("compile");
  total.arg("name", name);
  initLlvmOnce();
  const CompileOptions& options = platform.options();
  const bool cuda = !cudaArch(platform.target()).empty();
  const Target target = targetOf(platform);
  if (cuda && signature.partitions > 1)
    throw Error("[compile] " + std::string(platform.target()) + ": sharded programs do not run on the GPU yet");

  // With locations: only for dumps and new cache entries, not on the warm path.
  auto debugText = [&] {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, mlir::OpPrintingFlags().enableDebugInfo(true, false));
    return text;
  };

  const std::string dumpDir = resolveDumpDir(options);
  std::string moduleDumpDir;
  if (!dumpDir.empty()) {
    moduleDumpDir = entryPath(dumpDir, platform.target(), name, key);
    writeFileAtomic(fs::path(moduleDumpDir) / "module.mlir", debugText());
  }

  std::optional<CacheEntry> cache = openCache(options, platform.target(), name, key);
  if (cache) {
    TraceEvent lookup("cache.lookup");
    auto loaded = cache->load(signature.resultShapes.size());
    std::optional<std::vector<ProfileSite>> cachedSites;
    if (loaded && profileOn(options)) {
      if (loaded->profileSites) cachedSites = parseProfileSites(*loaded->profileSites);
      if (!cachedSites) {
        std::fprintf(stderr, "radix: warning: cache entry %s has no valid profile table; recompiling\n",
                     cache->dir().c_str());
        loaded.reset();
      }
    }
    if (loaded) {
      lookup.arg("hit", "true");
      CompiledCode code;
      if (cachedSites) code.profile = makeProfileTable(std::move(*cachedSites));
      code.loadSeconds = lookup.seconds();
      code.entry = reinterpret_cast<PackedEntry>(loaded->entry);
      code.owner = loaded->owner;
      code.fromCache = true;
      code.entryDir = cache->dir();
      code.resultAlias = std::move(loaded->resultAlias);
      if (object) *object = readRegularFile((fs::path(cache->dir()) / "entry.o").string(), size_t(1) << 34).data.value_or("");
      return code;
    }
    lookup.arg("hit", "false");
  }

  mlir::MLIRContext* ctx = module.getContext();
  {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    mlir::registerOpenMPDialectTranslation(registry);
    if (cuda) mlir::registerAllGPUToLLVMIRTranslations(registry);
    ctx->appendDialectRegistry(registry);
  }
  registerPassesOnce();
  if (cuda) initNvptxOnce();

  mlir::OwningOpRef<mlir::ModuleOp> lowered(mlir::cast<mlir::ModuleOp>(module->clone()));

  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic& d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });

  double lowerSeconds = 0;
  std::vector<int32_t> resultAlias;
  const bool profile = profileOn(options) && !cuda;
  std::vector<ProfileSite> sites;
  {
    TraceEvent lower("compile.lower");
    const char* passEnv = std::getenv("RADIX_DUMP_PASSES");
    const bool everyPass = options.dumpPasses || passEnv != nullptr;
    const std::string passRegex = !options.dumpPassRegex.empty() ? options.dumpPassRegex : passEnv ? passEnv : "";
    int passIndex = 0;
    auto runPipeline = [&](const std::string& text, const char* what) {
      mlir::PassManager pm(ctx);
      if (mlir::failed(mlir::parsePassPipeline(text, pm)))
        throw Error(std::string("[compile] bad ") + what + " pipeline \"" + text + "\": " + diagnostics);
      auto* dump = new DumpInstrumentation(moduleDumpDir, passRegex, everyPass, passIndex);
      pm.addInstrumentation(std::unique_ptr<mlir::PassInstrumentation>(dump));
      if (mlir::failed(pm.run(*lowered))) {
        std::string where = dump->failedPath_.empty() ? "set RADIX_DUMP_DIR to keep the IR" : "IR at " + dump->failedPath_;
        throw Error("[compile] pass " + dump->failedPass_ + " failed (" + where + "):\n" + diagnostics);
      }
    };
    runPipeline(kInlinePipeline, "canonicalization");
    if (signature.partitions > 1) partitionForProcesses(*lowered, signature, signature.partitions, runPipeline);
    resultAlias = prepareEntry(*lowered, signature);
    retypeZeroSizeBoundaries(*lowered, resultAlias);
    if (!options.extraPasses.empty()) runPipeline(options.extraPasses, "extraPasses");
    runPipeline(cuda ? kCudaFusePipeline : kFusePipeline, "fusion");
    dropFusionBarriers(lowered->getOperation());
    unshareFilledDestinations(*lowered);
    writeLoopStateInPlace(*lowered);
    runPipeline(kBufferizePipeline, "bufferization");
    dropDonatedSelfCopies(*lowered, signature, resultAlias);
    if (!cuda) writeReshapedResultsInPlace(*lowered);
    if (cuda) {
      lowerForCuda(*lowered, std::string(platform.target()), runPipeline);
    } else {
      // Before the profile's sites: the composition it replaces is gone, its kernel call is a site.
      if (fusedAttentionOn())
        kernels::lowerAttentionToKernels(*lowered, {target.triple, target.cpu, target.features, options.threads});
      if (profile) sites = instrumentProfile(*lowered);
      const kernels::KernelTarget kernelTarget{target.triple, target.cpu, target.features, options.threads};
      kernels::lowerConvolutionsToKernels(*lowered, kernelTarget);
      kernels::lowerQuantContractions(*lowered, kernelTarget);
      kernels::lowerContractionsToKernels(*lowered, kernelTarget);
      kernels::lowerZeroFillsToMemset(*lowered, options.threads);
      if (options.threads != 1) lowerSmallOpsToLoops(*lowered);
      runPipeline(loopsPipeline(options.threads), "lowering");
    }
    keepCallsOutOfLine(*lowered);
    addEntryKey(*lowered, entryKeyText(key, resultAlias));
    if (profile) addProfileSites(*lowered, profileSitesText(sites));
    lowerSeconds = lower.seconds();
  }

  countCompile();
  CompiledCode code;
  std::shared_ptr<mlir::ExecutionEngine> engine;
  ProgramEntry program;
  {
    TraceEvent llvmEvent("compile.llvm");
    auto jtmb = machineBuilder(target, options.optLevel);
    auto tm = jtmb.createTargetMachine();
    if (!tm) throw Error("[compile] no LLVM target machine for " + target.triple + ": " + errorText(tm.takeError()));
    if (cache) program = programEntry(**tm, name, platform, signature);
    mlir::ExecutionEngineOptions eeOptions;
    // ExecutionEngineOptions holds a function_ref: the transformer must outlive create().
    std::function<llvm::Error(llvm::Module*)> transformer =
        mlir::makeOptimizingTransformer(static_cast<unsigned>(std::clamp(options.optLevel, 0, 3)), 0, tm->get());
    eeOptions.transformer = transformer;
    eeOptions.enableObjectDump = cache.has_value() || object;
    // The perf and GDB listeners write /tmp/.debug/jit/* for every JIT: only when asked for.
    const bool listeners = std::getenv("RADIX_JIT_LISTENERS") != nullptr;
    eeOptions.enableGDBNotificationListener = listeners;
    eeOptions.enablePerfNotificationListener = listeners;
    auto created = mlir::ExecutionEngine::create(*lowered, eeOptions, std::move(*tm));
    if (!created) throw Error("[compile] LLVM translation failed: " + errorText(created.takeError()) + diagnostics);
    engine = std::move(*created);
    // Global constructors (a GPU program's cubin registration) run before the entry is called
    // directly; the CPU's objects have none.
    if (cuda) engine->initialize();
    auto fn = engine->lookupPacked(kEntry);
    if (!fn) throw Error("[compile] entry not found after code generation: " + errorText(fn.takeError()));
    code.entry = *fn;
    code.llvmSeconds = llvmEvent.seconds();
  }

  if (cache) {
    TraceEvent store("cache.store");
    code.entryDir = cache->dir();
    cache->store(debugText(), resultAlias, program, [&](const std::string& path) {
      // LLVM registers the file in a process-wide remove-on-signal list that races between
      // threads (ThreadSanitizer): one writer at a time.
      static std::mutex objectWrite;
      std::lock_guard<std::mutex> lock(objectWrite);
      engine->dumpToObjectFile(path);
    });
  }

  if (object) {
    const fs::path path = fs::temp_directory_path() / ("radix_object_" + std::to_string(::getpid()) + "_" + std::to_string(key) + ".o");
    engine->dumpToObjectFile(path.string());
    *object = readRegularFile(path.string(), size_t(1) << 34).data.value_or("");
    std::error_code ec;
    fs::remove(path, ec);
  }
  code.resultAlias = std::move(resultAlias);
  if (profile) code.profile = makeProfileTable(std::move(sites));
  code.lowerSeconds = lowerSeconds;
  code.owner = std::move(engine);
  return code;
}
}  // namespace

CompiledCode compileModule(mlir::ModuleOp module, const std::string& moduleText, const Platform& platform,
                           const std::string& name, const Signature& signature) {
  const bool cuda = !cudaArch(platform.target()).empty();
  std::string material = moduleText + "\n" + cacheKeyMaterial(targetOf(platform), platform.options()) +
                         (cuda ? "|" + std::string(platform.target()) : "");
  if (signature.partitions <= 1) {
    const uint64_t key = XXH64(material.data(), material.size(), 0);
    CompiledCode code = compileModuleHere(module, moduleText, platform, name, signature, key, nullptr);
    placeOn(code, platform, platform.target(), name);
    return code;
  }
  // One compile per grid and world size, on rank 0 (docs/sharding.md).
  material += "|grid " + std::to_string(signature.partitions) + "|world " + std::to_string(mpi::worldSize());
  const uint64_t key = XXH64(material.data(), material.size(), 0);
  return compileOnRoot(
      key, name,
      [&](std::string& object) { return compileModuleHere(module, moduleText, platform, name, signature, key, &object); },
      [&](const std::vector<int32_t>& alias) { return entryKeyText(key, alias); });
}

// ---- targets ----

namespace {
std::unique_ptr<llvm::MCSubtargetInfo> hostSubtarget() {
  initLlvmOnce();
  const llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw Error("[compile] no LLVM target for " + triple.str() + ": " + error);
  return std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, "", ""));
}
}  // namespace

// Platform::withOptions (runtime) validates target names through this once the compiler is loaded.
[[maybe_unused]] const bool kTargetCheckerSet = (setTargetChecker(&checkTarget), true);

void checkTarget(const CompileOptions& options) {
  if (options.targetCpu.empty() && options.targetFeatures.empty()) return;
  auto info = hostSubtarget();
  const std::string triple = llvm::sys::getProcessTriple();
  if (!options.targetCpu.empty() && !info->isCPUStringValid(options.targetCpu))
    throw Error("[compile] unknown target CPU \"" + options.targetCpu + "\" for " + triple +
                ": `radix targets` lists the valid names (or llc-22 -mcpu=help)");
  const auto features = info->getAllProcessorFeatures();
  std::stringstream ss(options.targetFeatures);
  for (std::string f; std::getline(ss, f, ',');) {
    if (f.empty()) continue;
    const std::string name = (f[0] == '+' || f[0] == '-') ? f.substr(1) : f;
    const bool known = std::any_of(features.begin(), features.end(), [&](const llvm::SubtargetFeatureKV& kv) {
      return name == kv.Key;
    });
    if (!known)
      throw Error("[compile] unknown target feature \"" + f + "\" for " + triple +
                  ": `radix targets` lists the valid names (or llc-22 -mattr=help)");
  }
}

}  // namespace radix::detail

namespace radix {

std::vector<std::string> targetCpuNames() {
  std::vector<std::string> out;
  for (const auto& kv : detail::hostSubtarget()->getAllProcessorDescriptions()) out.emplace_back(kv.Key);
  return out;
}

std::vector<std::string> targetFeatureNames() {
  std::vector<std::string> out;
  for (const auto& kv : detail::hostSubtarget()->getAllProcessorFeatures()) out.emplace_back(kv.Key);
  return out;
}

std::string hostTargetCpu() {
  detail::initLlvmOnce();
  return llvm::sys::getHostCPUName().str();
}

}  // namespace radix
