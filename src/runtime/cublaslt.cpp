// radix_cuda_contract: the contractions of compiled GPU code (compiler/gpu.cpp) through cuBLASLt,
// loaded at run time like the driver (dlopen; $RADIX_LIBCUBLASLT, else libcublasLt.so.13/.12).
// It answers 1 when cuBLASLt cannot take a problem (no library, no handle, a layout or type
// combination it lacks, no algorithm): the host code then launches the generated kernels. CUDA
// failures are kept per thread (cuda.h's recordError) and raised by the runtime after the call.
// It runs on the call's stream (cuda.h's callStream), in order with the call's kernels.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/kernels/kernels.h"
#include "runtime/cuda.h"

namespace radix::detail::cuda {
namespace {

using Status = int;  // cublasStatus_t
using Handle = void*;
using Desc = void*;
using Layout = void*;
using Pref = void*;

constexpr Status kSuccess = 0;
constexpr int kComputeF32 = 68;  // CUBLAS_COMPUTE_32F: full f32 (torch.matmul's default, no TF32)
constexpr int kTypeF32 = 0, kTypeF16 = 2, kTypeBf16 = 14;  // cudaDataType_t
constexpr int kDescTransA = 3, kDescTransB = 4;             // cublasLtMatmulDescAttributes_t
constexpr int kDescEpilogue = 7, kDescBiasPointer = 8, kDescBiasType = 26;
constexpr uint32_t kEpilogueBias = 4;                       // CUBLASLT_EPILOGUE_BIAS
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;  // cublasLtMatrixLayoutAttribute_t
constexpr int kPrefWorkspace = 1, kPrefAlignA = 5;            // cublasLtMatmulPreferenceAttributes_t (A..D: 5..8)
constexpr uint64_t kWorkspaceBytes = 32u << 20;

struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {  // cublasLtMatmulHeuristicResult_t
  Algo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

struct Lt {
  std::string problem;
  Status (*create)(Handle*) = nullptr;
  Status (*descCreate)(Desc*, int, int) = nullptr;
  Status (*descSet)(Desc, int, const void*, size_t) = nullptr;
  Status (*layoutCreate)(Layout*, int, uint64_t, uint64_t, int64_t) = nullptr;
  Status (*layoutSet)(Layout, int, const void*, size_t) = nullptr;
  Status (*prefCreate)(Pref*) = nullptr;
  Status (*prefSet)(Pref, int, const void*, size_t) = nullptr;
  Status (*prefDestroy)(Pref) = nullptr;
  // Structs by void pointers: the library's own types are not these (calls through a pointer of
  // another function type are undefined).
  Status (*heuristic)(Handle, Desc, Layout, Layout, Layout, Layout, Pref, int, void*, int*) = nullptr;
  Status (*matmul)(Handle, Desc, const void*, const void*, Layout, const void*, Layout, const void*, const void*, Layout,
                   void*, Layout, const void*, void*, size_t, Stream) = nullptr;
};

const Lt& lt() {
  static const Lt loaded = [] {
    Lt out;
    std::string why;
    void* lib = openLibrary("RADIX_LIBCUBLASLT", {"libcublasLt.so.13", "libcublasLt.so.12"}, why);
    if (!lib) {
      out.problem = "cuBLASLt cannot be loaded (" + why + ")";
      return out;
    }
    std::string missing;
    bind(lib, "cublasLtCreate", out.create, missing);
    bind(lib, "cublasLtMatmulDescCreate", out.descCreate, missing);
    bind(lib, "cublasLtMatmulDescSetAttribute", out.descSet, missing);
    bind(lib, "cublasLtMatrixLayoutCreate", out.layoutCreate, missing);
    bind(lib, "cublasLtMatrixLayoutSetAttribute", out.layoutSet, missing);
    bind(lib, "cublasLtMatmulPreferenceCreate", out.prefCreate, missing);
    bind(lib, "cublasLtMatmulPreferenceSetAttribute", out.prefSet, missing);
    bind(lib, "cublasLtMatmulPreferenceDestroy", out.prefDestroy, missing);
    bind(lib, "cublasLtMatmulAlgoGetHeuristic", out.heuristic, missing);
    bind(lib, "cublasLtMatmul", out.matmul, missing);
    if (!missing.empty()) out.problem = "cuBLASLt lacks " + missing;
    return out;
  }();
  return loaded;
}

// A matrix whose element (r, c) sits at r * rowStride + c * colStride, as cuBLASLt stores it:
// column-major rows x cols with leading dimension ld, or its transpose.
struct Matrix {
  int64_t rows, cols, ld;
  bool transposed;
};

std::optional<Matrix> columnMajor(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride) {
  if ((rows == 1 || rowStride == 1) && (cols == 1 || colStride >= rows))
    return Matrix{rows, cols, cols == 1 ? rows : colStride, false};
  if ((cols == 1 || colStride == 1) && (rows == 1 || rowStride >= cols))
    return Matrix{cols, rows, rows == 1 ? cols : rowStride, true};
  return std::nullopt;
}

// The largest power of two (up to 256) dividing an address: the alignment cuBLASLt may assume.
uint32_t alignmentOf(uint64_t address) {
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// One problem's descriptors and algorithm, made once per thread (cuBLASLt handles are per thread).
struct Prepared {
  bool usable = false;
  Desc desc = nullptr;
  Layout x = nullptr, y = nullptr, d = nullptr;
  Algo algo{};
  size_t workspace = 0;
};

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, uint32_t, uint32_t, uint32_t>;

// Per thread (cuda.h's perThread): a handle, a workspace and each problem's descriptors.
struct ThreadState {
  bool tried = false;
  Handle handle = nullptr;
  DevicePtr workspace = 0;
  std::map<Key, Prepared> prepared;
};

bool ready(ThreadState& s) {
  if (s.tried) return s.handle != nullptr;
  s.tried = true;
  const Lt& l = lt();
  if (!l.problem.empty() || !driver().problem.empty()) return false;
  if (l.create(&s.handle) != kSuccess) {
    s.handle = nullptr;
    return false;
  }
  if (driver().memAlloc(&s.workspace, kWorkspaceBytes) != 0) s.workspace = 0;
  return true;
}

// cudaDataType_t of a contraction operand's kernels::Elem; -1 for none.
int cudaType(int64_t elem) {
  using kernels::Elem;
  return elem == int64_t(Elem::f32) ? kTypeF32 : elem == int64_t(Elem::f16) ? kTypeF16
         : elem == int64_t(Elem::bf16) ? kTypeBf16 : -1;
}

Layout layout(int type, const Matrix& m, int64_t batch, int64_t batchStride) {
  const Lt& l = lt();
  Layout out = nullptr;
  if (l.layoutCreate(&out, type, uint64_t(m.rows), uint64_t(m.cols), m.ld) != kSuccess) return nullptr;
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    l.layoutSet(out, kLayoutBatchCount, &count, sizeof count);
    l.layoutSet(out, kLayoutBatchStride, &batchStride, sizeof batchStride);
  }
  return out;
}

}  // namespace
}  // namespace radix::detail::cuda

using namespace radix::detail::cuda;

extern "C" {

/// C[b][i][j] (+)= sum_k A[b][i][k] * B[b][k][j] on device memory, as radix_kernel_contract takes
/// it (base + element offset, Elem types a | b << 8, strides in elements; C is f32); `accumulate`
/// 0 overwrites C. With an epilogue (dBase non-zero; overwriting only), the result goes to D
/// instead, at C's strides from D's base + offset, as dElem (f32, f16, bf16), after adding
/// bias[j] (biasBase non-zero, biasElem its type). Returns 0 when done (or a CUDA failure was
/// recorded), 1 when the caller must run its own kernels instead.
int32_t radix_cuda_contract(int64_t aBase, int64_t aOffset, int64_t bBase, int64_t bOffset, int64_t cBase,
                            int64_t cOffset, int64_t types, int64_t batch, int64_t m, int64_t n, int64_t k,
                            int64_t sab, int64_t sam, int64_t sak, int64_t sbb, int64_t sbk, int64_t sbn, int64_t scb,
                            int64_t scm, int64_t scn, int64_t accumulate, int64_t dBase, int64_t dOffset, int64_t dElem,
                            int64_t biasBase, int64_t biasOffset, int64_t biasElem) {
  if (hasError()) return 0;
  ThreadState& state = perThread<ThreadState>();
  if (!ready(state)) return 1;
  const int aType = cudaType(types & 0xff), bType = cudaType((types >> 8) & 0xff);
  if (aType < 0 || aType != bType) return 1;
  const bool epilogue = dBase != 0, bias = biasBase != 0;
  const int dType = epilogue ? cudaType(dElem) : kTypeF32, biasType = bias ? cudaType(biasElem) : -1;
  // cuBLASLt's bias has D's type (outside integer and fp8 kernels).
  if (dType < 0 || (bias && (biasType != dType || !epilogue)) || (epilogue && accumulate)) return 1;
  const int64_t elemBytes = aType == kTypeF32 ? 4 : 2;
  const uint64_t a = uint64_t(aBase + aOffset * elemBytes), b = uint64_t(bBase + bOffset * elemBytes);
  const uint64_t c = epilogue ? uint64_t(dBase + dOffset * (dType == kTypeF32 ? 4 : 2)) : uint64_t(cBase + cOffset * 4);
  const uint64_t biasAddress = bias ? uint64_t(biasBase + biasOffset * (biasType == kTypeF32 ? 4 : 2)) : 0;
  // D (R x S, column-major) = X (R x K) * Y (K x S): C itself when its rows are contiguous, else
  // C transposed (row-major C is column-major C^T = B^T A^T). cuBLASLt adds a bias along D's
  // rows: C's columns j are those of C^T.
  const bool swap = bias || (m > 1 && scm != 1);
  std::optional<Matrix> dm, xm, ym;
  uint64_t x, y;
  int64_t sxb, syb;
  if (swap) {
    dm = columnMajor(n, m, scn, scm);
    xm = columnMajor(n, k, sbn, sbk);
    ym = columnMajor(k, m, sak, sam);
    x = b, y = a, sxb = sbb, syb = sab;
  } else {
    dm = columnMajor(m, n, scm, scn);
    xm = columnMajor(m, k, sam, sak);
    ym = columnMajor(k, n, sbk, sbn);
    x = a, y = b, sxb = sab, syb = sbb;
  }
  if (!dm || dm->transposed || !xm || !ym) return 1;
  if (batch > 1 && scb == 0) return 1;
  const uint32_t alignX = alignmentOf(x), alignY = alignmentOf(y), alignC = alignmentOf(c);
  const Key key{int(types) | dType << 16 | (biasType + 1) << 24,
                batch, dm->rows, dm->cols, k, xm->ld, ym->ld, dm->ld,
                (int64_t(xm->transposed) << 1) | int64_t(ym->transposed) | (accumulate << 2),
                sxb, syb, scb, int64_t(aType), alignX, alignY, alignC | (bias ? alignmentOf(biasAddress) << 16 : 0)};
  const Lt& l = lt();
  auto [it, fresh] = state.prepared.try_emplace(key);
  Prepared& p = it->second;
  if (fresh) {
    if (l.descCreate(&p.desc, kComputeF32, kTypeF32) != kSuccess) return 1;
    const int32_t ta = xm->transposed ? 1 : 0, tb = ym->transposed ? 1 : 0;  // CUBLAS_OP_T : CUBLAS_OP_N
    l.descSet(p.desc, kDescTransA, &ta, sizeof ta);
    l.descSet(p.desc, kDescTransB, &tb, sizeof tb);
    if (bias) {
      const int32_t type = biasType;
      if (l.descSet(p.desc, kDescEpilogue, &kEpilogueBias, sizeof kEpilogueBias) != kSuccess ||
          l.descSet(p.desc, kDescBiasType, &type, sizeof type) != kSuccess ||
          l.descSet(p.desc, kDescBiasPointer, &biasAddress, sizeof biasAddress) != kSuccess)
        return 1;
    }
    p.x = layout(aType, *xm, batch, sxb);
    p.y = layout(aType, *ym, batch, syb);
    p.d = layout(dType, *dm, batch, scb);
    Pref pref = nullptr;
    if (!p.x || !p.y || !p.d || l.prefCreate(&pref) != kSuccess) return 1;
    const uint64_t workspace = state.workspace ? kWorkspaceBytes : 0;
    l.prefSet(pref, kPrefWorkspace, &workspace, sizeof workspace);
    const uint32_t aligns[4] = {alignX, alignY, alignC, alignC};
    for (int i = 0; i < 4; ++i) l.prefSet(pref, kPrefAlignA + i, &aligns[i], sizeof aligns[i]);
    HeuristicResult result{};
    int found = 0;
    const Status s = l.heuristic(state.handle, p.desc, p.x, p.y, p.d, p.d, pref, 1, &result, &found);
    l.prefDestroy(pref);
    if (s != kSuccess || found < 1 || result.state != kSuccess) return 1;
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
    p.usable = true;
  }
  if (!p.usable) return 1;
  // The pointer is the call's; the descriptor (and its algorithm) are the problem's.
  if (bias && l.descSet(p.desc, kDescBiasPointer, &biasAddress, sizeof biasAddress) != kSuccess) return 1;
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  const Status s = l.matmul(state.handle, p.desc, &alpha, reinterpret_cast<const void*>(x), p.x,
                            reinterpret_cast<const void*>(y), p.y, &beta, reinterpret_cast<const void*>(c), p.d,
                            reinterpret_cast<void*>(c), p.d, &p.algo, reinterpret_cast<void*>(state.workspace),
                            p.workspace, callStream());
  if (s != kSuccess) recordError("cublasLtMatmul: status " + std::to_string(s));
  return 0;
}

}  // extern "C"
