#pragma once
// CompilationContext: the MLIR context, the module, the stack of functions being traced, the
// values of traced Tensors, the radix::call function cache and the arguments of @main.
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "radix/detail/trace.h"
#include "radix/platform.h"
#include "radix/tensor.h"
#include "runtime/profiler.h"

namespace radix::detail {

class TraceContext {
 public:
  TraceContext(const Platform& platform, std::string name);
  ~TraceContext();

  /// The MLIR value of a traced tensor; throws radix::Error("[op] ...") if it is bound, from
  /// another compilation, from another function than the one being traced (regions see the
  /// values of their enclosing scopes up to the function), or from a region that has ended.
  mlir::Value value(const Tensor& t, const char* op) const;
  /// Registers a new value of the current function.
  Tensor wrap(mlir::Value v, const Shape& shape);
  /// NameLoc(op) at the user's source location.
  mlir::Location loc(const std::source_location& where, const char* op);
  /// Same; a location inside Radix's headers becomes the user's location noted for errors.
  mlir::Location loc(const Loc& where, const char* op);
  mlir::Type elementType(DType dtype);
  mlir::RankedTensorType tensorType(const Shape& shape);
  mlir::OpBuilder& builder() { return builder_; }
  mlir::MLIRContext& mlir() { return mlir_; }
  mlir::ModuleOp module() { return *module_; }
  const Platform& platform() const { return platform_; }
  const std::string& name() const { return name_; }
  uint64_t serial() const { return serial_; }

  /// Runs canonicalize, cse, canonicalize on one function.
  void canonicalize(mlir::func::FuncOp fn);

  // @main
  Tensor mainArgument(const Tensor& leaf, const std::string& path);
  void mainResult(const Tensor& t);
  std::shared_ptr<Executable> finishMain(const std::type_info& argTypes, uint64_t constantsHash);

  // radix::call
  struct Function {
    std::string symbol;
    std::vector<mlir::Type> resultTypes;
    std::vector<Shape> resultShapes;
    std::vector<int32_t> donations;
    std::vector<Memory> memories;
    FunctionEntry entry;
  };
  FunctionEntry* findFunction(uint64_t key);
  std::vector<Tensor> beginFunction(const std::string& name, uint64_t key, const std::vector<const Tensor*>& args);
  FunctionEntry& endFunction(const std::vector<const Tensor*>& results, std::shared_ptr<void> resultTemplate);
  void abortFunction();
  std::vector<Tensor> emitCall(const FunctionEntry& entry, const std::vector<const Tensor*>& args);
  /// Sets `radix.kernel = kind` and `radix.kernel_options` on the radix::call function being traced.
  void markKernel(const std::string& kind, const std::vector<std::pair<std::string, int64_t>>& ints,
                  const std::vector<std::pair<std::string, double>>& floats);

  // Regions of scf.while / scf.if: not isolated from above, so ops in `block` may use the values
  // of the enclosing scopes of the same function. endRegion restores the insertion point.
  void beginRegion(mlir::Block* block);
  void endRegion();

 private:
  struct Scope {
    uint32_t id;
    mlir::func::FuncOp fn;      // null for @main while tracing (its block is detached)
    mlir::Block* block;
    mlir::OpBuilder::InsertPoint saved;
    uint64_t key;
    std::string symbol;
    bool region = false;  // an scf region: sees the values of the scopes around it
    std::string prefix;   // radix::call functions: the name before the content hash
  };
  struct Value {
    mlir::Value value;
    uint32_t scope;
  };
  struct Results {
    std::vector<mlir::Value> values;
    std::vector<mlir::Type> types;
    std::vector<Shape> shapes;
    std::vector<int32_t> donations;
    std::vector<Memory> memories;
  };
  Results collectResults(const std::vector<const Tensor*>& results, const char* op) const;

  std::unique_ptr<TraceEvent> traceEvent_;
  double canonicalizeSeconds_ = 0;
  Platform platform_;
  std::string name_;
  uint64_t serial_;
  mlir::MLIRContext mlir_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::OpBuilder builder_;
  std::vector<Value> values_;
  std::vector<Scope> scopes_;
  uint32_t nextScope_ = 0;
  std::unordered_set<uint32_t> regionScopes_;  // ids of the scf region scopes opened so far
  std::unordered_map<uint64_t, size_t> functionByKey_;
  std::unordered_map<std::string, size_t> functionBySymbol_;  // content-named symbol -> first function
  std::vector<Function> functions_;

  mlir::Block* mainBlock_ = nullptr;
  std::vector<Shape> mainArgShapes_;
  std::vector<int32_t> leafToArg_;
  std::vector<std::string> leafPaths_;
  std::vector<std::string> argPaths_;  // per @main argument: the path of its first leaf
  std::unordered_map<const void*, int32_t> argByBuffer_;
  std::unordered_map<uint64_t, int32_t> argByIdentity_;
  std::vector<Tensor> mainResults_;
};

/// The context traced on this thread, or null.
TraceContext* currentTraceOrNull();

}  // namespace radix::detail
