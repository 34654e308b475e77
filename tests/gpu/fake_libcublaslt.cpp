// A stand-in for libcublasLt.so on machines without a GPU (RADIX_LIBCUBLASLT=<this library>),
// beside the fake driver (fake_libcuda.cpp, whose device memory is host memory). Unlike the fake
// driver's launches, its matmuls run: a naive column-major D = alpha op(A) op(B) + beta C over
// host memory, with cuBLASLt's layouts, transposes, strided batches and f32/f16/bf16 operands. So
// the tests check what Radix asks of cuBLASLt (layouts, leading dimensions, batch strides, beta,
// the bias epilogue and D's type) against the CPU's results. It refuses what cuBLASLt refuses: ld < rows, mixed operand types,
// a missing handle; and it finds no algorithm for alignments below the element size.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "fake_half.h"

namespace {

constexpr int kSuccess = 0, kNotInitialized = 1, kInvalidValue = 7, kNotSupported = 15;
constexpr int kF32 = 0, kF16 = 2, kBf16 = 14;

struct Desc {
  int compute, scale;
  int32_t transA = 0, transB = 0;
  uint32_t epilogue = 1;  // CUBLASLT_EPILOGUE_DEFAULT; 4: BIAS
  const void* bias = nullptr;
  int32_t biasType = -1;  // -1: D's
};
struct Layout {
  int type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t batchStride = 0;
};
struct Pref {
  uint64_t workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256};
};
struct HeuristicResult {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

std::mutex mutex;
int matmuls = 0, handles = 0, refuse = 0;

float load(const void* base, int type, int64_t i) {
  if (type == kF32) return static_cast<const float*>(base)[i];
  const uint16_t h = static_cast<const uint16_t*>(base)[i];
  return type == kBf16 ? fakegpu::fromBf16(h) : fakegpu::fromF16(h);
}

void store(void* base, int type, int64_t i, float v) {
  if (type == kF32) static_cast<float*>(base)[i] = v;
  else static_cast<uint16_t*>(base)[i] = type == kBf16 ? fakegpu::toBf16(v) : fakegpu::toF16(v);
}

// Element (r, c) of op(M) for layout l (column-major, ld), transposed when `t`.
float at(const void* base, const Layout& l, bool t, int64_t batch, int64_t r, int64_t c) {
  if (t) std::swap(r, c);
  return load(base, l.type, batch * l.batchStride + r + c * l.ld);
}

}  // namespace

extern "C" {

// Test hook (dlsym'ed by tests/fake_cuda_test.cpp): matmuls run and handles created so far.
void radixFakeCublasLtStats(int* outMatmuls, int* outHandles) {
  std::lock_guard<std::mutex> lock(mutex);
  *outMatmuls = matmuls;
  *outHandles = handles;
}
// While set, the heuristic finds no algorithm (as for a problem cuBLASLt lacks).
void radixFakeCublasLtRefuse(int on) { refuse = on; }

int cublasLtCreate(void** handle) {
  static int h;
  std::lock_guard<std::mutex> lock(mutex);
  ++handles;
  *handle = &h;
  return kSuccess;
}
int cublasLtMatmulDescCreate(void** desc, int compute, int scale) {
  *desc = new Desc{compute, scale};
  return kSuccess;
}
int cublasLtMatmulDescSetAttribute(void* desc, int attr, const void* buf, size_t size) {
  auto* d = static_cast<Desc*>(desc);
  if (attr == 8 && size == sizeof(void*)) std::memcpy(&d->bias, buf, sizeof(void*));
  else if (size != 4) return kInvalidValue;
  else if (attr == 3) std::memcpy(&d->transA, buf, 4);
  else if (attr == 4) std::memcpy(&d->transB, buf, 4);
  else if (attr == 7) std::memcpy(&d->epilogue, buf, 4);
  else if (attr == 26) std::memcpy(&d->biasType, buf, 4);
  else return kInvalidValue;
  return kSuccess;
}
int cublasLtMatrixLayoutCreate(void** layout, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (type != kF32 && type != kF16 && type != kBf16) return kNotSupported;
  if (ld < 1 || ld < int64_t(rows)) return kInvalidValue;
  *layout = new Layout{type, rows, cols, ld};
  return kSuccess;
}
int cublasLtMatrixLayoutSetAttribute(void* layout, int attr, const void* buf, size_t size) {
  auto* l = static_cast<Layout*>(layout);
  if (attr == 5 && size == 4) std::memcpy(&l->batch, buf, 4);
  else if (attr == 6 && size == 8) std::memcpy(&l->batchStride, buf, 8);
  else return kInvalidValue;
  return kSuccess;
}
int cublasLtMatmulPreferenceCreate(void** pref) {
  *pref = new Pref;
  return kSuccess;
}
int cublasLtMatmulPreferenceSetAttribute(void* pref, int attr, const void* buf, size_t size) {
  auto* p = static_cast<Pref*>(pref);
  if (attr == 1 && size == 8) std::memcpy(&p->workspace, buf, 8);
  else if (attr >= 5 && attr <= 8 && size == 4) std::memcpy(&p->align[attr - 5], buf, 4);
  else return kInvalidValue;
  return kSuccess;
}
int cublasLtMatmulPreferenceDestroy(void* pref) {
  delete static_cast<Pref*>(pref);
  return kSuccess;
}

int cublasLtMatmulAlgoGetHeuristic(void* handle, void* desc, void* a, void* b, void* c, void* d, void* pref, int requested,
                                   void* heuristicResults, int* found) {
  auto* results = static_cast<HeuristicResult*>(heuristicResults);
  if (!handle) return kNotInitialized;
  const auto* la = static_cast<Layout*>(a);
  const auto* lb = static_cast<Layout*>(b);
  const auto* lc = static_cast<Layout*>(c);
  const auto* p = static_cast<Pref*>(pref);
  *found = 0;
  if (requested < 1 || !desc || !d) return kInvalidValue;
  // D is f32 or A's type; C is D's; a bias has D's type and D's rows.
  const auto* ld = static_cast<Layout*>(d);
  const auto* dd = static_cast<Desc*>(desc);
  if (la->type != lb->type || lc->type != ld->type || (ld->type != kF32 && ld->type != la->type)) return kNotSupported;
  if (dd->epilogue != 1 && (dd->epilogue != 4 || !dd->bias || (dd->biasType != -1 && dd->biasType != ld->type)))
    return kNotSupported;
  const uint32_t elem = la->type == kF32 ? 4 : 2, dElem = ld->type == kF32 ? 4 : 2;
  if (refuse || p->align[0] < elem || p->align[1] < elem || p->align[2] < dElem || p->align[3] < dElem)
    return kNotSupported;
  std::memset(&results[0], 0, sizeof results[0]);
  *found = 1;
  return kSuccess;
}

int cublasLtMatmul(void* handle, void* desc, const void* alpha, const void* a, void* adesc, const void* b, void* bdesc,
                   const void* beta, const void* c, void* cdesc, void* dptr, void* ddesc, const void* algo, void*, size_t,
                   void*) {
  if (!handle || !desc || !algo) return kNotInitialized;
  const auto& dd = *static_cast<Desc*>(desc);
  const auto& la = *static_cast<Layout*>(adesc);
  const auto& lb = *static_cast<Layout*>(bdesc);
  const auto& lc = *static_cast<Layout*>(cdesc);
  const auto& ld = *static_cast<Layout*>(ddesc);
  const int64_t m = int64_t(ld.rows), n = int64_t(ld.cols);
  const int64_t k = int64_t(dd.transA ? la.rows : la.cols);
  if (int64_t(dd.transA ? la.cols : la.rows) != m || int64_t(dd.transB ? lb.cols : lb.rows) != k ||
      int64_t(dd.transB ? lb.rows : lb.cols) != n || lc.rows != ld.rows || lc.cols != ld.cols)
    return kInvalidValue;
  if (la.batch != ld.batch || lb.batch != ld.batch || lc.batch != ld.batch) return kInvalidValue;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  for (int64_t q = 0; q < ld.batch; ++q)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        float sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += at(a, la, dd.transA, q, i, p) * at(b, lb, dd.transB, q, p, j);
        const float prior = be == 0 ? 0.f : be * load(c, lc.type, q * lc.batchStride + i + j * lc.ld);
        const float bias = dd.epilogue == 4 ? load(dd.bias, ld.type, i) : 0.f;
        store(dptr, ld.type, q * ld.batchStride + i + j * ld.ld, al * sum + prior + bias);
      }
  std::lock_guard<std::mutex> lock(mutex);
  ++matmuls;
  return kSuccess;
}

}  // extern "C"
