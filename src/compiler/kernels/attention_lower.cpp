// After bufferization: calls of nn::sdpa's function (marked radix.kernel = "attention", its body
// the reference composition) become calls of radix_kernel_attention with one int64 array of
// pointers, shapes, strides and options (attention.h). The marked function is kept where a call
// does not fit (a layout the kernel does not take), so the composition runs there.
#include <cstring>
#include <optional>
#include <vector>

#include "compiler/kernels/attention.h"
#include "compiler/kernels/lower.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"

namespace radix::kernels {

namespace {

constexpr const char* kAttentionSymbol = "radix_kernel_attention";

AttentionIsa attentionIsaOf(const KernelTarget& t) {
  std::string error;
  const llvm::Triple triple(t.triple);
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target || triple.getArch() != llvm::Triple::x86_64) return AttentionIsa::x86_64;
  std::unique_ptr<llvm::MCSubtargetInfo> info(target->createMCSubtargetInfo(triple, t.cpu, t.features));
  if (!info) return AttentionIsa::x86_64;
  if (info->checkFeatures("+avx512f,+avx512bw,+avx512vl,+avx512dq,+fma,+f16c,+avx512bf16,+amx-tile,+amx-bf16"))
    return AttentionIsa::amx;
  if (info->checkFeatures("+avx512f,+avx512bw,+avx512vl,+avx512dq,+fma,+f16c")) return AttentionIsa::avx512;
  if (info->checkFeatures("+avx2,+fma,+f16c")) return AttentionIsa::avx2;
  return AttentionIsa::x86_64;
}

std::optional<int64_t> intOption(mlir::DictionaryAttr options, llvm::StringRef name) {
  auto a = options ? mlir::dyn_cast_or_null<mlir::IntegerAttr>(options.get(name)) : nullptr;
  if (!a) return std::nullopt;
  return a.getInt();
}

std::optional<double> floatOption(mlir::DictionaryAttr options, llvm::StringRef name) {
  auto a = options ? mlir::dyn_cast_or_null<mlir::FloatAttr>(options.get(name)) : nullptr;
  if (!a) return std::nullopt;
  return a.getValueAsDouble();
}

}  // namespace

std::optional<AttentionPlan> planAttentionCall(mlir::func::CallOp call, mlir::func::FuncOp callee) {
  auto options = callee->getAttrOfType<mlir::DictionaryAttr>("radix.kernel_options");
  if (!options || callee.getNumResults() != 0) return std::nullopt;
  const char* names[] = {"causal", "window", "offset", "lengths", "dtype", "hq", "hk", "nq", "nk", "hd",
                         "b0", "b1", "q_b0", "k_b0", "v_b0", "q_b1", "k_b1", "v_b1", "len_b0", "len_b1",
                         "q_h", "q_s", "k_h", "k_s", "kv_dtype"};
  llvm::StringMap<int64_t> o;
  for (const char* n : names) {
    auto v = intOption(options, n);
    if (!v) return std::nullopt;
    o[n] = *v;
  }
  auto scale = floatOption(options, "scale"), softcap = floatOption(options, "softcap");
  if (!scale || !softcap) return std::nullopt;
  const bool hasOffset = o["offset"] != 0, hasLengths = o["lengths"] != 0;
  const unsigned expected = 3 + (hasOffset ? 1 : 0) + (hasLengths ? 1 : 0) + 1;
  if (call.getNumOperands() != expected || call.getNumResults() != 0) return std::nullopt;
  const bool bf16 = o["dtype"] == 2;
  const int64_t kvElem = o["kv_dtype"];
  auto isElem = [](mlir::Type e, int64_t elem) {
    return elem == int64_t(Elem::bf16) ? e.isBF16() : elem == int64_t(Elem::f16) ? e.isF16() : e.isF32();
  };
  for (unsigned i = 0; i < expected; ++i) {
    auto type = mlir::dyn_cast<mlir::MemRefType>(call.getOperand(i).getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity()) return std::nullopt;
    const bool tensor = i < 3 || i == expected - 1;
    mlir::Type e = type.getElementType();
    const int64_t want = i == 1 || i == 2 ? kvElem : bf16 ? int64_t(Elem::bf16) : int64_t(Elem::f32);
    if (tensor ? !isElem(e, want) : !e.isInteger(32)) return std::nullopt;
    if (!tensor && type.getRank() > 1) return std::nullopt;
  }
  AttentionPlan p;
  p.values.assign(kAttnArgCount, 0);
  auto& v = p.values;
  p.buffers = {kAttnQ, kAttnK, kAttnV};
  if (hasOffset) p.buffers.push_back(kAttnOffset);
  if (hasLengths) p.buffers.push_back(kAttnLengths);
  p.buffers.push_back(kAttnOut);
  v[kAttnDtype] = bf16 ? 2 : 0;
  v[kAttnKvDtype] = kvElem;
  v[kAttnBatch] = o["b0"], v[kAttnBatch + 1] = o["b1"];
  v[kAttnHq] = o["hq"], v[kAttnHk] = o["hk"], v[kAttnNq] = o["nq"], v[kAttnNk] = o["nk"], v[kAttnHd] = o["hd"];
  const int64_t q[4] = {o["q_b0"], o["q_b1"], o["q_h"], o["q_s"]};
  const int64_t kv[4] = {o["k_b0"], o["k_b1"], o["k_h"], o["k_s"]};
  for (int i = 0; i < 4; ++i) {
    v[kAttnQStrides + i] = q[i], v[kAttnOutStrides + i] = q[i];
    v[kAttnKStrides + i] = kv[i], v[kAttnVStrides + i] = kv[i];
  }
  v[kAttnLengthStrides] = o["len_b0"], v[kAttnLengthStrides + 1] = o["len_b1"];
  v[kAttnCausal] = o["causal"], v[kAttnWindow] = o["window"];
  std::memcpy(&v[kAttnScale], &*scale, 8);
  std::memcpy(&v[kAttnSoftcap], &*softcap, 8);
  return p;
}

mlir::Value attentionArgArray(mlir::OpBuilder& b, mlir::func::CallOp call, const AttentionPlan& plan) {
  const mlir::Location loc = call.getLoc();
  std::vector<mlir::Value> words(kAttnArgCount);
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    std::tie(words[plan.buffers[i]], words[plan.buffers[i] + 1]) =
        basePointerAndOffset(b, loc, call.getOperand(static_cast<unsigned>(i)));
  for (int i = 0; i < kAttnArgCount; ++i)
    if (!words[i]) words[i] = mlir::arith::ConstantIntOp::create(b, loc, plan.values[i], 64);
  return hostArray(b, call, words);
}

std::vector<std::pair<mlir::func::CallOp, AttentionPlan>> attentionCalls(mlir::ModuleOp module,
                                                                         std::vector<mlir::func::FuncOp>* marked) {
  std::vector<std::pair<mlir::func::CallOp, AttentionPlan>> found;
  std::vector<mlir::func::FuncOp> functions;
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    auto kind = fn->getAttrOfType<mlir::StringAttr>("radix.kernel");
    if (kind && kind.getValue() == "attention") functions.push_back(fn);
  }
  if (!functions.empty())
    module.walk([&](mlir::func::CallOp call) {
      auto callee = module.lookupSymbol<mlir::func::FuncOp>(call.getCallee());
      if (!callee || std::find(functions.begin(), functions.end(), callee) == functions.end()) return;
      if (auto plan = planAttentionCall(call, callee)) found.emplace_back(call, std::move(*plan));
    });
  if (marked) *marked = std::move(functions);
  return found;
}

// The call's location plus the first source line in the body it replaces (nn::sdpa's), so that
// the profile's row names a line.
mlir::Location sourceLocOf(mlir::func::CallOp call, mlir::ModuleOp module) {
  auto callee = module.lookupSymbol<mlir::func::FuncOp>(call.getCallee());
  std::optional<mlir::Location> line;
  callee.walk([&](mlir::Operation* op) {
    op->getLoc()->walk([&](mlir::Location l) {
      if (!mlir::isa<mlir::FileLineColLoc>(l)) return mlir::WalkResult::advance();
      line = l;
      return mlir::WalkResult::interrupt();
    });
    return line ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  if (!line) return call.getLoc();
  return mlir::FusedLoc::get(module.getContext(), {call.getLoc(), *line});
}

int attentionIsaFor(const KernelTarget& target) { return static_cast<int>(attentionIsaOf(target)); }

int lowerAttentionToKernels(mlir::ModuleOp module, const KernelTarget& target) {
  std::vector<mlir::func::FuncOp> marked;
  std::vector<std::pair<mlir::func::CallOp, AttentionPlan>> found = attentionCalls(module, &marked);
  if (!found.empty()) {
    const AttentionIsa isa = attentionIsaOf(target);
    mlir::func::FuncOp decl = declareKernel(module, kAttentionSymbol, 1);
    for (auto& [call, plan] : found) {
      plan.values[kAttnThreads] = target.threads;
      plan.values[kAttnIsa] = static_cast<int64_t>(isa);
      mlir::OpBuilder b(call);
      mlir::func::CallOp::create(b, sourceLocOf(call, module), decl, mlir::ValueRange{attentionArgArray(b, call, plan)});
      call.erase();
    }
  }
  for (mlir::func::FuncOp fn : marked)
    if (mlir::SymbolTable::symbolKnownUseEmpty(fn, module)) fn.erase();
  return static_cast<int>(found.size());
}

}  // namespace radix::kernels
