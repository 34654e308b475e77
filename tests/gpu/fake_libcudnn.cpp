// A stand-in for libcudnn.so.9 on machines without a GPU (RADIX_LIBCUDNN=<this library>), beside
// the fake driver (whose device memory is host memory). It takes cuDNN's graph API the way cuDNN
// does, attribute by attribute: each attribute must belong to its descriptor and have its type,
// finalizing checks what is required (tensors finalized, matmul shapes that agree, masks of the
// right types), the variant pack must bind every non-virtual tensor, aligned as declared. Then it
// runs the graph naively, in operation order: matmuls, pointwise ops and reductions over
// broadcast dims, virtual tensors held (and rounded) in their data type. So the tests check the
// graphs Radix builds against the CPU's results. Convolutions run too (cross-correlation with
// strides, dilations, groups).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "fake_half.h"

namespace {

constexpr int kSuccess = 0, kNotInitialized = 1001, kBadParam = 2000, kNotSupported = 3000;

// Descriptor types, attribute types, attribute names and enum values (cudnn_graph_v9.h).
enum : int {
  dPointwise = 0, dConvolution = 1, dOpConvForward = 10, dEngineConfig = 3, dEngineHeur = 4, dPlan = 5, dOpPointwise = 13, dOpGraph = 15, dVariantPack = 16,
  dTensor = 17, dMatmul = 18, dOpMatmul = 19, dReduction = 21, dOpReduction = 22
};
enum : int {
  tHandle = 0, tDataType = 1, tBoolean = 2, tInt64 = 3, tFloat = 4, tVoidPtr = 6, tConvMode = 7, tHeurMode = 8,
  tPointwiseMode = 14,
  tDescriptor = 15, tReductionOp = 18
};
enum : int { kF32 = 0, kF16 = 2, kI32 = 4, kBf16 = 9, kBool = 11 };
enum : int {
  pAdd = 0, pMul = 1, pDiv = 6, pSub = 9, pExp = 13, pLog = 15, pCmpGe = 303, pCmpLt = 304, pAnd = 400, pGenIndex = 501,
  pSelect = 601
};

struct Desc;
struct Attr {
  int type = 0;
  std::vector<unsigned char> bytes;
  int64_t count = 0;
};
struct Desc {
  int type;
  bool finalized = false;
  std::map<int, Attr> attrs;
  // Filled by finalize for the descriptors execution reads.
  int64_t uid = 0, dataType = 0, alignment = 0;
  bool isVirtual = false, byValue = false;
  std::vector<int64_t> dims, strides;
  std::vector<Desc*> ops;   // an operation graph's
  Desc* graph = nullptr;    // an engine configuration's and a plan's
};

// Each descriptor type's attributes and their types: anything else is a bad parameter.
const std::map<std::pair<int, int>, int>& schema() {
  static const std::map<std::pair<int, int>, int> s = {
      {{dTensor, 900}, tInt64},        {{dTensor, 901}, tDataType},    {{dTensor, 902}, tInt64},
      {{dTensor, 903}, tInt64},        {{dTensor, 906}, tInt64},       {{dTensor, 907}, tBoolean},
      {{dTensor, 908}, tBoolean},      {{dPointwise, 0}, tPointwiseMode}, {{dPointwise, 1}, tDataType},
      {{dPointwise, 9}, tInt64},       {{dOpPointwise, 750}, tDescriptor}, {{dOpPointwise, 751}, tDescriptor},
      {{dOpPointwise, 752}, tDescriptor}, {{dOpPointwise, 753}, tDescriptor}, {{dOpPointwise, 758}, tDescriptor},
      {{dOpPointwise, 754}, tFloat},   {{dOpPointwise, 755}, tFloat},  {{dMatmul, 1500}, tDataType},
      {{dOpMatmul, 1520}, tDescriptor}, {{dOpMatmul, 1521}, tDescriptor}, {{dOpMatmul, 1522}, tDescriptor},
      {{dOpMatmul, 1523}, tDescriptor}, {{dReduction, 1600}, tReductionOp}, {{dReduction, 1601}, tDataType},
      {{dOpReduction, 1610}, tDescriptor}, {{dOpReduction, 1611}, tDescriptor}, {{dOpReduction, 1612}, tDescriptor},
      {{dOpGraph, 800}, tHandle},      {{dOpGraph, 801}, tDescriptor}, {{dEngineHeur, 200}, tHeurMode},
      {{dEngineHeur, 201}, tDescriptor}, {{dPlan, 400}, tHandle},      {{dPlan, 401}, tDescriptor},
      {{dVariantPack, 1000}, tInt64},  {{dVariantPack, 1001}, tVoidPtr}, {{dVariantPack, 1003}, tVoidPtr},
      {{dConvolution, 100}, tDataType}, {{dConvolution, 101}, tConvMode}, {{dConvolution, 102}, tInt64},
      {{dConvolution, 103}, tInt64},   {{dConvolution, 104}, tInt64},  {{dConvolution, 105}, tInt64},
      {{dConvolution, 106}, tInt64},   {{dOpConvForward, 700}, tFloat}, {{dOpConvForward, 701}, tFloat},
      {{dOpConvForward, 702}, tDescriptor}, {{dOpConvForward, 703}, tDescriptor}, {{dOpConvForward, 704}, tDescriptor},
      {{dOpConvForward, 705}, tDescriptor},
  };
  return s;
}

size_t elementBytes(int type) {
  switch (type) {
    case tBoolean: return sizeof(bool);
    case tInt64: case tHandle: case tVoidPtr: case tDescriptor: return 8;
    default: return 4;
  }
}

std::mutex mutex;
int executions = 0, refuse = 0;
std::set<Desc*> alive;

template <class T>
T scalar(const Desc* d, int name) {
  T v{};
  std::memcpy(&v, d->attrs.at(name).bytes.data(), sizeof(T));
  return v;
}
template <class T>
std::vector<T> array(const Desc* d, int name) {
  const Attr& a = d->attrs.at(name);
  std::vector<T> v(size_t(a.count));
  std::memcpy(v.data(), a.bytes.data(), v.size() * sizeof(T));
  return v;
}
bool has(const Desc* d, int name) { return d->attrs.contains(name); }
Desc* descriptor(const Desc* d, int name) { return has(d, name) ? scalar<Desc*>(d, name) : nullptr; }
bool finalizedTensor(const Desc* t) { return t && alive.contains(const_cast<Desc*>(t)) && t->type == dTensor && t->finalized; }

// The operands of an operation: (attribute, tensor).
std::vector<Desc*> operandsOf(const Desc* op) {
  std::vector<Desc*> out;
  for (int name : {751, 752, 758, 753, 1520, 1521, 1522, 1610, 1611, 704, 703, 705})
    if (Desc* t = descriptor(op, name)) out.push_back(t);
  return out;
}

int finalizeTensor(Desc* d) {
  for (int name : {901, 902, 903, 906}) if (!has(d, name)) return kBadParam;
  d->dataType = scalar<int>(d, 901);
  d->dims = array<int64_t>(d, 902);
  d->strides = array<int64_t>(d, 903);
  d->uid = scalar<int64_t>(d, 906);
  d->alignment = has(d, 900) ? scalar<int64_t>(d, 900) : 1;
  d->isVirtual = has(d, 907) && scalar<bool>(d, 907);
  d->byValue = has(d, 908) && scalar<bool>(d, 908);
  if (d->dims.empty() || d->dims.size() != d->strides.size() || (d->isVirtual && d->byValue)) return kBadParam;
  for (int64_t x : d->dims) if (x < 1) return kBadParam;
  if (d->dataType != kF32 && d->dataType != kF16 && d->dataType != kBf16 && d->dataType != kI32 && d->dataType != kBool)
    return kNotSupported;
  return kSuccess;
}

// Dims b broadcasts to a: equal, 1, or a divisor (grouped heads).
bool broadcasts(int64_t from, int64_t to) { return from == to || from == 1 || (to % from == 0); }

int finalizeOperation(Desc* d) {
  std::vector<Desc*> operands = operandsOf(d);
  for (Desc* t : operands) if (!finalizedTensor(t)) return kBadParam;
  if (d->type == dOpPointwise) {
    Desc* pw = descriptor(d, 750);
    if (!pw || !pw->finalized || !has(d, 751) || !has(d, 753)) return kBadParam;
    const int mode = scalar<int>(pw, 0);
    const bool binary = mode != pExp && mode != pLog && mode != pGenIndex;
    if (binary != has(d, 752) || (mode == pSelect) != has(d, 758)) return kBadParam;
    if (mode == pGenIndex && !has(pw, 9)) return kBadParam;
    const Desc* y = descriptor(d, 753);
    for (int name : {751, 752, 758})
      if (const Desc* t = descriptor(d, name); t && t->dims.size() != y->dims.size()) return kBadParam;
    if ((mode == pCmpGe || mode == pCmpLt || mode == pAnd) && y->dataType != kBool) return kBadParam;
    if (mode == pSelect && descriptor(d, 758)->dataType != kBool) return kBadParam;
    if (mode == pGenIndex && scalar<int64_t>(pw, 9) >= int64_t(y->dims.size())) return kBadParam;
    return kSuccess;
  }
  if (d->type == dOpMatmul) {
    const Desc *a = descriptor(d, 1520), *b = descriptor(d, 1521), *c = descriptor(d, 1522);
    if (!a || !b || !c || !has(d, 1523)) return kBadParam;
    const size_t r = c->dims.size();
    if (r < 2 || a->dims.size() != r || b->dims.size() != r) return kBadParam;
    if (a->dims[r - 2] != c->dims[r - 2] || b->dims[r - 1] != c->dims[r - 1] || a->dims[r - 1] != b->dims[r - 2])
      return kBadParam;
    for (size_t i = 0; i + 2 < r; ++i)
      if (!broadcasts(a->dims[i], c->dims[i]) || !broadcasts(b->dims[i], c->dims[i])) return kBadParam;
    return kSuccess;
  }
  if (d->type == dOpConvForward) {
    // Y's spatial sizes follow from X's, W's and the descriptor's; groups from X's and W's features.
    const Desc *x = descriptor(d, 704), *w = descriptor(d, 703), *y = descriptor(d, 705), *conv = descriptor(d, 702);
    if (!x || !w || !y || !conv || !conv->finalized || !has(d, 700) || !has(d, 701)) return kBadParam;
    const size_t r = x->dims.size();
    if (r < 4 || w->dims.size() != r || y->dims.size() != r) return kBadParam;
    const std::vector<int64_t> strides = array<int64_t>(conv, 103), dilations = array<int64_t>(conv, 102),
                               pre = array<int64_t>(conv, 105), post = array<int64_t>(conv, 104);
    if (strides.size() != r - 2 || dilations.size() != r - 2 || pre.size() != r - 2 || post.size() != r - 2) return kBadParam;
    if (y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0] || x->dims[1] % w->dims[1] != 0 ||
        w->dims[0] % (x->dims[1] / w->dims[1]) != 0)
      return kBadParam;
    for (size_t i = 0; i + 2 < r; ++i)
      if (y->dims[i + 2] != (x->dims[i + 2] + pre[i] + post[i] - dilations[i] * (w->dims[i + 2] - 1) - 1) / strides[i] + 1)
        return kBadParam;
    return kSuccess;
  }
  if (d->type == dOpReduction) {
    const Desc *x = descriptor(d, 1610), *y = descriptor(d, 1611), *r = descriptor(d, 1612);
    if (!x || !y || !r || !r->finalized || x->dims.size() != y->dims.size()) return kBadParam;
    for (size_t i = 0; i < x->dims.size(); ++i) if (y->dims[i] != 1 && y->dims[i] != x->dims[i]) return kBadParam;
    return kSuccess;
  }
  return kBadParam;
}

// ---- running a graph ----

struct Run {
  std::map<int64_t, const void*> pointers;             // bound tensors
  std::map<const Desc*, std::vector<float>> virtuals;  // dense, row-major over dims
};

int64_t denseIndex(const Desc* t, const std::vector<int64_t>& idx) {
  int64_t i = 0;
  for (size_t d = 0; d < idx.size(); ++d) i = i * t->dims[d] + idx[d];
  return i;
}
int64_t stridedIndex(const Desc* t, const std::vector<int64_t>& idx) {
  int64_t i = 0;
  for (size_t d = 0; d < idx.size(); ++d) i += idx[d] * t->strides[d];
  return i;
}
float rounded(float v, int type) {
  switch (type) {
    case kBf16: return fakegpu::fromBf16(fakegpu::toBf16(v));
    case kF16: return fakegpu::fromF16(fakegpu::toF16(v));
    case kI32: return float(int32_t(v));
    case kBool: return v != 0 ? 1.f : 0.f;
    default: return v;
  }
}
// t's element at `idx` of a tensor of dims `of`, t broadcast to them.
float read(Run& run, const Desc* t, std::vector<int64_t> idx, const std::vector<int64_t>& of) {
  for (size_t d = 0; d < idx.size(); ++d) idx[d] = t->dims[d] == of[d] ? idx[d] : t->dims[d] == 1 ? 0 : idx[d] / (of[d] / t->dims[d]);
  if (t->isVirtual) return run.virtuals[t].at(size_t(denseIndex(t, idx)));
  const void* base = run.pointers.at(t->uid);
  const int64_t i = t->byValue ? 0 : stridedIndex(t, idx);
  switch (t->dataType) {
    case kF32: return static_cast<const float*>(base)[i];
    case kI32: return float(static_cast<const int32_t*>(base)[i]);
    case kBf16: return fakegpu::fromBf16(static_cast<const uint16_t*>(base)[i]);
    case kF16: return fakegpu::fromF16(static_cast<const uint16_t*>(base)[i]);
    default: return static_cast<const bool*>(base)[i] ? 1.f : 0.f;
  }
}
void write(Run& run, const Desc* t, const std::vector<int64_t>& idx, float v) {
  if (t->isVirtual) {
    std::vector<float>& dense = run.virtuals[t];
    if (dense.empty()) {
      int64_t n = 1;
      for (int64_t x : t->dims) n *= x;
      dense.assign(size_t(n), 0.f);
    }
    dense[size_t(denseIndex(t, idx))] = rounded(v, t->dataType);
    return;
  }
  void* base = const_cast<void*>(run.pointers.at(t->uid));
  const int64_t i = stridedIndex(t, idx);
  switch (t->dataType) {
    case kF32: static_cast<float*>(base)[i] = v; break;
    case kI32: static_cast<int32_t*>(base)[i] = int32_t(v); break;
    case kBf16: static_cast<uint16_t*>(base)[i] = fakegpu::toBf16(v); break;
    case kF16: static_cast<uint16_t*>(base)[i] = fakegpu::toF16(v); break;
    default: static_cast<bool*>(base)[i] = v != 0;
  }
}
void forEachIndex(const std::vector<int64_t>& dims, const std::function<void(const std::vector<int64_t>&)>& f) {
  int64_t n = 1;
  for (int64_t x : dims) n *= x;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat;
    for (size_t d = dims.size(); d-- > 0;) idx[d] = rest % dims[d], rest /= dims[d];
    f(idx);
  }
}

void runOperation(Run& run, const Desc* op) {
  if (op->type == dOpPointwise) {
    const int mode = scalar<int>(descriptor(op, 750), 0);
    const Desc *x = descriptor(op, 751), *b = descriptor(op, 752), *t = descriptor(op, 758), *y = descriptor(op, 753);
    const int64_t axis = mode == pGenIndex ? scalar<int64_t>(descriptor(op, 750), 9) : 0;
    forEachIndex(y->dims, [&](const std::vector<int64_t>& i) {
      const float xv = mode == pGenIndex ? 0 : read(run, x, i, y->dims);
      const float bv = b ? read(run, b, i, y->dims) : 0, tv = t ? read(run, t, i, y->dims) : 0;
      float r = 0;
      switch (mode) {
        case pAdd: r = xv + bv; break;
        case pMul: r = xv * bv; break;
        case pSub: r = xv - bv; break;
        case pDiv: r = xv / bv; break;
        case pExp: r = std::exp(xv); break;
        case pLog: r = std::log(xv); break;
        case pCmpGe: r = xv >= bv; break;
        case pCmpLt: r = xv < bv; break;
        case pAnd: r = xv != 0 && bv != 0; break;
        case pGenIndex: r = float(i[size_t(axis)]); break;
        case pSelect: r = tv != 0 ? xv : bv; break;
      }
      write(run, y, i, r);
    });
  } else if (op->type == dOpMatmul) {
    const Desc *a = descriptor(op, 1520), *b = descriptor(op, 1521), *c = descriptor(op, 1522);
    const size_t r = c->dims.size();
    const int64_t k = a->dims[r - 1];
    forEachIndex(c->dims, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> ai = i, bi = i, aOf = c->dims, bOf = c->dims;
      aOf[r - 1] = k, bOf[r - 2] = k;
      float sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        ai[r - 1] = p, bi[r - 2] = p;
        sum += read(run, a, ai, aOf) * read(run, b, bi, bOf);
      }
      write(run, c, i, sum);
    });
  } else if (op->type == dOpConvForward) {
    const Desc *x = descriptor(op, 704), *w = descriptor(op, 703), *y = descriptor(op, 705), *conv = descriptor(op, 702);
    const std::vector<int64_t> strides = array<int64_t>(conv, 103), dilations = array<int64_t>(conv, 102),
                               pre = array<int64_t>(conv, 105);
    const float beta = scalar<float>(op, 701);
    const size_t ns = x->dims.size() - 2;
    const int64_t perGroup = w->dims[1], outPerGroup = w->dims[0] / (x->dims[1] / perGroup);
    forEachIndex(y->dims, [&](const std::vector<int64_t>& yi) {
      float sum = 0;
      std::vector<int64_t> window(w->dims.begin() + 2, w->dims.end());
      window.insert(window.begin(), perGroup);
      forEachIndex(window, [&](const std::vector<int64_t>& t) {  // (input feature in the group, taps...)
        std::vector<int64_t> xi = {yi[0], yi[1] / outPerGroup * perGroup + t[0]}, wi = {yi[1], t[0]};
        for (size_t i = 0; i < ns; ++i) {
          const int64_t at = yi[2 + i] * strides[i] + t[1 + i] * dilations[i] - pre[i];
          if (at < 0 || at >= x->dims[2 + i]) return;
          xi.push_back(at), wi.push_back(t[1 + i]);
        }
        sum += read(run, x, xi, x->dims) * read(run, w, wi, w->dims);
      });
      write(run, y, yi, sum + (beta != 0 ? beta * read(run, y, yi, y->dims) : 0.f));
    });
  } else {
    const Desc *x = descriptor(op, 1610), *y = descriptor(op, 1611);
    const bool max = scalar<int>(descriptor(op, 1612), 1600) == 3;
    std::map<int64_t, float> acc;
    forEachIndex(x->dims, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> yi = i;
      for (size_t d = 0; d < yi.size(); ++d) if (y->dims[d] == 1) yi[d] = 0;
      const int64_t at = denseIndex(y, yi);
      const float v = read(run, x, i, x->dims);
      auto [it, fresh] = acc.try_emplace(at, max ? -std::numeric_limits<float>::infinity() : 0.f);
      it->second = max ? std::max(it->second, v) : it->second + v;
    });
    forEachIndex(y->dims, [&](const std::vector<int64_t>& i) { write(run, y, i, acc[denseIndex(y, i)]); });
  }
}

}  // namespace

extern "C" {

// Test hooks (dlsym'ed by tests/fake_cuda_test.cpp): graphs executed so far; while `refuse` is
// set, the heuristics find no engine.
int radixFakeCudnnExecutions() {
  std::lock_guard<std::mutex> lock(mutex);
  return executions;
}
void radixFakeCudnnRefuse(int on) { refuse = on; }

int cudnnCreate(void** handle) {
  static int h;
  *handle = &h;
  return kSuccess;
}
int cudnnSetStream(void* handle, void*) { return handle ? kSuccess : kBadParam; }

int cudnnBackendCreateDescriptor(int type, void** out) {
  if (!out) return kBadParam;
  auto* d = new Desc{type};
  std::lock_guard<std::mutex> lock(mutex);
  alive.insert(d);
  *out = d;
  return kSuccess;
}
int cudnnBackendDestroyDescriptor(void* p) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!alive.erase(static_cast<Desc*>(p))) return kBadParam;
  delete static_cast<Desc*>(p);
  return kSuccess;
}
int cudnnBackendSetAttribute(void* p, int name, int type, int64_t count, const void* values) {
  std::lock_guard<std::mutex> lock(mutex);
  auto* d = static_cast<Desc*>(p);
  if (!alive.contains(d) || d->finalized || count < 1 || !values) return kBadParam;
  auto it = schema().find({d->type, name});
  if (it == schema().end() || it->second != type) return kBadParam;
  Attr& a = d->attrs[name];
  a.type = type, a.count = count;
  const auto* bytes = static_cast<const unsigned char*>(values);
  a.bytes.assign(bytes, bytes + count * int64_t(elementBytes(type)));
  return kSuccess;
}

int cudnnBackendFinalize(void* p) {
  std::lock_guard<std::mutex> lock(mutex);
  auto* d = static_cast<Desc*>(p);
  if (!alive.contains(d) || d->finalized) return kBadParam;
  int status = kSuccess;
  switch (d->type) {
    case dTensor: status = finalizeTensor(d); break;
    case dPointwise: status = has(d, 0) && has(d, 1) ? kSuccess : kBadParam; break;
    case dMatmul: status = has(d, 1500) ? kSuccess : kBadParam; break;
    case dConvolution:
      for (int name : {100, 101, 102, 103, 104, 105, 106}) if (!has(d, name)) status = kBadParam;
      break;
    case dReduction: status = has(d, 1600) && has(d, 1601) ? kSuccess : kBadParam; break;
    case dOpPointwise: case dOpMatmul: case dOpReduction: case dOpConvForward: status = finalizeOperation(d); break;
    case dOpGraph: {
      if (!has(d, 801) || !has(d, 800)) return kBadParam;
      std::map<int64_t, const Desc*> byUid;
      for (Desc* op : array<Desc*>(d, 801)) {
        if (!alive.contains(op) || !op->finalized) return kBadParam;
        for (Desc* t : operandsOf(op)) {
          auto [it, fresh] = byUid.try_emplace(t->uid, t);
          if (!fresh && it->second != t) return kBadParam;  // one id, two tensors
        }
        d->ops.push_back(op);
      }
      break;
    }
    case dEngineHeur: status = has(d, 200) && has(d, 201) && descriptor(d, 201)->finalized ? kSuccess : kBadParam; break;
    case dPlan: {
      Desc* cfg = descriptor(d, 401);
      if (!cfg || !cfg->graph) return kBadParam;
      d->graph = cfg->graph;
      break;
    }
    case dVariantPack:
      status = has(d, 1000) && has(d, 1001) && has(d, 1003) && d->attrs[1000].count == d->attrs[1001].count ? kSuccess
                                                                                                             : kBadParam;
      break;
    case dEngineConfig: status = d->graph ? kSuccess : kBadParam; break;
    default: status = kNotSupported;
  }
  if (status == kSuccess) d->finalized = true;
  return status;
}

int cudnnBackendGetAttribute(void* p, int name, int type, int64_t requested, int64_t* count, void* out) {
  std::lock_guard<std::mutex> lock(mutex);
  auto* d = static_cast<Desc*>(p);
  if (!alive.contains(d) || !d->finalized) return kBadParam;
  if (d->type == dEngineHeur && name == 202 && type == tDescriptor) {
    const int64_t available = refuse ? 0 : 1;
    if (count) *count = std::min(requested, available);
    if (requested == 0) {
      if (count) *count = available;
      return kSuccess;
    }
    for (int64_t i = 0; i < std::min(requested, available); ++i) {
      Desc* cfg = static_cast<Desc**>(out)[i];
      if (!alive.contains(cfg) || cfg->type != dEngineConfig) return kBadParam;
      cfg->graph = descriptor(d, 201);
      cfg->finalized = true;
    }
    return kSuccess;
  }
  if (d->type == dPlan && name == 402 && type == tInt64 && requested >= 1) {
    *static_cast<int64_t*>(out) = 4096;
    if (count) *count = 1;
    return kSuccess;
  }
  return kBadParam;
}

int cudnnBackendExecute(void* handle, void* plan, void* pack) {
  std::lock_guard<std::mutex> lock(mutex);
  auto* p = static_cast<Desc*>(plan);
  auto* v = static_cast<Desc*>(pack);
  if (!handle) return kNotInitialized;
  if (!alive.contains(p) || !alive.contains(v) || !p->finalized || !v->finalized || !p->graph) return kBadParam;
  if (!scalar<void*>(v, 1003)) return kBadParam;  // the plan asked for a workspace
  Run run;
  const std::vector<int64_t> ids = array<int64_t>(v, 1000);
  const std::vector<void*> pointers = array<void*>(v, 1001);
  for (size_t i = 0; i < ids.size(); ++i) run.pointers[ids[i]] = pointers[i];
  for (const Desc* op : p->graph->ops)
    for (const Desc* t : operandsOf(op)) {
      if (t->isVirtual) continue;
      auto it = run.pointers.find(t->uid);
      if (it == run.pointers.end() || !it->second) return kBadParam;
      if (!t->byValue && reinterpret_cast<uintptr_t>(it->second) % uintptr_t(t->alignment) != 0) return kBadParam;
    }
  for (const Desc* op : p->graph->ops) runOperation(run, op);
  ++executions;
  return kSuccess;
}

}  // extern "C"
