// Per-op profile (docs/profiling.md): which ops of a lowered module are timed, their names,
// lines and work, and the site table a profiled object exports.
#include "compiler/profile_sites.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/RegionUtils.h"

#include "compiler/kernels/lower.h"
#include "compiler/module_rewrites.h"

namespace radix::detail {

namespace {

namespace fs = std::filesystem;


// Traced op names (NameLoc with a source location) and source lines under `loc`, in order.
void collectLocations(mlir::Location loc, std::vector<std::string>& names,
                      std::vector<std::pair<std::string, unsigned>>& lines) {
  if (auto n = mlir::dyn_cast<mlir::NameLoc>(loc)) {
    const size_t before = lines.size();
    collectLocations(n.getChildLoc(), names, lines);
    if (lines.size() > before) names.push_back(n.getName().str());
  } else if (auto f = mlir::dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location l : f.getLocations()) collectLocations(l, names, lines);
  } else if (auto c = mlir::dyn_cast<mlir::CallSiteLoc>(loc)) {
    collectLocations(c.getCallee(), names, lines);
  } else if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc)) {
    lines.emplace_back(fs::path(file.getFilename().str()).filename().string(), file.getLine());
  }
}

template <class T>
std::vector<T> uniqueInOrder(const std::vector<T>& v) {
  std::vector<T> out;
  for (const T& x : v)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

// "exp+add" and "model.cpp:12,14" for the op and the ops in its body (a fused loop nest keeps
// the consumer's location; its body keeps each fused op's).
std::pair<std::string, std::string> siteNames(mlir::Operation* op) {
  std::vector<std::string> names;
  std::vector<std::pair<std::string, unsigned>> lines;
  for (mlir::Region& region : op->getRegions())
    region.walk([&](mlir::Operation* inner) { collectLocations(inner->getLoc(), names, lines); });
  collectLocations(op->getLoc(), names, lines);
  names = uniqueInOrder(names);
  lines = uniqueInOrder(lines);
  std::string name;
  for (size_t i = 0; i < names.size() && i < 6; ++i) name += (i ? "+" : "") + names[i];
  if (names.size() > 6) name += "+...";
  if (name.empty()) name = mlir::isa<mlir::memref::CopyOp>(op) ? "copy" : op->getName().getStringRef().str();
  std::string where;
  std::string file;
  for (size_t i = 0; i < lines.size() && i < 6; ++i) {
    if (lines[i].first != file) {
      where += (where.empty() ? "" : " ") + lines[i].first + ":";
      file = lines[i].first;
    } else {
      where += ",";
    }
    where += std::to_string(lines[i].second);
  }
  if (lines.size() > 6) where += ",...";
  return {name, where.empty() ? "?" : where};
}

double memrefBytes(mlir::Value v) {
  auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType());
  if (!type || !type.hasStaticShape()) return 0;
  return static_cast<double>(type.getNumElements()) * static_cast<double>(type.getElementTypeBitWidth()) / 8;
}

}  // namespace

/// Wraps each kernel-to-be, loop nest (linalg op, row loop) and copy that no other one contains
/// in radix_profile_begin/end(id), and returns the sites by id. Runs on buffers, before the
/// contractions become kernel calls and the linalg ops loops, so each wrapped op keeps its
/// location and its replacement stays between the two calls.
std::vector<ProfileSite> instrumentProfile(mlir::ModuleOp module) {
  std::vector<mlir::Operation*> regions;
  for (mlir::func::FuncOp fn : module.getOps<mlir::func::FuncOp>()) {
    if (fn.isExternal()) continue;
    fn.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) {
      auto call = mlir::dyn_cast<mlir::func::CallOp>(op);
      if (mlir::isa<mlir::linalg::LinalgOp, mlir::memref::CopyOp, mlir::scf::ForallOp, mlir::scf::ParallelOp>(op) ||
          (call && call.getCallee() == "radix_kernel_attention")) {
        regions.push_back(op);
        return mlir::WalkResult::skip();
      }
      return mlir::WalkResult::advance();
    });
  }
  std::vector<ProfileSite> sites;
  if (regions.empty()) return sites;
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto declare = [&](const char* name) {
    auto f = mlir::func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType({b.getI64Type()}, {}));
    f.setPrivate();
    return f;
  };
  mlir::func::FuncOp begin = declare("radix_profile_begin"), end = declare("radix_profile_end");
  for (mlir::Operation* op : regions) {
    ProfileSite site;
    std::tie(site.op, site.location) = siteNames(op);
    const bool attention = mlir::isa<mlir::func::CallOp>(op);  // nn.sdpa's fused kernel
    if (attention) site.op = "attention";
    llvm::SetVector<mlir::Value> used(op->getOperands().begin(), op->getOperands().end());
    mlir::getUsedValuesDefinedAbove(op->getRegions(), used);
    double bytes = 0;
    for (mlir::Value v : used) bytes += memrefBytes(v);
    if (kernels::isKernelContraction(op)) {
      site.kind = "kernel";
      double iterations = 1;
      for (int64_t range : mlir::cast<mlir::linalg::LinalgOp>(op).getStaticLoopRanges())
        iterations *= static_cast<double>(range);
      site.flops = 2 * iterations;
    } else if (attention) {
      site.kind = "kernel";
    } else {
      site.kind = mlir::isa<mlir::memref::CopyOp>(op) ? "copy" : "loops";
      site.bytes = bytes;
    }
    const mlir::Location loc = op->getLoc();
    b.setInsertionPoint(op);
    mlir::Value id = mlir::arith::ConstantIntOp::create(b, loc, static_cast<int64_t>(sites.size()), 64);
    mlir::func::CallOp::create(b, loc, begin, mlir::ValueRange{id});
    b.setInsertionPointAfter(op);
    mlir::func::CallOp::create(b, loc, end, mlir::ValueRange{id});
    sites.push_back(std::move(site));
  }
  return sites;
}

void addProfileSites(mlir::ModuleOp module, const std::string& text) {
  addConstantString(module, kProfileSitesSymbol, text);
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  mlir::LLVM::GlobalOp::create(b, module.getLoc(), b.getI64Type(), /*isConstant=*/true, mlir::LLVM::Linkage::External,
                               kProfileSitesSizeSymbol, b.getI64IntegerAttr(static_cast<int64_t>(text.size())));
}

}  // namespace radix::detail
