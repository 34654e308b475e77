// radix_cuda_attention and radix_cuda_conv: nn::sdpa's calls and convolutions in compiled GPU code
// (compiler/gpu.cpp) through cuDNN's graph API, loaded at run time like the driver (dlopen;
// $RADIX_LIBCUDNN, else libcudnn.so.9). Attention is the graph cudnn-frontend builds for SDPA on
// cuDNN 9 (matmul, scale, masks, softmax with its statistics, matmul); its masks read the call's
// own device buffers (the query offset, the key lengths), so no kernel of ours runs before it.
// A convolution is one CONVOLUTION_FORWARD operation. Each answers 1 when cuDNN cannot take a call
// (no library or handle, types or options it lacks, no engine for the graph): the generated code
// then runs. CUDA failures are kept per thread (cuda.h's recordError).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/kernels/attention.h"
#include "compiler/kernels/conv.h"
#include "runtime/cuda.h"
#include "runtime/cudnn.h"

namespace radix::detail::cuda {

namespace {

constexpr int kSuccess = 0;
constexpr uint64_t kInitialWorkspace = 8u << 20;

}  // namespace

const Dnn& dnn() {
  static const Dnn loaded = [] {
    Dnn out;
    std::string why;
    void* lib = openLibrary("RADIX_LIBCUDNN", {"libcudnn.so.9"}, why);
    if (!lib) {
      out.problem = "cuDNN cannot be loaded (" + why + ")";
      return out;
    }
    out.problem = bindDnn(lib, out);
    return out;
  }();
  return loaded;
}

std::string bindDnn(void* lib, Dnn& out) {
  std::string missing;
  bind(lib, "cudnnCreate", out.create, missing);
  bind(lib, "cudnnSetStream", out.setStream, missing);
  bind(lib, "cudnnBackendCreateDescriptor", out.createDescriptor, missing);
  bind(lib, "cudnnBackendSetAttribute", out.setAttribute, missing);
  bind(lib, "cudnnBackendGetAttribute", out.getAttribute, missing);
  bind(lib, "cudnnBackendFinalize", out.finalize, missing);
  bind(lib, "cudnnBackendExecute", out.execute, missing);
  bind(lib, "cudnnBackendDestroyDescriptor", out.destroyDescriptor, missing);
  return missing.empty() ? "" : "cuDNN lacks " + missing;
}

DnnGraph::~DnnGraph() {
  // Descriptors outlive a thread's or the process's end only as leaks: the library may be gone.
  if (!keep_)
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) dnn_.destroyDescriptor(*it);
}

void* DnnGraph::create(int type) {
  void* d = nullptr;
  if (!ok() || dnn_.createDescriptor(type, &d) != kSuccess) {
    fail("cudnnBackendCreateDescriptor(" + std::to_string(type) + ")");
    return nullptr;
  }
  owned_.push_back(d);
  return d;
}

void DnnGraph::set(void* d, int attribute, int type, int64_t count, const void* values) {
  if (!ok()) return;
  if (const int s = dnn_.setAttribute(d, attribute, type, count, values); s != kSuccess)
    fail("cudnnBackendSetAttribute(" + std::to_string(attribute) + "): status " + std::to_string(s));
}

void DnnGraph::setTensor(void* d, int attribute, int64_t uid) {
  set(d, attribute, kTypeBackendDescriptor, 1, &tensors_.at(size_t(uid - 1)));
}

void DnnGraph::finalize(void* d, const char* what) {
  if (!ok()) return;
  if (const int s = dnn_.finalize(d); s != kSuccess) fail(std::string("finalizing ") + what + ": status " + std::to_string(s));
}

void DnnGraph::fail(const std::string& what) {
  if (error_.empty()) error_ = what;
}

int64_t DnnGraph::tensor(int dataType, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, Kind kind) {
  void* t = create(kTensor);
  const int64_t uid = static_cast<int64_t>(tensors_.size()) + 1, alignment = 16;
  const bool yes = true;
  set(t, kTensorDataType, kTypeDataType, 1, &dataType);
  set(t, kTensorDimensions, kTypeInt64, int64_t(dims.size()), dims.data());
  set(t, kTensorStrides, kTypeInt64, int64_t(strides.size()), strides.data());
  set(t, kTensorUniqueId, kTypeInt64, 1, &uid);
  set(t, kTensorByteAlignment, kTypeInt64, 1, &alignment);
  if (kind == Kind::virtualTensor) set(t, kTensorIsVirtual, kTypeBoolean, 1, &yes);
  if (kind == Kind::byValue) set(t, kTensorIsByValue, kTypeBoolean, 1, &yes);
  finalize(t, "a tensor");
  tensors_.push_back(t);
  if (kind != Kind::virtualTensor) bound_.push_back(uid);
  return uid;
}

void DnnGraph::pointwise(int mode, int precision, int64_t x, int64_t b, int64_t t, int64_t y, int64_t axis) {
  void* pw = create(kPointwise);
  set(pw, kPointwiseMode, kTypePointwiseMode, 1, &mode);
  set(pw, kPointwiseMathPrec, kTypeDataType, 1, &precision);
  if (axis >= 0) set(pw, kPointwiseAxis, kTypeInt64, 1, &axis);
  finalize(pw, "a pointwise descriptor");
  void* op = create(kOperationPointwise);
  const float one = 1;
  set(op, kOpPointwiseDescriptor, kTypeBackendDescriptor, 1, &pw);
  setTensor(op, kOpPointwiseX, x);
  if (b) setTensor(op, kOpPointwiseB, b);
  if (t) setTensor(op, kOpPointwiseT, t);
  setTensor(op, kOpPointwiseY, y);
  set(op, kOpPointwiseAlpha1, kTypeFloat, 1, &one);
  set(op, kOpPointwiseAlpha2, kTypeFloat, 1, &one);
  finalize(op, "a pointwise operation");
  ops_.push_back(op);
}

void DnnGraph::matmul(int64_t a, int64_t b, int64_t c) {
  void* mm = create(kMatmul);
  const int f32 = kFloat;
  set(mm, kMatmulCompType, kTypeDataType, 1, &f32);
  finalize(mm, "a matmul descriptor");
  void* op = create(kOperationMatmul);
  setTensor(op, kOpMatmulA, a);
  setTensor(op, kOpMatmulB, b);
  setTensor(op, kOpMatmulC, c);
  set(op, kOpMatmulDesc, kTypeBackendDescriptor, 1, &mm);
  finalize(op, "a matmul operation");
  ops_.push_back(op);
}

void DnnGraph::reduction(int reduceOp, int64_t x, int64_t y) {
  void* r = create(kReduction);
  const int f32 = kFloat;
  set(r, kReductionOperator, kTypeReductionOperator, 1, &reduceOp);
  set(r, kReductionCompType, kTypeDataType, 1, &f32);
  finalize(r, "a reduction descriptor");
  void* op = create(kOperationReduction);
  set(op, kOpReductionDesc, kTypeBackendDescriptor, 1, &r);
  setTensor(op, kOpReductionX, x);
  setTensor(op, kOpReductionY, y);
  finalize(op, "a reduction operation");
  ops_.push_back(op);
}

void DnnGraph::convolution(int64_t x, int64_t w, int64_t y, const ConvWindow& window, float beta) {
  void* conv = create(kConvolution);
  const int f32 = kFloat, mode = kCrossCorrelation;
  const int64_t spatial = int64_t(window.strides.size());
  set(conv, kConvCompType, kTypeDataType, 1, &f32);
  set(conv, kConvMode, kTypeConvolutionMode, 1, &mode);
  set(conv, kConvSpatialDims, kTypeInt64, 1, &spatial);
  set(conv, kConvPrePaddings, kTypeInt64, spatial, window.before.data());
  set(conv, kConvPostPaddings, kTypeInt64, spatial, window.after.data());
  set(conv, kConvDilations, kTypeInt64, spatial, window.dilations.data());
  set(conv, kConvFilterStrides, kTypeInt64, spatial, window.strides.data());
  finalize(conv, "a convolution descriptor");
  void* op = create(kOperationConvForward);
  const float alpha = 1;
  setTensor(op, kOpConvX, x);
  setTensor(op, kOpConvW, w);
  setTensor(op, kOpConvY, y);
  set(op, kOpConvDesc, kTypeBackendDescriptor, 1, &conv);
  set(op, kOpConvAlpha, kTypeFloat, 1, &alpha);
  set(op, kOpConvBeta, kTypeFloat, 1, &beta);
  finalize(op, "a convolution operation");
  ops_.push_back(op);
}

bool DnnGraph::plan(void* handle) {
  void* graph = create(kOperationGraph);
  set(graph, kOperationGraphHandle, kTypeHandle, 1, &handle);
  set(graph, kOperationGraphOps, kTypeBackendDescriptor, int64_t(ops_.size()), ops_.data());
  finalize(graph, "the operation graph");
  // Heuristic A's configurations, best first, then the fallback list's; the first plan that
  // finalizes is kept.
  for (const int mode : {kHeurModeA, kHeurModeFallback}) {
    void* heur = create(kEngineHeur);
    set(heur, kEngineHeurGraph, kTypeBackendDescriptor, 1, &graph);
    set(heur, kEngineHeurMode, kTypeHeurMode, 1, &mode);
    finalize(heur, "the engine heuristics");
    int64_t count = 0;
    if (!ok() || dnn_.getAttribute(heur, kEngineHeurResults, kTypeBackendDescriptor, 0, &count, nullptr) != kSuccess)
      continue;
    std::vector<void*> configs;
    for (int64_t i = 0; i < count; ++i) configs.push_back(create(kEngineConfig));
    int64_t returned = 0;
    if (!ok() || dnn_.getAttribute(heur, kEngineHeurResults, kTypeBackendDescriptor, count, &returned, configs.data()) !=
                     kSuccess)
      continue;
    for (int64_t i = 0; i < returned && ok(); ++i) {
      void* p = create(kExecutionPlan);
      set(p, kPlanHandle, kTypeHandle, 1, &handle);
      set(p, kPlanEngineConfig, kTypeBackendDescriptor, 1, &configs[size_t(i)]);
      if (!ok() || dnn_.finalize(p) != kSuccess) continue;
      int64_t bytes = 0, n = 0;
      if (dnn_.getAttribute(p, kPlanWorkspaceSize, kTypeInt64, 1, &n, &bytes) != kSuccess) continue;
      plan_ = p;
      workspace_ = bytes;
      return true;
    }
  }
  fail("no cuDNN engine takes the graph");  // kept only when nothing failed before
  return false;
}

bool DnnGraph::run(void* handle, const std::vector<const void*>& pointers, void* workspace) {
  void* pack = nullptr;
  if (dnn_.createDescriptor(kVariantPack, &pack) != kSuccess) return false;
  bool done = dnn_.setAttribute(pack, kVariantPackWorkspace, kTypeVoidPtr, 1, &workspace) == kSuccess &&
              dnn_.setAttribute(pack, kVariantPackPointers, kTypeVoidPtr, int64_t(pointers.size()), pointers.data()) ==
                  kSuccess &&
              dnn_.setAttribute(pack, kVariantPackIds, kTypeInt64, int64_t(bound_.size()), bound_.data()) == kSuccess &&
              dnn_.finalize(pack) == kSuccess;
  int status = 0;
  if (done) status = dnn_.execute(handle, plan_, pack);
  dnn_.destroyDescriptor(pack);
  if (done && status != kSuccess) recordError("cudnnBackendExecute: status " + std::to_string(status));
  return done;
}

std::optional<AttentionShape> attentionShape(const int64_t* args) {
  using namespace kernels;
  AttentionShape s;
  // cuDNN's flash attention: bf16 queries, keys and values, a head dim of 8k up to 256; no
  // sliding window or soft cap (the frontend builds those with ops its fused engine lacks).
  if (args[kAttnDtype] != 2 || args[kAttnKvDtype] != int64_t(Elem::bf16) || args[kAttnWindow] != 0 ||
      args[kAttnSoftcap] != 0)
    return std::nullopt;
  s.hq = args[kAttnHq], s.hk = args[kAttnHk], s.nq = args[kAttnNq], s.nk = args[kAttnNk], s.hd = args[kAttnHd];
  if (s.hd % 8 != 0 || s.hd > 256 || s.hk < 1 || s.hq % s.hk != 0) return std::nullopt;
  // The two batch axes as one.
  const int64_t b0 = args[kAttnBatch], b1 = args[kAttnBatch + 1];
  s.batch = b0 * b1;
  auto merged = [&](int first) -> std::optional<int64_t> {
    const int64_t s0 = args[first], s1 = args[first + 1];
    if (b1 == 1) return s0;
    if (b0 == 1 || s0 == b1 * s1) return s1;
    return std::nullopt;
  };
  const int firsts[4] = {kAttnQStrides, kAttnKStrides, kAttnVStrides, kAttnOutStrides};
  for (int i = 0; i < 4; ++i) {
    auto b = merged(firsts[i]);
    if (!b) return std::nullopt;
    s.strides[i] = {*b, args[firsts[i] + 2], args[firsts[i] + 3]};
  }
  s.causal = args[kAttnCausal] != 0;
  s.offset = args[kAttnOffset] != 0;
  s.lengths = args[kAttnLengths] != 0;
  if (s.lengths) {
    auto b = merged(kAttnLengthStrides);
    if (!b) return std::nullopt;
    s.lengthStride = *b;
  }
  double scale;
  std::memcpy(&scale, &args[kAttnScale], 8);
  s.scale = static_cast<float>(scale);
  return s;
}

void buildAttention(DnnGraph& g, const AttentionShape& s) {
  const int64_t b = s.batch;
  auto strides4 = [&](int i) { return std::vector<int64_t>{s.strides[i][0], s.strides[i][1], s.strides[i][2], 1}; };
  const std::vector<int64_t> one4 = {1, 1, 1, 1};
  const int64_t q = g.tensor(kBfloat16, {b, s.hq, s.nq, s.hd}, strides4(0));
  // Kᵀ: K's dims and strides with the last two swapped. Grouped heads (GQA) are K and V with
  // fewer heads than Q: cuDNN broadcasts them.
  const int64_t kT = g.tensor(kBfloat16, {b, s.hk, s.hd, s.nk}, {s.strides[1][0], s.strides[1][1], 1, s.strides[1][2]});
  const int64_t v = g.tensor(kBfloat16, {b, s.hk, s.nk, s.hd}, strides4(2));
  const int64_t o = g.tensor(kBfloat16, {b, s.hq, s.nq, s.hd}, strides4(3));
  const int64_t scale = g.tensor(kFloat, one4, one4, DnnGraph::Kind::byValue);
  const int64_t offset = s.offset ? g.tensor(kInt32, one4, one4) : 0;
  const int64_t lengths = s.lengths ? g.tensor(kInt32, {b, 1, 1, 1}, {s.lengthStride, 1, 1, 1}) : 0;
  // Without a runtime offset, query i sits at nk - nq + i (the last keys are the queries').
  const int64_t fixedOffset = s.causal && !s.offset ? g.tensor(kInt32, one4, one4, DnnGraph::Kind::byValue) : 0;
  const std::vector<int64_t> dims = {b, s.hq, s.nq, s.nk}, rows = {b, s.hq, s.nq, 1};
  const std::vector<int64_t> dense = {s.hq * s.nq * s.nk, s.nq * s.nk, s.nk, 1}, rowStrides = {s.hq * s.nq, s.nq, 1, 1};
  auto scores = [&](int type = kFloat) { return g.tensor(type, dims, dense, DnnGraph::Kind::virtualTensor); };
  auto perRow = [&] { return g.tensor(kFloat, rows, rowStrides, DnnGraph::Kind::virtualTensor); };
  const int64_t product = scores();
  g.matmul(q, kT, product);
  int64_t p = scores();
  g.pointwise(kMul, kFloat, product, scale, 0, p);
  // Masks: key j is seen by query i when j <= i + offset (causal) and j < lengths[b].
  // Each mask fills with -inf of its own (a by-value scalar each, as the frontend's).
  auto select = [&](int64_t keep) {
    const int64_t negInf = g.tensor(kFloat, one4, one4, DnnGraph::Kind::byValue);
    const int64_t next = scores();
    g.pointwise(kBinarySelect, kFloat, p, negInf, keep, next);
    p = next;
  };
  if (s.causal) {
    const int64_t row = scores(kInt32), col = scores(kInt32), shifted = scores(kInt32), keep = scores(kBoolean);
    g.pointwise(kGenIndex, kFloat, p, 0, 0, row, 2);
    g.pointwise(kGenIndex, kFloat, p, 0, 0, col, 3);
    g.pointwise(kAdd, kInt32, row, s.offset ? offset : fixedOffset, 0, shifted);
    g.pointwise(kCmpGe, kBoolean, shifted, col, 0, keep);
    select(keep);
  }
  if (s.lengths) {
    const int64_t col = scores(kInt32), keep = scores(kBoolean);
    g.pointwise(kGenIndex, kInt32, p, 0, 0, col, 3);
    g.pointwise(kCmpLt, kBoolean, col, lengths, 0, keep);
    select(keep);
  }
  // Softmax with its statistics (virtual: inference), as cudnn-frontend builds it; the division
  // writes bf16, the second matmul's operand type.
  const int64_t max = perRow(), shiftedScores = scores(), e = scores(), sum = perRow(), logSum = perRow(),
                stats = perRow(), probs = scores(kBfloat16);
  g.reduction(kReduceMax, p, max);
  g.pointwise(kSub, kFloat, p, max, 0, shiftedScores);
  g.pointwise(kExp, kFloat, shiftedScores, 0, 0, e);
  g.reduction(kReduceAdd, e, sum);
  g.pointwise(kLog, kFloat, sum, 0, 0, logSum);
  g.pointwise(kAdd, kFloat, max, logSum, 0, stats);
  g.pointwise(kDiv, kFloat, e, sum, 0, probs);
  g.matmul(probs, v, o);
}

void buildConvolution(DnnGraph& g, const int64_t* words) {
  using namespace kernels;
  const int64_t ns = words[kCudaConvSpatial], groups = words[kCudaConvGroups];
  const int64_t* axes = words + kCudaConvAxes;
  const int64_t* strides = axes + kCudaConvAxisWords * ns;  // x's 2 + ns, then w's, then y's
  const bool lifted = ns == 1;
  std::vector<int64_t> xd = {words[kCudaConvN], words[kCudaConvC]}, wd = {words[kCudaConvK], words[kCudaConvC] / groups},
                       yd = {words[kCudaConvN], words[kCudaConvK]}, xs(strides, strides + 2),
                       ws(strides + 2 + ns, strides + 4 + ns), ys(strides + 4 + 2 * ns, strides + 6 + 2 * ns),
                       convStrides, dilations, before, after;
  if (lifted) {
    xd.push_back(1), wd.push_back(1), yd.push_back(1), convStrides.push_back(1), dilations.push_back(1);
    before.push_back(0), after.push_back(0);
    xs.push_back(xs[1]), ws.push_back(ws[1]), ys.push_back(ys[1]);
  }
  for (int64_t i = 0; i < ns; ++i) {
    const int64_t* a = axes + kCudaConvAxisWords * i;
    xd.push_back(a[0]), wd.push_back(a[1]), yd.push_back(a[2]), convStrides.push_back(a[3]), dilations.push_back(a[4]);
    before.push_back(a[5]), after.push_back(a[6]);
    xs.push_back(strides[2 + i]), ws.push_back(strides[4 + ns + i]), ys.push_back(strides[6 + 2 * ns + i]);
  }
  const int type = words[kCudaConvType] == int64_t(Elem::bf16) ? kBfloat16 : words[kCudaConvType] == int64_t(Elem::f16) ? kHalf : kFloat;
  const int64_t x = g.tensor(type, xd, xs), w = g.tensor(type, wd, ws), y = g.tensor(kFloat, yd, ys);
  g.convolution(x, w, y, {convStrides, dilations, before, after}, words[kCudaConvAccumulate] ? 1.f : 0.f);
}

std::vector<const void*> attentionPointers(const int64_t* args, const AttentionShape& s, const float* scale,
                                           const float* negInf, const int32_t* fixedOffset) {
  using namespace kernels;
  auto at = [&](int slot, int64_t bytes) {
    return reinterpret_cast<const void*>(args[slot] + args[slot + 1] * bytes);
  };
  std::vector<const void*> out = {at(kAttnQ, 2), at(kAttnK, 2), at(kAttnV, 2), at(kAttnOut, 2), scale};
  if (s.offset) out.push_back(at(kAttnOffset, 4));
  if (s.lengths) out.push_back(at(kAttnLengths, 4));
  if (s.causal && !s.offset) out.push_back(fixedOffset);
  for (int masks = int(s.causal) + int(s.lengths); masks > 0; --masks) out.push_back(negInf);
  return out;
}

namespace {

// Per thread (cuda.h's perThread): the handle, a workspace, and each problem's graph and plan
// (or nullptr where cuDNN has none).
struct DnnThread {
  bool tried = false;
  void* handle = nullptr;
  DevicePtr workspace = 0;
  uint64_t workspaceBytes = 0;
  std::map<std::vector<int64_t>, std::unique_ptr<DnnGraph>> graphs;
};

// A workspace of at least `bytes` (grown, never shrunk); false when it cannot be allocated.
bool reserveWorkspace(DnnThread& t, int64_t bytes) {
  if (uint64_t(bytes) <= t.workspaceBytes) return true;
  const uint64_t size = std::max<uint64_t>(uint64_t(bytes), kInitialWorkspace);
  DevicePtr p = 0;
  if (driver().memAlloc(&p, size) != 0) return false;
  if (t.workspace) driver().memFree(t.workspace);
  t.workspace = p, t.workspaceBytes = size;
  return true;
}

// Runs problem `key`'s graph (built by `build` and planned on this thread's first call of it) on
// the call's stream with `pointers` bound: radix_cuda_*'s answer, 0 when done (a failed execution
// is a recorded CUDA failure), 1 when cuDNN cannot (no library, handle, engine or workspace).
template <class Build>
int32_t runGraph(const std::vector<int64_t>& key, const Build& build, const std::vector<const void*>& pointers) {
  if (!dnn().problem.empty() || !driver().problem.empty()) return 1;
  DnnThread& t = perThread<DnnThread>();
  if (!t.tried) {
    t.tried = true;
    if (dnn().create(&t.handle) != 0) t.handle = nullptr;
  }
  if (!t.handle) return 1;
  auto [it, fresh] = t.graphs.try_emplace(key);
  if (fresh) {
    auto g = std::make_unique<DnnGraph>(dnn());
    build(*g);
    if (g->ok() && g->plan(t.handle)) {
      g->keepAtExit();
      it->second = std::move(g);
    }
  }
  DnnGraph* g = it->second.get();
  if (!g || !reserveWorkspace(t, g->workspaceBytes()) || dnn().setStream(t.handle, callStream()) != 0) return 1;
  return g->run(t.handle, pointers, reinterpret_cast<void*>(t.workspace)) ? 0 : 1;
}

}  // namespace

}  // namespace radix::detail::cuda

using namespace radix::detail::cuda;

extern "C" {

/// out = softmax(mask(scale · q·kᵀ))·v through cuDNN for an int64 array in radix_kernel_attention's
/// layout (compiler/kernels/attention.h) whose buffers are device memory. Returns 0 when done (or a
/// CUDA failure was recorded), 1 when the caller must run the composition instead.
int32_t radix_cuda_attention(int64_t argsAddress) {
  if (hasError()) return 0;
  const auto* args = reinterpret_cast<const int64_t*>(argsAddress);
  const std::optional<AttentionShape> shape = attentionShape(args);
  if (!shape) return 1;
  const float scale = shape->scale, negInf = -std::numeric_limits<float>::infinity();
  const int32_t fixedOffset = static_cast<int32_t>(shape->nk - shape->nq);
  const std::vector<const void*> pointers = attentionPointers(args, *shape, &scale, &negInf, &fixedOffset);
  for (int t = 0; t < 4; ++t)  // q, k, v, out: the tensors' declared alignment
    if (reinterpret_cast<uintptr_t>(pointers[size_t(t)]) % 16 != 0) return 1;
  std::vector<int64_t> key(args, args + radix::kernels::kAttnArgCount);
  for (int slot : {radix::kernels::kAttnQ, radix::kernels::kAttnK, radix::kernels::kAttnV, radix::kernels::kAttnOut,
                   radix::kernels::kAttnOffset, radix::kernels::kAttnLengths})
    key[size_t(slot)] = key[size_t(slot)] != 0, key[size_t(slot) + 1] = 0;  // present or not; addresses vary
  key.insert(key.begin(), 0);
  return runGraph(key, [&](DnnGraph& graph) { buildAttention(graph, *shape); }, pointers);
}

/// y (+)= conv(x, w) through cuDNN on device memory: base + element offset of each, and the
/// address of a kCudaConv* descriptor (compiler/kernels/conv.h). Returns 0 when done (or a CUDA
/// failure was recorded), 1 when the caller must run its own kernels instead.
int32_t radix_cuda_conv(int64_t xBase, int64_t xOffset, int64_t wBase, int64_t wOffset, int64_t yBase, int64_t yOffset,
                        int64_t descAddress) {
  using namespace radix::kernels;
  if (hasError()) return 0;
  const auto* words = reinterpret_cast<const int64_t*>(descAddress);
  const int64_t elem = words[kCudaConvType] == int64_t(Elem::f32) ? 4 : 2;
  const uint64_t x = uint64_t(xBase + xOffset * elem), w = uint64_t(wBase + wOffset * elem), y = uint64_t(yBase + yOffset * 4);
  if (x % 16 || w % 16 || y % 16) return 1;  // the tensors' declared alignment
  const int64_t ns = words[kCudaConvSpatial];
  std::vector<int64_t> key(words, words + kCudaConvAxes + kCudaConvAxisWords * ns + 3 * (2 + ns));
  key.insert(key.begin(), 1);  // convolutions apart from attention arrays
  return runGraph(key, [&](DnnGraph& graph) { buildConvolution(graph, words); },
                  {reinterpret_cast<const void*>(x), reinterpret_cast<const void*>(w), reinterpret_cast<const void*>(y)});
}

}  // extern "C"
