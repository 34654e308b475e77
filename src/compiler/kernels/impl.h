#pragma once
// The ISA-independent half of the kernels: BLIS-style GEMM driver (packing, cache blocks,
// threads) and the GEMV kernels, written against a small vector type V that each ISA's TU
// (x86_64.cpp, avx2.cpp, avx512.cpp) defines before including this header. Everything here
// lives in that TU's anonymous namespace, so no code compiled for one ISA leaks into another.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "compiler/kernels/half.h"
#include "compiler/kernels/kernels.h"
#include "compiler/kernels/packed.h"

namespace {

using radix::kernels::Elem;
using radix::kernels::Path;
using radix::kernels::Problem;

template <Elem E>
inline float loadScalar(const void* base, int64_t i) {
  if constexpr (E == Elem::f32) return static_cast<const float*>(base)[i];
  if constexpr (E == Elem::bf16) return bf16ToF32(static_cast<const uint16_t*>(base)[i]);
  if constexpr (E == Elem::f16) return f16ToF32(static_cast<const uint16_t*>(base)[i]);
  return 0;
}

// A vector of V::W f32 lanes loaded from an element type.
template <class V, Elem E>
inline typename V::R loadE(const void* p) {
  if constexpr (E == Elem::f32) return V::load(static_cast<const float*>(p));
  if constexpr (E == Elem::bf16) return V::loadBf16(static_cast<const uint16_t*>(p));
  if constexpr (E == Elem::f16) return V::loadF16(static_cast<const uint16_t*>(p));
}
template <class V, Elem E>
inline typename V::R loadEN(const void* p, int n) {
  if constexpr (E == Elem::f32) return V::loadN(static_cast<const float*>(p), n);
  if constexpr (E == Elem::bf16) return V::loadBf16N(static_cast<const uint16_t*>(p), n);
  if constexpr (E == Elem::f16) return V::loadF16N(static_cast<const uint16_t*>(p), n);
}

// 64-byte aligned scratch that only grows (a call's or a thread's). Its blocks come from the
// allocator of compiled code (runtime/alloc.cpp), whose pool keeps large freed blocks: a call's
// megabytes of packed panels are not an mmap and page faults every time.
struct Scratch {
  void* data = nullptr;
  size_t size = 0;
  ~Scratch() { _mlir_memref_to_llvm_free(data); }
  void* get(size_t bytes) {
    if (bytes > size) {
      _mlir_memref_to_llvm_free(data);
      size = (bytes + 4095) & ~size_t(4095);
      data = _mlir_memref_to_llvm_aligned_alloc(64, size);
    }
    return data;
  }
};

inline const void* offsetPtr(const void* base, Elem e, int64_t elements) {
  return static_cast<const char*>(base) + elements * elemBytes(e);
}

// ---- GEMM ----

// Cfg: using V; using PackT (float, or uint16_t bf16 pairs with kPair = 2); MR, NR; MC, KC, NC;
// static void micro(int64_t steps, const PackT* ap, const PackT* bp, float* c, int64_t scm,
// int64_t scn, int mr, int nr, Ahead ahead = {}): C[mr x nr] += Ap * Bp over `steps` k steps
// (pairs), fetching `ahead`'s lines into L2 on the way.

// What a micro-kernel prepares while it computes, spread over its k steps: lines fetched into
// L2 (a share of the next B panel, so that the first row tile to use it does not wait on
// memory), or (f32, columns contiguous) the next panel itself, copied from B's rows: packing
// then rides on the product's FMAs instead of running before it.
struct Ahead {
  const char* p = nullptr;
  int64_t lines = 0;
  const float* rows = nullptr;  // B's rows to copy (the next panel's columns), `ld` apart
  int64_t ld = 0, count = 0;
  float* panel = nullptr;  // where the first of them goes
};

// `count` actions spread over `steps` steps, one every steps / count: due(k) says whether step k
// takes the next one (call it once per step, in order).
struct Spread {
  int64_t left, every, next = 0;
  Spread(int64_t count, int64_t steps) : left(count), every(count > 0 ? std::max<int64_t>(1, steps / count) : 0) {}
  bool due(int64_t k) {
    if (left <= 0 || k != next) return false;
    --left, next += every;
    return true;
  }
  // The step the next action is due at, or INT64_MAX when none is left.
  int64_t upcoming() const { return left > 0 ? next : INT64_MAX; }
};

// product() for each of `steps` steps, due(k) just before it at the steps next() names (the next
// step an action is due at): the steps between run as a loop of products alone, without per-step
// checks (f32 1024^3, AVX-512, 1 thread: 17.8 -> 16.9-17.1 ms).
template <class Next, class Due, class Product>
inline void dueSteps(int64_t steps, Next next, Due due, Product product) {
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t n = next(), stop = n < steps ? n : steps;
    for (; k < stop; ++k) product();
    if (k == steps) break;
    due(k);
    product();
  }
}

// Issues `ahead`'s prefetches one at a time across `steps` steps: call once per step k.
struct AheadFetcher {
  const char* p;
  Spread lines;
  AheadFetcher(Ahead a, int64_t steps) : p(a.p), lines(a.lines, steps) {}
  void step(int64_t k) {
    if (lines.due(k)) __builtin_prefetch(p, 0, 2), p += 64;
  }
};

// Stores an MR x NV vector tile into C (+=), clipped to mr x nr.
template <class V, int MR, int NV>
inline void storeTile(typename V::R (&acc)[MR][NV], float* c, int64_t scm, int64_t scn, int mr, int nr) {
  constexpr int NR = NV * V::W;
  if (scn == 1) {
    if (mr == MR && nr == NR) {
      for (int i = 0; i < MR; ++i)
        for (int v = 0; v < NV; ++v) {
          float* p = c + i * scm + v * V::W;
          V::store(p, V::add(V::load(p), acc[i][v]));
        }
      return;
    }
    for (int i = 0; i < mr; ++i)
      for (int v = 0; v < NV; ++v) {
        const int n = nr - v * V::W;
        if (n <= 0) break;
        float* p = c + i * scm + v * V::W;
        if (n >= V::W)
          V::store(p, V::add(V::load(p), acc[i][v]));
        else
          V::storeN(p, V::add(V::loadN(p, n), acc[i][v]), n);
      }
    return;
  }
  alignas(64) float tmp[MR * NR];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) V::store(tmp + i * NR + v * V::W, acc[i][v]);
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) c[i * scm + j * scn] += tmp[i * NR + j];
}

// C's tile, fetched while the micro-kernel runs its k loop (its += at the end would wait on it).
template <int MR, int NR>
inline void prefetchTile(const float* c, int64_t scm, int64_t scn) {
  if (scn != 1) return;
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; j += 16) __builtin_prefetch(c + i * scm + j, 1);
}

// The f32 outer-product micro-kernel: MR rows x NV vectors.
template <class V, int MR, int NV>
inline void microF32(int64_t kc, const float* __restrict ap, const float* __restrict bp, float* c, int64_t scm,
                     int64_t scn, int mr, int nr, Ahead ahead = {}) {
  typename V::R acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  prefetchTile<MR, NV * V::W>(c, scm, scn);
  AheadFetcher fetch(ahead, kc);
  // Row copies, spread over the k steps; B's rows are far apart (16 KB for 4096 columns) and the
  // hardware does not fetch them ahead: kRowsAhead copies early.
  constexpr int64_t kRowsAhead = 8;
  constexpr int kPerLine = V::W >= 16 ? 1 : 16 / V::W;
  Spread copies(ahead.count, kc);
  int64_t copied = 0;
  auto copyRow = [&] {
    for (int v = 0; v < NV; ++v)
      V::store(ahead.panel + copied * NV * V::W + v * V::W, V::load(ahead.rows + copied * ahead.ld + v * V::W));
    ++copied;
  };
  auto product = [&] {
    typename V::R b[NV];
    for (int v = 0; v < NV; ++v) b[v] = V::load(bp + v * V::W);
    for (int i = 0; i < MR; ++i) {
      const typename V::R a = V::set1(ap[i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(a, b[v], acc[i][v]);
    }
    ap += MR;
    bp += NV * V::W;
  };
  dueSteps(
      kc,
      [&] {
        const int64_t f = fetch.lines.upcoming(), r = copies.upcoming();
        return f < r ? f : r;
      },
      [&](int64_t k) {
        fetch.step(k);
        if (copies.due(k)) {
          if (copied + kRowsAhead < ahead.count) {
            const float* row = ahead.rows + (copied + kRowsAhead) * ahead.ld;
            for (int v = 0; v < NV; v += kPerLine) __builtin_prefetch(row + v * V::W);
            __builtin_prefetch(row + NV * V::W - 1);
          }
          copyRow();
        }
      },
      product);
  while (copied < ahead.count) copyRow();  // rows left when count does not divide kc
  storeTile<V, MR, NV>(acc, c, scm, scn, mr, nr);
}

// One full MR-row panel from rows whose k is contiguous (k [0, kc) of each): the rows are read
// side by side, each k step (bf16: each pair, copied as 4 bytes) one contiguous store.
template <class Cfg, Elem E>
void packRowPanel(const void* const* rows, int64_t kc, typename Cfg::PackT* __restrict dst) {
  constexpr int MR = Cfg::MR;
  if constexpr (Cfg::kPair == 1) {
    for (int64_t k = 0; k < kc; ++k)
      for (int r = 0; r < MR; ++r) dst[k * MR + r] = loadScalar<E>(rows[r], k);
  } else {
    const int64_t pairs = kc / 2;
    for (int64_t q = 0; q < pairs; ++q)
      for (int r = 0; r < MR; ++r) std::memcpy(dst + q * MR * 2 + r * 2, static_cast<const uint16_t*>(rows[r]) + 2 * q, 4);
    if (kc & 1)
      for (int r = 0; r < MR; ++r) {
        dst[pairs * MR * 2 + r * 2] = static_cast<const uint16_t*>(rows[r])[kc - 1];
        dst[pairs * MR * 2 + r * 2 + 1] = 0;
      }
  }
}

// Packs rows [i0, i0+mc) x k [k0, k0+kc) of A into MR-row panels: panel p holds kcp x MR (x kPair).
template <class Cfg, Elem E>
void packA(const void* a, int64_t sam, int64_t sak, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
           typename Cfg::PackT* __restrict dst) {
  constexpr int MR = Cfg::MR, P = Cfg::kPair;
  const int64_t kcp = (kc + P - 1) / P * P;
  for (int64_t ip = 0; ip < mc; ip += MR, dst += kcp * MR) {
    const int mr = static_cast<int>(std::min<int64_t>(MR, mc - ip));
    if (sak == 1 && mr == MR) {
      const void* rows[MR];
      for (int r = 0; r < MR; ++r) rows[r] = offsetPtr(a, E, (i0 + ip + r) * sam + k0);
      packRowPanel<Cfg, E>(rows, kc, dst);
      continue;
    }
    if constexpr (P == 1) {
      if (sak == 1) {
        for (int r = 0; r < mr; ++r) {
          const int64_t row = (i0 + ip + r) * sam + k0;
          for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = loadScalar<E>(a, row + k);
        }
      } else {
        for (int64_t k = 0; k < kc; ++k)
          for (int r = 0; r < mr; ++r) dst[k * MR + r] = loadScalar<E>(a, (i0 + ip + r) * sam + (k0 + k) * sak);
      }
      for (int r = mr; r < MR; ++r)
        for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = 0;
    } else {  // bf16 pairs: dst[(k/2)][r][k%2]
      const uint16_t* src = static_cast<const uint16_t*>(a);
      for (int r = 0; r < MR; ++r)
        for (int64_t k = 0; k < kcp; ++k)
          dst[(k / 2) * MR * 2 + r * 2 + (k & 1)] =
              (r < mr && k < kc) ? src[(i0 + ip + r) * sam + (k0 + k) * sak] : uint16_t(0);
    }
  }
}

// Packs k [k0, k0+kc) x columns [j0, j0+nc) of B into NR-column panels.
template <class Cfg, Elem E>
void packB(const void* b, int64_t sbk, int64_t sbn, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
           typename Cfg::PackT* __restrict dst) {
  constexpr int NR = Cfg::NR, P = Cfg::kPair;
  const int64_t kcp = (kc + P - 1) / P * P;
  for (int64_t jp = 0; jp < nc; jp += NR, dst += kcp * NR) {
    const int nr = static_cast<int>(std::min<int64_t>(NR, nc - jp));
    if constexpr (P == 1) {
      if (sbn == 1 && jp == 0) {
        // Row by row across all panels: B is read along its rows.
        for (int64_t k = 0; k < kc; ++k) {
          const int64_t row = (k0 + k) * sbk + j0;
          for (int64_t q = 0; q < nc; q += NR) {
            float* d = dst + q * kcp + k * NR;
            const int n = static_cast<int>(std::min<int64_t>(NR, nc - q));
            if (n == NR) {
              for (int j = 0; j < NR; ++j) d[j] = loadScalar<E>(b, row + q + j);
            } else {
              for (int j = 0; j < n; ++j) d[j] = loadScalar<E>(b, row + q + j);
              for (int j = n; j < NR; ++j) d[j] = 0;
            }
          }
        }
        return;
      }
      if (sbn == 1) {
        for (int64_t k = 0; k < kc; ++k) {
          const int64_t row = (k0 + k) * sbk + j0 + jp;
          float* d = dst + k * NR;
          if (nr == NR) {
            for (int j = 0; j < NR; ++j) d[j] = loadScalar<E>(b, row + j);
          } else {
            for (int j = 0; j < nr; ++j) d[j] = loadScalar<E>(b, row + j);
            for (int j = nr; j < NR; ++j) d[j] = 0;
          }
        }
      } else {
        // Blocks of 16 k: each column's read is one cache line, the writes stay in a 2 KB tile.
        int64_t kDone = 0;
        if constexpr (requires(const void* s, float* d) { Cfg::template packBTransposed<E>(s, int64_t(0), d, int64_t(0)); }) {
          if (sbk == 1 && nr == NR)
            kDone = Cfg::template packBTransposed<E>(offsetPtr(b, E, (j0 + jp) * sbn + k0), sbn, dst, kc);
        }
        for (int64_t kb = kDone; kb < kc; kb += 16) {
          const int64_t kn = std::min<int64_t>(16, kc - kb);
          for (int j = 0; j < nr; ++j) {
            const int64_t col = (j0 + jp + j) * sbn + (k0 + kb) * sbk;
            for (int64_t k = 0; k < kn; ++k) dst[(kb + k) * NR + j] = loadScalar<E>(b, col + k * sbk);
          }
        }
        for (int j = nr; j < NR; ++j)
          for (int64_t k = 0; k < kc; ++k) dst[k * NR + j] = 0;
      }
    } else {
      const uint16_t* src = static_cast<const uint16_t*>(b);
      if (sbn == 1 && jp == 0) {
        // Pairs of rows across all panels: B is read along its rows.
        for (int64_t k = 0; k < kcp; k += 2) {
          const uint16_t* r0 = src + (k0 + k) * sbk + j0;
          const uint16_t* r1 = k + 1 < kc ? r0 + sbk : nullptr;
          for (int64_t q = 0; q < nc; q += NR)
            Cfg::interleave(r0 + q, r1 ? r1 + q : nullptr, dst + q * kcp + k * NR,
                            static_cast<int>(std::min<int64_t>(NR, nc - q)));
        }
        return;
      }
      if (sbn == 1) {
        for (int64_t k = 0; k < kcp; ++k) {
          uint16_t* d = dst + (k / 2) * NR * 2 + (k & 1);
          if (k < kc) {
            const uint16_t* s = src + (k0 + k) * sbk + j0 + jp;
            for (int j = 0; j < nr; ++j) d[j * 2] = s[j];
            for (int j = nr; j < NR; ++j) d[j * 2] = 0;
          } else {
            for (int j = 0; j < NR; ++j) d[j * 2] = 0;
          }
        }
      } else if (sbk == 1) {
        // A pair of k is 4 contiguous bytes of a column: copy them whole, 16 pairs at a time.
        const int64_t pairs = kc / 2;
        for (int64_t kb = 0; kb < pairs; kb += 16) {
          const int64_t kn = std::min<int64_t>(16, pairs - kb);
          for (int j = 0; j < nr; ++j) {
            const uint16_t* col = src + (j0 + jp + j) * sbn + k0 + 2 * kb;
            for (int64_t q = 0; q < kn; ++q) std::memcpy(dst + (kb + q) * NR * 2 + j * 2, col + 2 * q, 4);
          }
        }
        for (int j = 0; j < NR; ++j) {
          if (kc & 1) {
            dst[pairs * NR * 2 + j * 2] = j < nr ? src[(j0 + jp + j) * sbn + k0 + kc - 1] : uint16_t(0);
            dst[pairs * NR * 2 + j * 2 + 1] = 0;
          }
          if (j >= nr)
            for (int64_t q = 0; q < pairs; ++q) dst[q * NR * 2 + j * 2] = dst[q * NR * 2 + j * 2 + 1] = 0;
        }
      } else {
        for (int j = 0; j < NR; ++j)
          for (int64_t k = 0; k < kcp; ++k)
            dst[(k / 2) * NR * 2 + j * 2 + (k & 1)] =
                (j < nr && k < kc) ? src[(j0 + jp + j) * sbn + (k0 + k) * sbk] : uint16_t(0);
      }
    }
  }
}

template <class Cfg>
struct GemmScratch {
  Scratch a, b;
};

// Packed B for a whole operand: the panels of packB over all of K and N, panel q at q * kp * NR
// (kp = K rounded up to kPair); a KC block starting at pc sits pc * NR elements into each panel.
template <class Cfg>
constexpr int32_t packedLayout() {
  return (Cfg::NR << 8) | (Cfg::kPair << 4) | static_cast<int32_t>(sizeof(typename Cfg::PackT));
}

// K in equal blocks of at most Cfg::KC, a multiple of kPair (576 = 2 x 288 and 517 = 259 + 258,
// not 512 + 64 and 512 + 5: a short block pays C's loads and stores and a packing pass for
// little work).
template <class Cfg>
int64_t kBlockOf(int64_t k) {
  constexpr int P = Cfg::kPair;
  const int64_t kp = (k + P - 1) / P * P, blocks = (kp + Cfg::KC - 1) / Cfg::KC;
  return ((kp + blocks - 1) / blocks + P - 1) / P * P;
}

template <class Cfg, Elem EA, Elem EB>
void gemmBlock(const Problem& p, int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
               const typename Cfg::PackT* pre) {
  using PackT = typename Cfg::PackT;
  constexpr int MR = Cfg::MR, NR = Cfg::NR, P = Cfg::kPair;
  static thread_local GemmScratch<Cfg> scratch;
  const void* a = offsetPtr(p.a, p.aType, bi * p.sab);
  const void* b = offsetPtr(p.b, p.bType, bi * p.sbb);
  float* c = p.c + bi * p.scb;
  const int64_t kpAll = (p.k + P - 1) / P * P;
  const int64_t kcMax = std::min<int64_t>(Cfg::KC, kpAll);
  const int64_t mcMax = std::min<int64_t>(Cfg::MC, (i1 - i0 + MR - 1) / MR * MR);
  const int64_t ncMax = std::min<int64_t>(Cfg::NC, (j1 - j0 + NR - 1) / NR * NR);
  PackT* ap = static_cast<PackT*>(scratch.a.get(sizeof(PackT) * mcMax * kcMax));
  PackT* bp = pre ? nullptr : static_cast<PackT*>(scratch.b.get(sizeof(PackT) * ncMax * kcMax));
  // B is packed row by row across whole KC x NC blocks: reading B along long runs of its rows
  // (16 KB for f32) is what keeps small-M products (few tiles per B element) near peak. f32 B
  // with contiguous columns is instead copied panel by panel inside the product (packAlong).
  const int64_t ncBlock = Cfg::NC, kcBlock = kBlockOf<Cfg>(p.k);
  for (int64_t jc = j0; jc < j1; jc += ncBlock) {
    const int64_t nc = std::min<int64_t>(ncBlock, j1 - jc);
    for (int64_t pc = 0; pc < p.k; pc += kcBlock) {
      const int64_t kc = std::min<int64_t>(kcBlock, p.k - pc);
      const int64_t kcp = (kc + P - 1) / P * P;
      const PackT* bk = bp;
      int64_t panel = kcp * NR;
      // f32 B with contiguous columns: the first row tile of each panel copies the next one
      // (Ahead::rows); only the first panel and a last partial one are packed before.
      const bool packAlong = !pre && Cfg::kPair == 1 && EB == Elem::f32 && p.sbn == 1 && radix::kernels::packAlongPays();
      if (pre) {
        bk = pre + (jc / NR) * kpAll * NR + pc * NR;
        panel = kpAll * NR;
      } else if (packAlong) {
        packB<Cfg, EB>(b, p.sbk, p.sbn, pc, kc, jc, std::min<int64_t>(NR, nc), bp);
      } else {
        packB<Cfg, EB>(b, p.sbk, p.sbn, pc, kc, jc, nc, bp);
      }
      for (int64_t ic = i0; ic < i1; ic += Cfg::MC) {
        const int64_t mc = std::min<int64_t>(Cfg::MC, i1 - ic);
        packA<Cfg, EA>(a, p.sam, p.sak, ic, mc, pc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          // Row tile ir fetches its share of the next panel (mc / MR tiles read each panel).
          const int64_t panelLines = kcp * NR * int64_t(sizeof(PackT)) / 64, tiles = (mc + MR - 1) / MR;
          const int64_t share = (panelLines + tiles - 1) / tiles;
          const char* next = jr + NR < nc ? reinterpret_cast<const char*>(bk + (jr / NR + 1) * panel) : nullptr;
          auto aheadOf = [&](int64_t ir) {
            const int64_t first = ir / MR * share;
            return next && first < panelLines ? Ahead{next + first * 64, std::min(share, panelLines - first)} : Ahead{};
          };
          // Packing along: in the first pass over the rows (ic == i0), the row tiles copy the
          // next panel when it is whole, each a share; a partial one is packed here.
          const bool copyNext = packAlong && ic == i0 && jr + 2 * NR <= nc;
          if (packAlong && ic == i0 && jr + NR < nc && !copyNext)
            packB<Cfg, EB>(b, p.sbk, p.sbn, pc, kc, jc + jr + NR, nc - jr - NR, bp + (jr / NR + 1) * panel);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int mr = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            Ahead ahead = aheadOf(ir);
            if (copyNext) {
              // Each row tile copies its share of the next panel's kc rows.
              ahead = {};
              const int64_t rowsEach = (kc + tiles - 1) / tiles, first = ir / MR * rowsEach;
              if constexpr (Cfg::kPair == 1)
                if (first < kc) {
                  ahead.rows = static_cast<const float*>(b) + (pc + first) * p.sbk + jc + jr + NR;
                  ahead.ld = p.sbk;
                  ahead.count = std::min(rowsEach, kc - first);
                  ahead.panel = reinterpret_cast<float*>(bp + (jr / NR + 1) * panel) + first * NR;
                }
            }
            Cfg::micro(kcp / P, ap + ir * kcp, bk + (jr / NR) * panel, c + (ic + ir) * p.scm + (jc + jr) * p.scn,
                       p.scm, p.scn, mr, nr, ahead);
          }
        }
      }
    }
  }
}

// Runs pack(j0, nc, dst) over the panels of an n-column operand, split among threads.
template <class Pack>
void packPanelsParallel(int64_t n, int64_t nr, int threads, Pack&& pack) {
  const int64_t panels = (n + nr - 1) / nr;
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, panels)));
  if (nt <= 1 || omp_in_parallel()) {
    pack(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), tn = omp_get_num_threads();
    const int64_t lo = std::min(n, panels * t / tn * nr), hi = std::min(n, panels * (t + 1) / tn * nr);
    if (lo < hi) pack(lo, hi - lo);
  }
}

// B packed whole for Cfg, from the packed-weight cache (packed.h); null when B is not cacheable.
template <class Cfg, Elem EB>
std::shared_ptr<const void> prepackedB(const Problem& p, int threads) {
  using PackT = typename Cfg::PackT;
  constexpr int NR = Cfg::NR, P = Cfg::kPair;
  const int64_t kp = (p.k + P - 1) / P * P, panels = (p.n + NR - 1) / NR;
  const size_t bytes = sizeof(PackT) * static_cast<size_t>(panels * kp * NR);
  return radix::kernels::packedB(p, packedLayout<Cfg>(), bytes, [&](void* dst) {
    packPanelsParallel(p.n, NR, threads, [&](int64_t j0, int64_t nc) {
      packB<Cfg, EB>(p.b, p.sbk, p.sbn, 0, p.k, j0, nc, static_cast<PackT*>(dst) + (j0 / NR) * kp * NR);
    });
  });
}

// Splits the work of `p` over `threads` threads: batches when there are enough, else the
// dimension (M or N) with more register tiles. No thread waits on another.
template <class Body>
void splitWork(const Problem& p, int threads, int64_t mUnit, int64_t nUnit, Body&& body) {
  if (threads <= 1) {
    for (int64_t bi = 0; bi < p.batch; ++bi) body(bi, 0, p.m, 0, p.n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t mTiles = (p.m + mUnit - 1) / mUnit, nTiles = (p.n + nUnit - 1) / nUnit;
    if (p.batch >= 2 * nt || (p.batch >= nt && p.batch % nt == 0)) {
      for (int64_t bi = t; bi < p.batch; bi += nt) body(bi, 0, p.m, 0, p.n);
    } else if (nTiles >= mTiles) {
      const int64_t lo = std::min(p.n, nTiles * t / nt * nUnit), hi = std::min(p.n, nTiles * (t + 1) / nt * nUnit);
      if (lo < hi)
        for (int64_t bi = 0; bi < p.batch; ++bi) body(bi, 0, p.m, lo, hi);
    } else {
      const int64_t lo = std::min(p.m, mTiles * t / nt * mUnit), hi = std::min(p.m, mTiles * (t + 1) / nt * mUnit);
      if (lo < hi)
        for (int64_t bi = 0; bi < p.batch; ++bi) body(bi, lo, hi, 0, p.n);
    }
  }
}

template <class Cfg, Elem EA, Elem EB>
void gemmTyped(const Problem& p, int threads) {
  const std::shared_ptr<const void> pre = prepackedB<Cfg, EB>(p, threads);
  const auto* packed = static_cast<const typename Cfg::PackT*>(pre.get());
  splitWork(p, threads, Cfg::MR, Cfg::NR, [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemmBlock<Cfg, EA, EB>(p, bi, i0, i1, j0, j1, packed);
  });
}

template <class Cfg>
void gemm(const Problem& p, int threads) {
  auto withB = [&]<Elem EA>() {
    switch (p.bType) {
      case Elem::f32: return gemmTyped<Cfg, EA, Elem::f32>(p, threads);
      case Elem::f16: return gemmTyped<Cfg, EA, Elem::f16>(p, threads);
      case Elem::bf16: return gemmTyped<Cfg, EA, Elem::bf16>(p, threads);
      default: break;  // 8-bit operands run bytes_impl.h's kernels
    }
  };
  switch (p.aType) {
    case Elem::f32: return withB.template operator()<Elem::f32>();
    case Elem::f16: return withB.template operator()<Elem::f16>();
    case Elem::bf16: return withB.template operator()<Elem::bf16>();
    default: break;  // 8-bit operands run bytes_impl.h's kernels
  }
}

// ---- GEMV ----

// How many rows ahead a GEMV row's stream is fetched: about 8 KB. One row ahead (1.5 KB for 768
// f16) left too little time to DRAM: f16 W of 768 columns streamed at 33-37 GB/s against 42-44
// with 8 KB, f32 at 42-44 against 44-45 (Zen 5, 1 thread; 4 KB and 16 KB were slower).
inline int64_t gemvRowsAhead(int64_t ldw, int64_t elemBytes) {
  constexpr int64_t kAheadBytes = 8192;
  const int64_t rowBytes = std::max<int64_t>(ldw * elemBytes, 1);
  return std::max<int64_t>(1, (kAheadBytes + rowBytes - 1) / rowBytes);
}

// y += sum_k W[k] x[k] for one row (k contiguous), 4 vector accumulators. A row at a time keeps W
// one stream when its rows are contiguous: 8 rows side by side were 8 streams 3 KB apart for 768
// columns, 36-40 GB/s of f32 W against 42-47 one row at a time (Zen 5, 1 thread). Four chains of
// FMAs. The rows gemvRowsAhead ahead are fetched while this one streams (rows that are not
// contiguous; prefetchers ramping up; DRAM latency).
template <class V, Elem E>
inline void gemvRow(const void* w, int64_t ldw, int64_t K, const float* __restrict x, float* y) {
  constexpr int A = 4;
  typename V::R acc[A];
  for (int a = 0; a < A; ++a) acc[a] = V::zero();
  constexpr int64_t lineElems = 64 / elemBytes(E);
  const int64_t ahead = gemvRowsAhead(ldw, elemBytes(E)) * ldw;
  int64_t k = 0;
  for (; k + A * V::W <= K; k += A * V::W) {
    for (int64_t l = 0; l < A * V::W; l += lineElems) __builtin_prefetch(offsetPtr(w, E, ahead + k + l));
    for (int a = 0; a < A; ++a)
      acc[a] = V::fma(loadE<V, E>(offsetPtr(w, E, k + a * V::W)), V::load(x + k + a * V::W), acc[a]);
  }
  for (int a = 0; k < K; k += V::W, a = (a + 1) % A) {
    const int n = static_cast<int>(std::min<int64_t>(V::W, K - k));
    acc[a] = V::fma(loadEN<V, E>(offsetPtr(w, E, k), n), V::loadN(x + k, n), acc[a]);
  }
  *y += V::sum(V::add(V::add(acc[0], acc[1]), V::add(acc[2], acc[3])));
}

template <class V, Elem E>
void gemvRows(const void* w, int64_t ldw, int64_t r0, int64_t r1, int64_t K, const float* x, float* y, int64_t sy) {
  for (int64_t r = r0; r < r1; ++r) gemvRow<V, E>(offsetPtr(w, E, r * ldw), ldw, K, x, y + r * sy);
}

// y[c] += sum_k W[k][c] x[k] (c contiguous): W streams by rows, 8 rows at a time, into an
// L1-resident chunk of y; each W byte is read once.
template <class V, Elem E>
void gemvCols(const void* w, int64_t ldw, int64_t c0, int64_t c1, int64_t K, const float* x, float* y, int64_t sy) {
  constexpr int64_t CW = 4096;  // 16 KB of y: whole rows of W stream through the prefetchers
  static thread_local float buffer[CW + 1024 + 16];
  // acc sits 2 KB away from W modulo 4 KB: its stores must not 4K-alias the loads of W's rows.
  const uintptr_t wAddr = reinterpret_cast<uintptr_t>(offsetPtr(w, E, c0));
  const uintptr_t bAddr = (reinterpret_cast<uintptr_t>(buffer) + 63) & ~uintptr_t(63);
  float* acc = reinterpret_cast<float*>(bAddr + ((wAddr + 2048 - bAddr) & 4095 & ~uintptr_t(63)));
  for (int64_t cc = c0; cc < c1; cc += CW) {
    const int64_t n = std::min<int64_t>(CW, c1 - cc), full = n / V::W * V::W;
    const int tail = static_cast<int>(n - full);
    for (int64_t j = 0; j < n; ++j) acc[j] = 0;
    const void* base = offsetPtr(w, E, cc);
    // 8 rows of W per pass over y: one load and one store of y per 8 FMAs.
    constexpr int U = 8;
    int64_t k = 0;
    for (; k + U <= K; k += U) {
      typename V::R xs[U];
      const void* rows[U];
      for (int u = 0; u < U; ++u) {
        xs[u] = V::set1(x[k + u]);
        rows[u] = offsetPtr(base, E, (k + u) * ldw);
      }
      // The next U rows are fetched while these stream (short rows: see gemvRow).
      constexpr int64_t lineElems = 64 / elemBytes(E);
      const bool more = k + 2 * U <= K;
      for (int64_t j = 0; j < full; j += V::W) {
        if (more && j % lineElems == 0)
          for (int u = 0; u < U; ++u) __builtin_prefetch(offsetPtr(rows[u], E, U * ldw + j));
        typename V::R a = V::load(acc + j);
        for (int u = 0; u < U; ++u) a = V::fma(loadE<V, E>(offsetPtr(rows[u], E, j)), xs[u], a);
        V::store(acc + j, a);
      }
      if (tail) {
        typename V::R a = V::load(acc + full);
        for (int u = 0; u < U; ++u) a = V::fma(loadEN<V, E>(offsetPtr(rows[u], E, full), tail), xs[u], a);
        V::store(acc + full, a);
      }
    }
    for (; k < K; ++k) {
      const typename V::R x0 = V::set1(x[k]);
      const void* r0 = offsetPtr(base, E, k * ldw);
      for (int64_t j = 0; j < full; j += V::W) V::store(acc + j, V::fma(loadE<V, E>(offsetPtr(r0, E, j)), x0, V::load(acc + j)));
      if (tail) V::store(acc + full, V::fma(loadEN<V, E>(offsetPtr(r0, E, full), tail), x0, V::load(acc + full)));
    }
    for (int64_t j = 0; j < n; ++j) y[(cc + j) * sy] += acc[j];
  }
}

// An ISA's own GEMV rows for bf16 W against bf16 x (k contiguous), or none.
struct NoBf16Rows {
  static constexpr bool kHas = false;
  static void rows(const void*, int64_t, int64_t, int64_t, int64_t, const uint16_t*, float*, int64_t) {}
};

// One of M and N is 1: W is the other operand, read once. Returns false when neither of W's
// strides is 1 (the GEMM path packs it). bf16 W against bf16 x with k contiguous takes
// Bf16Rows::rows where the ISA has it, x kept in bf16 and zero-padded to a multiple of 32.
template <class V, class Bf16Rows = NoBf16Rows>
bool gemv(const Problem& p, int threads) {
  const bool byRows = p.n == 1;  // W = A (rows m, k), x = B column; else W = B (rows n), x = A row
  const int64_t rows = byRows ? p.m : p.n;
  const int64_t sRow = byRows ? p.sam : p.sbn, sK = byRows ? p.sak : p.sbk, sWb = byRows ? p.sab : p.sbb;
  const int64_t sX = byRows ? p.sbk : p.sak, sXb = byRows ? p.sbb : p.sab;
  const int64_t sY = byRows ? p.scm : p.scn;
  const Elem wType = byRows ? p.aType : p.bType, xType = byRows ? p.bType : p.aType;
  const void* wBase = byRows ? p.a : p.b;
  const void* xBase = byRows ? p.b : p.a;
  const bool contiguousK = sK == 1;
  if (!contiguousK && !(sRow == 1)) return false;
  const int64_t K = p.k;
  // Threads split the rows (or columns) of W, in whole blocks.
  const int64_t unit = contiguousK ? 8 : 4 * V::W;
  const int64_t units = (rows + unit - 1) / unit;
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, units)));
  const bool bf16Rows = Bf16Rows::kHas && contiguousK && wType == Elem::bf16 && xType == Elem::bf16;
  auto run = [&](int t, int ntt) {
    static thread_local Scratch xs;
    float* x = static_cast<float*>(xs.get(sizeof(float) * static_cast<size_t>(std::max<int64_t>(K, 1) + 32)));
    const int64_t lo = std::min(rows, units * t / ntt * unit), hi = std::min(rows, units * (t + 1) / ntt * unit);
    if (lo >= hi) return;
    for (int64_t bi = 0; bi < p.batch; ++bi) {
      const void* xb = offsetPtr(xBase, xType, bi * sXb);
      if (bf16Rows) {
        uint16_t* xh = reinterpret_cast<uint16_t*>(x);  // K + 32 floats hold K rounded up to 32 halves
        const int64_t kp = (K + 31) / 32 * 32;
        for (int64_t k = 0; k < kp; ++k) xh[k] = k < K ? static_cast<const uint16_t*>(xb)[k * sX] : uint16_t(0);
        Bf16Rows::rows(offsetPtr(wBase, wType, bi * sWb), sRow, lo, hi, K, xh, p.c + bi * p.scb, sY);
        continue;
      }
      for (int64_t k = 0; k < K; ++k) {
        switch (xType) {
          case Elem::f32: x[k] = loadScalar<Elem::f32>(xb, k * sX); break;
          case Elem::f16: x[k] = loadScalar<Elem::f16>(xb, k * sX); break;
          case Elem::bf16: x[k] = loadScalar<Elem::bf16>(xb, k * sX); break;
          default: break;  // 8-bit operands run bytes_impl.h's kernels
        }
      }
      const void* w = offsetPtr(wBase, wType, bi * sWb);
      float* y = p.c + bi * p.scb;
      auto go = [&]<Elem E>() {
        if (contiguousK)
          gemvRows<V, E>(w, sRow, lo, hi, K, x, y, sY);
        else
          gemvCols<V, E>(w, sK, lo, hi, K, x, y, sY);
      };
      switch (wType) {
        case Elem::f32: go.template operator()<Elem::f32>(); break;
        case Elem::f16: go.template operator()<Elem::f16>(); break;
        case Elem::bf16: go.template operator()<Elem::bf16>(); break;
        default: break;  // 8-bit operands run bytes_impl.h's kernels
      }
    }
  };
  if (nt <= 1) {
    run(0, 1);
  } else {
#pragma omp parallel num_threads(nt)
    run(omp_get_thread_num(), omp_get_num_threads());
  }
  return true;
}

// The common entry of every ISA: GEMV when one of M and N is 1, else the GEMM of Cfg.
template <class V, class Cfg, class Bf16Rows = NoBf16Rows>
Path runWith(const Problem& p, int threads) {
  if ((p.m == 1 || p.n == 1) && gemv<V, Bf16Rows>(p, threads)) return Path::gemv;
  gemm<Cfg>(p, threads);
  return Path::gemm;
}

}  // namespace
