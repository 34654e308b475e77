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
#include "compiler/module_rewrites.h"
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

// RADIX_ATTENTION=composed compiles nn::sdpa's composition instead of the fused kernel.
bool fusedAttentionOn() {
  const char* v = std::getenv("RADIX_ATTENTION");
  return v == nullptr || std::string_view(v) != "composed";
}

bool profileOn(const CompileOptions& options) { return options.profile ? *options.profile : profileEnvOn(); }

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

}  // namespace

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

std::vector<std::string> hostVectorFeatures() {
  // What picks Radix's kernels: a guest CPU can carry a name that hides them (an AMX Xeon that
  // LLVM calls rocketlake).
  static const char* const kShown[] = {"avx2",           "fma",          "f16c",       "avxvnni",    "avx512f",
                                       "avx512bw",       "avx512vl",     "avx512dq",   "avx512vnni", "avx512bf16",
                                       "avx512fp16",     "amx-tile",     "amx-bf16",   "amx-int8",   "amx-fp16"};
  std::vector<std::string> out;
  const auto features = llvm::sys::getHostCPUFeatures();
  for (const char* name : kShown) {
    auto it = features.find(name);
    if (it != features.end() && it->second) out.emplace_back(name);
  }
  return out;
}

}  // namespace radix
