#pragma once
/// radix::Program: an executable compiled ahead of time (`radix compile`, or any radix::compile
/// that wrote a cache entry), loaded and run by the runtime library alone (Radix::runtime: no
/// LLVM, no MLIR, no compiler). docs/aot.md.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "radix/detail/visit.h"
#include "radix/platform.h"
#include "radix/shape.h"
#include "radix/tensor.h"

namespace radix {

namespace detail {
class Executable;
}

/// A loaded cache entry: its @main's arguments and results, and a way to call it.
/// Program p = Program::load(cpu, "/root/.cache/radix/cpu/Mlp_81c2...");  p.run({w, x}) -> {y}
class Program {
 public:
  /// Loads the entry folder `entryDir` (module.mlir, entry.o, meta.json). Throws
  /// radix::Error("[runtime] ... <entryDir>") when it is missing, corrupt, was written by a Radix
  /// without an argument table, or was compiled for another target or for CPU features this
  /// host lacks (named).
  static Program load(const Platform& platform, const std::string& entryDir);
  /// The newest entry of `platform`'s target named `name` (as radix::compile names it: the
  /// struct's type, "main" for a free function) under `cacheDir` (default: radix::cacheDir());
  /// with `argumentShapes`, the newest whose arguments have those dims and dtypes.
  /// Program::find(cpu, "Mlp") loads <cache>/cpu/Mlp_<hash>/
  static Program find(const Platform& platform, const std::string& name, const std::vector<Shape>& argumentShapes = {},
                      const std::string& cacheDir = "");

  /// The entry's folder.
  const std::string& path() const { return path_; }
  /// The compiled function's name: "Mlp".
  const std::string& name() const { return name_; }
  /// One per tensor leaf of the compile-time arguments, in their order: {{4,8}:f32, {2,4}:f32}
  const std::vector<Shape>& argumentShapes() const { return argShapes_; }
  /// The leaves' paths at compile time: {"self.w", "x"} (tied leaves share one buffer).
  const std::vector<std::string>& argumentPaths() const { return argPaths_; }
  /// One per result leaf: {{2,8}:f32}
  const std::vector<Shape>& resultShapes() const;

  /// Runs on bound tensors, one per argument leaf: p.run({w, x}) -> {y}. Errors as radix::Exe's,
  /// naming the leaf by its path: "[exe] self.w is {3}:f32, compiled for {2}:f32".
  std::vector<Tensor> run(const std::vector<Tensor>& args) const;
  /// Same, each argument given by its path: p.run({{"self.w", w}, {"x", x}}) -> {y}. Throws
  /// radix::Error("[runtime] ...") naming a missing or unknown path.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& args) const;
  /// Same, with the arguments given as at compile time (structs of Tensors, in order; their
  /// non-Tensor leaves are not checked): p(model, ids, pos) -> {logits, ...}
  template <class... Args>
  std::vector<Tensor> operator()(const Args&... args) const {
    detail::TensorCollector leaves;
    (detail::visitLeaves(leaves, args), ...);
    return runLeaves(leaves.out);
  }

 private:
  std::vector<Tensor> runLeaves(const std::vector<const Tensor*>& leaves) const;
  std::shared_ptr<detail::Executable> executable_;
  std::string path_, name_;
  std::vector<Shape> argShapes_;
  std::vector<std::string> argPaths_;
};

}  // namespace radix
