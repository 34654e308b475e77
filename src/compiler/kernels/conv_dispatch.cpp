// radix_kernel_conv: decodes the descriptor compiled code passes, plans the call (plain GEMM for
// 1x1 kernels, the direct kernel for depthwise, else the tabled GEMM with its offset tables),
// lowers the ISA to what this CPU runs, picks the thread count and counts the call.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/conv.h"
#include "compiler/kernels/half.h"
#include "compiler/kernels/packed.h"

namespace radix::kernels {

namespace {
std::atomic<uint64_t> convCounters[kConvPathCount];
std::atomic<uint64_t> amxCalls;
}

uint64_t convCallCount(ConvPath path) { return convCounters[static_cast<int>(path)].load(std::memory_order_relaxed); }
uint64_t convAmxCallCount() { return amxCalls.load(std::memory_order_relaxed); }

const void* xPackedCached(const ConvGemmPlan& g, int32_t layout, size_t bytes, const std::function<void(void* dst)>& pack,
                          std::shared_ptr<const void>& keep) {
  if (!g.xBase || !g.desc || g.m <= 0 || g.k <= 0) return nullptr;
  // The element offsets from g.x that X's tables read.
  int64_t lo = std::min<int64_t>(0, (g.groups - 1) * g.gx), hi = std::max<int64_t>(0, (g.groups - 1) * g.gx);
  for (const auto& [t, n] : {std::pair{g.xRow, g.m}, std::pair{g.xK, g.k}}) {
    lo += *std::min_element(t, t + n);
    hi += *std::max_element(t, t + n);
  }
  const int64_t eb = elemBytes(g.xType), at = static_cast<const char*>(g.x) - static_cast<const char*>(g.xBase);
  keep = packedOperand(g.xBase, at + lo * eb, at + (hi + 1) * eb, std::vector<int64_t>(g.desc, g.desc + g.descWords),
                       g.xType, layout, bytes, pack);
  return keep.get();
}

namespace {

// Offsets of every multi-index of `dims` (first outermost) for stride member `s`.
std::vector<int64_t> offsetTable(const std::vector<ConvDim>& dims, int64_t ConvDim::*s) {
  std::vector<int64_t> t{0};
  for (const ConvDim& d : dims) {
    std::vector<int64_t> next;
    next.reserve(t.size() * static_cast<size_t>(d.size));
    for (int64_t o : t)
      for (int64_t i = 0; i < d.size; ++i) next.push_back(o + i * d.*s);
    t.swap(next);
  }
  return t;
}

std::vector<ConvDim> sortedBy(const ConvDim* d, int n, int64_t ConvDim::*s) {
  std::vector<ConvDim> v(d, d + n);
  for (size_t i = 1; i < v.size(); ++i)  // insertion sort: stable, and at most 12 dims
    for (size_t j = i; j > 0 && v[j - 1].*s < v[j].*s; --j) std::swap(v[j - 1], v[j]);
  return v;
}

// Merges dims whose strides nest (outer first), dropping size-1 dims.
std::vector<ConvDim> mergeDims(const std::vector<ConvDim>& dims) {
  std::vector<ConvDim> out;
  for (const ConvDim& d : dims) {
    if (d.size == 1) continue;
    if (!out.empty()) {
      ConvDim& o = out.back();
      if (o.sa == d.sa * d.size && o.sb == d.sb * d.size && o.sc == d.sc * d.size) {
        o.size *= d.size;
        o.sa = d.sa, o.sb = d.sb, o.sc = d.sc;
        continue;
      }
    }
    out.push_back(d);
  }
  return out;
}

// The convolution as a plain strided GEMM (1x1 kernels, stride 1: no gather) when M, N and K
// each collapse to one strided dim, plus at most one outer M or N dim (or the group) taken as
// the GEMM's batch. C's unit stride goes on the GEMM's N.
constexpr int64_t kMinSplitColumns = 64;
bool asPlainProblem(const ConvProblem& p, Problem& q) {
  std::vector<ConvDim> roles[3] = {mergeDims(sortedBy(p.m, p.nm, &ConvDim::sc)), mergeDims(sortedBy(p.n, p.nn, &ConvDim::sc)),
                                   mergeDims(sortedBy(p.k, p.nk, &ConvDim::sb))};
  std::vector<ConvDim> batch;
  bool split = false;  // the batch is an M or N dim that did not merge (a strided 1x1 kernel)
  if (p.group.size > 1) batch.push_back(p.group);
  ConvDim one[3];
  for (int r = 0; r < 3; ++r) {
    if (roles[r].size() > (r == 2 ? 1u : 2u)) return false;  // a reduction dim is no batch
    if (roles[r].size() == 2) batch.push_back(roles[r].front()), split = true;
    if (!roles[r].empty()) one[r] = roles[r].back();
  }
  if (batch.size() > 1) return false;
  const ConvDim &m = one[0], &n = one[1], &k = one[2];
  // A row of output positions per GEMM (1x1 stride 2: 28 columns at 56x56) would pack A again
  // for each row and run partial tiles; the tabled GEMM takes all positions as its columns.
  if (split && std::min(m.size, n.size) < kMinSplitColumns) return false;
  q.c = p.c, q.k = k.size;
  if (m.sc == 1 && n.sc != 1) {  // C^T = B^T A^T
    q.a = p.b, q.b = p.a, q.aType = p.bType, q.bType = p.aType;
    q.m = n.size, q.n = m.size;
    q.sam = n.sb, q.sak = k.sb, q.sbk = k.sa, q.sbn = m.sa, q.scm = n.sc, q.scn = m.sc;
    if (!batch.empty()) q.batch = batch[0].size, q.sab = batch[0].sb, q.sbb = batch[0].sa, q.scb = batch[0].sc;
  } else {
    q.a = p.a, q.b = p.b, q.aType = p.aType, q.bType = p.bType;
    q.m = m.size, q.n = n.size;
    q.sam = m.sa, q.sak = k.sa, q.sbk = k.sb, q.sbn = n.sb, q.scm = m.sc, q.scn = n.sc;
    if (!batch.empty()) q.batch = batch[0].size, q.sab = batch[0].sa, q.sbb = batch[0].sb, q.scb = batch[0].sc;
  }
  return true;
}

// Few outputs per group (depthwise): a GEMM would have N < 4.
bool useDirect(const ConvProblem& p) {
  int64_t n = 1;
  for (int i = 0; i < p.nn; ++i) n *= p.n[i].size;
  return p.group.size > 1 && n < 4;
}

struct DirectTables {
  std::vector<int64_t> oa, ob, oc, ka, kb;
};

// The direct kernel's plan: the vector dim is C's unit-stride dim (else the last M dim).
ConvDirectPlan directPlan(const ConvProblem& p, DirectTables& t) {
  std::vector<ConvDim> par;
  if (p.group.size > 1) par.push_back(p.group);
  for (int i = 0; i < p.nn; ++i) par.push_back(p.n[i]);
  for (int i = 0; i < p.nm; ++i) par.push_back(p.m[i]);
  if (par.empty()) par.push_back(ConvDim{});
  size_t v = par.size() - 1;
  for (size_t i = 0; i < par.size(); ++i)
    if (par[i].sc == 1) v = i;
  const ConvDim vd = par[v];
  par.erase(par.begin() + static_cast<std::ptrdiff_t>(v));
  const std::vector<ConvDim> kd(p.k, p.k + p.nk);
  t.oa = offsetTable(par, &ConvDim::sa), t.ob = offsetTable(par, &ConvDim::sb), t.oc = offsetTable(par, &ConvDim::sc);
  t.ka = offsetTable(kd, &ConvDim::sa), t.kb = offsetTable(kd, &ConvDim::sb);
  ConvDirectPlan d;
  d.a = p.a, d.b = p.b, d.c = p.c, d.aType = p.aType, d.bType = p.bType;
  d.outer = static_cast<int64_t>(t.oa.size()), d.kn = static_cast<int64_t>(t.ka.size());
  d.vn = vd.size, d.vsa = vd.sa, d.vsb = vd.sb, d.vsc = vd.sc;
  d.oa = t.oa.data(), d.ob = t.ob.data(), d.oc = t.oc.data(), d.ka = t.ka.data(), d.kb = t.kb.data();
  return d;
}

struct GemmTables {
  std::vector<int64_t> xRow, xK, yK, yCol, cRow, cCol;
  std::vector<int32_t> yRun, yStep;
};

// The tabled GEMM's plan. The GEMM's columns are C's unit-stride side: the output features
// (NHWC) or the output positions (NCHW, X is then the kernel and Y the gathered input). Its
// column tables (yCol, cCol, yRun, yStep: one entry per output position of the whole batch)
// come from gemmColumns, only where the tabled GEMM runs: the extended grid does not read them.
bool swapsOperands(const ConvProblem& p) {
  bool swap = false;
  for (int i = 0; i < p.nm; ++i) swap = swap || (p.m[i].sc == 1 && p.m[i].size > 1);
  for (int i = 0; i < p.nn; ++i)
    if (p.n[i].sc == 1 && p.n[i].size > 1) swap = false;
  return swap;
}

ConvGemmPlan gemmPlan(const ConvProblem& p, GemmTables& t) {
  const bool swap = swapsOperands(p);
  const std::vector<ConvDim> rows = sortedBy(swap ? p.n : p.m, swap ? p.nn : p.nm, &ConvDim::sc);
  int64_t ConvDim::*xs = swap ? &ConvDim::sb : &ConvDim::sa;
  int64_t ConvDim::*ys = swap ? &ConvDim::sa : &ConvDim::sb;
  const std::vector<ConvDim> kd = sortedBy(p.k, p.nk, ys);
  t.xRow = offsetTable(rows, xs), t.cRow = offsetTable(rows, &ConvDim::sc);
  t.xK = offsetTable(kd, xs), t.yK = offsetTable(kd, ys);
  ConvGemmPlan g;
  g.x = swap ? p.b : p.a, g.y = swap ? p.a : p.b, g.c = p.c;
  g.xBase = swap ? p.bBase : nullptr, g.desc = p.desc, g.descWords = p.descWords;
  g.xType = swap ? p.bType : p.aType, g.yType = swap ? p.aType : p.bType;
  g.groups = p.group.size, g.gx = p.group.*xs, g.gy = p.group.*ys, g.gc = p.group.sc;
  g.m = static_cast<int64_t>(t.xRow.size()), g.k = static_cast<int64_t>(t.xK.size());
  g.xRow = t.xRow.data(), g.xK = t.xK.data(), g.yK = t.yK.data(), g.cRow = t.cRow.data();
  return g;
}

void gemmColumns(const ConvProblem& p, GemmTables& t, ConvGemmPlan& g) {
  const bool swap = swapsOperands(p);
  const std::vector<ConvDim> cols = sortedBy(swap ? p.m : p.n, swap ? p.nm : p.nn, &ConvDim::sc);
  t.yCol = offsetTable(cols, swap ? &ConvDim::sa : &ConvDim::sb), t.cCol = offsetTable(cols, &ConvDim::sc);
  // Runs of equally spaced columns (a row of output positions at stride s reads every s-th
  // input element), longest from each column on.
  const size_t n = t.yCol.size();
  t.yRun.assign(n, 1);
  t.yStep.assign(n, 1);
  for (size_t i = n > 0 ? n - 1 : 0; i-- > 0;) {
    const int64_t d = t.yCol[i + 1] - t.yCol[i];
    if (d > 0 && d < (int64_t{1} << 30) && (t.yRun[i + 1] == 1 || t.yStep[i + 1] == d)) {
      t.yRun[i] = t.yRun[i + 1] + 1;
      t.yStep[i] = static_cast<int32_t>(d);
    }
  }
  g.n = static_cast<int64_t>(n);
  g.yCol = t.yCol.data(), g.cCol = t.cCol.data(), g.yRun = t.yRun.data(), g.yStep = t.yStep.data();
}

// The convolution's output dims (the group, M and N), merged, outermost first.
std::vector<ConvDim> outputDims(const ConvProblem& p) {
  std::vector<ConvDim> dims{ConvDim{p.group.size, 0, 0, p.group.sc}};
  for (int i = 0; i < p.nm; ++i) dims.push_back({p.m[i].size, 0, 0, p.m[i].sc});
  for (int i = 0; i < p.nn; ++i) dims.push_back({p.n[i].size, 0, 0, p.n[i].sc});
  return mergeDims(sortedBy(dims.data(), static_cast<int>(dims.size()), &ConvDim::sc));
}

// f(offset, run) over C's elements, in runs where C's unit-stride dim allows.
template <class F>
void forOutputRuns(const ConvProblem& p, F f) {
  std::vector<ConvDim> dims = outputDims(p);
  int64_t run = 1;
  if (!dims.empty() && dims.back().sc == 1) run = dims.back().size, dims.pop_back();
  for (int64_t at : offsetTable(dims, &ConvDim::sc)) f(at, run);
}

// C = 0 over the convolution's output (for the paths that add to C, under kConvOverwrite).
void zeroOutput(const ConvProblem& p) {
  forOutputRuns(p, [&](int64_t at, int64_t run) { std::memset(p.c + at, 0, sizeof(float) * static_cast<size_t>(run)); });
}

// out = p.c (f32 sums at C's offsets) rounded to bf16 as arith.truncf does: nearest even, NaN
// kept a (quiet) NaN; by vcvtneps2bf16 where the host has it, in chunks split across threads.
void roundOutput(const ConvProblem& p, uint16_t* out, bool bf16Isa, int threads) {
  constexpr int64_t kChunk = 1 << 16;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  forOutputRuns(p, [&](int64_t at, int64_t run) {
    for (int64_t s = 0; s < run; s += kChunk) chunks.emplace_back(at + s, std::min(kChunk, run - s));
  });
  auto round = [&](int64_t at, int64_t n) {
    if (bf16Isa) {
      amxRoundBf16(p.c + at, n, out + at);
      return;
    }
    for (int64_t i = at; i < at + n; ++i) out[i] = f32ToBf16(p.c[i]);
  };
  const int64_t n = static_cast<int64_t>(chunks.size());
  if (threads <= 1 || n < 2) {
    for (const auto& [at, len] : chunks) round(at, len);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) round(chunks[static_cast<size_t>(i)].first, chunks[static_cast<size_t>(i)].second);
}

struct GridTables {
  std::vector<int64_t> oy, oc, yK;
};

// A stride-2 grid's input copied into phase planes (ConvRowsPlan::phases), where the layout
// allows: the outer position dims (and the group) move by whole planes, the rows `pitch` = h.sa
// / 2 apart, and every tap's window stays inside its plane's rows and columns. The plane is the
// smallest input stride past one row pair that is a multiple of the pitch (an NCHW channel),
// else the whole extent. Rewrites t.yK, t.oy, r.g.gy and r.ext into the copy's offsets.
bool phasePlan(const ConvProblem& p, const ConvGemmPlan& g, const std::vector<ConvDim>& outer, const ConvDim& h,
               const ConvDim& w, GridTables& t, ConvRowsPlan& r) {
  if (h.sa <= 0 || h.sa % 2 != 0) return false;
  const int64_t pitch = h.sa / 2, pitch2 = (pitch + 1) / 2;
  if (3 * (pitch2 - w.size) > w.size) return false;
  int64_t maxK = 0, maxOuter = 0, plane = 0;
  for (int64_t o : t.oy) maxOuter = std::max(maxOuter, o);
  for (int64_t i = 0; i < g.k; ++i) {
    if (g.yK[i] < 0) return false;
    maxK = std::max(maxK, g.yK[i]);
  }
  const int64_t gy = g.groups > 1 ? g.gy : 0;
  const int64_t extent = maxK + maxOuter + (g.groups - 1) * gy + (h.size - 1) * h.sa + 2 * (w.size - 1) + 1;
  std::vector<int64_t> strides{gy};
  for (int i = 0; i < p.nk; ++i)
    if (p.k[i].size > 1) strides.push_back(p.k[i].sa);
  for (const ConvDim& d : outer) strides.push_back(d.sa);
  for (int64_t s : strides)
    if (s >= 2 * pitch && s % pitch == 0 && (plane == 0 || s < plane)) plane = s;
  if (plane == 0) plane = (extent + pitch - 1) / pitch * pitch;
  for (const ConvDim& d : outer)
    if (d.sa < 0 || d.sa % plane != 0) return false;
  if (gy < 0 || gy % plane != 0) return false;
  const int64_t rows = plane / pitch, sub = (rows + 1) / 2 * pitch2;
  // Each tap's plane, row and column: offsetTable over the K dims in yK's order (gemmPlan's),
  // each dim's input stride split once into (sa: planes, sb: rows, sc: columns). A row or column
  // past the plane's would be a carry: refused. (The yK check above rules out negative strides.)
  std::vector<ConvDim> split;
  for (const ConvDim& d : sortedBy(p.k, p.nk, &ConvDim::sa))
    split.push_back({d.size, d.sa / plane, d.sa % plane / pitch, d.sa % pitch});
  const std::vector<int64_t> ti = offsetTable(split, &ConvDim::sa), ty = offsetTable(split, &ConvDim::sb),
                             tx = offsetTable(split, &ConvDim::sc);
  int used = 0;
  for (size_t i = 0; i < tx.size(); ++i) {
    if (tx[i] + 2 * (w.size - 1) >= pitch || ty[i] + 2 * (h.size - 1) >= rows) return false;
    used |= 1 << (ty[i] % 2 * 2 + tx[i] % 2);
  }
  // A kernel narrower than the stride (1x1) reads a quarter of the copy: gathering its
  // positions into the tabled GEMM's panels is cheaper (1x1 s2 at 56x56: 157 -> 183 GFLOP/s).
  if (used != 0xf) return false;
  t.yK.resize(static_cast<size_t>(g.k));
  for (size_t i = 0; i < t.yK.size(); ++i)
    t.yK[i] = ti[i] * 4 * sub + (ty[i] % 2 * 2 + tx[i] % 2) * sub + ty[i] / 2 * pitch2 + tx[i] / 2;
  // Batch images (planes apart that one image's window does not reach) are copied one by one.
  const int64_t outerPlanes = (extent - maxOuter + plane - 1) / plane;
  std::vector<int64_t> starts = t.oy;
  std::sort(starts.begin(), starts.end());
  bool apart = starts.size() > 1;
  for (size_t i = 1; i < starts.size(); ++i) apart = apart && starts[i] - starts[i - 1] >= outerPlanes * plane;
  for (int64_t& o : t.oy) o = o / plane * 4 * sub;
  r.g.yK = t.yK.data();
  r.g.gy = gy / plane * 4 * sub;
  r.ext = pitch2;
  r.phases = {(extent + plane - 1) / plane, plane, rows, pitch, extent, apart ? outerPlanes : 0};
  return true;
}

// The extended grid of ConvRowsPlan for the tabled plan g, where it applies: f32 operands (or
// bf16 ones where vdpbf16ps runs them, and AMX does not), C's positions along its unit stride,
// read at the input's unit stride (or at stride 2 from phase planes), and X small enough to
// pack whole. Rows of positions share a grid when it is at most a third longer than they are
// (3x3 at 7x7: 9 columns a row); else each row is a grid of its own, and it needs 16 positions
// at least to fill its tiles.
bool rowsPlan(const ConvProblem& p, const ConvGemmPlan& g, Isa run, GridTables& t, ConvRowsPlan& r) {
  const bool f32 = g.xType == Elem::f32 && g.yType == Elem::f32;
  const bool bf16 = g.xType == Elem::bf16 && g.yType == Elem::bf16 && (run == Isa::avx512bf16 || run == Isa::amx);
  if (!f32 && !bf16) return false;
  for (int i = 0; i < p.nn; ++i)
    if (p.n[i].sc == 1 && p.n[i].size > 1) return false;
  std::vector<ConvDim> pos;
  for (const ConvDim& d : sortedBy(p.m, p.nm, &ConvDim::sc))
    if (d.size > 1) pos.push_back(d);
  if (pos.empty() || pos.back().sc != 1 || (pos.back().sa != 1 && pos.back().sa != 2)) return false;
  const ConvDim w = pos.back();
  // bf16 tiles interleave their pairs anyway: a phase copy first only adds to that (the 7x7
  // stem at batch 8: 293 -> 235 GFLOP/s on Zen 5); f32 reads the copy in place.
  const bool phased = w.sa == 2;
  if (phased && !f32 && run != Isa::amx) return false;
  pos.pop_back();
  ConvDim h{1, w.size, 0, w.size};
  if (!pos.empty() && pos.back().sc == w.size &&
      (phased || (pos.back().sa >= w.size && 3 * (pos.back().sa - w.size) <= w.size))) {
    h = pos.back();
    pos.pop_back();
  } else if (phased) {
    return false;
  }
  if (h.size == 1 && w.size < 16) return false;
  if (g.groups * ((g.m + 7) / 8 * 8) * g.k * 4 > kConvXPackBytes) return false;
  t.oy = offsetTable(pos, &ConvDim::sa), t.oc = offsetTable(pos, &ConvDim::sc);
  r.g = g;
  r.outer = static_cast<int64_t>(t.oy.size()), r.h = h.size, r.w = w.size, r.ext = h.sa;
  if (phased && !phasePlan(p, g, pos, h, w, t, r)) return false;
  r.oy = t.oy.data(), r.oc = t.oc.data();
  return true;
}

// The AMX extended grid's K as channels x taps (conv.h's ConvRowsAmxPlan): the channel is the
// K dim of widest input stride, and its channels fill the 32-channel tile steps at least 4/5
// (the stem's 3 would waste 29 of 32).
bool rowsAmxPlan(const ConvProblem& p, const ConvRowsPlan& r, std::vector<int64_t>& tapOff, ConvRowsAmxPlan& a) {
  if (p.nk == 0) return false;
  int64_t ConvDim::*ys = swapsOperands(p) ? &ConvDim::sa : &ConvDim::sb;
  const ConvDim ch = sortedBy(p.k, p.nk, ys).front();
  if (ch.size < 32 || (ch.size + 31) / 32 * 32 * 4 > ch.size * 5 || r.g.k % ch.size != 0) return false;
  a.rows = &r, a.cin = ch.size, a.taps = r.g.k / ch.size, a.cs = ch.*ys;
  // With phases, yK is in the copy's offsets, where a channel (a plane) is four phase planes.
  const ConvPhases& ph = r.phases;
  if (ph.planes > 0 && a.cs != ph.plane) return false;
  const int64_t step = ph.planes > 0 ? 4 * ((ph.rows + 1) / 2) * ((ph.pitch + 1) / 2) : a.cs;
  tapOff.assign(r.g.yK, r.g.yK + a.taps);
  for (int64_t t = 0; t < a.taps; ++t)
    if (tapOff[static_cast<size_t>(t)] < 0) return false;
  for (int64_t c = 0; c < a.cin; ++c)
    for (int64_t t = 0; t < a.taps; ++t)
      if (r.g.yK[c * a.taps + t] != c * step + tapOff[static_cast<size_t>(t)]) return false;
  a.tapOff = tapOff.data();
  return true;
}

}  // namespace

}  // namespace radix::kernels

using namespace radix::kernels;

extern "C" void radix_kernel_conv(int64_t aBase, int64_t aOffset, int64_t bBase, int64_t bOffset, int64_t cBase,
                                  int64_t cOffset, int64_t desc, int64_t threads, int64_t isa) {
  const int64_t* d = reinterpret_cast<const int64_t*>(desc);
  if (d[0] != kConvDescVersion && d[0] != kConvDescVersionOutBf16) return;
  ConvProblem p;
  p.aType = static_cast<Elem>(d[1] & 0xff);
  p.bType = static_cast<Elem>((d[1] >> 8) & 0xff);
  if (d[2] < 0 || d[3] < 0 || d[4] < 0 || d[2] > ConvProblem::kMaxDims || d[3] > ConvProblem::kMaxDims ||
      d[4] > ConvProblem::kMaxDims)
    return;
  p.nm = static_cast<int>(d[2]), p.nn = static_cast<int>(d[3]), p.nk = static_cast<int>(d[4]);
  const bool overwrite = (d[1] & kConvOverwrite) != 0, outBf16 = (d[1] & kConvOutBf16) != 0;
  // The lowering folds the rounding only where C is written whole, under its own version.
  if (outBf16 != (d[0] == kConvDescVersionOutBf16) || (outBf16 && !overwrite)) return;
  const int64_t* at = d + kConvDescHeader;
  auto next = [&](ConvDim& x) {
    x = {at[0], at[1], at[2], at[3]};
    at += 4;
  };
  next(p.group);
  double flops = 2.0 * static_cast<double>(p.group.size);
  for (int i = 0; i < p.nm; ++i) next(p.m[i]), flops *= static_cast<double>(p.m[i].size);
  for (int i = 0; i < p.nn; ++i) next(p.n[i]), flops *= static_cast<double>(p.n[i].size);
  for (int i = 0; i < p.nk; ++i) next(p.k[i]), flops *= static_cast<double>(p.k[i].size);
  if (!(flops > 0)) return;
  p.desc = d, p.descWords = at - d;
  p.aBase = reinterpret_cast<const void*>(aBase), p.bBase = reinterpret_cast<const void*>(bBase);
  p.a = reinterpret_cast<const char*>(aBase) + aOffset * elemBytes(p.aType);
  p.b = reinterpret_cast<const char*>(bBase) + bOffset * elemBytes(p.bType);
  p.c = reinterpret_cast<float*>(cBase) + cOffset;
  const Isa run = static_cast<Isa>(std::min<int64_t>(isa, static_cast<int64_t>(hostIsa())));
  int t = threads > 0 ? static_cast<int>(threads) : omp_get_max_threads();
  if (omp_in_parallel() || flops < 1e6) t = 1;
  t = std::max(t, 1);
  // Isa values grow with the instruction sets: anything past avx512bf16 runs its kernels.
  Problem q;
  const bool plain = asPlainProblem(p, q), direct = !plain && useDirect(p), tabled = !plain && !direct;
  GemmTables tables;
  ConvGemmPlan plan;
  if (tabled) plan = gemmPlan(p, tables);
  GridTables grid;
  ConvRowsPlan rows;
  // On AMX, bf16 takes the grid where its K splits into channels x taps, else the tabled GEMM.
  const bool amxTiles = run == Isa::amx && plan.xType == Elem::bf16 && plan.yType == Elem::bf16;
  std::vector<int64_t> tapOff;
  ConvRowsAmxPlan tileRows;
  bool onGrid = tabled && rowsPlan(p, plan, run, grid, rows);
  if (onGrid && amxTiles && !rowsAmxPlan(p, rows, tapOff, tileRows)) onGrid = false;
  // A bf16 C: AMX's grid rounds each tile as it writes it; the other paths sum into f32 scratch
  // laid out as C, rounded into C after.
  uint16_t* cBf16 = outBf16 ? reinterpret_cast<uint16_t*>(p.c) : nullptr;
  std::unique_ptr<void, void (*)(void*)> sums(nullptr, _mlir_memref_to_llvm_free);
  if (outBf16 && onGrid && amxTiles) {
    tileRows.cBf16 = cBf16;
  } else if (outBf16) {
    int64_t span = 1;
    for (const ConvDim& x : outputDims(p)) {
      if (x.sc < 0) return;  // the lowering folds the rounding into C's of positive strides only
      span += (x.size - 1) * x.sc;
    }
    sums.reset(_mlir_memref_to_llvm_aligned_alloc(64, sizeof(float) * static_cast<uint64_t>(span)));
    float* c = static_cast<float*>(sums.get());
    p.c = c, q.c = c, plan.c = c, rows.g.c = c;
  }
  if (tabled && !onGrid) gemmColumns(p, tables, plan);
  // The extended grid and the tabled GEMM write C where it is empty; the other paths add to it.
  plan.overwrite = overwrite && tabled && !onGrid;
  if (overwrite && !onGrid && !plan.overwrite) zeroOutput(p);
  ConvPath path;
  if (plain) {
    path = ConvPath::plain;
    if (run == Isa::amx)
      runAmx(q, t);
    else if (run >= Isa::avx512bf16)
      runAvx512(q, t, true);
    else if (run == Isa::avx512)
      runAvx512(q, t, false);
    else if (run == Isa::avx2)
      runAvx2(q, t);
    else
      runX86_64(q, t);
  } else if (direct) {
    path = ConvPath::direct;
    DirectTables tables;
    const ConvDirectPlan plan = directPlan(p, tables);
    if (run >= Isa::avx512)
      runConvDirectAvx512(plan, t);
    else if (run == Isa::avx2)
      runConvDirectAvx2(plan, t);
    else
      runConvDirectX86_64(plan, t);
  } else if (onGrid) {
    path = ConvPath::rows;
    rows.overwrite = overwrite;
    if (amxTiles) {
      runConvRowsAmx(tileRows, t);
      amxCalls.fetch_add(1, std::memory_order_relaxed);
    } else if (run >= Isa::avx512)
      runConvRowsAvx512(rows, t, run >= Isa::avx512bf16);
    else if (run == Isa::avx2)
      runConvRowsAvx2(rows, t);
    else
      runConvRowsX86_64(rows, t);
  } else {
    path = ConvPath::gemm;
    if (amxTiles) {
      runConvGemmAmx(plan, t);
      amxCalls.fetch_add(1, std::memory_order_relaxed);
    } else if (run >= Isa::avx512bf16)
      runConvGemmAvx512(plan, t, true);
    else if (run == Isa::avx512)
      runConvGemmAvx512(plan, t, false);
    else if (run == Isa::avx2)
      runConvGemmAvx2(plan, t);
    else
      runConvGemmX86_64(plan, t);
  }
  if (outBf16 && !tileRows.cBf16) roundOutput(p, cBf16, run >= Isa::avx512bf16, t);
  convCounters[static_cast<int>(path)].fetch_add(1, std::memory_order_relaxed);
}

extern "C" void radix_kernel_pool(int64_t aBase, int64_t aOffset, int64_t cBase, int64_t cOffset, int64_t desc,
                                  int64_t threads, int64_t isa) {
  const int64_t* d = reinterpret_cast<const int64_t*>(desc);
  if (d[0] != kConvDescVersion || (d[2] != static_cast<int64_t>(DirectOp::max) && d[2] != static_cast<int64_t>(DirectOp::sum)))
    return;
  if (d[3] < 0 || d[4] < 0 || d[3] > ConvProblem::kMaxDims || d[4] > ConvProblem::kMaxDims) return;
  ConvProblem p;
  p.aType = p.bType = static_cast<Elem>(d[1] & 0xff);
  p.nm = static_cast<int>(d[3]), p.nk = static_cast<int>(d[4]);
  const int64_t* at = d + kPoolDescHeader;
  double work = 1;
  for (int i = 0; i < p.nm + p.nk; ++i, at += 3) {
    ConvDim& x = i < p.nm ? p.m[i] : p.k[i - p.nm];
    x = {at[0], at[1], 0, i < p.nm ? at[2] : 0};
    work *= static_cast<double>(at[0]);
  }
  if (!(work > 0)) return;
  p.a = reinterpret_cast<const char*>(aBase) + aOffset * elemBytes(p.aType);
  p.c = reinterpret_cast<float*>(cBase) + cOffset;
  DirectTables tables;
  ConvDirectPlan plan = directPlan(p, tables);
  plan.op = static_cast<DirectOp>(d[2]);
  const Isa run = static_cast<Isa>(std::min<int64_t>(isa, static_cast<int64_t>(hostIsa())));
  int t = threads > 0 ? static_cast<int>(threads) : omp_get_max_threads();
  if (omp_in_parallel() || work < 1e6) t = 1;
  t = std::max(t, 1);
  if (run >= Isa::avx512)
    runConvDirectAvx512(plan, t);
  else if (run == Isa::avx2)
    runConvDirectAvx2(plan, t);
  else
    runConvDirectX86_64(plan, t);
  convCounters[static_cast<int>(ConvPath::pool)].fetch_add(1, std::memory_order_relaxed);
}
