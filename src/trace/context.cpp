#include "trace/context.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <xxhash.h>

#include "compiler/compiler.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/runtime.h"

namespace radix::detail {

namespace {
thread_local TraceContext* tlsCurrent = nullptr;
thread_local std::source_location tlsOpLocation;  // line 0: none
thread_local std::string tlsErrorPath;            // the layer an error passed through
thread_local std::vector<std::unordered_map<const Tensor*, std::string>> tlsPathFrames;
std::atomic<uint64_t> nextSerial{1};

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

TraceContext* currentTraceOrNull() { return tlsCurrent; }

void noteOpLocation(const std::source_location& where) noexcept {
  tlsOpLocation = where;
  tlsErrorPath.clear();  // an op after an error: that error was handled
}

Error atOpLocation(const Error& error) {
  std::string path = std::exchange(tlsErrorPath, std::string());
  if (path.starts_with("self.")) path = path.substr(5);
  const std::source_location where = std::exchange(tlsOpLocation, std::source_location());
  std::string at;
  if (!path.empty()) at = "in " + path;
  if (where.line() != 0) at += (at.empty() ? "at " : ", at ") + std::string(where.file_name()) + ":" + std::to_string(where.line());
  if (at.empty()) return error;
  return Error(std::string(error.what()) + " (" + at + ")");
}

void pushPathFrame(std::vector<std::pair<const Tensor*, std::string>> leaves) {
  tlsPathFrames.emplace_back(std::make_move_iterator(leaves.begin()), std::make_move_iterator(leaves.end()));
}

void popPathFrame() {
  if (!tlsPathFrames.empty()) tlsPathFrames.pop_back();
}

std::string pathOfLeaf(const Tensor* leaf, const std::string& suffix) {
  for (auto frame = tlsPathFrames.rbegin(); frame != tlsPathFrames.rend(); ++frame) {
    auto it = frame->find(leaf);
    if (it == frame->end()) continue;
    const std::string& full = it->second;
    if (!full.ends_with(suffix)) return {};
    return full.substr(0, full.size() - suffix.size());
  }
  return {};
}

void noteErrorPath(const std::string& path) {
  if (tlsErrorPath.empty()) tlsErrorPath = path;
}

TraceContext& currentTrace(const char* op) {
  if (!tlsCurrent)
    throw atOpLocation(Error(std::string("[") + op +
                             "] no compilation in progress: ops and radix::call run inside radix::compile"));
  return *tlsCurrent;
}

TraceContext::TraceContext(const Platform& platform, std::string name)
    : traceEvent_(std::make_unique<TraceEvent>("trace")), platform_(platform), name_(std::move(name)),
      serial_(nextSerial++), builder_(&mlir_) {
  traceEvent_->arg("name", name_);
  mlir_.loadDialect<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                    mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect, mlir::scf::SCFDialect,
                    mlir::bufferization::BufferizationDialect>();
  mlir_.disableMultithreading();
  module_ = mlir::ModuleOp::create(mlir::NameLoc::get(builder_.getStringAttr("radix")), std::string("radix"));
  mainBlock_ = new mlir::Block();
  scopes_.push_back(Scope{nextScope_++, nullptr, mainBlock_, {}, 0, "main"});
  builder_.setInsertionPointToEnd(mainBlock_);
}

TraceContext::~TraceContext() {
  if (mainBlock_ && !mainBlock_->getParent()) {
    mainBlock_->dropAllDefinedValueUses();
    mainBlock_->dropAllReferences();
    delete mainBlock_;
  }
}

mlir::Location TraceContext::loc(const Loc& where, const char* op) {
  if (where.internal() && tlsOpLocation.line() != 0) return loc(tlsOpLocation, op);
  return loc(static_cast<const std::source_location&>(where), op);
}

mlir::Location TraceContext::loc(const std::source_location& where, const char* op) {
  auto file = mlir::FileLineColLoc::get(&mlir_, where.file_name(), where.line(), where.column());
  return mlir::NameLoc::get(builder_.getStringAttr(op), file);
}

mlir::Type TraceContext::elementType(DType d) {
  switch (d) {
    case DType::bool_: return builder_.getI1Type();
    case DType::i8: case DType::u8: return builder_.getI8Type();
    case DType::i16: case DType::u16: return builder_.getI16Type();
    case DType::i32: case DType::u32: return builder_.getI32Type();
    case DType::i64: case DType::u64: return builder_.getI64Type();
    case DType::f16: return builder_.getF16Type();
    case DType::bf16: return builder_.getBF16Type();
    case DType::f32: return builder_.getF32Type();
    case DType::f64: return builder_.getF64Type();
  }
  return builder_.getF32Type();
}

mlir::RankedTensorType TraceContext::tensorType(const Shape& s) {
  return mlir::RankedTensorType::get(s.dims(), elementType(s.dtype()));
}

mlir::Value TraceContext::value(const Tensor& t, const char* op) const {
  const uint64_t ctx = TensorAccess::context(t);
  if (ctx == 0) {
    if (t.isBound())
      throw Error(std::string("[") + op + "] " + t.shape().str() +
                  " is a device buffer that is not an argument of the traced function: pass it as an argument "
                  "(ops run on traced tensors inside radix::compile)");
    throw Error(std::string("[") + op + "] " + t.shape().str() + " is a placeholder, not a traced value");
  }
  if (ctx != serial_)
    throw Error(std::string("[") + op + "] " + t.shape().str() + " is a traced value of another compilation (#" +
                std::to_string(ctx) + ", this is #" + std::to_string(serial_) + ")");
  const Value& v = values_.at(TensorAccess::value(t));
  // Regions see the values of the scopes around them, up to their function.
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    if (v.scope == s->id) return v.value;
    if (!s->region) break;
  }
  const std::string what = std::string("[") + op + "] " + t.shape().str() + " (%" +
                           std::to_string(TensorAccess::value(t)) + ")";
  if (regionScopes_.count(v.scope) &&
      std::none_of(scopes_.begin(), scopes_.end(), [&](const Scope& s) { return s.id == v.scope; }))
    throw Error(what + " is a value of a whileLoop/ifElse region that has ended: return it from the region instead");
  throw Error(what + " belongs to another function than \"" + scopes_.back().symbol +
              "\": pass it as an argument of radix::call instead of capturing it");
}

void TraceContext::beginRegion(mlir::Block* block) {
  const Scope& outer = scopes_.back();
  Scope scope{nextScope_++, outer.fn, block, builder_.saveInsertionPoint(), outer.key, outer.symbol, true};
  regionScopes_.insert(scope.id);
  scopes_.push_back(scope);
  builder_.setInsertionPointToEnd(block);
}

void TraceContext::endRegion() {
  assert(scopes_.back().region && "endRegion without beginRegion");
  builder_.restoreInsertionPoint(scopes_.back().saved);
  scopes_.pop_back();
}

Tensor TraceContext::wrap(mlir::Value v, const Shape& shape) {
  values_.push_back(Value{v, scopes_.back().id});
  return TensorAccess::traced(shape, serial_, static_cast<uint32_t>(values_.size() - 1));
}

void TraceContext::canonicalize(mlir::func::FuncOp fn) {
  TraceEvent event("canonicalize");
  event.arg("function", fn.getSymName().str());
  mlir::PassManager pm(&mlir_, mlir::func::FuncOp::getOperationName());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&mlir_, [&](mlir::Diagnostic& d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  if (mlir::failed(mlir::verify(fn)) || mlir::failed(pm.run(fn))) {
    std::string text;
    llvm::raw_string_ostream os(text);
    fn->print(os);
    throw Error("[compile] internal error: Radix produced invalid MLIR (please report):\n" + diagnostics + text);
  }
  canonicalizeSeconds_ += event.seconds();
}

Tensor TraceContext::mainArgument(const Tensor& leaf, const std::string& path) {
  const bool field = path.find_first_of(".[") != std::string::npos;
  const std::string what = (field ? "weight " : "argument ") + path;
  if (leaf.isTraced())
    throw Error("[compile] " + what + " " + leaf.shape().str() +
                " is a traced value; compile takes bound tensors or shape placeholders");
  const void* buffer = TensorAccess::buffer(leaf).get();
  const uint64_t identity = TensorAccess::identity(leaf);
  if (!buffer && identity == 0)
    throw Error("[compile] " + what + " is an unbound Tensor() " + leaf.shape().str() +
                ": give it a buffer (Tensor::fromValues, a loader) or a shape placeholder Tensor(Shape(...))");
  int32_t index = -1;
  if (buffer) {
    if (auto it = argByBuffer_.find(buffer); it != argByBuffer_.end()) index = it->second;
  } else {
    if (auto it = argByIdentity_.find(identity); it != argByIdentity_.end()) index = it->second;
  }
  if (index >= 0) {
    const Shape& previous = mainArgShapes_[index];
    if (previous != leaf.shape())
      throw Error("[compile] " + argPaths_[index] + " " + previous.str() + " and " + path + " " + leaf.shape().str() +
                  " share one " + (buffer ? "buffer" : "placeholder identity") + " but their shapes differ");
  } else {
    index = static_cast<int32_t>(mainArgShapes_.size());
    mainArgShapes_.push_back(leaf.shape());
    argPaths_.push_back(path);
    mainBlock_->addArgument(tensorType(leaf.shape()), mlir::NameLoc::get(builder_.getStringAttr("arg")));
    if (buffer) argByBuffer_[buffer] = index;
    else argByIdentity_[identity] = index;
  }
  leafToArg_.push_back(index);
  leafPaths_.push_back(path);
  values_.push_back(Value{mainBlock_->getArgument(index), scopes_.front().id});
  return TensorAccess::traced(leaf.shape(), serial_, static_cast<uint32_t>(values_.size() - 1), index);
}

void TraceContext::mainResult(const Tensor& t) { mainResults_.push_back(t); }

TraceContext::Results TraceContext::collectResults(const std::vector<const Tensor*>& results, const char* op) const {
  Results r;
  for (const Tensor* t : results) {
    mlir::Value v = value(*t, op);
    r.values.push_back(v);
    r.types.push_back(v.getType());
    r.shapes.push_back(t->shape());
    r.donations.push_back(TensorAccess::donation(*t));
    r.memories.push_back(TensorAccess::memory(*t));
  }
  return r;
}

std::string shardingRepr(const Shape& shape, int numPartitions) {
  if (shape.shardingMask() == 0 || numPartitions == 1) return "{replicated}";
  std::string s = "{devices=[";
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape.isSharded(i) ? numPartitions : 1);
  }
  return s + "]<=[" + std::to_string(numPartitions) + "]}";
}


std::shared_ptr<Executable> TraceContext::finishMain(const std::type_info& argTypes, uint64_t constantsHash) {
  std::vector<const Tensor*> resultPtrs;
  for (const Tensor& t : mainResults_) resultPtrs.push_back(&t);
  Results r = collectResults(resultPtrs, "compile");
  auto unknown = mlir::NameLoc::get(builder_.getStringAttr("main"));
  mlir::func::ReturnOp::create(builder_, unknown, r.values);

  std::vector<mlir::Type> argTypesMlir;
  for (const Shape& s : mainArgShapes_) argTypesMlir.push_back(tensorType(s));
  builder_.setInsertionPointToEnd(module_->getBody());
  auto fn = mlir::func::FuncOp::create(builder_, unknown, "main", builder_.getFunctionType(argTypesMlir, r.types));
  fn.getBody().push_back(mainBlock_);

  // Donations: tf.aliasing_output on the donated argument, once per argument.
  std::vector<int32_t> donatedTo(mainArgShapes_.size(), -1);
  for (size_t i = 0; i < r.donations.size(); ++i) {
    const int32_t a = r.donations[i];
    if (a < 0) continue;
    if (donatedTo[a] >= 0)
      throw Error("[reuseBuffer] argument " + std::to_string(a) + " " + mainArgShapes_[a].str() +
                  " is donated twice: to result " + std::to_string(donatedTo[a]) + " and to result " + std::to_string(i));
    donatedTo[a] = static_cast<int32_t>(i);
    fn.setArgAttr(a, "tf.aliasing_output", builder_.getI32IntegerAttr(static_cast<int32_t>(i)));
  }
  for (size_t i = 0; i < r.memories.size(); ++i)
    if (r.memories[i] != Memory::device)
      fn.setResultAttr(i, "mhlo.memory_kind", builder_.getStringAttr(memoryKindName(r.memories[i])));
  const Sharding& sharding = platform_.sharding();
  auto checkDivisible = [&](const Shape& shape, const std::string& what) {
    for (int64_t i = 0; i < shape.rank(); ++i)
      if (shape.isSharded(i) && shape.dim(i) % sharding.numPartitions != 0)
        throw Error("[compile] " + what + " " + shape.str() + ": axis " + std::to_string(i) + " of size " +
                    std::to_string(shape.dim(i)) + " is sharded over " + std::to_string(sharding.numPartitions) +
                    " partitions, which do not divide it");
  };
  for (size_t a = 0; a < mainArgShapes_.size(); ++a) checkDivisible(mainArgShapes_[a], "argument " + std::to_string(a));
  for (size_t i = 0; i < r.shapes.size(); ++i) checkDivisible(r.shapes[i], "result " + std::to_string(i));
  if (sharding.numPartitions > 1 && sharding.enabled) {
    for (size_t a = 0; a < mainArgShapes_.size(); ++a) {
      fn.setArgAttr(a, "mhlo.layout_mode", builder_.getStringAttr("default"));
      fn.setArgAttr(a, "mhlo.sharding", builder_.getStringAttr(shardingRepr(mainArgShapes_[a], sharding.numPartitions)));
    }
    for (size_t i = 0; i < r.shapes.size(); ++i) {
      fn.setResultAttr(i, "mhlo.layout_mode", builder_.getStringAttr("default"));
      fn.setResultAttr(i, "mhlo.sharding", builder_.getStringAttr(shardingRepr(r.shapes[i], sharding.numPartitions)));
    }
  }
  module_->getOperation()->setAttr("mhlo.num_replicas", builder_.getI32IntegerAttr(sharding.numReplicas));
  module_->getOperation()->setAttr("mhlo.num_partitions", builder_.getI32IntegerAttr(sharding.numPartitions));
  canonicalize(fn);

  Signature signature;
  signature.argTypes = &argTypes;
  signature.constantsHash = constantsHash;
  signature.leafToArg = leafToArg_;
  signature.leafPaths = leafPaths_;
  signature.argShapes = mainArgShapes_;
  signature.resultShapes = r.shapes;
  signature.donations = r.donations;
  signature.memories = r.memories;
  if (shardedAcrossProcesses(platform_)) signature.partitions = sharding.numPartitions;

  std::string text;
  llvm::raw_string_ostream os(text);
  module_->print(os);
  const double traceSeconds = traceEvent_->seconds() - canonicalizeSeconds_;
  traceEvent_.reset();
  CompiledCode code = compileModule(*module_, text, platform_, name_, signature);
  const double total = traceSeconds + canonicalizeSeconds_ + code.lowerSeconds + code.llvmSeconds + code.loadSeconds;
  const char* thresholdEnv = std::getenv("RADIX_COMPILE_LOG_SECONDS");
  const double threshold = thresholdEnv ? std::atof(thresholdEnv) : 1.0;
  if (total > threshold)
    std::fprintf(stderr,
                 "radix: compiled %s in %.3f s (trace %.3f s, canonicalize %.3f s, lower %.3f s, llvm %.3f s, "
                 "load %.3f s)%s\n",
                 name_.c_str(), total, traceSeconds, canonicalizeSeconds_, code.lowerSeconds, code.llvmSeconds,
                 code.loadSeconds, code.fromCache ? " from the cache" : "");
  return makeCpuExecutable(std::move(text), std::move(signature), std::move(code));
}

FunctionEntry* TraceContext::findFunction(uint64_t key) {
  auto it = functionByKey_.find(key);
  return it == functionByKey_.end() ? nullptr : &functions_[it->second].entry;
}

std::vector<Tensor> TraceContext::beginFunction(const std::string& name, uint64_t key,
                                                const std::vector<const Tensor*>& args) {
  std::vector<mlir::Type> types;
  for (const Tensor* t : args) {
    value(*t, "call");  // arguments must be values of the calling function
    types.push_back(tensorType(t->shape()));
  }
  Scope scope{nextScope_++, nullptr, nullptr, builder_.saveInsertionPoint(), key, name + "_" + hex16(key)};
  scope.prefix = name;
  builder_.setInsertionPointToEnd(module_->getBody());
  auto loc = mlir::NameLoc::get(builder_.getStringAttr(scope.symbol));
  scope.fn = mlir::func::FuncOp::create(builder_, loc, scope.symbol, builder_.getFunctionType(types, {}));
  scope.fn.setPrivate();
  scope.block = scope.fn.addEntryBlock();
  builder_.setInsertionPointToEnd(scope.block);
  scopes_.push_back(scope);
  std::vector<Tensor> inner;
  for (size_t i = 0; i < args.size(); ++i) {
    values_.push_back(Value{scope.block->getArgument(i), scope.id});
    inner.push_back(TensorAccess::traced(args[i]->shape(), serial_, static_cast<uint32_t>(values_.size() - 1),
                                         static_cast<int32_t>(i)));
  }
  return inner;
}

FunctionEntry& TraceContext::endFunction(const std::vector<const Tensor*>& results,
                                         std::shared_ptr<void> resultTemplate) {
  Scope& scope = scopes_.back();
  Results r = collectResults(results, "call");
  mlir::func::ReturnOp::create(builder_, scope.fn.getLoc(), r.values);
  scope.fn.setFunctionType(builder_.getFunctionType(scope.fn.getArgumentTypes(), r.types));
  canonicalize(scope.fn);
  // The symbol names the function by its content, never by where the linker put its code, so
  // that a relinked program traces the same module text (and hits the executable cache).
  // Functions with equal content are one function.
  std::string body;
  {
    llvm::raw_string_ostream os(body);
    scope.fn.setSymName("_");
    scope.fn->print(os);
    for (size_t i = 0; i < r.donations.size(); ++i)
      os << " donate" << i << "=" << r.donations[i] << " memory" << i << "=" << static_cast<int>(r.memories[i]);
  }
  const std::string symbol = scope.prefix + "_" + hex16(XXH64(body.data(), body.size(), 0));
  if (auto same = functionBySymbol_.find(symbol); same != functionBySymbol_.end()) {
    scope.fn->dropAllReferences();
    scope.fn->erase();
  } else {
    scope.fn.setSymName(symbol);
    functionBySymbol_[symbol] = functions_.size();
  }
  Function f{symbol, r.types, r.shapes, r.donations, r.memories, {}};
  f.entry.index = static_cast<uint32_t>(functions_.size());
  f.entry.resultTemplate = std::move(resultTemplate);
  functionByKey_[scope.key] = functions_.size();
  functions_.push_back(std::move(f));
  builder_.restoreInsertionPoint(scope.saved);
  scopes_.pop_back();
  return functions_.back().entry;
}

void TraceContext::abortFunction() {
  Scope& scope = scopes_.back();
  builder_.restoreInsertionPoint(scope.saved);
  scope.fn->dropAllReferences();
  scope.fn->erase();
  scopes_.pop_back();
}

std::vector<Tensor> TraceContext::emitCall(const FunctionEntry& entry, const std::vector<const Tensor*>& args) {
  const Function& f = functions_.at(entry.index);
  std::vector<mlir::Value> operands;
  for (const Tensor* t : args) operands.push_back(value(*t, "call"));
  auto loc = mlir::NameLoc::get(builder_.getStringAttr(f.symbol));
  auto call = mlir::func::CallOp::create(builder_, loc, f.symbol, f.resultTypes, operands);
  std::vector<Tensor> out;
  for (size_t i = 0; i < f.resultShapes.size(); ++i) {
    Tensor t = wrap(call.getResult(i), f.resultShapes[i]);
    int32_t donation = -1;
    if (const int32_t a = f.donations[i]; a >= 0) {
      const Tensor& arg = *args[a];
      donation = TensorAccess::donation(arg) >= 0 ? TensorAccess::donation(arg) : TensorAccess::argument(arg);
    }
    out.push_back(TensorAccess::traced(t.shape(), serial_, TensorAccess::value(t), -1, donation, f.memories[i]));
  }
  return out;
}

void TraceContext::markKernel(const std::string& kind, const std::vector<std::pair<std::string, int64_t>>& ints,
                              const std::vector<std::pair<std::string, double>>& floats) {
  if (scopes_.empty() || !scopes_.back().fn || scopes_.back().region)
    throw Error("[" + kind + "] radix bug: markKernel outside a radix::call function");
  mlir::func::FuncOp fn = scopes_.back().fn;
  std::vector<mlir::NamedAttribute> options;
  for (const auto& [name, v] : ints) options.push_back(builder_.getNamedAttr(name, builder_.getI64IntegerAttr(v)));
  for (const auto& [name, v] : floats) options.push_back(builder_.getNamedAttr(name, builder_.getF64FloatAttr(v)));
  fn->setAttr("radix.kernel", builder_.getStringAttr(kind));
  fn->setAttr("radix.kernel_options", builder_.getDictionaryAttr(options));
}

// ---- the narrow interface used by the header templates ----

FunctionEntry* findFunction(TraceContext& c, uint64_t key) { return c.findFunction(key); }
std::vector<Tensor> beginFunction(TraceContext& c, const std::string& name, uint64_t key,
                                  const std::vector<const Tensor*>& args) {
  return c.beginFunction(name, key, args);
}
FunctionEntry& endFunction(TraceContext& c, const std::vector<const Tensor*>& results, std::shared_ptr<void> t) {
  return c.endFunction(results, std::move(t));
}
void abortFunction(TraceContext& c) { c.abortFunction(); }
void markKernel(const std::string& kind, const std::vector<std::pair<std::string, int64_t>>& ints,
                const std::vector<std::pair<std::string, double>>& floats) {
  currentTrace(kind.c_str()).markKernel(kind, ints, floats);
}
std::vector<Tensor> emitCall(TraceContext& c, const FunctionEntry& f, const std::vector<const Tensor*>& args) {
  return c.emitCall(f, args);
}

CompileSession::CompileSession(const Platform& platform, std::string name, const Loc& where)
    : context_(new TraceContext(platform, std::move(name)), [](TraceContext* c) { delete c; }),
      location_(where.internal() ? std::source_location() : static_cast<const std::source_location&>(where)) {}
CompileSession::~CompileSession() = default;

Tensor CompileSession::argument(const Tensor& leaf, const std::string& path) { return context_->mainArgument(leaf, path); }

std::shared_ptr<void> CompileSession::activate() {
  TraceContext* previous = tlsCurrent;
  tlsCurrent = context_.get();
  tlsOpLocation = location_;
  tlsErrorPath.clear();
  return std::shared_ptr<void>(nullptr, [previous](void*) { tlsCurrent = previous; });
}

void CompileSession::result(const Tensor& t) { context_->mainResult(t); }

std::shared_ptr<Executable> CompileSession::finish(const std::type_info& argTypes, uint64_t constantsHash) {
  return context_->finishMain(argTypes, constantsHash);
}

}  // namespace radix::detail

namespace radix {
std::string shardingRepresentation(const Shape& shape, int numPartitions) {
  return detail::shardingRepr(shape, numPartitions);
}
}  // namespace radix
