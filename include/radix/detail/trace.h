#pragma once
// The narrow interface between the header templates (compile, call, Exe) and the tracer and
// runtime in src/. No MLIR type appears here.
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "radix/platform.h"
#include "radix/tensor.h"

namespace radix::detail {

/// Reads and writes the private state of Tensor for the tracer and the runtime.
struct TensorAccess {
  static std::shared_ptr<DeviceBuffer>& buffer(Tensor& t) { return t.buffer_; }
  static const std::shared_ptr<DeviceBuffer>& buffer(const Tensor& t) { return t.buffer_; }
  static uint64_t context(const Tensor& t) { return t.context_; }
  static uint32_t value(const Tensor& t) { return t.value_; }
  static uint64_t identity(const Tensor& t) { return t.identity_; }
  static int32_t argument(const Tensor& t) { return t.argument_; }
  static int32_t donation(const Tensor& t) { return t.donation_; }
  static Memory memory(const Tensor& t) { return t.memory_; }
  static Tensor traced(const Shape& shape, uint64_t context, uint32_t value, int32_t argument = -1,
                       int32_t donation = -1, Memory memory = Memory::device) {
    Tensor t;
    t.shape_ = shape;
    t.context_ = context;
    t.value_ = value;
    t.argument_ = argument;
    t.donation_ = donation;
    t.memory_ = memory;
    return t;
  }
  static Tensor bound(const Shape& shape, std::shared_ptr<DeviceBuffer> buffer, Memory memory) {
    Tensor t;
    t.shape_ = shape;
    t.buffer_ = std::move(buffer);
    t.memory_ = memory;
    return t;
  }
};

class TraceContext;

/// What `@main` looks like from the outside: how to check and bind a call's arguments.
struct Signature {
  const std::type_info* argTypes = nullptr;  // std::tuple<Args...>
  uint64_t constantsHash = 0;                // non-Tensor leaves and structure
  std::vector<int32_t> leafToArg;            // Tensor leaf -> @main argument
  std::vector<std::string> leafPaths;        // per Tensor leaf: "self.layers[1].w", "x"
  std::vector<Shape> argShapes;              // per @main argument
  std::vector<Shape> resultShapes;           // per @main result
  std::vector<int32_t> donations;            // per result: donated argument or -1
  std::vector<Memory> memories;              // per result
  int partitions = 1;                        // > 1: sharded over processes (docs/sharding.md)
};

/// A compiled, loaded `@main`. Defined in src/runtime.
class Executable {
 public:
  virtual ~Executable() = default;
  /// The module text as traced (canonicalized, with attributes).
  virtual const std::string& mlir() const = 0;
  virtual const Signature& signature() const = 0;
  /// Checks the leaves against the signature, runs, and returns the result tensors (bound).
  /// `leafPath(i)` names leaf i in errors ("self.layers[1].w"); it is called only on errors.
  virtual std::vector<Tensor> run(const std::vector<const Tensor*>& leaves,
                                  const std::function<std::string(size_t)>& leafPath) const = 0;
  /// True when this executable came from the on-disk cache.
  virtual bool fromCache() const = 0;
  /// The cache entry folder holding its code ("" when the cache is off).
  virtual const std::string& cacheEntry() const = 0;
};

/// Checks a call's argument structure against the signature (radix::Error "[exe] ..." if off).
void checkCallStructure(const Signature& signature, const std::type_info& argTypes, uint64_t constantsHash);

/// One radix::compile in progress: owns the tracing context.
class CompileSession {
 public:
  /// `where`: radix::compile's call site, the location of errors until the user's first op.
  CompileSession(const Platform& platform, std::string name, const Loc& where = Loc::none());
  ~CompileSession();
  CompileSession(const CompileSession&) = delete;
  CompileSession& operator=(const CompileSession&) = delete;

  /// Maps a bound or placeholder leaf to a traced argument of @main (tied leaves share one);
  /// `path` ("self.layers[1].w") names it in errors.
  Tensor argument(const Tensor& leaf, const std::string& path);
  /// Makes this trace current on this thread for the lifetime of the returned guard.
  std::shared_ptr<void> activate();
  /// Adds a result of @main.
  void result(const Tensor& t);
  /// Emits @main, canonicalizes, compiles (or loads from the cache) and returns the executable.
  std::shared_ptr<Executable> finish(const std::type_info& argTypes, uint64_t constantsHash);

 private:
  std::unique_ptr<TraceContext, void (*)(TraceContext*)> context_;
  std::source_location location_;
};

/// A function emitted by radix::call, with the template of its result.
struct FunctionEntry {
  uint32_t index = 0;
  std::shared_ptr<void> resultTemplate;
};

/// The current thread's trace; throws radix::Error("[op] ...") outside radix::compile.
TraceContext& currentTrace(const char* op);
/// `error` with " (in layers[3].attn, at file:line)" appended: the layer noted by noteErrorPath
/// and the user's location of the last op called on this thread (see radix::Loc), once: both
/// are forgotten afterwards. For errors thrown while tracing.
Error atOpLocation(const Error& error);

/// The Tensor leaves of the structures being traced, with their paths ("self.layers[3].w"), so
/// that an error names the layer it came from. A stack: compile pushes its arguments, each
/// radix::call the object it traces. Pop with popPathFrame.
void pushPathFrame(std::vector<std::pair<const Tensor*, std::string>> leaves);
void popPathFrame();
/// The path of the structure whose first Tensor leaf is `leaf`, at `suffix` below it
/// ("self.layers[3].attn" for the leaf "self.layers[3].attn.wq" and suffix ".wq"), or "".
std::string pathOfLeaf(const Tensor* leaf, const std::string& suffix);
/// Notes the layer an error is passing through, unless one is noted already (the innermost wins).
void noteErrorPath(const std::string& path);
/// Looks up a radix::call function by key (function identity + deep argument hash).
FunctionEntry* findFunction(TraceContext& context, uint64_t key);
/// Opens a private function `<name>_<key hex>` whose arguments have the shapes of `args`;
/// returns the traced arguments to call the body with. Pair with endFunction/abortFunction.
std::vector<Tensor> beginFunction(TraceContext& context, const std::string& name, uint64_t key,
                                  const std::vector<const Tensor*>& args);
/// Closes the open function with these results and caches it under its key.
FunctionEntry& endFunction(TraceContext& context, const std::vector<const Tensor*>& results,
                           std::shared_ptr<void> resultTemplate);
/// Drops the open function after an exception in its body.
void abortFunction(TraceContext& context);
/// Emits a func.call; returns its results with shapes and propagated donations.
std::vector<Tensor> emitCall(TraceContext& context, const FunctionEntry& function,
                             const std::vector<const Tensor*>& args);

}  // namespace radix::detail
